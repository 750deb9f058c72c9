"""The rules for waiting on envelopes, in one place (pure code: no Airflow, no network).

The sensor's ``poke``, the trigger's ``run`` and the sensor's ``execute_complete`` all go through
these functions, so "done", "failed" and "not yet" mean the same thing in every mode:

1. :func:`normalize_envelope_ids` turns what the user (or an upstream XCom) gave into a list of ids
   (:mod:`._inputs`).
2. :func:`snapshot` turns the envelopes the hook read into JSON-safe :class:`EnvelopeState` records
   (an id the service did not return becomes a *deleted* state; :mod:`._state`).
3. :func:`evaluate` decides: every envelope at the target status is a success; any envelope deleted,
   in a failure status, or in a terminal status that is not the target is a failure (it can never
   change again, so waiting or retrying would not help); anything else is "waiting" (here).
4. :func:`classify_error` says whether a hook error is transient (poll again later) or permanent
   (:mod:`._errors`).

Callers import all of them from this module. Messages name the envelope and its status, and for a
rejection the rejecting recipient and their ``rejectionReason``. They never contain the API key
(nothing here ever sees it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from airflow_provider_docsign.sensors._errors import classify_error, describe_error, read_error_message
from airflow_provider_docsign.sensors._inputs import normalize_envelope_ids, normalize_statuses
from airflow_provider_docsign.sensors._state import EnvelopeState, Expiry, Rejection, snapshot
from airflow_provider_docsign.service.models import TERMINAL_STATUSES, EnvelopeStatus

__all__ = [
    "EVENT_STATUSES",
    "ON_EXPIRED",
    "EnvelopeState",
    "Expiry",
    "Outcome",
    "Rejection",
    "Verdict",
    "classify_error",
    "describe_error",
    "evaluate",
    "normalize_envelope_ids",
    "normalize_statuses",
    "read_error_message",
    "snapshot",
]

Outcome = Literal["success", "failure", "waiting"]

#: Every ``status`` a :class:`~airflow_provider_docsign.triggers.DocsignEnvelopeTrigger` event can have
#: (``settled``: a batch wait's envelopes are all settled; see :mod:`._batch`).
EVENT_STATUSES = ("success", "failure", "timeout", "error", "settled")

#: What a wait does when a recipient's signing link has expired: ``fail`` at once, or keep ``wait``-ing.
ON_EXPIRED = ("fail", "wait")

#: How to renew an expired link, quoted in every expiry message.
RENEW_HINT = (
    "renew the link with DocsignRemindRecipientsOperator(envelope_id=..., only_expired=True) "
    "(POST /envelope/redistribute), or cancel the envelope"
)


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
