"""Command line for auditors: ``python -m airflow_provider_docsign.verify FILE_OR_URI... [options]``.

Prints one line per signature: file, signer, signing time, intact, valid, coverage, trusted. With
``--manifest URI`` it re-audits an archive written by the archive operator (local or ``s3://``…):
every listed file must exist, match its SHA-256, and its signatures must still verify.

Exit status: 0 when every file passes, 1 when any fails, 2 when the input is unusable (a file that
does not exist or is not a PDF, an unreadable trust certificate or manifest, a malformed fingerprint).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_docsign._sources import open_source
from airflow_provider_docsign.signatures import (
    SignatureReport,
    TrustPolicy,
    UnreadablePdfError,
    verify_pdf_signatures,
)

_MAX_MANIFEST_BYTES = 16 * 1024 * 1024
_CHUNK = 1024 * 1024


class UnusableInput(Exception):
    """The input cannot be audited at all (exit status 2)."""


@dataclass
class Outcome:
    """The audit of one file: its report (if it could be read) and why it fails (empty: it passes)."""

    file: str
    report: SignatureReport | None = None
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form for ``--json``."""
        return {
            "file": self.file,
            "passed": not self.problems,
            "problems": self.problems,
            "report": self.report.to_dict() if self.report is not None else None,
        }


def _path(uri: str, conn_id: str | None) -> Any:
    """A local path, or an ``ObjectStoragePath`` for a URI with a scheme (with the connection id)."""
    if "://" in uri and not uri.startswith("file://"):
        from airflow_provider_docsign._compat import ObjectStoragePath

        return ObjectStoragePath(uri, conn_id=conn_id) if conn_id else ObjectStoragePath(uri)
    return uri[len("file://") :] if uri.startswith("file://") else uri


def _sha256(source: Any) -> str:
    stream, owned = open_source(source)
    try:
        digest = hashlib.sha256()
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        if owned:
            stream.close()


def audit_file(uri: str, trust: TrustPolicy | None, *, conn_id: str | None = None) -> Outcome:
    """Verify one file given on the command line; it must be a signed PDF whose signatures pass.

    :raises UnusableInput: When it does not exist or is not a PDF.
    """
    try:
        report = verify_pdf_signatures(_path(uri, conn_id), trust=trust, label=uri)
    except (FileNotFoundError, IsADirectoryError, UnreadablePdfError) as err:
        raise UnusableInput(f"{uri}: {err}") from err
    return Outcome(uri, report, report.problems)


def _manifest_entries(manifest: Any) -> list[tuple[dict[str, Any], bool]]:
    """``(entry, signature_required)`` for every file of an archive manifest."""
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        raise UnusableInput("not an archive manifest (no 'files' list)")
    signed_version = manifest.get("version") == "signed"
    entries = [(e, signed_version) for e in manifest["files"]]
    for kind in ("audit_log", "certificate"):
        report = manifest.get(kind)
        if isinstance(report, dict):
            recorded = report.get("signature") or {}
            entries.append((report, recorded.get("signed") is True))
    return entries


def audit_manifest(uri: str, trust: TrustPolicy | None, *, conn_id: str | None = None) -> list[Outcome]:
    """Re-audit an archive from its ``manifest.json``: existence, SHA-256 and signatures of each file.

    :raises UnusableInput: When the manifest cannot be read or is not a manifest.
    """
    try:
        stream, owned = open_source(_path(uri, conn_id))
        try:
            raw = stream.read(_MAX_MANIFEST_BYTES + 1)
        finally:
            if owned:
                stream.close()
        manifest = json.loads(raw)
    except (OSError, ValueError) as err:
        raise UnusableInput(f"manifest {uri}: {err}") from err
    if len(raw) > _MAX_MANIFEST_BYTES:
        raise UnusableInput(f"manifest {uri} is larger than {_MAX_MANIFEST_BYTES} bytes")
    outcomes = []
    for entry, signature_required in _manifest_entries(manifest):
        name = str(entry.get("uri") or entry.get("name"))
        outcome = Outcome(name)
        outcomes.append(outcome)
        path = _path(name, conn_id)
        try:
            actual = _sha256(path)
        except (FileNotFoundError, IsADirectoryError):
            outcome.problems.append("missing: the file listed in the manifest does not exist")
            continue
        if actual != entry.get("sha256"):
            outcome.problems.append(f"changed: sha256 is {actual}, the manifest says {entry.get('sha256')}")
        try:
            outcome.report = verify_pdf_signatures(path, trust=trust, label=name)
        except UnreadablePdfError as err:
            outcome.problems.append(str(err))
            continue
        if outcome.report.signed or signature_required:
            outcome.problems.extend(outcome.report.problems)
    return outcomes


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def lines(outcome: Outcome) -> list[str]:
    """The human-readable lines of one file: one per signature."""
    status = "PASS" if not outcome.problems else "FAIL"
    report = outcome.report
    if report is None or not report.signed:
        reason = "; ".join(outcome.problems) or "no digital signature (not required)"
        return [f"{status}  {outcome.file}  {reason}"]
    out = []
    for check in report.signatures:
        signer = check.signer.common_name or check.signer.subject if check.signer else "?"
        out.append(
            f"{status}  {outcome.file}  signer={signer!r}  signed_at={check.signing_time or '-'}  "
            f"intact={_yes(check.intact)}  valid={_yes(check.valid)}  "
            f"coverage={check.coverage}/{check.modification_level}  trusted={_yes(check.trusted)}"
        )
    out.extend(f"      {problem}" for problem in outcome.problems)
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_docsign.verify",
        description="Verify the digital signatures of PDFs, or re-audit an archive from its manifest.",
    )
    parser.add_argument("files", nargs="*", help="PDF paths or URIs (s3://..., file://...)")
    parser.add_argument("--trust", action="append", default=[], metavar="PEM", help="trusted certificate(s)")
    parser.add_argument(
        "--fingerprint", action="append", default=[], metavar="SHA256", help="pinned signer fingerprint"
    )
    parser.add_argument("--manifest", action="append", default=[], metavar="URI", help="archive manifest")
    parser.add_argument("--conn-id", default=None, help="Airflow connection for s3:// and other stores")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    args = _parser().parse_args(argv)
    if not args.files and not args.manifest:
        print("error: give at least one FILE_OR_URI or --manifest URI", file=sys.stderr)
        return 2
    try:
        trust = TrustPolicy.from_sources(
            [_path(p, args.conn_id) for p in args.trust], fingerprints=args.fingerprint
        )
        outcomes = [audit_file(f, trust, conn_id=args.conn_id) for f in args.files]
        for manifest in args.manifest:
            outcomes.extend(audit_manifest(manifest, trust, conn_id=args.conn_id))
    except (UnusableInput, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([o.to_dict() for o in outcomes], indent=2))
    else:
        for outcome in outcomes:
            print("\n".join(lines(outcome)))
    failed = [o.file for o in outcomes if o.problems]
    if failed and not args.json:
        print(f"{len(failed)} of {len(outcomes)} file(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
