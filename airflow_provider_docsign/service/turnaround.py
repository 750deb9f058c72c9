"""How fast contracts get signed: the one definition the UI, the metrics and the export share.

Pure code (no Airflow, no HTTP), beside :mod:`~airflow_provider_docsign.service.stalled`. Every number a
signing team reads about turnaround comes from here, so the Contracts page, the StatsD timer and a
query over the exported tables agree to the second.

**Sent.** The service keeps no send time on the envelope (no ``sentAt``; distribute writes an audit
entry ``DOCUMENT_SENT`` and nothing else). So "sent" is, in this order of trust (:func:`sent`):

1. ``audit``: the first ``DOCUMENT_SENT`` entry of the envelope's audit log, when it is already read
   (the export with ``read_sent_times``). The service's own clock; the only source for an envelope a
   person sent in the web app.
2. ``campaign``: a bulk send's ``sent_at`` for the row (its result table or checkpoint), written by the
   worker when the service answered the distribute.
3. ``task``: when a distribute task wrote its XCom (Airflow's clock, just after the service answered).

Sources 2 and 3 are later than 1 by the distribute request's latency (well under a second). An envelope
with none of them (sent by a person, audit log not read) has no send time: it is counted, never guessed.

**Time to sign**: from sent to the last signature, for a COMPLETED envelope only: the latest
``signedAt`` among the recipients who had to act (every role but CC) and signed. The service sets
``completedAt`` a moment later, after sealing; it stands in only when no ``signedAt`` is given.

**Time to first open**: from sent to the first ``DOCUMENT_OPENED`` audit entry (only where the audit log
is read: the service keeps ``readStatus`` but no time of opening).

**Funnel** (:func:`recipient_stage`, :func:`funnel`): each recipient who has to act (not CC) of an
envelope that left DRAFT, and whose turn has come (:func:`waits_for_turn`), in its furthest stage:
``signed``, ``rejected`` (``signingStatus``; the service sets ``signedAt`` on a rejection too, so it is
never read as a signature), ``expired`` (its link expired unsigned:
:func:`~airflow_provider_docsign.service.expiry.expired_recipients`), ``opened`` (``readStatus``
OPENED), else ``sent``. The funnel counts are cumulative: ``opened`` counts everyone who opened or went
further (signing or rejecting needs the document open).

**Percentiles** are nearest-rank (SQL ``percentile_disc``): the median and the 90th percentile are
values that occurred, the lower middle one for an even count.

**Signed share** (:func:`signed_share`): of the envelopes sent at least ``h`` hours ago, the share whose
last signature came within ``h`` hours of sending. Envelopes sent less than ``h`` hours ago are left out
of that point (they could still sign in time), so a campaign still running is not under-counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from airflow_provider_docsign.service.expiry import expired_recipients, parse_timestamp

#: Where a send time came from, most trusted first.
SENT_SOURCES = ("audit", "campaign", "task")
#: The stages of the funnel, in order (each counts those who reached it or went further).
STAGES = ("sent", "opened", "signed", "rejected", "expired")
#: The upper bounds (hours) of the time-to-sign distribution's bins; the last bin is open-ended.
HISTOGRAM_HOURS = (1.0, 6.0, 24.0, 72.0, 168.0, 336.0)
#: The points (hours since sending) of a campaign's signed-share table.
SHARE_HOURS = (1.0, 6.0, 24.0, 72.0, 168.0)


@dataclass(frozen=True)
class Sent:
    """When an envelope was sent, and how that is known.

    :param at: The moment (aware, UTC).
    :param source: ``audit``, ``campaign`` or ``task`` (see :data:`SENT_SOURCES`).
    """

    at: datetime
    source: str

    def to_dict(self) -> dict[str, str]:
        """``{"at": ISO text (UTC, milliseconds, Z), "source": ...}``."""
        return {"at": iso(self.at) or "", "source": self.source}


def iso(moment: datetime | None) -> str | None:
    """``2026-11-23T10:00:00.000Z`` (UTC, milliseconds), the service's own format; ``None`` for ``None``."""
    if moment is None:
        return None
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return parse_timestamp(value)


#: A send time later than "now" by more than this (clocks apart) is not believed (:func:`sent`).
CLOCK_SKEW_SECONDS = 300.0


