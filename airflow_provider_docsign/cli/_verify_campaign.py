"""``docsign verify`` on a campaign's archive: one line per envelope, then one summary line.

Used when ``--manifest`` names a folder (searched for every ``manifest.json``,
:mod:`airflow_provider_docsign.archive.audit_campaign`) or more than one manifest. Each envelope is
audited as one ``--manifest`` is; stdout gets ``PASS  MANIFEST  N file(s) checked`` or ``FAIL  MANIFEST
REASON`` with the failing files' lines under it, and the last line is the summary::

    docsign verify: 500 envelopes, 499 ok, 1 failed (archive/acme(42)/manifest.json: 01-contract.pdf changed)

Exit status: 0 every envelope (and every PDF given) passes, 1 one fails (a manifest missing, refused or
unreadable is that envelope's failure), 2 a PDF given could not be read or the input is unusable.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from airflow_provider_docsign.archive import auditor
from airflow_provider_docsign.archive.audit_campaign import (
    MANIFEST_NAME,
    MAX_DEPTH,
    Campaign,
    Verdict,
    audit_envelopes,
    find_manifests,
)
from airflow_provider_docsign.archive.audit_evidence import NOT_PINNED
from airflow_provider_docsign.cli._common import EXIT_CHECK_FAILED, EXIT_OK, EXIT_UNUSABLE, CliError, one_line
from airflow_provider_docsign.cli._verify_output import lines, report_unreadable

__all__ = ["Audited", "audit", "report"]

#: Failing envelopes named in the summary line.
EXAMPLES = 3
_INDENT = "      "


@dataclass
class Audited:
    """A campaign audit, ready to print.

    :param files: The outcomes of the PDFs given as files.
    :param verdicts: One per envelope.
    :param campaigns: What each folder's walk found.
    :param manifests: The manifests given one by one.
    """

    files: list[Any]
    verdicts: list[Verdict]
    campaigns: list[Campaign]
    manifests: list[str]


def audit(
    args: argparse.Namespace,
    files: list[str],
    manifests: list[str],
    folders: list[str],
    trust: Any,
    options: Any,
) -> Audited:
    """Walk each folder, then audit the PDFs given and every envelope (prints nothing).

    :raises CliError: For a folder that holds no ``manifest.json`` at all (not an archive).
    """
    campaigns: list[Campaign] = []
    seen: set[str] = set()
    for folder in folders:
        path = auditor.to_path(folder)
        if os.path.realpath(path) in seen:
            continue
        seen.add(os.path.realpath(path))
        try:
            found = find_manifests(path)
        except OSError as err:
            raise CliError(f"--manifest {folder}: {err}") from err
        if not found.found:
            raise CliError(
                f"--manifest {folder}: no {MANIFEST_NAME} in it or below ({found.folders} folder(s) "
                f"searched, {MAX_DEPTH} levels deep): is it an archive's folder?"
            )
        campaigns.append(found)
    outcomes = [auditor.audit_file(f, trust, conn_id=args.conn_id, options=options) for f in files]
    verdicts = audit_envelopes(
        campaigns, manifests, trust, conn_id=args.conn_id, by_uri=args.by_uri, options=options
    )
    return Audited(outcomes, verdicts, campaigns, manifests)


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def summary_line(label: str, audited: Audited) -> str:
    """``docsign verify: 500 envelopes, 499 ok, 1 failed (MANIFEST: REASON)``, and the PDFs given."""
    failing = [v for v in audited.verdicts if not v.passed]
    total = len(audited.verdicts)
    text = f"{label}: {_plural(total, 'envelope')}, {total - len(failing):,} ok, {len(failing):,} failed"
    if failing:
        named = "; ".join(f"{v.where}: {v.reason()}" for v in failing[:EXAMPLES])
        more = f"; and {len(failing) - EXAMPLES:,} more" if len(failing) > EXAMPLES else ""
        text += f" ({named}{more})"
    if audited.files:
        bad = sum(1 for o in audited.files if o.problems or o.unreadable)
        text += f"; {_plural(len(audited.files), 'file')}, {len(audited.files) - bad:,} ok, {bad:,} failed"
    return one_line(text)


def _header(args: argparse.Namespace, audited: Audited) -> list[str]:
    how = (
        "the URIs each records (--by-uri)"
        if args.by_uri
        else "the files beside each, by the relative paths it records"
    )
    out = [
        f"campaign {one_line(found.root)}: {_plural(found.found, MANIFEST_NAME + ' file')} in "
        f"{_plural(found.folders, 'folder')} searched; checking {how}"
        for found in audited.campaigns
    ]
    if audited.manifests:
        out.append(f"{_plural(len(dict.fromkeys(audited.manifests)), 'manifest')} given: checking {how}")
    return out


def _verdict_lines(verdict: Verdict) -> list[str]:
    if verdict.passed:
        return [f"PASS  {one_line(verdict.where)}  {_plural(len(verdict.outcomes), 'file')} checked"]
    out = [f"FAIL  {one_line(verdict.where)}  {one_line(verdict.reason())}"]
    out += [f"{_INDENT}{one_line(problem)}" for problem in verdict.problems[1:]]
    for outcome in verdict.failing:
        out += [_INDENT + line for line in lines(outcome)]
    return out


def _unpinned(audited: Audited) -> int:
    """How many envelopes carry a timestamp (token or LTV copy) whose TSA nobody pinned."""
    return sum(
        1
        for verdict in audited.verdicts
        if any(
            getattr(o, "timestamp", None) is not None and o.timestamp.trusted is None
            for o in verdict.outcomes
        )
    )


def report(args: argparse.Namespace, label: str, audited: Audited) -> int:
    """Print the campaign's audit; the exit status."""
    unreadable = [o for o in audited.files if o.unreadable]
    if args.json:
        document = [o.to_dict() for o in audited.files]
        document += [one for verdict in audited.verdicts for one in verdict.to_dicts()]
        print(json.dumps(document, indent=2))
    else:
        print("\n".join(_header(args, audited)))
        outcomes = [o for v in audited.verdicts for o in v.outcomes]
        if any(o.lookup == auditor.LOOKUP_FILE_NAME for o in outcomes):
            print(
                "note: a manifest records no relative paths (an older archive): its files were found by name"
            )
        for outcome in audited.files:
            if not outcome.unreadable:
                print("\n".join(lines(outcome)))
        for verdict in audited.verdicts:
            print("\n".join(_verdict_lines(verdict)))
        unpinned = _unpinned(audited)
        if unpinned:
            print(
                f"note: {NOT_PINNED} for the timestamps of {_plural(unpinned, 'envelope')}: pin it with "
                "--tsa-cert PEM or --tsa-fingerprint SHA256 (--strict fails them)"
            )
    report_unreadable(label, unreadable)
    # With --json stdout holds the JSON document only: the summary goes to stderr then.
    print(summary_line(label, audited), file=sys.stderr if args.json else sys.stdout)
    if unreadable:
        return EXIT_UNUSABLE
    failed = any(not v.passed for v in audited.verdicts) or any(o.problems for o in audited.files)
    return EXIT_CHECK_FAILED if failed else EXIT_OK
