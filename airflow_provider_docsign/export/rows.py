"""Pure logic of the contract-data export: the versioned table schema, PII handling and row building.

Nothing here talks to the service or to Airflow. :class:`~.operators.export.DocsignExportEnvelopesOperator`
lists envelopes with the hook, asks :func:`select` which ones belong to the data interval, reads them 20
at a time with ``get-many`` and hands each :class:`~.models.Envelope` to :func:`envelope_rows`; the rows
go to a :class:`PartitionWriter`, which streams them to the partition's files and replaces the old
partition (see :mod:`._partition`).

Three tables, one file each per partition, with the columns of :data:`TABLES` (schema version
:data:`SCHEMA_VERSION`; every row carries it in ``schema_version``):

- ``envelopes``: one row per envelope created, updated or completed in the interval;
- ``recipients``: one row per recipient of those envelopes;
- ``field_values``: one row per field of those envelopes.

The time-to-sign and funnel columns (schema 2) come from :mod:`..service.turnaround`, the definition the
UI and the metrics share. Rows hold no time of the run itself (a recipient's ``expired`` stage is judged
at the interval's end), and they are written in a fixed order (envelopes by
``created_at`` then id; recipients and fields by envelope, then id), so exporting the same data twice
gives byte-identical files.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.service.expiry import parse_timestamp
from airflow_provider_docsign.service.models import Envelope, EnvelopeSummary, Field, Recipient, parse_ts

__all__ = [
    "DEFAULT_PII_COLUMNS",
    "FORMATS",
    "PII_CAPABLE_COLUMNS",
    "PII_MODES",
    "SCHEMA_VERSION",
    "TABLES",
    "Column",
    "ExportConfigError",
    "PiiPolicy",
    "envelope_rows",
    "format_ts",
    "parse_ts",
    "partition_date",
    "pii_columns",
    "select",
    "sent_time",
    "table_schema",
]

#: Bump when a column is added, removed, renamed or changes type (and say so in docs/contract-data.md).
#: 2: envelopes gained sent_source, last_signed_at, seconds_to_sign, first_opened_at and
#: seconds_to_first_open; recipients gained funnel_stage (all from :mod:`..service.turnaround`).
SCHEMA_VERSION = 2
PII_MODES = ("hash", "keep", "drop")
FORMATS = ("jsonl", "parquet")
ColumnType = Literal["string", "int64", "float64", "bool", "timestamp"]

#: Field types whose value is picked from choices the sender defined (or a date), not typed freely by a
#: person: kept in every PII mode. Every other field type (TEXT, NAME, EMAIL, INITIALS, NUMBER,
#: SIGNATURE, ...) holds free text and is hashed or dropped.
CHOICE_FIELD_TYPES = frozenset({"CHECKBOX", "RADIO", "DROPDOWN", "DATE"})


class ExportConfigError(ValueError):
    """The export was configured in a way that cannot work (raised before any request is sent)."""


@dataclass(frozen=True)
class Column:
    """One column of an exported table.

    :param name: The column name.
    :param type: ``string``, ``int64``, ``float64``, ``bool`` or ``timestamp`` (UTC, milliseconds; an
        ISO-8601 string ending in ``Z`` in JSON Lines).
    :param description: What the column holds.
    :param pii: Whether the column may hold personal data: by default the ``pii`` mode applies to it
        (hashed with ``"hash"``, null with ``"drop"``); see :data:`DEFAULT_PII_COLUMNS`.
    """

    name: str
    type: ColumnType
    description: str
    pii: bool = False


def _c(name: str, type_: ColumnType, description: str, *, pii: bool = False) -> Column:
    return Column(name, type_, description, pii)


_VERSION = _c("schema_version", "int64", "The schema version of this row (SCHEMA_VERSION).")

TABLES: dict[str, tuple[Column, ...]] = {
    "envelopes": (
        _VERSION,
        _c("envelope_id", "string", "The envelope id (envelope_...)."),
        _c(
            "external_id",
            "string",
            "The caller's own reference (not unique); often names a person.",
            pii=True,
        ),
        _c("title", "string", "The envelope title; often names a person ('NDA Jane Doe').", pii=True),
        _c("status", "string", "DRAFT, PENDING, COMPLETED, REJECTED or CANCELLED."),
        _c("template_id", "int64", "The template the envelope was made from, if any."),
        _c("folder_id", "string", "The folder, null at the root."),
        _c("created_at", "timestamp", "When the envelope was created."),
        _c("updated_at", "timestamp", "When the envelope last changed."),
        _c("sent_at", "timestamp", "When it was sent (from the audit log; null unless read_sent_times)."),
        _c("completed_at", "timestamp", "When it was completed (status COMPLETED)."),
        _c("cancelled_at", "timestamp", "When it was cancelled (status CANCELLED)."),
        _c("rejected_at", "timestamp", "When it was rejected (status REJECTED)."),
        _c("rejection_reason", "string", "The rejecting recipient's reason (free text).", pii=True),
        _c("hours_created_to_completed", "float64", "Hours from created_at to completed_at."),
        _c("hours_sent_to_completed", "float64", "Hours from sent_at to completed_at."),
        _c("sent_source", "string", "Where sent_at comes from: 'audit' (the audit log), null when unknown."),
        _c(
            "last_signed_at",
            "timestamp",
            "COMPLETED only: the latest signedAt of the recipients who had to act (not CC) and signed.",
        ),
        _c("seconds_to_sign", "float64", "Seconds from sent_at to last_signed_at (the time to sign)."),
        _c(
            "first_opened_at",
            "timestamp",
            "The first DOCUMENT_OPENED of the audit log (null unless read_sent_times).",
        ),
        _c("seconds_to_first_open", "float64", "Seconds from sent_at to first_opened_at."),
    ),
    "recipients": (
        _VERSION,
        _c("envelope_id", "string", "The envelope id."),
        _c("recipient_id", "int64", "The recipient id."),
        _c("email", "string", "The e-mail address (lower-cased).", pii=True),
        _c("name", "string", "The display name.", pii=True),
        _c("role", "string", "SIGNER, APPROVER, VIEWER, CC or ASSISTANT."),
        _c("signing_order", "int64", "Position in a sequential signing order."),
        _c("read_status", "string", "NOT_OPENED or OPENED."),
        _c("send_status", "string", "NOT_SENT or SENT."),
        _c("signing_status", "string", "NOT_SIGNED, SIGNED or REJECTED."),
        _c("signed_at", "timestamp", "When the recipient signed (or rejected)."),
        _c("expires_at", "timestamp", "When the recipient's signing link expires."),
        _c(
            "funnel_stage",
            "string",
            "sent, opened, signed, rejected or expired (at the interval's end); null when not in the "
            "funnel (CC, a DRAFT, not sent yet in a signing order).",
        ),
    ),
    "field_values": (
        _VERSION,
        _c("envelope_id", "string", "The envelope id."),
        _c("field_id", "int64", "The field id."),
        _c("envelope_item_id", "string", "The item (PDF) the field is on."),
        _c("recipient_id", "int64", "The recipient who fills the field."),
        _c("label", "string", "The field's label (fieldMeta.label)."),
        _c("type", "string", "The field type (TEXT, SIGNATURE, CHECKBOX, ...)."),
        _c("page", "int64", "The one-based page."),
        _c("inserted", "bool", "Whether the recipient has filled the field."),
        _c("value", "string", "The value filled in; free-text types are personal data.", pii=True),
    ),
}


#: The columns the ``pii`` mode applies to unless ``pii_columns`` says otherwise (``table.column``):
#: every column that may name a person. ``title`` and ``external_id`` are among them: titles such as
#: "NDA Jane Doe" are common, so a "hashed" export that left them plain would not pseudonymise.
DEFAULT_PII_COLUMNS = frozenset(f"{t}.{c.name}" for t, cols in TABLES.items() for c in cols if c.pii)
#: The columns ``pii_columns`` may name: the default ones, and the field label the sender writes.
PII_CAPABLE_COLUMNS = DEFAULT_PII_COLUMNS | {"field_values.label"}


def pii_columns(columns: Iterable[str] | None) -> frozenset[str]:
    """The columns the ``pii`` mode applies to: ``columns`` checked, or :data:`DEFAULT_PII_COLUMNS`.

    :param columns: ``table.column`` names (a subset of :data:`PII_CAPABLE_COLUMNS`), or ``None``.
    :raises ExportConfigError: For a name that is not a column that may hold personal data.
    """
    if columns is None:
        return DEFAULT_PII_COLUMNS
    if isinstance(columns, str):
        raise ExportConfigError("pii_columns must be a list of 'table.column' names, not a string")
    chosen = frozenset(columns)
    unknown = sorted(chosen - PII_CAPABLE_COLUMNS)
    if unknown:
        raise ExportConfigError(
            f"pii_columns: {', '.join(map(repr, unknown))} cannot be chosen; the columns that may hold "
            f"personal data are {', '.join(sorted(PII_CAPABLE_COLUMNS))}"
        )
    return chosen


def table_schema(table: str) -> list[dict[str, Any]]:
    """The documented schema of ``table`` as JSON-safe dicts (for lineage facets and docs)."""
    return [{"name": c.name, "type": c.type, "description": c.description} for c in TABLES[table]]


# -- times --------------------------------------------------------------------------------------------


def format_ts(value: datetime | None) -> str | None:
    """``2026-11-23T10:00:00.000Z`` (UTC, milliseconds), the service's own format."""
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: A time the service returned; ``None`` for one missing or not a time (a null, never a failed export).
_ts = parse_timestamp


