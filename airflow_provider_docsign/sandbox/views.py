"""Turn stored objects into the exact JSON shapes of the real service's responses."""

from __future__ import annotations

from typing import Any

from .ids import decimal_str
from .store import Obj, Store

TEAM = {"id": 1, "url": "personal_sandbox"}
USER = {"id": 1, "name": "Sandbox Owner", "email": "owner@sandbox.test"}

_ENVELOPE_SCALARS = (
    "internalVersion",
    "type",
    "status",
    "source",
    "visibility",
    "templateType",
    "id",
    "secondaryId",
    "externalId",
    "createdAt",
    "updatedAt",
    "completedAt",
    "deletedAt",
    "title",
    "authOptions",
    "formValues",
    "publicTitle",
    "publicDescription",
    "userId",
    "teamId",
    "folderId",
)

_RECIPIENT_KEYS = (
    "envelopeId",
    "role",
    "readStatus",
    "signingStatus",
    "sendStatus",
    "id",
    "email",
    "name",
    "token",
    "documentDeletedAt",
    "expired",
    "expiresAt",
    "expirationNotifiedAt",
    "signedAt",
    "authOptions",
    "signingOrder",
    "rejectionReason",
)

_FIELD_KEYS = (
    "envelopeId",
    "envelopeItemId",
    "type",
    "id",
    "secondaryId",
    "recipientId",
    "page",
    "positionX",
    "positionY",
    "width",
    "height",
    "customText",
    "inserted",
    "fieldMeta",
)


def envelope_lite(env: Obj) -> dict[str, Any]:
    """Top-level scalars only (the update response)."""
    return {k: env[k] for k in _ENVELOPE_SCALARS}


def envelope_many(store: Store, env: Obj) -> dict[str, Any]:
    """One entry of the find response."""
    out = envelope_lite(env)
    out["templateId"] = env.get("templateId")
    out["user"] = dict(USER)
    out["recipients"] = [recipient_lite(r) for r in store.recipients_of(env["id"])]
    out["team"] = dict(TEAM)
    return out


def envelope_full(store: Store, env: Obj) -> dict[str, Any]:
    """The ``GET /envelope/{id}`` shape."""
    out = envelope_lite(env)
    out["templateId"] = env.get("templateId")
    out["documentMeta"] = dict(env["documentMeta"])
    out["recipients"] = [recipient_lite(r) for r in store.recipients_of(env["id"])]
    out["fields"] = [field_view(f) for f in store.fields_of(env["id"])]
    out["envelopeItems"] = [item_view(i) for i in store.items_of(env["id"])]
    out["directLink"] = None
    out["team"] = dict(TEAM)
    out["user"] = dict(USER)
    return out


def item_view(item: Obj) -> dict[str, Any]:
    """An envelope item as listed in the envelope."""
    return {
        "envelopeId": item["envelopeId"],
        "documentDataId": item["documentDataId"],
        "id": item["id"],
        "title": item["title"],
        "order": item["order"],
    }


def recipient_lite(rec: Obj) -> dict[str, Any]:
    """A recipient without fields."""
    return {k: rec[k] for k in _RECIPIENT_KEYS}


def recipient_full(store: Store, rec: Obj) -> dict[str, Any]:
    """A recipient with its fields (get and reject responses)."""
    out = recipient_lite(rec)
    out["fields"] = [
        field_view(f) for f in store.fields_of(rec["envelopeId"]) if f["recipientId"] == rec["id"]
    ]
    return out


def legacy_ids(store: Store, envelope_id: str) -> dict[str, Any]:
    """Legacy ``documentId``/``templateId`` (one is the number from ``secondaryId``, the other null)."""
    env = store.get("envelope", envelope_id)
    number = int(str(env["secondaryId"]).split("_")[-1]) if env else None
    is_template = bool(env and env["type"] == "TEMPLATE")
    return {"documentId": None if is_template else number, "templateId": number if is_template else None}


def field_view(fld: Obj, *, legacy: dict[str, Any] | None = None) -> dict[str, Any]:
    """A field with coordinates serialised as Decimal strings."""
    out = {k: fld[k] for k in _FIELD_KEYS}
    for key in ("positionX", "positionY", "width", "height"):
        out[key] = decimal_str(fld[key])
    if legacy is not None:
        out.update(legacy)
    return out


def folder_view(folder: Obj) -> dict[str, Any]:
    """A folder."""
    keys = (
        "id",
        "name",
        "userId",
        "teamId",
        "parentId",
        "pinned",
        "visibility",
        "type",
        "createdAt",
        "updatedAt",
    )
    return {k: folder[k] for k in keys}


def audit_view(entry: Obj) -> dict[str, Any]:
    """An audit-log entry."""
    keys = (
        "id",
        "createdAt",
        "envelopeId",
        "name",
        "email",
        "userId",
        "userAgent",
        "ipAddress",
        "type",
        "data",
    )
    return {k: entry[k] for k in keys}


def paginate(rows: list[Any], page: int, per_page: int) -> dict[str, Any]:
    """The ``{data, count, currentPage, perPage, totalPages}`` wrapper."""
    count = len(rows)
    start = (page - 1) * per_page
    return {
        "data": rows[start : start + per_page],
        "count": count,
        "currentPage": page,
        "perPage": per_page,
        "totalPages": -(-count // per_page),
    }