def sent(
    *, audit: Any = None, campaign: Any = None, task: Any = None, now: datetime | None = None
) -> Sent | None:
    """The send time from the most trusted source given (each a datetime or ISO text, or ``None``).

    A value that is not a time, or (with ``now``) one later than ``now`` by more than
    :data:`CLOCK_SKEW_SECONDS` (a file that says an envelope was sent tomorrow), is not believed: the
    next source is read, and with none left the envelope has no send time.

    :param audit: The first ``DOCUMENT_SENT`` audit entry's time (:func:`audit_time`).
    :param campaign: A bulk send's ``sent_at`` for the row.
    :param task: When a distribute task of the envelope wrote its XCom.
    :param now: The time the send time is judged at (``None``: a future time is believed).
    """
    for source, value in zip(SENT_SOURCES, (audit, campaign, task), strict=True):
        moment = _time(value)
        if moment is None:
            continue
        if now is not None and (moment - now).total_seconds() > CLOCK_SKEW_SECONDS:
            continue
        return Sent(moment, source)
    return None


def audit_time(entries: Iterable[Mapping[str, Any]], event: str) -> datetime | None:
    """The earliest ``createdAt`` of the audit entries of type ``event`` (``DOCUMENT_SENT``...).

    :param entries: Audit-log entries as the service returns them (any order).
    :param event: The entry type.
    """
    found = [_time(e.get("createdAt")) for e in entries if isinstance(e, Mapping) and e.get("type") == event]
    times = [t for t in found if t is not None]
    return min(times) if times else None


def _status(envelope: Any) -> str:
    status = getattr(envelope, "status", None)
    return str(getattr(status, "value", status) or "").upper()


def _acts(recipient: Any) -> bool:
    return str(getattr(recipient, "role", "") or "").upper() != "CC"


def last_signature(envelope: Any) -> datetime | None:
    """When the last recipient who had to act signed, for a COMPLETED envelope; else ``None``.

    :param envelope: An envelope record (``status``, ``recipients``, ``completed_at``).
    """
    if _status(envelope) != "COMPLETED":
        return None
    times = [
        _time(r.signed_at)
        for r in getattr(envelope, "recipients", ()) or ()
        if _acts(r) and str(r.signing_status or "").upper() == "SIGNED"
    ]
    found = [t for t in times if t is not None]
    return max(found) if found else _time(getattr(envelope, "completed_at", None))


def seconds_between(start: datetime | Sent | None, end: datetime | None) -> float | None:
    """Seconds from ``start`` to ``end`` (milliseconds kept); ``None`` when either is unknown.

    A negative span (clocks apart: a task's time after the service's signature) is 0, never negative.
    """
    begin = start.at if isinstance(start, Sent) else start
    if begin is None or end is None:
        return None
    return round(max(0.0, (end - begin).total_seconds()), 3)


def seconds_to_sign(envelope: Any, sent_at: datetime | Sent | None) -> float | None:
    """Time to sign in seconds: from ``sent_at`` to :func:`last_signature`; ``None`` when either is unknown.

    :param envelope: An envelope record.
    :param sent_at: Its send time (:func:`sent`).
    """
    return seconds_between(sent_at, last_signature(envelope))


def waits_for_turn(recipient: Any, recipients: Iterable[Any]) -> bool:
    """Whether ``recipient`` waits for its turn in a sequential signing order (nothing reached it yet).

    It has not been sent to, opened or signed, and another recipient who has to act comes earlier in
    the order (a lower ``signingOrder``) and has not signed. The envelope listing carries no signing-order
    mode, so the recipients' own ``signingOrder`` decides: in a parallel order nobody waits.

    :param recipient: A recipient record.
    :param recipients: Every recipient of its envelope.
    """
    order = getattr(recipient, "signing_order", None)
    if not isinstance(order, int) or str(getattr(recipient, "read_status", "") or "").upper() == "OPENED":
        return False
    if str(getattr(recipient, "send_status", "") or "").upper() != "NOT_SENT":
        return False
    return any(
        _acts(other)
        and other is not recipient
        and isinstance(getattr(other, "signing_order", None), int)
        and other.signing_order < order
        and str(other.signing_status or "").upper() != "SIGNED"
        for other in recipients
    )