def partition_date(start: datetime) -> str:
    """The partition name of an interval: ``YYYY-MM-DD`` of its start in UTC."""
    return start.astimezone(timezone.utc).strftime("%Y-%m-%d")


def _hours(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds() / 3600.0, 6)


# -- selection ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """Which listed envelopes belong to an export, and when listing can stop.

    :param start: The interval's start (inclusive), already moved back by the overlap.
    :param end: The interval's end (exclusive).
    :param lookback: How long before ``start`` an envelope may have been created and still be
        exported for a change (update, completion) inside the interval.
    """

    start: datetime
    end: datetime
    lookback: timedelta = timedelta(days=30)

    @property
    def floor(self) -> datetime:
        """Listing (newest created first) stops at the first envelope created before this."""
        return self.start - self.lookback

    def contains(self, summary: EnvelopeSummary) -> bool:
        """Whether the envelope was created, updated or completed in ``[start, end)``."""
        for value in (summary.created_at, summary.updated_at, summary.completed_at):
            at = _ts(value)
            if at is not None and self.start <= at < self.end:
                return True
        return False

    def past_floor(self, summary: EnvelopeSummary) -> bool:
        """Whether the envelope (and, in createdAt-descending order, every later one) is too old."""
        created = _ts(summary.created_at)
        return created is not None and created < self.floor


def select(summaries: Iterable[EnvelopeSummary], window: Window) -> Iterator[tuple[str, str]]:
    """Yield ``(created_at, id)`` of the envelopes in ``window``, from a newest-created-first listing.

    Stops consuming ``summaries`` (so no further page is requested) at the first envelope created before
    :attr:`Window.floor`: the real ``GET /envelope`` cannot filter by time, only order by ``createdAt``.
    """
    for summary in summaries:
        if window.past_floor(summary):
            return
        if window.contains(summary):
            yield (format_ts(_ts(summary.created_at)) or "", summary.id)


def sent_time(audit_entries: Iterable[Mapping[str, Any]]) -> datetime | None:
    """The first ``DOCUMENT_SENT`` time in an envelope's audit log (:func:`.turnaround.audit_time`)."""
    return turnaround.audit_time(audit_entries, "DOCUMENT_SENT")


