"""Signature verification of the archive operator's staged files (no HTTP; pyHanko via signatures.py).

Runs on the staged (temporary) copies, before anything moves to a final name, so a failure leaves no
file at a final name and no manifest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from airflow_provider_docsign._text import printable
from airflow_provider_docsign.evidence.signatures import (
    COVERAGE_ENTIRE_FILE,
    SignatureReport,
    TrustPolicy,
    UnreadablePdfError,
    verify_pdf_signatures,
)
from airflow_provider_docsign.exceptions import DocsignSignatureError

#: ``require``: a failed or missing signature fails the task; ``record``: recorded in the manifest
#: only; ``off``: not verified.
VERIFY_MODES = ("require", "record", "off")


def resolve_mode(mode: str | None, version: str, *, require_completed: bool = True) -> str:
    """The effective mode: ``require`` for ``version="signed"`` and ``off`` otherwise, unless given.

    With ``require_completed=False`` the "signed" download of an unfinished envelope is the unsigned
    upload by design, so the default there is ``record``.

    :param mode: The operator's ``verify_signatures`` (``None`` for the default).
    :param version: The download version.
    :param require_completed: The operator's ``require_completed``.
    """
    if mode is None:
        if version != "signed":
            return "off"
        return "require" if require_completed else "record"
    if mode not in VERIFY_MODES:
        raise ValueError(f"verify_signatures must be one of {', '.join(VERIFY_MODES)}, not {mode!r}")
    return mode


def trust_policy(certificates: Iterable[Any], fingerprints: Sequence[str]) -> TrustPolicy | None:
    """The trust policy from ``trusted_certificates`` (PEM files or URIs) and pinned fingerprints.

    :raises DocsignSignatureError: When a trusted certificate cannot be read.
    """
    sources = list(certificates)
    try:
        return TrustPolicy.from_sources(sources, fingerprints=fingerprints)
    except (OSError, ValueError, TypeError) as err:
        raise DocsignSignatureError(
            [("trusted_certificates", f"cannot be used as a trust policy: {type(err).__name__}: {err}")]
        ) from err


def verify_file(source: Any, label: str, trust: TrustPolicy | None) -> tuple[SignatureReport | None, str]:
    """Verify one staged file: ``(report, problem)``; an unreadable PDF gives ``(None, reason)``."""
    try:
        return verify_pdf_signatures(source, trust=trust, label=label), ""
    except (UnreadablePdfError, OSError) as err:
        return None, f"cannot be read for signature verification: {err}"


def failure_reason(report: SignatureReport | None, problem: str, *, signature_required: bool) -> str | None:
    """Why a file fails under ``require`` (``None`` when it passes).

    :param report: The verification report (``None`` when the file could not be read).
    :param problem: The read problem, when there is no report.
    :param signature_required: True for signed items; False for the audit log and certificate, whose
        lack of a signature is not an error (a signature they carry must still verify).
    """
    if report is None:
        return printable(problem)
    if not report.signed:
        return "no digital signature" if signature_required else None
    return printable("; ".join(report.problems)) or None


def summary(report: SignatureReport | None) -> str:
    """One line for the task log: the signer's CN and what is proven (or why not)."""
    if report is None:
        return "signature not verified (unreadable)"
    if not report.signed:
        return "no digital signature"
    parts = []
    for check in report.signatures:
        who = (check.signer.common_name or check.signer.subject) if check.signer else "unknown signer"
        if check.passed:
            scope = (
                "covers the whole document"
                if check.coverage == COVERAGE_ENTIRE_FILE
                else f"covers an earlier revision (later changes: {check.modification_level})"
            )
            trust = {True: ", trusted", False: ", NOT trusted", None: ""}[check.trusted]
            parts.append(f"signed by {who}: signature intact, {scope}{trust}")
        else:
            parts.append(f"signed by {who}: FAILED ({'; '.join(check.problems)})")
    return printable(" | ".join(parts))  # a certificate's CN comes from the PDF: one log line, always
