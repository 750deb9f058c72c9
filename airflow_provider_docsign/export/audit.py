"""What the export reads from an envelope's audit log: when it was first sent and first opened.

Pure (no Airflow, no HTTP). The service keeps neither time on the envelope: the audit log's
``DOCUMENT_SENT`` and ``DOCUMENT_OPENED`` entries are the only record. The export (with
``read_sent_times``) reads the log oldest first and hands the entries to :func:`audit_times`, which
stops as soon as both are found, or after :data:`AUDIT_SCAN_LIMIT` entries, so a log of thousands of
entries costs a bounded number of requests. The times themselves are
:func:`~airflow_provider_docsign.service.turnaround.audit_time`: the one definition the UI and the
metrics use too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.service.expiry import parse_timestamp

__all__ = ["AUDIT_EVENTS", "AUDIT_SCAN_LIMIT", "AuditTimes", "audit_times"]

#: The audit-log events the export reads (with ``read_sent_times``): sending and opening.
AUDIT_EVENTS = ("DOCUMENT_SENT", "DOCUMENT_OPENED")
#: How many audit entries (oldest first) the export reads at most per envelope: 20 pages of 100.
AUDIT_SCAN_LIMIT = 2000


@dataclass(frozen=True)
class AuditTimes:
    """What the export takes from an envelope's audit log.

    :param sent: The first ``DOCUMENT_SENT`` (:func:`.turnaround.audit_time`), or ``None``.
    :param first_opened: The first ``DOCUMENT_OPENED``, or ``None``.
    """

    sent: datetime | None = None
    first_opened: datetime | None = None


def audit_times(entries: Iterable[Any], limit: int = AUDIT_SCAN_LIMIT) -> AuditTimes:
    """The first sending and opening in an audit log read oldest first (``createdAt`` ascending).

    Reads at most ``limit`` entries and stops as soon as both are found (in ascending order no later
    entry can be earlier), so the caller can close the listing and request no further page. Only the
    entries of :data:`AUDIT_EVENTS` are kept; the times are :func:`.turnaround.audit_time` of them.

    :param entries: Audit-log entries, oldest first.
    :param limit: The most entries read.
    """
    kept: list[Mapping[str, Any]] = []
    found: set[str] = set()
    for count, entry in enumerate(entries, start=1):
        if isinstance(entry, Mapping) and entry.get("type") in AUDIT_EVENTS:
            kept.append(entry)
            if parse_timestamp(entry.get("createdAt")) is not None:
                found.add(str(entry["type"]))
        if len(found) == len(AUDIT_EVENTS) or count >= limit:
            break
    return AuditTimes(
        turnaround.audit_time(kept, "DOCUMENT_SENT"), turnaround.audit_time(kept, "DOCUMENT_OPENED")
    )
