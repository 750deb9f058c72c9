"""The rules for waiting on envelopes, in one place (pure code: no Airflow, no network).

The sensor's ``poke``, the trigger's ``run`` and the sensor's ``execute_complete`` all go through
these functions, so "done", "failed" and "not yet" mean the same thing in every mode:

1. :func:`normalize_envelope_ids` turns what the user (or an upstream XCom) gave into a list of ids.
2. :func:`snapshot` turns the envelopes the hook read into JSON-safe :class:`EnvelopeState` records
   (an id the service did not return becomes a *deleted* state).
3. :func:`evaluate` decides: every envelope at the target status is a success; any envelope deleted,
   in a failure status, or in a terminal status that is not the target is a failure (it can never
   change again, so waiting or retrying would not help); anything else is "waiting".
4. :func:`classify_error` says whether a hook error is transient (poll again later) or permanent.

Messages name the envelope and its status, and for a rejection the rejecting recipient and their
``rejectionReason``. They never contain the API key (nothing here ever sees it).
"""

from __future__ import annotations

import ast
import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from airflow_provider_docsign._text import printable
from airflow_provider_docsign.exceptions import (
    DocsignAPIError,
    DocsignAuthError,
    DocsignError,
    DocsignNotFoundError,
    DocsignRateLimitError,
    DocsignServerError,
)
from airflow_provider_docsign.service.expiry import expired_recipients, mask_email
from airflow_provider_docsign.service.models import TERMINAL_STATUSES, Envelope, EnvelopeStatus

__all__ = [
    "EVENT_STATUSES",
    "ON_EXPIRED",
    "EnvelopeState",
    "Expiry",
    "Outcome",
    "Rejection",
    "Verdict",
    "classify_error",
    "evaluate",
    "normalize_envelope_ids",
    "normalize_statuses",
    "read_error_message",
    "snapshot",
]

Outcome = Literal["success", "failure", "waiting"]

#: Every ``status`` a :class:`~airflow_provider_docsign.triggers.DocsignEnvelopeTrigger` event can have.
EVENT_STATUSES = ("success", "failure", "timeout", "error")

_MAX_ID_LENGTH = 255

#: What a wait does when a recipient's signing link has expired: ``fail`` at once, or keep ``wait``-ing.
ON_EXPIRED = ("fail", "wait")

#: How to renew an expired link, quoted in every expiry message.
RENEW_HINT = (
    "renew the link with DocsignRemindRecipientsOperator(envelope_id=..., only_expired=True) "
    "(POST /envelope/redistribute), or cancel the envelope"
)


# --------------------------------------------------------------------------------------------- inputs
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


