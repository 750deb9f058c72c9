"""Typed records parsed from the signing service's JSON (pure code, no network).

Attribute names are the snake_case forms of the API's camelCase names. Every record keeps the JSON it
was parsed from in ``raw``. Field coordinates are floats even though the real service sends them as
strings (Prisma ``Decimal`` serialises as ``"12.5"``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, ClassVar

__all__ = [
    "FAILURE_STATUSES",
    "TERMINAL_STATUSES",
    "DownloadResult",
    "Envelope",
    "EnvelopeItem",
    "EnvelopeStatus",
    "EnvelopeSummary",
    "Field",
    "Folder",
    "Recipient",
    "parse_ts",
]


class EnvelopeStatus(str, enum.Enum):
    """The status of an envelope (``DocumentStatus`` in the service)."""

    DRAFT = "DRAFT"
    PENDING = "PENDING"
    COMPLETED = "COMPLETED"
    REJECTED = "REJECTED"
    CANCELLED = "CANCELLED"

    # Set after the class body (see below); annotations without a value do not become members.
    TERMINAL_STATUSES: ClassVar[frozenset[EnvelopeStatus]]
    FAILURE_STATUSES: ClassVar[frozenset[EnvelopeStatus]]

    def __str__(self) -> str:
        return str(self.value)

    @property
    def is_terminal(self) -> bool:
        """Whether the envelope can no longer change status."""
        return self in TERMINAL_STATUSES

    @property
    def is_failure(self) -> bool:
        """Whether the envelope ended without being completed (rejected or cancelled)."""
        return self in FAILURE_STATUSES


TERMINAL_STATUSES: frozenset[EnvelopeStatus] = frozenset(
    {EnvelopeStatus.COMPLETED, EnvelopeStatus.REJECTED, EnvelopeStatus.CANCELLED}
)
FAILURE_STATUSES: frozenset[EnvelopeStatus] = frozenset({EnvelopeStatus.REJECTED, EnvelopeStatus.CANCELLED})

# Also reachable as class attributes, e.g. ``EnvelopeStatus.TERMINAL_STATUSES``. Enum members cannot
# be declared after the class body, so they are attached with type.__setattr__ (not members).
type.__setattr__(EnvelopeStatus, "TERMINAL_STATUSES", TERMINAL_STATUSES)
type.__setattr__(EnvelopeStatus, "FAILURE_STATUSES", FAILURE_STATUSES)


def _float(value: Any) -> float | None:
    # The real service sends Decimal coordinates as strings ("12.5"); the spec says numbers.
    if value is None or value == "":
        return None
    return float(value)


def _int(value: Any) -> int | None:
    if value is None or value == "":
        return None
    return int(value)


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _status(value: Any) -> EnvelopeStatus | str:
    try:
        return EnvelopeStatus(value)
    except ValueError:
        return str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


@dataclass(frozen=True)
class EnvelopeItem:
    """One PDF of an envelope.

    :param id: The envelope item id (``envelope_item_…``); also called ``envelopeItemId``.
    :param title: The item's title (the uploaded file name by default).
    :param order: The one-based position among the envelope's items.
    :param envelope_id: The envelope the item belongs to.
    :param document_data_id: The id of the stored file data.
    :param raw: The JSON the record was parsed from.
    """

    id: str
    title: str | None = None
    order: int | None = None
    envelope_id: str | None = None
    document_data_id: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EnvelopeItem:
        """Parse an envelope item from the service's JSON."""
        return cls(
            id=str(data["id"]),
            title=_str(data.get("title")),
            order=_int(data.get("order")),
            envelope_id=_str(data.get("envelopeId")),
            document_data_id=_str(data.get("documentDataId")),
            raw=dict(data),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (snake_case keys, no raw JSON)."""
        return {"id": self.id, "title": self.title, "order": self.order, "envelope_id": self.envelope_id}


@dataclass(frozen=True)
class Field:
    """A field placed on a page of an envelope item. Coordinates are percentages of the page (floats).

    :param id: The field id (an integer).
    :param recipient_id: The recipient who fills the field.
    :param envelope_item_id: The item (PDF) the field is on.
    :param type: The field type, e.g. ``SIGNATURE``.
    :param page: The one-based page number.
    :param position_x: Left edge, percent of the page width.
    :param position_y: Top edge, percent of the page height.
    :param width: Width, percent of the page width.
    :param height: Height, percent of the page height.
    :param envelope_id: The envelope id.
    :param inserted: Whether the recipient has filled the field.
    :param custom_text: The inserted value (``""`` until filled).
    :param field_meta: The type-specific metadata, as the service sent it.
    :param raw: The JSON the record was parsed from.
    """

    id: int
    recipient_id: int | None = None
    envelope_item_id: str | None = None
    type: str | None = None
    page: int | None = None
    position_x: float | None = None
    position_y: float | None = None
    width: float | None = None
    height: float | None = None
    envelope_id: str | None = None
    inserted: bool = False
    custom_text: str | None = None
    field_meta: dict[str, Any] | None = field(default=None, compare=False)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Field:
        """Parse a field from the service's JSON (string coordinates become floats)."""
        meta = data.get("fieldMeta")
        return cls(
            id=int(data["id"]),
            recipient_id=_int(data.get("recipientId")),
            envelope_item_id=_str(data.get("envelopeItemId")),
            type=_str(data.get("type")),
            page=_int(data.get("page")),
            position_x=_float(data.get("positionX")),
            position_y=_float(data.get("positionY")),
            width=_float(data.get("width")),
            height=_float(data.get("height")),
            envelope_id=_str(data.get("envelopeId")),
            inserted=bool(data.get("inserted", False)),
            custom_text=_str(data.get("customText")),
            field_meta=dict(meta) if isinstance(meta, Mapping) else None,
            raw=dict(data),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (snake_case keys, no raw JSON)."""
        return {
            "id": self.id,
            "recipient_id": self.recipient_id,
            "envelope_item_id": self.envelope_item_id,
            "type": self.type,
            "page": self.page,
            "position_x": self.position_x,
            "position_y": self.position_y,
            "width": self.width,
            "height": self.height,
            "inserted": self.inserted,
        }


@dataclass(frozen=True)
class Recipient:
    """A recipient of an envelope.

    :param id: The recipient id (an integer).
    :param email: E-mail address (lower-cased by the service; may be ``""``).
    :param name: Display name.
    :param role: ``SIGNER``, ``APPROVER``, ``VIEWER``, ``CC`` or ``ASSISTANT``.
    :param signing_status: ``NOT_SIGNED``, ``SIGNED`` or ``REJECTED``.
    :param rejection_reason: Why the recipient rejected, if they did.
    :param envelope_id: The envelope id.
    :param read_status: ``NOT_OPENED`` or ``OPENED``.
    :param send_status: ``NOT_SENT`` or ``SENT``.
    :param signing_order: The position in a sequential signing order, if any.
    :param signed_at: ISO timestamp of signing (also set on rejection).
    :param expires_at: ISO timestamp after which the recipient's signing link no longer works (set
        when the envelope is sent; renewed by ``POST /envelope/redistribute``; ``None`` for CC
        recipients and when expiry is disabled).
    :param expiration_notified_at: When the service fired ``RECIPIENT_EXPIRED`` for this recipient.
    :param fields: The recipient's fields, when the service includes them.
    :param raw: The JSON the record was parsed from (contains the signing ``token``).
    """

    id: int
    email: str | None = None
    name: str | None = None
    role: str | None = None
    signing_status: str | None = None
    rejection_reason: str | None = None
    envelope_id: str | None = None
    read_status: str | None = None
    send_status: str | None = None
    signing_order: int | None = None
    signed_at: str | None = None
    fields: tuple[Field, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    expires_at: str | None = None
    expiration_notified_at: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Recipient:
        """Parse a recipient from the service's JSON."""
        return cls(
            id=int(data["id"]),
            email=_str(data.get("email")),
            name=_str(data.get("name")),
            role=_str(data.get("role")),
            signing_status=_str(data.get("signingStatus")),
            rejection_reason=_str(data.get("rejectionReason")),
            envelope_id=_str(data.get("envelopeId")),
            read_status=_str(data.get("readStatus")),
            send_status=_str(data.get("sendStatus")),
            signing_order=_int(data.get("signingOrder")),
            signed_at=_str(data.get("signedAt")),
            fields=tuple(Field.from_json(f) for f in data.get("fields") or ()),
            raw=dict(data),
            expires_at=_str(data.get("expiresAt")),
            expiration_notified_at=_str(data.get("expirationNotifiedAt")),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (snake_case keys; the signing token is left out)."""
        return {
            "id": self.id,
            "email": self.email,
            "name": self.name,
            "role": self.role,
            "signing_status": self.signing_status,
            "rejection_reason": self.rejection_reason,
            "signing_order": self.signing_order,
            "expires_at": self.expires_at,
        }


def _common_envelope_kwargs(data: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": str(data["id"]),
        "status": _status(data.get("status")),
        "title": _str(data.get("title")),
        "external_id": _str(data.get("externalId")),
        "folder_id": _str(data.get("folderId")),
        "type": _str(data.get("type")),
        "created_at": _str(data.get("createdAt")),
        "updated_at": _str(data.get("updatedAt")),
        "completed_at": _str(data.get("completedAt")),
        "deleted_at": _str(data.get("deletedAt")),
        "recipients": tuple(Recipient.from_json(r) for r in data.get("recipients") or ()),
        "raw": dict(data),
    }


@dataclass(frozen=True)
class EnvelopeSummary:
    """An envelope as listed by ``GET /envelope`` (no items, fields or meta).

    :param id: The envelope id (``envelope_…``).
    :param status: The :class:`EnvelopeStatus` (a plain string if the service sends an unknown value).
    :param title: The title.
    :param external_id: The caller's own reference (not unique).
    :param folder_id: The folder, or ``None`` at the root.
    :param type: ``DOCUMENT`` or ``TEMPLATE``.
    :param created_at: ISO timestamp.
    :param updated_at: ISO timestamp.
    :param completed_at: ISO timestamp, set for COMPLETED, REJECTED and CANCELLED.
    :param deleted_at: ISO timestamp of a soft delete.
    :param recipients: The recipients.
    :param raw: The JSON the record was parsed from.
    """

    id: str
    status: EnvelopeStatus | str
    title: str | None = None
    external_id: str | None = None
    folder_id: str | None = None
    type: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    completed_at: str | None = None
    deleted_at: str | None = None
    recipients: tuple[Recipient, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EnvelopeSummary:
        """Parse a listed envelope from the service's JSON."""
        return cls(**_common_envelope_kwargs(data))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (snake_case keys, no raw JSON)."""
        return {
            "id": self.id,
            "status": _jsonable(self.status),
            "title": self.title,
            "external_id": self.external_id,
            "folder_id": self.folder_id,
            "type": self.type,
            "created_at": self.created_at,
            "completed_at": self.completed_at,
            "recipients": [r.to_dict() for r in self.recipients],
        }


@dataclass(frozen=True)
class Envelope(EnvelopeSummary):
    """A full envelope, as returned by ``GET /envelope/{id}``. ``items`` are sorted by ``order``.

    :param items: The PDFs, sorted by ``order``.
    :param fields: Every field of every recipient.
    :param meta: The ``documentMeta`` object as sent by the service.
    """

    items: tuple[EnvelopeItem, ...] = ()
    fields: tuple[Field, ...] = ()
    meta: dict[str, Any] | None = field(default=None, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Envelope:
        """Parse a full envelope from the service's JSON."""
        items = [EnvelopeItem.from_json(i) for i in data.get("envelopeItems") or ()]
        items.sort(key=lambda i: (i.order if i.order is not None else 1 << 30, i.id))
        meta = data.get("documentMeta")
        return cls(
            **_common_envelope_kwargs(data),
            items=tuple(items),
            fields=tuple(Field.from_json(f) for f in data.get("fields") or ()),
            meta=dict(meta) if isinstance(meta, Mapping) else None,
        )

    @property
    def item_ids(self) -> list[str]:
        """The item ids, in ``order``."""
        return [i.id for i in self.items]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (snake_case keys, no raw JSON)."""
        out = super().to_dict()
        out["items"] = [i.to_dict() for i in self.items]
        out["fields"] = [f.to_dict() for f in self.fields]
        return out


@dataclass(frozen=True)
class Folder:
    """A folder of documents or templates.

    :param id: The folder id (a cuid).
    :param name: The folder name.
    :param parent_id: The parent folder, or ``None`` at the root.
    :param type: ``DOCUMENT`` or ``TEMPLATE``.
    :param visibility: The folder's visibility.
    :param pinned: Whether the folder is pinned.
    :param raw: The JSON the record was parsed from.
    """

    id: str
    name: str | None = None
    parent_id: str | None = None
    type: str | None = None
    visibility: str | None = None
    pinned: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Folder:
        """Parse a folder from the service's JSON."""
        return cls(
            id=str(data["id"]),
            name=_str(data.get("name")),
            parent_id=_str(data.get("parentId")),
            type=_str(data.get("type")),
            visibility=_str(data.get("visibility")),
            pinned=bool(data.get("pinned", False)),
            raw=dict(data),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (snake_case keys, no raw JSON)."""
        return {"id": self.id, "name": self.name, "parent_id": self.parent_id, "type": self.type}


@dataclass(frozen=True)
class DownloadResult:
    """The outcome of a verified, completed download.

    :param uri: Where the bytes were written (a path, an object-store URI, or ``None`` for a file object).
    :param sha256: Hex SHA-256 of the bytes written.
    :param size: Number of bytes written.
    :param content_type: The ``Content-Type`` the service sent.
    :param filename: The file name the service suggested (``Content-Disposition``), if any.
    :param raw: The response headers that matter (``etag``, ``x-request-id``, ...).
    """

    uri: str | None
    sha256: str
    size: int
    content_type: str | None = None
    filename: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, suitable for XCom and manifests."""
        return {
            "uri": self.uri,
            "sha256": self.sha256,
            "size": self.size,
            "content_type": self.content_type,
            "filename": self.filename,
        }


def parse_ts(value: str | datetime | None) -> datetime | None:
    """Parse an ISO-8601 timestamp (``Z`` or an offset) to an aware UTC datetime; naive means UTC."""
    if value is None or value == "":
        return None
    dt = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    dt = dt.astimezone(timezone.utc)
    # A plain datetime: pendulum's DateTime (Airflow's context values) loses a datetime.timezone
    # tzinfo in arithmetic, which would make "end - timedelta(...)" naive.
    return datetime(
        dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, dt.microsecond, tzinfo=timezone.utc
    )