# -- personal data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PiiPolicy:
    """How personal data is written.

    :param mode: ``hash`` (keyed HMAC-SHA256, hex), ``keep`` or ``drop`` (the column stays, null).
    :param key: The HMAC key (required for ``hash``; never written anywhere).
    :param columns: The columns (``table.column``) the mode applies to; the others are written as the
        service returned them. Default :data:`DEFAULT_PII_COLUMNS`.
    """

    mode: str = "hash"
    key: bytes | None = None
    columns: frozenset[str] = DEFAULT_PII_COLUMNS

    def __post_init__(self) -> None:
        if self.mode not in PII_MODES:
            raise ExportConfigError(f"pii must be one of {', '.join(PII_MODES)}, not {self.mode!r}")
        if self.mode == "hash" and not self.key:
            raise ExportConfigError(
                "pii='hash' needs a key: set the 'pii_hash_key' extra of the docsign connection "
                "(hashing without a key could be reversed by hashing guessed e-mails), "
                "or choose pii='keep' or pii='drop'"
            )

    def __repr__(self) -> str:
        return f"PiiPolicy(mode={self.mode!r}, columns={sorted(self.columns)!r})"

    def apply(self, value: str | None, *, email: bool = False, column: str | None = None) -> str | None:
        """The value as written under this policy.

        E-mails are lower-cased and trimmed first, so the same person hashes the same way whatever the
        case they were typed in.

        :param column: The ``table.column`` written: left as it is when the mode does not apply to it.
        """
        if value is None or value == "":
            return value
        if self.mode == "keep" or (column is not None and column not in self.columns):
            return value
        if self.mode == "drop":
            return None
        text = value.strip().lower() if email else value
        assert self.key is not None  # checked in __post_init__
        return hmac.new(self.key, text.encode("utf-8"), hashlib.sha256).hexdigest()