def recipient_stage(
    recipient: Any, envelope_status: str, now: datetime, recipients: Iterable[Any] = ()
) -> str | None:
    """A recipient's furthest funnel stage (:data:`STAGES`), or ``None`` when it is not in the funnel.

    Not in the funnel: CC recipients, every recipient of a DRAFT (nothing was sent), and one that waits
    for its turn in a sequential signing order (:func:`waits_for_turn`, judged against ``recipients``).
    ``sendStatus`` alone does not decide: the real service marks a recipient SENT only when it e-mailed
    the link, never with ``distributionMethod`` NONE (the sender hands the links out), so a NOT_SENT
    recipient of a sent envelope is in the funnel unless an earlier signer holds its turn.

    :param recipient: A recipient record (``role``, ``signing_status``, ``read_status``, ...).
    :param envelope_status: The envelope's status.
    :param now: The time link expiry is judged against.
    :param recipients: Every recipient of the envelope (for the signing order; empty: nobody waits).
    """
    if not _acts(recipient) or str(envelope_status).upper() == "DRAFT":
        return None
    signing = str(getattr(recipient, "signing_status", "") or "").upper()
    if signing == "SIGNED":
        return "signed"
    if signing == "REJECTED":
        return "rejected"
    if expired_recipients([recipient], now):
        return "expired"
    if str(getattr(recipient, "read_status", "") or "").upper() == "OPENED":
        return "opened"
    if waits_for_turn(recipient, recipients):
        return None
    return "sent"


#: Which stages each stage counts towards (the funnel is cumulative).
_REACHED = {
    "sent": ("sent",),
    "opened": ("sent", "opened"),
    "expired": ("sent", "expired"),
    "signed": ("sent", "opened", "signed"),
    "rejected": ("sent", "opened", "rejected"),
}


def funnel(envelopes: Iterable[Any], now: datetime) -> dict[str, int]:
    """The funnel over every acting recipient of ``envelopes``: how many reached each of :data:`STAGES`.

    ``sent`` counts every recipient in the funnel; ``opened`` those who opened, signed or rejected;
    ``signed``, ``rejected`` and ``expired`` those who ended so. A recipient whose link expired after
    they opened it (``readStatus`` OPENED) counts in ``opened`` and ``expired``.

    :param envelopes: Envelope records.
    :param now: The time link expiry is judged against.
    """
    counts = dict.fromkeys(STAGES, 0)
    for envelope in envelopes:
        status = _status(envelope)
        everyone = tuple(getattr(envelope, "recipients", ()) or ())
        for recipient in everyone:
            stage = recipient_stage(recipient, status, now, everyone)
            if stage is None:
                continue
            for reached in _REACHED[stage]:
                counts[reached] += 1
            if stage == "expired" and str(recipient.read_status or "").upper() == "OPENED":
                counts["opened"] += 1
    return counts


