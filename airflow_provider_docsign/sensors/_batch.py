"""The rules of a batch wait: when an envelope is settled, and whether the batch passes (pure code).

A *batch wait* (a campaign's result table, or ``envelope_ids`` with ``max_unsigned``) does not stop at
the first envelope that can no longer be signed. It waits until every envelope is **settled**, then
counts:

1. :func:`settle` gives one envelope's final :class:`Outcome`, or ``None`` while it can still change:
   the target status (``COMPLETED``), ``REJECTED``, ``CANCELLED`` (or another terminal status that is
   not the target), ``DELETED`` (not found, or ``deletedAt`` set) and ``EXPIRED`` (PENDING, and an
   unsigned non-CC recipient's signing link expired more than ``expired_grace`` seconds ago; never
   with ``on_expired="wait"``, whose teams renew links). DRAFT and PENDING are not settled.
2. :func:`judge` counts the outcomes once all are settled: the batch passes unless more than
   ``max_unsigned`` envelopes did not reach the target.

:func:`parse_max_unsigned` and :func:`parse_grace` check the two parameters when the DAG is parsed.
Reasons name the recipient by id, role and masked e-mail (``s***@example.com``): they go to XComs,
logs and the report, never the full address.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_provider_docsign._text import printable
from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.service.expiry import expired_recipients
from airflow_provider_docsign.service.models import TERMINAL_STATUSES, Envelope, EnvelopeStatus
from airflow_provider_docsign.service.unsigned import expired_reason, rejection_reason

__all__ = [
    "DELETED",
    "EXPIRED",
    "BatchVerdict",
    "Outcome",
    "allowance",
    "judge",
    "parse_grace",
    "parse_max_unsigned",
    "settle",
    "settle_many",
]

#: The final status of an envelope that is gone (404, or ``deletedAt`` set).
DELETED = "DELETED"
#: The final status of a PENDING envelope whose signing link expired more than the grace ago.
EXPIRED = "EXPIRED"
#: How many not-completed envelopes a failure message names.
FIRST_FEW = 5

_TERMINAL = frozenset(s.value for s in TERMINAL_STATUSES)


# ----------------------------------------------------------------------------------------- inputs
def parse_max_unsigned(value: Any) -> int | float | None:
    """Check ``max_unsigned``: ``None``, a count (an ``int`` >= 0) or a fraction (a ``float`` in (0, 1)).

    :param value: What the DAG passed.
    :raises ValueError: for anything else (a bool, a negative count, ``1.5``, ``"ten"``), naming it.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(
            f"max_unsigned must be a count (an int >= 0) or a fraction (a float between 0 and 1), "
            f"not {type(value).__name__} {value!r}"[:300]
        )
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"max_unsigned must be a count >= 0, not {value}")
        return value
    if not 0.0 < value < 1.0:  # also refuses nan and the infinities
        raise ValueError(
            f"max_unsigned {value!r} is a float, so a fraction of the envelopes: it must be between 0 and "
            "1 (exclusive); write a count as an int (max_unsigned=10), or none allowed as 0"
        )
    return float(value)


def parse_grace(value: Any, name: str = "expired_grace") -> float:
    """Seconds from seconds (``int``/``float`` >= 0) or a ``timedelta`` (a pendulum ``Duration`` too).

    :param value: What the DAG passed.
    :param name: The parameter's name, for the error message.
    :raises ValueError: for a negative, infinite or non-numeric value.
    """
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise ValueError(f"{name} must be seconds or a timedelta, not {type(value).__name__} {value!r}"[:300])
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{name} must be 0 or more seconds, not {value!r}")
    return seconds


def allowance(max_unsigned: int | float | None, total: int) -> int:
    """How many of ``total`` envelopes may end unsigned: the count, or the fraction of ``total`` rounded down.

    :param max_unsigned: What :func:`parse_max_unsigned` returned (``None``: none allowed).
    :param total: How many envelopes the wait covers.
    """
    if max_unsigned is None:
        return 0
    if isinstance(max_unsigned, int):
        return max_unsigned
    # round() first: 0.1 * 100 is 10.000000000000002 and 0.29 * 100 is 28.999999999999996.
    return math.floor(round(max_unsigned * total, 9))


# ---------------------------------------------------------------------------------------- outcome
@dataclass(frozen=True)
class Outcome:
    """An envelope's final state in a batch wait.

    :param envelope_id: The envelope id.
    :param status: The target status, ``REJECTED``, ``CANCELLED``, ``DELETED``, ``EXPIRED`` (or another
        terminal status when the target is not ``COMPLETED``).
    :param reason: Why it did not reach the target (``None`` when it did).
    :param completed_at: The service's ``completedAt`` (set for COMPLETED, REJECTED and CANCELLED).
    :param signed_at: When the last recipient who had to act signed (ISO, UTC), for a COMPLETED
        envelope (:func:`~airflow_provider_docsign.service.turnaround.last_signature`); else ``None``.
    """

    envelope_id: str
    status: str
    reason: str | None = None
    completed_at: str | None = None
    signed_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "envelope_id": self.envelope_id,
            "status": self.status,
            "reason": self.reason,
            "completed_at": self.completed_at,
        }


def _status_text(envelope: Envelope) -> str:
    status = envelope.status
    return status.value if isinstance(status, EnvelopeStatus) else str(status)