# -- rows ---------------------------------------------------------------------------------------------


def _rejection_reason(envelope: Envelope) -> str | None:
    for rec in envelope.recipients:
        if rec.signing_status == "REJECTED" and rec.rejection_reason:
            return rec.rejection_reason
    return None


def envelope_row(
    envelope: Envelope,
    pii: PiiPolicy,
    sent_at: datetime | None = None,
    *,
    first_opened_at: datetime | None = None,
) -> dict[str, Any]:
    """The ``envelopes`` row of one envelope.

    :param sent_at: Its first ``DOCUMENT_SENT`` (:class:`AuditTimes`), if read.
    :param first_opened_at: Its first ``DOCUMENT_OPENED``, if read.
    """
    status = str(getattr(envelope.status, "value", envelope.status))
    created = _ts(envelope.created_at)
    ended = _ts(envelope.completed_at)  # the service sets completedAt for all three end states
    sent = turnaround.sent(audit=sent_at)
    last_signed = turnaround.last_signature(envelope)
    completed = ended if status == "COMPLETED" else None
    raw_template = envelope.raw.get("templateId")
    return {
        "schema_version": SCHEMA_VERSION,
        "envelope_id": envelope.id,
        "external_id": pii.apply(envelope.external_id, column="envelopes.external_id"),
        "title": pii.apply(envelope.title, column="envelopes.title"),
        "status": status,
        "template_id": int(raw_template) if raw_template is not None else None,
        "folder_id": envelope.folder_id,
        "created_at": format_ts(created),
        "updated_at": format_ts(_ts(envelope.updated_at)),
        "sent_at": format_ts(sent_at),
        "completed_at": format_ts(completed),
        "cancelled_at": format_ts(ended if status == "CANCELLED" else None),
        "rejected_at": format_ts(ended if status == "REJECTED" else None),
        "rejection_reason": pii.apply(_rejection_reason(envelope), column="envelopes.rejection_reason"),
        "hours_created_to_completed": _hours(created, completed),
        "hours_sent_to_completed": _hours(sent_at, completed),
        "sent_source": sent.source if sent else None,
        "last_signed_at": turnaround.iso(last_signed),
        "seconds_to_sign": turnaround.seconds_to_sign(envelope, sent),
        "first_opened_at": turnaround.iso(first_opened_at),
        "seconds_to_first_open": turnaround.seconds_between(sent, first_opened_at),
    }