def percentile(values: Iterable[float], q: float) -> float | None:
    """The nearest-rank ``q``-quantile (SQL ``percentile_disc``) of ``values``; ``None`` for none.

    :param values: Numbers (``None`` entries are not allowed here: filter them first).
    :param q: The quantile, ``0 < q <= 1`` (``0.5``: the median, the lower middle for an even count).
    :raises ValueError: for ``q`` outside ``(0, 1]``.
    """
    if not 0 < q <= 1:
        raise ValueError(f"q must be in (0, 1], not {q!r}")
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass(frozen=True)
class Summary:
    """Time to sign over some envelopes.

    :param count: Envelopes with a time to sign (completed, with a send time).
    :param median_seconds: Their nearest-rank median.
    :param p90_seconds: Their nearest-rank 90th percentile.
    :param completed_without_sent: Completed envelopes left out for want of a send time.
    """

    count: int
    median_seconds: float | None
    p90_seconds: float | None
    completed_without_sent: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe."""
        return {
            "count": self.count,
            "median_seconds": self.median_seconds,
            "p90_seconds": self.p90_seconds,
            "completed_without_sent": self.completed_without_sent,
        }


def summarize(pairs: Iterable[tuple[Any, datetime | Sent | None]]) -> Summary:
    """Median and 90th percentile of the time to sign of ``(envelope, sent)`` pairs.

    :param pairs: Each envelope with its send time (``None`` when unknown).
    """
    seconds: list[float] = []
    missing = 0
    for envelope, sent_at in pairs:
        value = seconds_to_sign(envelope, sent_at)
        if value is not None:
            seconds.append(value)
        elif sent_at is None and last_signature(envelope) is not None:
            missing += 1
    return Summary(len(seconds), percentile(seconds, 0.5), percentile(seconds, 0.9), missing)


def histogram(
    seconds: Iterable[float], bounds_hours: tuple[float, ...] = HISTOGRAM_HOURS
) -> list[dict[str, Any]]:
    """The time-to-sign distribution: ``[{"label", "from_hours", "to_hours", "count"}]``.

    A value on a bound falls in the lower bin (``up to 1 h``); the last bin has ``to_hours`` ``None``.

    :param seconds: Times to sign in seconds.
    :param bounds_hours: The bins' upper bounds in hours, increasing.
    """
    edges = [0.0, *bounds_hours]
    counts = [0] * len(edges)
    for value in seconds:
        hours = value / 3600
        counts[next((i for i, bound in enumerate(bounds_hours) if hours <= bound), len(bounds_hours))] += 1
    return [
        {"label": _span(low, high), "from_hours": low, "to_hours": high, "count": count}
        for low, high, count in zip(edges, [*bounds_hours, None], counts, strict=True)
    ]


def _hours_text(hours: float) -> str:
    if hours >= 24 and hours % 24 == 0:
        return f"{hours / 24:g} d"
    return f"{hours:g} h"


def _span(low: float, high: float | None) -> str:
    if high is None:
        return f"> {_hours_text(low)}"
    return f"up to {_hours_text(high)}" if low == 0 else f"{_hours_text(low)} to {_hours_text(high)}"


def signed_share(
    pairs: Iterable[tuple[datetime | Sent | None, datetime | None]],
    now: datetime,
    hours: Iterable[float] = SHARE_HOURS,
) -> list[dict[str, Any]]:
    """A campaign's signed share at each of ``hours`` since sending.

    Each point: ``{"hours", "eligible", "signed", "share"}``: of the ``eligible`` envelopes (sent at least
    ``hours`` ago), how many had their last signature within ``hours`` of sending, and that share
    (``None`` with none eligible). Envelopes without a send time are left out.

    :param pairs: ``(sent, last signature or None)`` per envelope (:func:`last_signature`).
    :param now: The time the share is judged at.
    :param hours: The points, in hours since sending.
    """
    known = [(s.at if isinstance(s, Sent) else s, signed) for s, signed in pairs if s is not None]
    points = []
    for h in hours:
        eligible = [(s, signed) for s, signed in known if (now - s).total_seconds() >= h * 3600]
        done = sum(
            1 for s, signed in eligible if signed is not None and (signed - s).total_seconds() <= h * 3600
        )
        points.append(
            {
                "hours": h,
                "eligible": len(eligible),
                "signed": done,
                "share": round(done / len(eligible), 4) if eligible else None,
            }
        )
    return points


def share_hours(oldest_seconds: float | None, most: int = 48) -> list[float]:
    """Evenly spread chart points (hours since sending) up to the oldest send, at most ``most`` of them.

    :param oldest_seconds: Seconds since the earliest send (``None``: no envelope has a send time).
    :param most: The most points wanted.
    """
    if not oldest_seconds or oldest_seconds <= 0:
        return []
    span = oldest_seconds / 3600
    steps = [0.25, 0.5, 1, 2, 3, 6, 12, 24, 48, 72, 168, 336, 720]
    step = next((s for s in steps if span / s <= most), span / most)
    count = max(1, min(most, math.floor(span / step)))
    return [round(step * (i + 1), 4) for i in range(count)]


def chart_hours(sent_times: Iterable[datetime], now: datetime, most: int = 48) -> list[float]:
    """The points (hours since sending) of a signed-share chart: up to the median send's age.

    Each point then counts at least half the envelopes: a point past the median age would judge the few
    oldest sends alone, and the curve would jump at its end.

    :param sent_times: The envelopes' send times (those known).
    :param now: The time the share is judged at.
    :param most: The most points wanted.
    """
    return share_hours(percentile([(now - at).total_seconds() for at in sent_times], 0.5), most)


def funnel_shares(stages: Mapping[str, int]) -> dict[str, float | None]:
    """Each funnel stage's share of ``sent`` (4 decimals), ``None`` for all when nobody was sent to.

    :param stages: :func:`funnel`'s counts.
    """
    reached = stages.get("sent", 0)
    return {k: round(v / reached, 4) if reached else None for k, v in stages.items()}
