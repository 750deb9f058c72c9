"""What the user asked to wait on, checked before anything is sent: envelope ids and statuses.

:func:`normalize_envelope_ids` turns what the user (or an upstream XCom) gave into a list of ids, and
:func:`normalize_statuses` checks the target and failure statuses against the service's. Both raise
:class:`ValueError` naming the bad entry (pure code: no Airflow, no network).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_docsign.service.models import EnvelopeStatus

__all__ = ["normalize_envelope_ids", "normalize_statuses"]

_MAX_ID_LENGTH = 255


def _parse_string_list(text: str, where: str) -> Any:
    """A list rendered to text by Jinja (JSON, or Python's repr without native rendering)."""
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError):
            continue
    raise ValueError(
        f"{where} rendered to the text {text[:80]!r}, which is not a list of envelope ids; pass a list "
        "(for example the XComArg of the create task) or set render_template_as_native_obj=True on the DAG"
    )


def _one_id(value: Any, where: str) -> str:
    if isinstance(value, Mapping):
        for key in ("envelope_id", "id"):
            if key in value:
                return _one_id(value[key], f"{where}[{key!r}]")
        raise ValueError(
            f"{where} is a mapping without an 'envelope_id' key (keys: {sorted(map(str, value))[:10]}); "
            "pass envelope ids, or the dicts returned by DocsignCreateEnvelopeOperator"
        )
    if not isinstance(value, str) or isinstance(value, bool):
        raise ValueError(
            f"{where} must be an envelope id string such as 'envelope_abc123', got {type(value).__name__} "
            f"{value!r}"[:300]
        )
    text = value.strip()
    if not text:
        raise ValueError(f"{where} is an empty envelope id")
    if len(text) > _MAX_ID_LENGTH or any(c.isspace() or c in "/?#" for c in text):
        raise ValueError(f"{where} is not a valid envelope id: {text[:80]!r}")
    return text


def normalize_envelope_ids(envelope_id: Any = None, envelope_ids: Any = None) -> list[str]:
    """Return the envelope ids to wait on, validated, de-duplicated, in their first-seen order.

    :param envelope_id: One envelope id (or a dict with ``envelope_id``, as the create operator returns).
    :param envelope_ids: Many ids: a list or any iterable (for example the XCom of a mapped create task)
        of ids or of dicts with ``envelope_id``; a list rendered to text by Jinja is parsed back.
    :raises ValueError: naming the position of the first bad entry; nothing is sent to the service.
    """
    if envelope_id is not None and envelope_ids is not None:
        raise ValueError("pass either envelope_id or envelope_ids, not both")
    if envelope_id is None and envelope_ids is None:
        raise ValueError("pass envelope_id or envelope_ids: there is no envelope to wait for")
    if envelope_id is not None:
        return [_one_id(envelope_id, "envelope_id")]

    values: Any = envelope_ids
    if isinstance(values, str):
        values = _parse_string_list(values, "envelope_ids") if values.lstrip()[:1] in "[(" else [values]
    if isinstance(values, Mapping) or not isinstance(values, Iterable):
        values = [values]
    ids: list[str] = []
    seen: set[str] = set()
    for index, value in enumerate(values):
        one = _one_id(value, f"envelope_ids[{index}]")
        if one not in seen:
            seen.add(one)
            ids.append(one)
    if not ids:
        raise ValueError("envelope_ids is empty: there is no envelope to wait for")
    return ids


def normalize_statuses(target_status: Any, failure_statuses: Any) -> tuple[str, list[str]]:
    """Validate ``target_status`` and ``failure_statuses`` against the service's statuses.

    :param target_status: The status every envelope must reach, e.g. ``"COMPLETED"``.
    :param failure_statuses: Statuses that fail the wait at once, e.g. ``("REJECTED", "CANCELLED")``.
    :return: ``(target, failures)`` as plain upper-case strings (JSON-safe).
    :raises ValueError: for an unknown status, or a target that is also a failure status.
    """
    known = [s.value for s in EnvelopeStatus]

    def one(value: Any, where: str) -> str:
        text = value.value if isinstance(value, EnvelopeStatus) else str(value).strip().upper()
        if text not in known:
            raise ValueError(f"{where} {value!r} is not an envelope status; use one of {known}")
        return text

    target = one(target_status, "target_status")
    if isinstance(failure_statuses, str | EnvelopeStatus):
        failure_statuses = [failure_statuses]
    failures: list[str] = []
    for value in failure_statuses or ():
        status = one(value, "failure_statuses entry")
        if status not in failures:
            failures.append(status)
    if target in failures:
        raise ValueError(f"target_status {target} is also listed in failure_statuses {failures}")
    return target, failures