def recipient_row(
    envelope_id: str,
    rec: Recipient,
    pii: PiiPolicy,
    *,
    envelope_status: str = "",
    now: datetime | None = None,
    recipients: Iterable[Recipient] = (),
) -> dict[str, Any]:
    """The ``recipients`` row of one recipient (the signing token is never read).

    :param envelope_status: The envelope's status (a DRAFT's recipients are not in the funnel).
    :param now: The time link expiry is judged against (the export's interval end), never the clock.
    :param recipients: The envelope's recipients (one waiting for its turn is not in the funnel).
    """
    stage = turnaround.recipient_stage(rec, envelope_status, now, recipients) if now is not None else None
    return {
        "schema_version": SCHEMA_VERSION,
        "envelope_id": envelope_id,
        "recipient_id": rec.id,
        "email": pii.apply(rec.email, email=True, column="recipients.email"),
        "name": pii.apply(rec.name, column="recipients.name"),
        "role": rec.role,
        "signing_order": rec.signing_order,
        "read_status": rec.read_status,
        "send_status": rec.send_status,
        "signing_status": rec.signing_status,
        "signed_at": format_ts(_ts(rec.signed_at)),
        "expires_at": format_ts(_ts(rec.raw.get("expiresAt"))),
        "funnel_stage": stage,
    }


def field_row(envelope_id: str, fld: Field, pii: PiiPolicy) -> dict[str, Any]:
    """The ``field_values`` row of one field."""
    label = (fld.field_meta or {}).get("label")
    value = fld.custom_text if fld.inserted else None
    if value is not None and (fld.type or "").upper() not in CHOICE_FIELD_TYPES:
        value = pii.apply(value, email=(fld.type or "").upper() == "EMAIL", column="field_values.value")
    return {
        "schema_version": SCHEMA_VERSION,
        "envelope_id": envelope_id,
        "field_id": fld.id,
        "envelope_item_id": fld.envelope_item_id,
        "recipient_id": fld.recipient_id,
        "label": pii.apply(str(label), column="field_values.label") if label is not None else None,
        "type": fld.type,
        "page": fld.page,
        "inserted": bool(fld.inserted),
        "value": value,
    }


def envelope_rows(
    envelope: Envelope,
    pii: PiiPolicy,
    sent_at: datetime | None = None,
    *,
    first_opened_at: datetime | None = None,
    now: datetime | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """The rows of one envelope in all three tables, in the export's fixed order.

    :param sent_at: The envelope's first ``DOCUMENT_SENT``, if read.
    :param first_opened_at: Its first ``DOCUMENT_OPENED``, if read.
    :param now: The time the funnel's link expiry is judged against: the export passes its interval's
        end, so the same interval exports the same bytes whenever it runs. ``None``: the envelope's
        own ``updatedAt`` (never the wall clock).
    """
    moment = now or _ts(envelope.updated_at) or _ts(envelope.created_at) or _EPOCH
    status = str(getattr(envelope.status, "value", envelope.status))
    return {
        "envelopes": [envelope_row(envelope, pii, sent_at, first_opened_at=first_opened_at)],
        "recipients": [
            recipient_row(
                envelope.id, r, pii, envelope_status=status, now=moment, recipients=envelope.recipients
            )
            for r in sorted(envelope.recipients, key=lambda r: r.id)
        ],
        "field_values": [field_row(envelope.id, f, pii) for f in sorted(envelope.fields, key=lambda f: f.id)],
    }


def jsonl_line(row: Mapping[str, Any], table: str) -> bytes:
    """One JSON Lines record with the table's columns in schema order (stable bytes)."""
    ordered = {c.name: row.get(c.name) for c in TABLES[table]}
    return (json.dumps(ordered, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