# ---------------------------------------------------------------------------------------------- state
@dataclass(frozen=True)
class Rejection:
    """A recipient who rejected an envelope.

    :param recipient_id: The recipient id.
    :param name: The recipient's display name.
    :param email: The recipient's e-mail address.
    :param reason: The ``rejectionReason`` they gave (``None`` if none was recorded).
    """

    recipient_id: int | str | None
    name: str | None
    email: str | None
    reason: str | None

    def describe(self) -> str:
        """``recipient 3 'Sam Signer' <sam@example.com> with reason: 'Wrong amount'``."""
        who = f"recipient {self.recipient_id}"
        if self.name:
            who += f" {self.name!r}"
        if self.email:
            who += f" <{printable(self.email, 254)}>"
        reason = repr(self.reason) if self.reason else "(no reason given)"
        return f"{who} with reason: {reason}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "recipient_id": self.recipient_id,
            "name": self.name,
            "email": self.email,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Expiry:
    """A recipient whose signing link has expired (unsigned, not CC, ``expiresAt`` in the past).

    :param recipient_id: The recipient id.
    :param role: ``SIGNER``, ``APPROVER``, ``VIEWER`` or ``ASSISTANT``.
    :param email: The recipient's e-mail, masked (``e***@example.com``).
    :param expires_at: When the link expired (the service's ISO timestamp).
    """

    recipient_id: int | str | None
    role: str | None
    email: str | None
    expires_at: str | None

    def describe(self) -> str:
        """``recipient 41 (SIGNER, e***@peer.test), link expired at 2026-11-23T12:02:49.855Z``."""
        return (
            f"recipient {self.recipient_id} ({self.role or 'unknown role'}, {self.email or '(no e-mail)'}), "
            f"link expired at {self.expires_at}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (the e-mail is already masked)."""
        return {
            "recipient_id": self.recipient_id,
            "role": self.role,
            "email": self.email,
            "expires_at": self.expires_at,
        }


@dataclass(frozen=True)
class EnvelopeState:
    """What one poll learned about one envelope (JSON-safe through :meth:`to_dict`).

    :param envelope_id: The envelope id.
    :param status: Its status, or ``None`` when the service did not return it (deleted or not visible).
    :param completed_at: ``completedAt`` (set for COMPLETED, REJECTED and CANCELLED).
    :param item_ids: The envelope item ids, in ``order``.
    :param deleted: Whether the envelope is gone (not returned) or soft-deleted (``deletedAt`` set).
    :param rejections: The recipients who rejected it.
    :param expired: The recipients whose signing link has expired (the envelope stays PENDING).
    """

    envelope_id: str
    status: str | None
    completed_at: str | None = None
    item_ids: tuple[str, ...] = ()
    deleted: bool = False
    rejections: tuple[Rejection, ...] = field(default=())
    expired: tuple[Expiry, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, as carried in trigger events."""
        return {
            "envelope_id": self.envelope_id,
            "status": self.status,
            "completed_at": self.completed_at,
            "item_ids": list(self.item_ids),
            "deleted": self.deleted,
            "rejections": [r.to_dict() for r in self.rejections],
            "expired": [e.to_dict() for e in self.expired],
        }

    def to_xcom(self) -> dict[str, Any]:
        """The sensor's XCom entry: id, status, completedAt and item ids in order (no personal data)."""
        return {
            "envelope_id": self.envelope_id,
            "status": self.status,
            "completed_at": self.completed_at,
            "item_ids": list(self.item_ids),
        }

    @classmethod
    def from_dict(cls, data: Any) -> EnvelopeState:
        """Rebuild a state from :meth:`to_dict` output (for example a trigger event), checking types.

        :raises ValueError: when ``data`` does not have the expected shape.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"an envelope state must be a mapping, got {type(data).__name__}")
        envelope_id = data.get("envelope_id")
        status = data.get("status")
        completed_at = data.get("completed_at")
        item_ids = data.get("item_ids", [])
        rejections = data.get("rejections", [])
        expired = data.get("expired", [])
        if not isinstance(envelope_id, str) or not envelope_id:
            raise ValueError("an envelope state has no envelope_id")
        if status is not None and not isinstance(status, str):
            raise ValueError(f"envelope {envelope_id}: status must be a string or null")
        if completed_at is not None and not isinstance(completed_at, str):
            raise ValueError(f"envelope {envelope_id}: completed_at must be a string or null")
        if not isinstance(item_ids, list) or not all(isinstance(i, str) for i in item_ids):
            raise ValueError(f"envelope {envelope_id}: item_ids must be a list of strings")
        if not isinstance(rejections, list) or not all(isinstance(r, Mapping) for r in rejections):
            raise ValueError(f"envelope {envelope_id}: rejections must be a list of mappings")
        if not isinstance(expired, list) or not all(isinstance(e, Mapping) for e in expired):
            raise ValueError(f"envelope {envelope_id}: expired must be a list of mappings")
        return cls(
            envelope_id=envelope_id,
            status=status,
            completed_at=completed_at,
            item_ids=tuple(item_ids),
            deleted=bool(data.get("deleted", False)),
            rejections=tuple(
                Rejection(
                    recipient_id=r.get("recipient_id"),
                    name=r.get("name"),
                    email=r.get("email"),
                    reason=r.get("reason"),
                )
                for r in rejections
            ),
            expired=tuple(
                Expiry(
                    recipient_id=e.get("recipient_id"),
                    role=e.get("role"),
                    email=e.get("email"),
                    expires_at=e.get("expires_at"),
                )
                for e in expired
            ),
        )


def _status_text(status: Any) -> str | None:
    if status is None:
        return None
    return status.value if isinstance(status, EnvelopeStatus) else str(status)


def snapshot(
    envelopes: Iterable[Envelope], envelope_ids: Sequence[str], *, now: datetime | None = None
) -> list[EnvelopeState]:
    """One :class:`EnvelopeState` per requested id, in the requested order.

    ``POST /envelope/get-many`` silently leaves out ids it cannot find (deleted, or not visible to the
    key) instead of answering 404, so a requested id missing from the answer is a *deleted* state.
    A soft-deleted envelope (``deletedAt`` set) counts as deleted too.

    A PENDING envelope whose unsigned, non-CC recipient has an ``expiresAt`` before ``now`` lists
    that recipient in ``expired`` (the real service leaves such an envelope PENDING).

    :param envelopes: What the hook returned.
    :param envelope_ids: The ids that were asked for.
    :param now: The time to judge expiry against (default: now, UTC).
    """
    by_id = {envelope.id: envelope for envelope in envelopes}
    states: list[EnvelopeState] = []
    for envelope_id in envelope_ids:
        envelope = by_id.get(envelope_id)
        if envelope is None:
            states.append(EnvelopeState(envelope_id=envelope_id, status=None, deleted=True))
            continue
        rejections = tuple(
            Rejection(recipient_id=r.id, name=r.name, email=r.email, reason=r.rejection_reason)
            for r in envelope.recipients
            if (r.signing_status or "").upper() == "REJECTED"
        )
        status = _status_text(envelope.status)
        expired: tuple[Expiry, ...] = ()
        if status == EnvelopeStatus.PENDING.value:
            expired = tuple(
                Expiry(recipient_id=r.id, role=r.role, email=mask_email(r.email), expires_at=r.expires_at)
                for r in expired_recipients(envelope.recipients, now)
            )
        states.append(
            EnvelopeState(
                envelope_id=envelope_id,
                status=status,
                completed_at=envelope.completed_at,
                item_ids=tuple(item.id for item in envelope.items),
                deleted=bool(envelope.deleted_at),
                rejections=rejections,
                expired=expired,
            )
        )
    return states


# -------------------------------------------------------------------------------------------- verdict
@dataclass(frozen=True)
class Verdict:
    """The decision for one poll.

    :param outcome: ``"success"`` (every envelope at the target), ``"failure"`` (at least one can never
        reach it) or ``"waiting"``.
    :param states: The states the decision was made from, in the requested order.
    :param problems: One line per failed envelope.
    :param message: A summary a person can act on.
    :param expired: One entry per expired recipient that failed the wait (``on_expired="fail"``):
        ``{"envelope_id", "recipient_id", "role", "email" (masked), "expires_at"}``.
    """

    outcome: Outcome
    states: tuple[EnvelopeState, ...]
    problems: tuple[str, ...]
    message: str
    expired: tuple[dict[str, Any], ...] = ()

    @property
    def done(self) -> bool:
        """Whether waiting is over (success or failure)."""
        return self.outcome != "waiting"

    def xcom_value(self) -> list[dict[str, Any]]:
        """The sensor's return value: one entry per envelope, in the requested order."""
        return [state.to_xcom() for state in self.states]

    def to_event(self) -> dict[str, Any]:
        """The JSON-safe payload of the trigger's single event for a success or a failure."""
        return {
            "status": self.outcome,
            "envelope_ids": [s.envelope_id for s in self.states],
            "envelopes": [s.to_dict() for s in self.states],
            "message": self.message,
            "expired": [dict(e) for e in self.expired],
        }


def _problem(state: EnvelopeState, target: str, failures: Sequence[str]) -> str | None:
    name = f"envelope {state.envelope_id}"
    if state.deleted:
        if state.status:
            return f"{name} ({state.status}) was deleted (deletedAt is set)"
        return (
            f"{name} was not found: it was deleted, or the API key cannot see it "
            "(HTTP 404 / missing from the POST /envelope/get-many answer)"
        )
    status = state.status
    if status is None or status == target:
        return None
    if status in failures or status in {s.value for s in TERMINAL_STATUSES}:
        text = f"{name} is {status}"
        if status == EnvelopeStatus.REJECTED.value:
            if state.rejections:
                text += ": rejected by " + "; ".join(r.describe() for r in state.rejections)
            else:
                text += ": the service recorded no rejecting recipient"
        elif status == EnvelopeStatus.CANCELLED.value:
            text += ": the envelope was cancelled (see its audit log for the reason)"
        if status not in failures:
            text += f"; that status is terminal, so it can never become {target}"
        return text
    return None


def _expiry_problem(state: EnvelopeState) -> str | None:
    if not state.expired or state.deleted or state.status != EnvelopeStatus.PENDING.value:
        return None
    who = "; ".join(e.describe() for e in state.expired)
    return f"envelope {state.envelope_id} is PENDING but a signing link has expired: {who}"


def evaluate(
    states: Sequence[EnvelopeState],
    target_status: str,
    failure_statuses: Sequence[str],
    on_expired: str = "fail",
) -> Verdict:
    """Decide success, failure or waiting for one poll over ``states``.

    :param states: One state per requested envelope (see :func:`snapshot`).
    :param target_status: The status every envelope must reach.
    :param failure_statuses: Statuses that fail at once. Any other terminal status that is not the
        target fails too, because it can never change again.
    :param on_expired: ``"fail"`` (default): a PENDING envelope with an expired signing link fails
        the wait at once, since it cannot complete until the link is renewed. ``"wait"``: keep
        waiting (for teams whose escalation DAG renews links).
    """
    states = tuple(states)
    if on_expired not in ON_EXPIRED:
        raise ValueError(f"on_expired must be one of {list(ON_EXPIRED)}, got {on_expired!r}")
    problems = [p for p in (_problem(s, target_status, failure_statuses) for s in states) if p]
    expired: list[dict[str, Any]] = []
    if on_expired == "fail":
        for state in states:
            text = _expiry_problem(state)
            if text:
                problems.append(text)
                expired += [{"envelope_id": state.envelope_id, **e.to_dict()} for e in state.expired]
    total = len(states)
    if problems:
        head = (
            f"{len(problems)} of {total} envelope(s) can no longer reach {target_status}; "
            "retrying will not help"
        )
        message = head + ":\n  - " + "\n  - ".join(problems)
        if expired:
            message += f"\nTo go on: {RENEW_HINT}."
        return Verdict("failure", states, tuple(problems), message, tuple(expired))
    reached = sum(1 for s in states if s.status == target_status)
    if total and reached == total:
        return Verdict("success", states, (), f"all {total} envelope(s) reached {target_status}")
    counts: dict[str, int] = {}
    for state in states:
        key = state.status or "UNKNOWN"
        counts[key] = counts.get(key, 0) + 1
    summary = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
    return Verdict("waiting", states, (), f"{reached} of {total} envelope(s) at {target_status} ({summary})")


# --------------------------------------------------------------------------------------------- errors
ErrorKind = Literal["transient", "auth", "not_found", "permanent"]

#: HTTP statuses that mean "try again later".
_TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


def classify_error(error: BaseException) -> ErrorKind:
    """Whether a read error means "not yet" (``transient``) or must fail the wait now.

    - ``auth``: 401/403, the key is wrong or was revoked; polling again cannot fix it.
    - ``not_found``: 404 on the read itself (for ``get-many`` this usually means a wrong base URL).
    - ``permanent``: any other 4xx (the request itself is wrong) or an error that is not the service's.
    - ``transient``: 429, 5xx, timeouts and connection errors, after the hook's own retries.

    :param error: The exception the hook raised.
    """
    if isinstance(error, DocsignAuthError):
        return "auth"
    if isinstance(error, DocsignNotFoundError):
        return "not_found"
    if isinstance(error, DocsignRateLimitError | DocsignServerError):
        return "transient"
    if isinstance(error, DocsignAPIError):
        if error.status_code is None or error.status_code in _TRANSIENT_STATUS:
            return "transient"
        return "permanent"
    if isinstance(error, DocsignError):
        # Not an HTTP error status: a dropped connection, a timeout or a garbled answer that the
        # hook wrapped. Reads are safe to repeat, so poll again.
        return "transient"
    if isinstance(error, OSError | asyncio.TimeoutError | TimeoutError):
        return "transient"
    module = type(error).__module__.split(".", 1)[0]
    if module in {"requests", "urllib3", "httpx", "httpcore"}:
        # Transport errors of the HTTP clients the hook uses (connection refused, reset, read timeout).
        return "transient"
    return "permanent"


def read_error_message(error: BaseException, *, count: int, conn_id: str) -> str:
    """The failure message for a read error that polling again cannot fix (same in every mode).

    :param error: The exception the hook raised.
    :param count: How many envelopes were being read.
    :param conn_id: The Airflow connection id, so the reader knows which connection to fix.
    """
    kind = classify_error(error)
    if kind == "auth":
        return (
            f"The signing service refused the API key of connection {conn_id!r}; check the connection's "
            f"password (the team API key). {describe_error(error)}"
        )
    if kind == "not_found":
        return (
            f"Reading {count} envelope(s) answered 404; check that the base URL of connection {conn_id!r} "
            f"ends in /api/v2. {describe_error(error)}"
        )
    return f"Reading {count} envelope(s) failed and polling again cannot help: {describe_error(error)}"


def describe_error(error: BaseException) -> str:
    """A one-line description of a hook error for logs and failure messages (no response bodies)."""
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}"[:500]