def settle(
    envelope: Envelope | None,
    envelope_id: str,
    *,
    target_status: str = "COMPLETED",
    expired_grace: float = 0.0,
    on_expired: str = "fail",
    now: datetime | None = None,
) -> Outcome | None:
    """The envelope's final :class:`Outcome`, or ``None`` while it may still reach the target.

    :param envelope: What the service answered for ``envelope_id`` (``None``: it left the id out).
    :param envelope_id: The id that was asked for.
    :param target_status: The status that counts as signed.
    :param expired_grace: Seconds an expired signing link is given (to be renewed) before the envelope
        counts as ``EXPIRED``.
    :param on_expired: ``"wait"``: an expired link never settles an envelope.
    :param now: The time to judge expiry against (default: now, UTC).
    """
    if envelope is None:
        return Outcome(
            envelope_id, DELETED, "not found: deleted, or the API key cannot see it (left out of get-many)"
        )
    status = _status_text(envelope)
    if envelope.deleted_at:
        return Outcome(envelope_id, DELETED, f"deleted (deletedAt is set; it was {status})")
    if status == target_status:
        signed_at = turnaround.iso(turnaround.last_signature(envelope))
        return Outcome(envelope_id, status, None, envelope.completed_at, signed_at)
    if status == EnvelopeStatus.REJECTED.value:
        return Outcome(envelope_id, status, rejection_reason(envelope), envelope.completed_at)
    if status == EnvelopeStatus.CANCELLED.value:
        reason = "cancelled (the envelope's audit log holds the reason)"
        return Outcome(envelope_id, status, reason, envelope.completed_at)
    if status in _TERMINAL:
        reason = f"{status} is terminal, so it can never become {target_status}"
        return Outcome(envelope_id, status, reason, envelope.completed_at)
    if status != EnvelopeStatus.PENDING.value or on_expired == "wait":
        return None
    moment = (now or datetime.now(timezone.utc)) - timedelta(seconds=expired_grace)
    expired = expired_recipients(envelope.recipients, moment)
    if not expired:
        return None
    return Outcome(envelope_id, EXPIRED, expired_reason(expired))


def settle_many(
    envelopes: Iterable[Envelope],
    envelope_ids: Sequence[str],
    **rules: Any,
) -> tuple[dict[str, Outcome], list[str]]:
    """:func:`settle` for every id read in one poll: ``(settled outcomes by id, ids still waiting)``.

    :param envelopes: What the service answered (ids it left out count as deleted).
    :param envelope_ids: The ids that were asked for.
    :param rules: ``target_status``, ``expired_grace``, ``on_expired``, ``now`` (see :func:`settle`).
    """
    by_id = {envelope.id: envelope for envelope in envelopes}
    settled: dict[str, Outcome] = {}
    waiting: list[str] = []
    for envelope_id in envelope_ids:
        outcome = settle(by_id.get(envelope_id), envelope_id, **rules)
        if outcome is None:
            waiting.append(envelope_id)
        else:
            settled[envelope_id] = outcome
    return settled, waiting


# ---------------------------------------------------------------------------------------- verdict
@dataclass(frozen=True)
class BatchVerdict:
    """The result of a batch wait whose envelopes are all settled.

    :param passed: Whether at most ``allowed`` envelopes did not reach the target.
    :param outcomes: Every envelope's outcome, in the order waited for.
    :param target_status: The status that counts as signed.
    :param allowed: How many envelopes may end unsigned (``max_unsigned`` as a count).
    """

    passed: bool
    outcomes: tuple[Outcome, ...]
    target_status: str
    allowed: int

    @property
    def completed(self) -> int:
        """How many envelopes reached the target."""
        return sum(1 for o in self.outcomes if o.status == self.target_status)

    @property
    def unsigned(self) -> int:
        """How many did not."""
        return len(self.outcomes) - self.completed

    @property
    def not_completed(self) -> list[Outcome]:
        """The outcomes that did not reach the target, in order."""
        return [o for o in self.outcomes if o.status != self.target_status]

    def by_status(self) -> dict[str, int]:
        """``{"COMPLETED": 92, "EXPIRED": 3, "REJECTED": 5}``: the target first, then by name."""
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            counts[outcome.status] = counts.get(outcome.status, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (kv[0] != self.target_status, kv[0])))

    def message(self, *, report: str | None = None, rows: Mapping[str, str | None] | None = None) -> str:
        """A summary a person can act on: counts, the allowance and the first few not completed.

        :param report: The report's URI, when one was written.
        :param rows: Row keys by envelope id, when the envelopes came from a result table.
        """
        total = len(self.outcomes)
        others = ", ".join(f"{n} {s}" for s, n in self.by_status().items() if s != self.target_status)
        head = f"{self.unsigned} of {total} envelope(s) did not reach {self.target_status}"
        if others:
            head += f" ({others})"
        head += f"; max_unsigned allows {self.allowed}"
        head += ": the batch passes" if self.passed else ": the batch fails"
        if report:
            head += f". Every envelope's outcome: {report}"
        missing = self.not_completed
        if not missing:
            return head
        lines = []
        for outcome in missing[:FIRST_FEW]:
            where = f" (row {printable(rows.get(outcome.envelope_id), 100)})" if rows else ""
            lines.append(f"envelope {outcome.envelope_id}{where} is {outcome.status}: {outcome.reason}")
        more = f"\n  ... and {len(missing) - FIRST_FEW} more" if len(missing) > FIRST_FEW else ""
        return head + "\n  - " + "\n  - ".join(lines) + more


def judge(outcomes: Sequence[Outcome], target_status: str, max_unsigned: int | float | None) -> BatchVerdict:
    """Count a settled batch: it passes unless more than ``max_unsigned`` did not reach the target.

    :param outcomes: One per envelope waited for, in order.
    :param target_status: The status that counts as signed.
    :param max_unsigned: A count, a fraction of ``len(outcomes)``, or ``None`` (none allowed).
    """
    outcomes = tuple(outcomes)
    allowed = allowance(max_unsigned, len(outcomes))
    unsigned = sum(1 for o in outcomes if o.status != target_status)
    return BatchVerdict(unsigned <= allowed, outcomes, target_status, allowed)
