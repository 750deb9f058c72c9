"""What ``docsign verify`` prints of one file, shared by the one-archive and the campaign output."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from airflow_provider_docsign.cli._common import one_line

__all__ = ["lines", "report_unreadable"]


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def lines(outcome: Any) -> list[str]:
    """The human-readable lines of one file: one per signature, then its problems."""
    if hasattr(outcome, "lines"):  # a timestamp token or a long-term validation copy
        return list(outcome.lines(one_line))
    status = outcome.status
    report = outcome.report
    name = one_line(outcome.file)
    if report is None or not report.signed:
        reason = "; ".join(outcome.problems) or "no digital signature (not required)"
        return [f"{status}  {name}  {one_line(reason)}"]
    out = []
    for check in report.signatures:
        signer = check.signer.common_name or check.signer.subject if check.signer else "?"
        out.append(
            f"{status}  {name}  signer={signer!r}  signed_at={check.signing_time or '-'}  "
            f"intact={_yes(check.intact)}  valid={_yes(check.valid)}  "
            f"coverage={check.coverage}/{check.modification_level}  trusted={_yes(check.trusted)}"
        )
    out.extend(f"      {one_line(problem)}" for problem in outcome.problems)
    return out


def _hint(outcome: Any) -> str:
    """A hint for a file that was not a PDF because it is a manifest or a folder."""
    if outcome.file.lower().endswith(".json"):
        return " (a manifest? give it with --manifest)"
    if any("directory" in p for p in outcome.problems):
        return " (an archive's folder? give it with --manifest)"
    return ""


def report_unreadable(label: str, unreadable: Sequence[Any]) -> None:
    """The files the command could not do its job for: one error line each, on stderr."""
    for outcome in unreadable:
        reason = "; ".join(outcome.problems)
        print(
            f"{label}: error: {one_line(outcome.file)}: {one_line(reason)}{_hint(outcome)}", file=sys.stderr
        )
