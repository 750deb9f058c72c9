"""Recipient and field routes."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from . import lifecycle, signing, views
from .builders import field_meta, new_field, new_recipient
from .common import authenticate, envelope_or_404, json_body, ok, state_of, success
from .errors import app_error
from .schemas import (
    FIELD_CREATE_MANY,
    FIELD_DELETE,
    FIELD_UPDATE_MANY,
    RECIPIENT_CREATE_MANY,
    RECIPIENT_DELETE,
    RECIPIENT_REJECT,
    RECIPIENT_UPDATE_MANY,
)
from .state import SandboxState
from .store import Obj
from .validation import S, validate

router = APIRouter()

# The real service's messages (v2.17.0: update-envelope-recipients.ts, delete-envelope-recipient.ts,
# update-envelope-fields.ts and the delete-envelope-field route).
RECIPIENT_INTERACTED = "Cannot modify a recipient who has already interacted with the document"
FIELD_INTERACTED = "Cannot modify a field where the recipient has already interacted with the document"
DELETE_INTERACTED = "Recipient has already interacted with the document."


def _path_int(value: str, name: str, trpc_path: str) -> int:
    out = validate(
        {name: value}, S("object", props={name: S("number", coerce=True, integer=True)}), trpc_path
    )
    return int(out[name])


def _interacted(state: SandboxState, rec: Obj) -> bool:
    if rec["role"] == "CC":
        return False
    if rec["signingStatus"] != "NOT_SIGNED":
        return True
    return any(
        f["inserted"] for f in state.store.fields_of(rec["envelopeId"]) if f["recipientId"] == rec["id"]
    )


def _complete(env: Obj) -> bool:
    return env["completedAt"] is not None or env["status"] in lifecycle.TERMINAL


def _open_envelope(state: SandboxState, envelope_id: str, path: str) -> Obj:
    """The envelope whose recipients and fields may still change (NOT_FOUND, or refused once complete)."""
    env = envelope_or_404(state, envelope_id, path)
    if _complete(env):
        raise app_error(path, "INVALID_REQUEST", "Envelope already complete")
    return env


def _item_of(state: SandboxState, env: Obj, item_id: str | None, path: str) -> Obj:
    """The envelope item ``item_id`` of ``env`` (INVALID_REQUEST when missing or of another envelope)."""
    item = state.store.get("item", item_id) if item_id else None
    if item is None or item["envelopeId"] != env["id"]:
        raise app_error(path, "INVALID_REQUEST", "Envelope item not found in this envelope")
    return item


# -- recipients -------------------------------------------------------------------------------------
@router.get("/envelope/recipient/{recipient_id}")
async def get_recipient(request: Request, recipient_id: str) -> Response:
    """A recipient with its fields."""
    path = "envelope.recipient.get"
    authenticate(request, path)
    state = state_of(request)
    rid = _path_int(recipient_id, "recipientId", path)
    rec = state.store.get("recipient", rid)
    env = state.store.get("envelope", rec["envelopeId"]) if rec else None
    if rec is None or env is None:
        raise app_error(path, "NOT_FOUND", "Recipient not found")
    return ok(views.recipient_full(state.store, rec))


@router.post("/envelope/recipient/create-many")
async def create_recipients(request: Request) -> Response:
    """Add recipients (refused once the envelope is complete)."""
    path = "envelope.recipient.createMany"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), RECIPIENT_CREATE_MANY, path)
    store = state.store
    with store.tx():
        env = _open_envelope(state, body["envelopeId"], path)
        created = [
            store.put("recipient", new_recipient(env["id"], spec, store.next_value("recipient")))
            for spec in body["data"]
        ]
        for rec in created:
            state.audit(
                env["id"],
                "RECIPIENT_CREATED",
                {
                    "recipientEmail": rec["email"],
                    "recipientName": rec["name"],
                    "recipientId": rec["id"],
                    "recipientRole": rec["role"],
                    "accessAuth": rec["authOptions"]["accessAuth"],
                    "actionAuth": rec["authOptions"]["actionAuth"],
                },
            )
    return ok({"data": [views.recipient_lite(r) for r in created]})


@router.post("/envelope/recipient/update-many")
async def update_recipients(request: Request) -> Response:
    """Update recipients; every update resets send and signing status (a real-service quirk)."""
    path = "envelope.recipient.updateMany"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), RECIPIENT_UPDATE_MANY, path)
    store = state.store
    with store.tx():
        env = _open_envelope(state, body["envelopeId"], path)
        updated = []
        for entry in body["data"]:
            rec = store.edit("recipient", int(entry["id"]))
            if rec is None or rec["envelopeId"] != env["id"]:
                raise app_error(path, "NOT_FOUND", f"Recipient with id {entry['id']} not found")
            if _interacted(state, rec):
                raise app_error(path, "INVALID_REQUEST", RECIPIENT_INTERACTED)
            for key in ("email", "name", "role", "signingOrder"):
                if key in entry:
                    rec[key] = entry[key].lower() if key == "email" else entry[key]
            if "accessAuth" in entry:
                rec["authOptions"]["accessAuth"] = entry["accessAuth"]
            if "actionAuth" in entry:
                rec["authOptions"]["actionAuth"] = entry["actionAuth"]
            # Quirk of the real service: every update resets the statuses.
            is_cc = rec["role"] == "CC"
            rec["sendStatus"] = "SENT" if is_cc else "NOT_SENT"
            rec["signingStatus"] = "SIGNED" if is_cc else "NOT_SIGNED"
            store.put("recipient", rec)
            if rec["role"] in ("CC", "VIEWER"):
                for fld in store.fields_of(env["id"]):
                    if fld["recipientId"] == rec["id"]:
                        store.remove("field", fld["id"])
            updated.append(rec)
        legacy = views.legacy_ids(store, env["id"])
    return ok({"data": [{**views.recipient_lite(r), **legacy} for r in updated]})


@router.post("/envelope/recipient/delete")
async def delete_recipient(request: Request) -> Response:
    """Delete a recipient that has not interacted (and its fields)."""
    path = "envelope.recipient.delete"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), RECIPIENT_DELETE, path)
    store = state.store
    with store.tx():
        rec = store.get("recipient", int(body["recipientId"]))
        env = store.get("envelope", rec["envelopeId"]) if rec else None
        if rec is None or env is None:
            raise app_error(path, "NOT_FOUND", "Recipient not found")
        if _complete(env):
            raise app_error(path, "INVALID_REQUEST", "Document already complete")
        if _interacted(state, rec):
            raise app_error(path, "INVALID_REQUEST", DELETE_INTERACTED)
        for fld in store.fields_of(env["id"]):
            if fld["recipientId"] == rec["id"]:
                store.remove("field", fld["id"])
        store.remove("recipient", rec["id"])
        state.audit(
            env["id"],
            "RECIPIENT_DELETED",
            {
                "recipientEmail": rec["email"],
                "recipientName": rec["name"],
                "recipientId": rec["id"],
                "recipientRole": rec["role"],
            },
        )
    return success()


@router.post("/envelope/recipient/{recipient_id}/reject")
async def reject_recipient(request: Request, recipient_id: str) -> Response:
    """Record an external rejection; the envelope becomes REJECTED shortly after."""
    path = "envelope.recipient.rejectOnBehalfOf"
    authenticate(request, path)
    state = state_of(request)
    rid = _path_int(recipient_id, "recipientId", path)
    body = validate(await json_body(request), RECIPIENT_REJECT, path)
    rec = signing.reject(state, body["envelopeId"], rid, body["reason"], path=path)
    return ok(views.recipient_full(state.store, rec))


# -- fields -----------------------------------------------------------------------------------------
@router.get("/envelope/field/{field_id}")
async def get_field(request: Request, field_id: str) -> Response:
    """One field."""
    path = "envelope.field.get"
    authenticate(request, path)
    state = state_of(request)
    fid = _path_int(field_id, "fieldId", path)
    fld = state.store.get("field", fid)
    if fld is None:
        raise app_error(path, "NOT_FOUND", "Field not found")
    return ok(views.field_view(fld))


def _field_target(
    state: SandboxState,
    env: Obj,
    rec_id: int,
    path: str,
    message: str = "Cannot modify fields of a recipient that has interacted or cannot sign",
) -> Obj:
    rec = state.store.get("recipient", rec_id)
    if rec is None or rec["envelopeId"] != env["id"]:
        raise app_error(path, "INVALID_REQUEST", f"Recipient {rec_id} not found")
    if rec["role"] in ("CC", "VIEWER") or _interacted(state, rec):
        raise app_error(path, "INVALID_REQUEST", message)
    return rec


@router.post("/envelope/field/create-many")
async def create_fields(request: Request) -> Response:
    """Add fields by coordinates (pages beyond the PDF are accepted, as on the real service)."""
    path = "envelope.field.createMany"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), FIELD_CREATE_MANY, path)
    store = state.store
    with store.tx():
        env = _open_envelope(state, body["envelopeId"], path)
        items = store.items_of(env["id"])
        created = []
        for spec in body["data"]:
            _field_target(state, env, int(spec["recipientId"]), path)
            default_item = items[0]["id"] if items else None  # the service defaults to the first item
            item = _item_of(state, env, spec.get("envelopeItemId") or default_item, path)
            if "placeholder" in spec and "page" not in spec:
                raise app_error(path, "INVALID_BODY", f'Placeholder "{spec["placeholder"]}" not found in PDF')
            fld = new_field(env["id"], item["id"], int(spec["recipientId"]), spec, store.next_value("field"))
            store.put("field", fld)
            created.append(fld)
        legacy = views.legacy_ids(store, env["id"])
    return ok({"data": [views.field_view(f, legacy=legacy) for f in created]})


@router.post("/envelope/field/update-many")
async def update_fields(request: Request) -> Response:
    """Update fields, reproducing two v2.17 bugs: position changes are ignored, fieldMeta is reset.

    ``page``, ``positionX`` and ``positionY`` are silently ignored, and a ``fieldMeta`` left out of the
    request is reset to the type's defaults.
    """
    path = "envelope.field.updateMany"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), FIELD_UPDATE_MANY, path)
    store = state.store
    with store.tx():
        env = _open_envelope(state, body["envelopeId"], path)
        updated = []
        for spec in body["data"]:
            fld = store.edit("field", int(spec["id"]))
            if fld is None or fld["envelopeId"] != env["id"]:
                raise app_error(path, "NOT_FOUND", f"Field with id {spec['id']} not found")
            _field_target(state, env, fld["recipientId"], path, FIELD_INTERACTED)
            meta = spec.get("fieldMeta")
            if meta is not None and meta.get("type") not in (None, spec["type"].lower()):
                raise app_error(path, "INVALID_BODY", "Field meta type does not match the field type")
            # Real v2.17.0 bug (documenso-api-v2.md section 6): the service reads pageNumber/pageX/pageY,
            # so page, positionX and positionY sent by the API are silently ignored.
            if spec.get("envelopeItemId"):
                fld["envelopeItemId"] = _item_of(state, env, spec["envelopeItemId"], path)["id"]
            for key in ("width", "height"):
                if key in spec:
                    fld[key] = spec[key]
            # Real v2.17.0 bug (documenso#3286, recordings fieldmeta/50-52): the request schema defaults
            # a missing fieldMeta to the type's defaults, and the service writes it: an update that
            # leaves fieldMeta out resets the label, placeholder, required... A given one replaces it.
            fld["type"] = spec["type"]
            fld["fieldMeta"] = field_meta(spec["type"], meta)
            store.put("field", fld)
            updated.append(fld)
        legacy = views.legacy_ids(store, env["id"])
    return ok({"data": [views.field_view(f, legacy=legacy) for f in updated]})


@router.post("/envelope/field/delete")
async def delete_field(request: Request) -> Response:
    """Delete a field (not once complete or after its recipient acted)."""
    path = "envelope.field.delete"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), FIELD_DELETE, path)
    store = state.store
    with store.tx():
        fld = store.get("field", int(body["fieldId"]))
        env = store.get("envelope", fld["envelopeId"]) if fld else None
        if fld is None or env is None:
            raise app_error(path, "NOT_FOUND", "Field not found")
        if _complete(env):
            raise app_error(path, "INVALID_REQUEST", "Envelope already complete")
        rec = store.get("recipient", fld["recipientId"])
        if rec is not None and (rec["role"] in ("CC", "VIEWER") or _interacted(state, rec)):
            raise app_error(path, "INVALID_REQUEST", DELETE_INTERACTED)
        store.remove("field", fld["id"])
    return success()
