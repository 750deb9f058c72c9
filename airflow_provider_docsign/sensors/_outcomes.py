"""The metrics of a finished single wait: each envelope's outcome once, and its time to sign.

Called by :class:`~.envelope.DocsignEnvelopeSensor` when its verdict is final (a poke that ends the wait,
or the trigger's event handled on the worker), so an outcome is counted once per envelope and run of the
task, never per poke. Nothing here runs, and no request is made for it, when Airflow sends no metrics.

The time to sign is ``service/turnaround.py``'s: from the audit log's first ``DOCUMENT_SENT`` to the last
signature. The audit log is read oldest first and at most :data:`AUDIT_PAGES` pages of it (the sending
is on the first page of any envelope that has not been sent and recalled over and over); an envelope
whose sending is not found there gets no time to sign, never a guessed one.

A batch wait on a campaign's result table (:func:`report_batch`) times its completed envelopes from
each row's ``sent_at`` instead: the table it already read says when the campaign sent each one.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign import metrics
from airflow_provider_docsign.hooks._endpoints import PAGE_SIZE
from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.service.expiry import parse_timestamp
from airflow_provider_docsign.service.models import EnvelopeStatus

if TYPE_CHECKING:
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.sensors._batch import Outcome
    from airflow_provider_docsign.sensors._state import EnvelopeState

log = logging.getLogger(__name__)

#: The most audit-log pages read for one envelope's send time.
AUDIT_PAGES = 2
#: The most completed envelopes of one wait whose time to sign is read (two requests and more each).
MAX_TIMED = 20

_OUTCOMES = {
    EnvelopeStatus.COMPLETED.value: "completed",
    EnvelopeStatus.REJECTED.value: "rejected",
    EnvelopeStatus.CANCELLED.value: "cancelled",
}


def report(hook: DocsignHook, conn_id: str, states: Sequence[EnvelopeState]) -> None:
    """Count each envelope's outcome and send the time to sign of the completed ones (metrics on only).

    :param hook: The sensor's hook (the envelope and its audit log are read with it).
    :param conn_id: The connection id (a tag).
    :param states: The final states of the wait's envelopes.
    """
    if not metrics.enabled():
        return
    completed: list[str] = []
    for state in states:
        outcome = _OUTCOMES.get(state.status or "")
        if outcome is None and state.expired and state.status == EnvelopeStatus.PENDING.value:
            outcome = "expired"
        if outcome is None or state.deleted:
            continue
        metrics.envelopes(outcome, conn_id)
        if outcome == "completed":
            completed.append(state.envelope_id)
    for envelope_id in completed[:MAX_TIMED]:
        try:
            seconds = seconds_to_sign(hook, envelope_id)
        except Exception as error:  # a metric never fails the wait
            log.debug("No time to sign for envelope %s: %s", envelope_id, type(error).__name__)
            continue
        metrics.time_to_sign(conn_id, seconds, "audit")


def seconds_to_sign(hook: DocsignHook, envelope_id: str) -> float | None:
    """The envelope's time to sign, its send time read from at most :data:`AUDIT_PAGES` audit pages."""
    envelope = hook.get_envelope(envelope_id)
    entries = hook.get_audit_log(envelope_id, oldest_first=True)
    try:
        sent_at = _first_sent(itertools.islice(entries, AUDIT_PAGES * PAGE_SIZE))
    finally:
        close = getattr(entries, "close", None)
        if close is not None:
            close()  # no further page is requested
    sent = turnaround.sent(audit=sent_at, now=datetime.now(timezone.utc))
    return turnaround.seconds_to_sign(envelope, sent)


def _first_sent(entries: Any) -> datetime | None:
    """The first ``DOCUMENT_SENT``'s time (oldest first: the first one found ends the read)."""
    for entry in entries:
        found = turnaround.audit_time([entry], "DOCUMENT_SENT")
        if found is not None:
            return found
    return None


def report_batch(conn_id: str, outcomes: Sequence[Outcome], sent_at: Mapping[str, Any] | None = None) -> None:
    """Count each envelope's outcome of a settled batch wait, and time the completed ones of a campaign.

    A campaign's envelope was sent at its row's ``sent_at`` (the result table the wait read): its time
    to sign is from there to the last signature the wait's own read of the envelope shows, sent as
    ``docsign.time_to_sign`` with ``source=campaign``. No request is made for it. A wait on
    ``envelope_ids`` has no send time for its envelopes and sends no time to sign, never a guessed one.

    :param conn_id: The connection id (a tag).
    :param outcomes: Every envelope's outcome (``COMPLETED``, ``REJECTED``, ``EXPIRED``...).
    :param sent_at: Each envelope's row ``sent_at``, by envelope id (a result table's wait only).
    """
    if not metrics.enabled():
        return
    counts: dict[str, int] = {}
    for outcome in outcomes:
        name = _OUTCOMES.get(outcome.status) or ("expired" if outcome.status == "EXPIRED" else None)
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    for name, count in counts.items():
        metrics.envelopes(name, conn_id, count)
    if not sent_at:
        return
    now = datetime.now(timezone.utc)
    for outcome in outcomes:
        seconds = campaign_seconds_to_sign(outcome, sent_at.get(outcome.envelope_id), now)
        if seconds is not None:
            metrics.time_to_sign(conn_id, seconds, "campaign")


def campaign_seconds_to_sign(outcome: Outcome, sent_at: Any, now: datetime) -> float | None:
    """A campaign envelope's time to sign: from its row's ``sent_at`` to the last signature the wait saw.

    ``None`` unless the envelope completed and both times are known (``service/turnaround.py``'s rules:
    a ``sent_at`` that is not a time, or is in the future, is not believed).

    :param outcome: The envelope's outcome (its ``signed_at`` from the wait's own read).
    :param sent_at: The row's ``sent_at`` as read (ISO text or a datetime), or ``None``.
    :param now: The time a future ``sent_at`` is judged against.
    """
    if outcome.status != EnvelopeStatus.COMPLETED.value or outcome.signed_at is None:
        return None
    sent = turnaround.sent(campaign=sent_at, now=now)
    return turnaround.seconds_between(sent, parse_timestamp(outcome.signed_at))
