"""``docsign verify``: verify PDF signatures, or re-audit an archive from its manifest (or a campaign's).

The checks live in :mod:`airflow_provider_docsign.archive.auditor` (no printing); this module prints one
line per file (one per signature for a signed PDF) and chooses the exit status: 0 every file passes,
1 a file fails (a signature, a changed, missing, unlisted or refused file, an extra ``.json``, a
malformed entry), 2 a file cannot be read at all (missing on the command line, not a regular file,
not a PDF, a PDF that cannot be parsed) or the input is unusable (a manifest, a trust certificate, a
fingerprint). Every file is reported, whatever happened to the others: a file that cannot be read is
one ``docsign verify: error: FILE: reason`` line on stderr, the others are the result on stdout.

A campaign's archive (a folder of envelope folders, or several manifests) is audited envelope by
envelope (:mod:`airflow_provider_docsign.archive.audit_campaign`): one ``PASS`` or ``FAIL`` line per
envelope, the failing files' lines under a failing one, and one summary line at the end; exit status
0 every envelope passes, 1 one fails (its manifest missing or unreadable included), 2 a usage error.

Local files are audited without importing Airflow; it is loaded only for an object-storage URI
(``s3://``...). With ``--json`` stdout carries the JSON document only (unreadable files included):
while the audit runs, anything that would be printed (a library's ``print``, a warning, a log
record) goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from airflow_provider_docsign.cli import _arguments as types
from airflow_provider_docsign.cli._common import (
    EXIT_CHECK_FAILED,
    EXIT_OK,
    EXIT_UNUSABLE,
    CliError,
    one_line,
)
from airflow_provider_docsign.cli._verify_output import lines, report_unreadable

__all__ = ["lines", "main", "register", "run"]

_EPILOG = """examples:
  docsign verify archive/env_123/01-contract.pdf
  docsign verify --trust sealing.pem archive/env_123/01-contract.pdf
  docsign verify --manifest copy-of-archive/env_123/manifest.json
  docsign verify --manifest archive/renewals-2027/          # a campaign: every manifest.json below
  docsign verify --manifest archive/*/manifest.json         # or many manifests
  docsign verify --manifest s3://bucket/contracts/env_123/manifest.json --conn-id aws_archive --by-uri
  docsign verify --json archive/env_123/01-contract.pdf
  docsign verify --manifest archive/env_123/manifest.json --tsa-cert tsa.pem
  docsign verify --manifest archive/env_123/manifest.json --trust sealing.pem --strict
  docsign verify --validation-time 2031-06-01T00:00:00Z archive/env_123/01-contract.ltv.pdf

--manifest checks the files beside the manifest (by the relative paths it records), so a copy of an
archive is audited as it is; --by-uri checks the URIs the manifest records instead. The token beside
a manifest (manifest.json.tsr) and the long-term validation copies it lists (NAME.ltv.pdf) are
checked too; a .ltv.pdf given as a file is checked as of its document timestamp. A token dated more
than 5 minutes after now (or after --validation-time, when that is earlier) fails. --tsa-cert or
--tsa-fingerprint implies --require-timestamp. A timestamp whose TSA is not pinned is reported
"not trusted: no TSA pinned"; --strict fails it (and a signature checked with no --trust or
--fingerprint).

--manifest takes every path up to the next option. A folder is searched for every manifest.json in
it (8 levels deep, links not followed): a campaign's archive, audited envelope by envelope, with one
line per envelope and a summary line. A .pdf among the paths is checked as a file.

exit status: 0 every file passes, 1 a file failed, 2 a file could not be read or the input is unusable
(for a campaign: 0 every envelope passes, 1 an envelope failed, 2 a usage error)."""


def register(subparsers: Any) -> None:
    """Add the ``verify`` subcommand."""
    parser = subparsers.add_parser(
        "verify",
        help="Verify PDF signatures or re-audit an archive manifest",
        description="Verify the digital signatures of PDFs, or re-audit an archive from its manifest.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE_OR_URI",
        type=types.path("the path or URI of a PDF"),
        help="PDF paths or URIs (s3://..., file://...)",
    )
    parser.add_argument(
        "--manifest",
        action="extend",
        nargs="+",
        default=[],
        metavar="URI",
        type=types.path("the path of a manifest.json, or an archive's folder"),
        help="archive manifest(s), or a campaign's folder to search for every manifest.json (repeatable)",
    )
    parser.add_argument(
        "--by-uri",
        action="store_true",
        help="with --manifest: check the URIs the manifest records, not the files beside it",
    )
    parser.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="PEM",
        type=types.path("the PEM file of a trusted certificate"),
        help="trusted certificate file(s) (repeatable)",
    )
    parser.add_argument(
        "--fingerprint",
        action="append",
        default=[],
        metavar="SHA256",
        type=types.fingerprint,
        help="pinned SHA-256 fingerprint of the signer certificate (repeatable)",
    )
    parser.add_argument(
        "--tsa-cert",
        action="append",
        default=[],
        metavar="PEM",
        type=types.path("the PEM file of the TSA's certificate"),
        help="pinned TSA certificate(s): a timestamp by any other TSA fails, and a manifest without its "
        "token fails (implies --require-timestamp; repeatable)",
    )
    parser.add_argument(
        "--tsa-fingerprint",
        action="append",
        default=[],
        metavar="SHA256",
        type=types.fingerprint,
        help="pinned SHA-256 fingerprint of the TSA certificate (implies --require-timestamp; repeatable)",
    )
    parser.add_argument(
        "--require-timestamp",
        action="store_true",
        help="with --manifest: a manifest without its timestamp token (manifest.json.tsr) fails",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail what is not judged trusted: a timestamp whose TSA is not pinned, a signature checked "
        "with no --trust or --fingerprint",
    )
    parser.add_argument(
        "--validation-time",
        default=None,
        metavar="ISO8601",
        type=types.validation_time,
        help="judge signatures as of this time instead of now, e.g. 2031-06-01T00:00:00Z (a date, a "
        "time and a zone)",
    )
    parser.add_argument(
        "--conn-id",
        default=None,
        type=types.identifier("an Airflow connection id, e.g. aws_archive"),
        help="Airflow connection for s3:// and other stores",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON (stdout: JSON only)")
    # Also accepted after the subcommand (python -m airflow_provider_docsign.verify --debug ...).
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def _quiet_pyhanko_to_stderr() -> None:
    """Route pyHanko's and the ``warnings`` module's records to stderr, whatever Airflow configured.

    Importing Airflow may (re)configure logging with a console handler on stdout after
    ``log_to_stderr`` ran: stdout handlers are removed again here, and the loggers that matter get
    their own stderr handler and stop propagating.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        stream = getattr(handler, "stream", None)
        if stream is sys.stdout or stream is sys.__stdout__ or type(handler).__name__ == "RedirectStdHandler":
            root.removeHandler(handler)
    for name in ("pyhanko", "pyhanko_certvalidator", "py.warnings"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False


def _import_airflow_quietly(*, debug: bool) -> None:
    """Import Airflow (an object-storage URI needs it), with its import-time notices kept off the output."""
    # Airflow 2.11 warns at import (and again at exit) unless metrics use Airflow 3's unit; this
    # command publishes no metrics, so it takes Airflow 3's default.
    os.environ.setdefault("AIRFLOW__METRICS__TIMER_UNIT_CONSISTENCY", "True")
    if debug:
        return
    # Deprecation notices are for developers, not auditors.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.suppress(ImportError):
            import airflow_provider_docsign._compat  # noqa: F401
    warnings.simplefilter("ignore", DeprecationWarning)
    warnings.simplefilter("ignore", PendingDeprecationWarning)


def _trust_policy(
    option: str, sources: list[str], fingerprints: list[str], verify: Any, conn_id: str | None
) -> Any:
    """The trust policy of ``--trust``/``--fingerprint`` (or the TSA's), each file read on its own.

    A file that cannot be used is named with its option, and what to give instead, in words.
    """
    from airflow_provider_docsign.evidence.signatures import TrustPolicy

    texts: list[Any] = []
    for source in sources:
        try:
            policy = TrustPolicy.from_sources([verify.to_path(source, conn_id)])
        except OSError as err:
            raise CliError(
                f"{option} {source}: {types.describe(err)}: give the PEM file of a certificate"
            ) from err
        except ValueError as err:
            raise CliError(
                f"{option} {source}: it holds no PEM certificate (no -----BEGIN CERTIFICATE----- block): "
                "give the certificate in PEM form (openssl x509 -in cert.der -inform der -out cert.pem)"
            ) from err
        texts.extend(policy.certificates if policy else ())
    if not texts and not fingerprints:
        return None
    return TrustPolicy(certificates=tuple(texts), fingerprints=frozenset(_normal(f) for f in fingerprints))


def _normal(value: str) -> str:
    from airflow_provider_docsign.evidence.certificate_trust import normalize_fingerprint

    return normalize_fingerprint(value)


def _evidence_options(args: argparse.Namespace, verify: Any) -> Any:
    """The timestamp and long-term validation options (:class:`.verify_evidence.EvidenceOptions`).

    A pinned TSA implies ``--require-timestamp`` (a pin says which TSA's word counts; a manifest
    with no token then has none).
    """
    from airflow_provider_docsign.archive.audit_evidence import EvidenceOptions

    if args.require_timestamp and not args.manifest:
        raise CliError(
            "--require-timestamp applies to --manifest only: give the archive's manifest with --manifest"
        )
    tsa_trust = _trust_policy("--tsa-cert", args.tsa_cert, args.tsa_fingerprint, verify, args.conn_id)
    return EvidenceOptions(
        tsa_trust=tsa_trust,
        require_timestamp=args.require_timestamp,
        at=args.validation_time,
        strict=args.strict,
    )


def _inputs(args: argparse.Namespace, verify: Any) -> tuple[list[str], list[str], list[str]]:
    """The PDFs, the manifests and the campaign folders among the arguments.

    A ``.pdf`` after ``--manifest`` is a file to verify (``--manifest m.json x.pdf`` always meant
    that); a local folder is a campaign's archive, searched for every ``manifest.json``.
    """
    files, manifests, folders = list(args.files), [], []
    for value in args.manifest:
        if value.lower().endswith(".pdf"):
            files.append(value)
        elif verify.is_remote(value):
            if value.endswith("/"):
                raise CliError(
                    f"--manifest {value}: a folder on object storage is not searched; give its manifests "
                    "(--manifest URI URI ...), or audit a local copy of the folder"
                )
            manifests.append(value)
        elif verify.to_path(value).is_dir():
            folders.append(value)
        else:
            manifests.append(value)
    return files, manifests, folders


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit status."""
    if not args.files and not args.manifest:
        raise CliError("give at least one FILE_OR_URI or --manifest URI (see docsign verify --help)")
    if args.by_uri and not args.manifest:
        raise CliError("--by-uri applies to --manifest only: give the archive's manifest with --manifest")
    from airflow_provider_docsign.archive import auditor as verify

    label = getattr(args, "label", "docsign verify")
    files, manifests, folders = _inputs(args, verify)
    # Nothing but the result reaches stdout: Airflow's import-time logging, a stray print or a warning
    # during the audit goes to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        if any(verify.is_remote(uri) for uri in [*args.files, *args.manifest, *args.trust, *args.tsa_cert]):
            _import_airflow_quietly(debug=bool(getattr(args, "debug", False)))
        _quiet_pyhanko_to_stderr()
        trust = _trust_policy("--trust", args.trust, args.fingerprint, verify, args.conn_id)
        options = _evidence_options(args, verify)
        if folders or len(dict.fromkeys(manifests)) > 1:
            from airflow_provider_docsign.cli import _verify_campaign as campaign

            audited = campaign.audit(args, files, manifests, folders, trust, options)
        else:
            audited = None
            try:
                outcomes = verify.audit(
                    files, manifests, trust, conn_id=args.conn_id, by_uri=args.by_uri, options=options
                )
            except verify.UnusableInput as err:
                raise CliError(str(err)) from err
    if audited is not None:
        return campaign.report(args, label, audited)
    unreadable = [o for o in outcomes if o.unreadable]
    if args.json:
        print(json.dumps([o.to_dict() for o in outcomes], indent=2))
    else:
        for manifest in manifests:
            how = (
                "the URIs it records (--by-uri)"
                if args.by_uri
                else "the files beside it, by the relative paths it records"
            )
            print(f"manifest {one_line(manifest)}: checking {how}")
        if any(o.lookup == verify.LOOKUP_FILE_NAME for o in outcomes):
            print("note: the manifest records no relative paths (an older archive): files were found by name")
        for outcome in outcomes:
            if not outcome.unreadable:
                print("\n".join(lines(outcome)))
    report_unreadable(label, unreadable)
    failed = [o.file for o in outcomes if o.problems and not o.unreadable]
    if len(outcomes) > 1 and (unreadable or failed):
        parts = []
        if failed:
            parts.append(f"{len(failed)} failed: {', '.join(failed)}")
        if unreadable:
            parts.append(f"{len(unreadable)} unreadable: {', '.join(o.file for o in unreadable)}")
        print(one_line(f"{len(outcomes)} file(s) audited; " + "; ".join(parts)), file=sys.stderr)
    if unreadable:
        return EXIT_UNUSABLE
    return EXIT_CHECK_FAILED if failed else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m airflow_provider_docsign.verify ARGS`` is ``docsign verify ARGS``; the exit status."""
    from airflow_provider_docsign.cli import run as run_command

    args = list(sys.argv[1:] if argv is None else argv)
    return run_command(["verify", *args], prog="python -m airflow_provider_docsign.verify")
