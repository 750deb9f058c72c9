"""Envelope routes: create, get, get-many, find, update, delete, (re)distribute, cancel, audit log."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from . import expiry, lifecycle, views
from .builders import (
    check_files,
    check_item_limit,
    check_payload,
    meta_update,
    new_field,
    new_meta,
    new_recipient,
    pdf_pages,
    resolve_identifier,
    store_item,
)
from .common import (
    authenticate,
    envelope_or_404,
    json_body,
    multipart_call,
    ok,
    state_of,
    success,
    webapp_url,
)
from .errors import app_error
from .faults import note_request
from .ids import envelope_id as new_envelope_id
from .ids import iso
from .routes_attachments import new_attachment
from .schemas import (
    CANCEL,
    CREATE_PAYLOAD,
    DISTRIBUTE,
    ENVELOPE_ID_BODY,
    FIND_QUERY,
    GET_MANY,
    PAGE_QUERY,
    REDISTRIBUTE,
    UPDATE_ENVELOPE,
)
from .state import SandboxState
from .store import Obj
from .upload import FormData
from .validation import MISSING, validate

router = APIRouter()
_ENVELOPE_ID = re.compile(r"^envelope_.{2,}$")


@router.post("/envelope/create")
async def create_envelope(request: Request) -> Response:
    """Multipart create: ``payload`` JSON text plus ``files`` parts, streamed to disk."""
    return await multipart_call(request, "envelope.create", _create)


def _create(state: SandboxState, form: FormData) -> dict[str, Any]:
    path = "envelope.create"
    raw = form.fields.get("payload", MISSING)
    if isinstance(raw, str) and form.is_multipart:
        with contextlib.suppress(ValueError):
            raw = json.loads(raw)
    payload = check_payload(raw, CREATE_PAYLOAD, path)
    note_request(meta=payload.get("meta"))
    check_files(form, state, path)
    check_item_limit(len(form.files), path)
    folder_id = payload.get("folderId")
    if folder_id is not None:
        folder = state.store.get("folder", folder_id)
        if folder is None or folder["type"] != payload["type"]:
            raise app_error(path, "NOT_FOUND", "Folder not found")
    pages = [pdf_pages(f, path) for f in form.files]
    recipients = payload.get("recipients") or []
    resolved: list[list[int]] = []
    for rec in recipients:
        indexes = []
        for fld in rec.get("fields") or []:
            index = resolve_identifier(fld.get("identifier", MISSING), form.files)
            if index is None:
                raise app_error(path, "NOT_FOUND", "Document data not found")
            indexes.append(index)
        resolved.append(indexes)
    store = state.store
    env_id = new_envelope_id()
    now = iso()
    with store.tx():
        number = store.next_value("document")
        env: Obj = {
            "internalVersion": 2,
            "type": payload["type"],
            "status": "DRAFT",
            "source": "DOCUMENT",
            "visibility": payload.get("visibility", "EVERYONE"),
            "templateType": "PRIVATE",
            "id": env_id,
            "secondaryId": f"{'template' if payload['type'] == 'TEMPLATE' else 'document'}_{number}",
            "externalId": payload.get("externalId"),
            "createdAt": now,
            "updatedAt": now,
            "completedAt": None,
            "deletedAt": None,
            "title": payload["title"],
            "authOptions": {
                "globalAccessAuth": payload.get("globalAccessAuth", []),
                "globalActionAuth": payload.get("globalActionAuth", []),
            },
            "formValues": payload.get("formValues"),
            "publicTitle": "",
            "publicDescription": "",
            "userId": 1,
            "teamId": 1,
            "folderId": folder_id,
            "templateId": None,
            "documentMeta": new_meta(payload.get("meta")),
            # Stored like the real service, not shown in GET's documentMeta (OpenAPI 2.17).
            "_reminderSettings": (payload.get("meta") or {}).get("reminderSettings"),
            "_seq": time.time_ns(),
            "_autoSignAt": None,
        }
        store.put("envelope", env)
        items = [store_item(state, env_id, f, i + 1, pages[i]) for i, f in enumerate(form.files)]
        for att in payload.get("attachments") or []:  # the real create stores them as links
            store.put(
                "attachment",
                new_attachment(env_id, str(att.get("label", "")), str(att.get("data", "")), "link"),
            )
        for rec_spec, indexes in zip(recipients, resolved, strict=True):
            rec = store.put("recipient", new_recipient(env_id, rec_spec, store.next_value("recipient")))
            for fld_spec, index in zip(rec_spec.get("fields") or [], indexes, strict=True):
                store.put(
                    "field",
                    new_field(env_id, items[index]["id"], rec["id"], fld_spec, store.next_value("field")),
                )
        if payload["type"] == "DOCUMENT":
            state.audit(
                env_id, "DOCUMENT_CREATED", {"title": payload["title"], "source": {"type": "DOCUMENT"}}
            )
    return {"id": env_id}


@router.get("/envelope")
async def find_envelopes(request: Request) -> Response:
    """Find: substring ``query`` over title, externalId and recipients; root only without ``folderId``."""
    path = "envelope.find"
    authenticate(request, path)
    state = state_of(request)
    q = validate(dict(request.query_params), FIND_QUERY, path)
    page = int(q.get("page", 1))
    per_page = int(q.get("perPage", 10))
    rows = [e for e in state.store.all("envelope") if e["deletedAt"] is None]
    if "type" in q:
        rows = [e for e in rows if e["type"] == q["type"]]
    if "status" in q:
        rows = [e for e in rows if e["status"] == q["status"]]
    if "source" in q:
        rows = [e for e in rows if e["source"] == q["source"]]
    note_request(params={k: v for k, v in request.query_params.items()})
    # Real service: ``if (templateId)`` and ``if (hasExpiredRecipients)``: 0 and "false" filter nothing
    # (there is no "no expired recipient" filter).
    if q.get("templateId"):
        rows = [e for e in rows if e.get("templateId") == q["templateId"]]
    if q.get("hasExpiredRecipients") == "true":
        rows = [e for e in rows if _has_expired_recipient(state, e)]
    # Real service: without folderId only root-level envelopes (folderId IS NULL) are returned.
    folder = q.get("folderId")
    rows = [e for e in rows if e["folderId"] == folder]
    if q.get("query"):
        pattern = _ilike(q["query"])
        rows = [e for e in rows if _matches(state, e, pattern)]
    asc = q.get("orderByColumn") == "createdAt" and q.get("orderByDirection") == "asc"
    rows.sort(key=lambda e: (e["createdAt"], e["_seq"]), reverse=not asc)
    result = views.paginate(rows, page, per_page)
    result["data"] = [views.envelope_many(state.store, e) for e in result["data"]]
    return ok(result)


def _has_expired_recipient(state: SandboxState, env: Obj) -> bool:
    return any(expiry.is_expired(r) for r in state.store.recipients_of(env["id"]))


def _ilike(query: str) -> re.Pattern[str]:
    # ILIKE '%q%' with % and _ left unescaped, as the real service does.
    parts = [".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in query]
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def _matches(state: SandboxState, env: Obj, pattern: re.Pattern[str]) -> bool:
    texts = [env["title"], env.get("externalId") or ""]
    for rec in state.store.recipients_of(env["id"]):
        texts += [rec["email"], rec["name"]]
    return any(pattern.search(t or "") for t in texts)


@router.get("/envelope/{envelope_id}")
async def get_envelope(request: Request, envelope_id: str) -> Response:
    """One envelope, full shape (soft-deleted ones too, with ``deletedAt`` set)."""
    path = "envelope.get"
    authenticate(request, path)
    state = state_of(request)
    if not _ENVELOPE_ID.match(envelope_id):
        raise app_error(path, "INVALID_BODY", "Invalid envelope ID")
    env = state.store.get("envelope", envelope_id)
    if env is None:
        raise app_error(path, "NOT_FOUND", "Envelope could not be found")
    return ok(views.envelope_full(state.store, env))


@router.post("/envelope/get-many")
async def get_many(request: Request) -> Response:
    """Up to 20 envelopes by id; unknown ids are left out."""
    path = "envelope.getMany"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), GET_MANY, path)
    kind = body["ids"]["type"]
    wanted = body["ids"]["ids"]
    if kind == "envelopeId":  # look the ids up instead of scanning every envelope
        hits = [e for e in (state.store.get("envelope", i) for i in dict.fromkeys(wanted)) if e is not None]
    else:
        prefix = "document_" if kind == "documentId" else "template_"
        secondary = {f"{prefix}{i}" for i in wanted}
        hits = [e for e in state.store.all("envelope") if e["secondaryId"] in secondary]
    found = [views.envelope_full(state.store, env) for env in sorted(hits, key=lambda e: e["_seq"])]
    return ok({"data": found})


@router.post("/envelope/update")
async def update_envelope(request: Request) -> Response:
    """Update title, externalId, folder, visibility and meta."""
    path = "envelope.update"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), UPDATE_ENVELOPE, path)
    note_request(meta=body.get("meta"))
    store = state.store
    with store.tx():
        env = store.edit("envelope", body["envelopeId"])
        if env is None or env["deletedAt"] is not None:
            raise app_error(path, "NOT_FOUND", "Envelope not found")
        data = body.get("data") or {}
        if "title" in data and env["status"] not in ("DRAFT", "PENDING"):
            raise app_error(path, "INVALID_BODY", "Envelope title cannot be changed once it is complete")
        if "templateType" in data and env["type"] == "DOCUMENT":
            raise app_error(path, "INVALID_BODY", "Template type can only be set on templates")
        if data.get("folderId") is not None:
            folder = store.get("folder", data["folderId"])
            if folder is None or folder["type"] != env["type"]:
                raise app_error(path, "NOT_FOUND", "Folder not found")
        for key in ("title", "externalId", "visibility", "folderId", "templateType"):
            if key in data:
                env[key] = data[key]
        if "globalAccessAuth" in data:
            env["authOptions"]["globalAccessAuth"] = data["globalAccessAuth"]
        if "globalActionAuth" in data:
            env["authOptions"]["globalActionAuth"] = data["globalActionAuth"]
        if body.get("meta"):
            meta = dict(body["meta"])
            # Real service: reminderSettings is stored but GET's documentMeta does not show it.
            if "reminderSettings" in meta:
                env["_reminderSettings"] = meta.pop("reminderSettings")
            # Real service: each key given replaces the stored one; emailSettings is parsed with its
            # defaults first, so a partial object resets the flags it leaves out (builders.email_settings).
            env["documentMeta"].update(meta_update(meta))
        env["updatedAt"] = iso()
        store.put("envelope", env)
    return ok(views.envelope_lite(env))


@router.post("/envelope/delete")
async def delete_envelope(request: Request) -> Response:
    """Hard delete for DRAFT/PENDING, soft delete (``deletedAt``) for terminal envelopes."""
    path = "envelope.delete"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), ENVELOPE_ID_BODY, path)
    store = state.store
    with store.tx():
        env = store.edit("envelope", body["envelopeId"])
        if env is None:
            raise app_error(path, "NOT_FOUND", "Envelope not found")
        if env["deletedAt"] is not None:
            # Real service: deleting a soft-deleted envelope again does nothing and answers success
            # (delete-document.ts returns early on deletedAt).
            return success()
        if env["status"] in ("DRAFT", "PENDING") or env["type"] == "TEMPLATE":
            files = _hard_delete(state, env["id"])
        else:
            env["deletedAt"] = iso()
            store.put("envelope", env)
            files = []
    for name in files:
        with contextlib.suppress(OSError):
            os.unlink(store.file_path(name))
    return success()


def _hard_delete(state: SandboxState, envelope_id: str) -> list[str]:
    store = state.store
    files: list[str] = []
    for item in store.items_of(envelope_id):
        files += [n for n in (item["_original"], item.get("_signed")) if n]
        store.remove("item", item["id"])
    for fld in store.fields_of(envelope_id):
        store.remove("field", fld["id"])
    for rec in store.recipients_of(envelope_id):
        store.remove("recipient", rec["id"])
    for entry in store.audit_of(envelope_id):
        store.remove("audit", entry["id"])
    for att in store.attachments_of(envelope_id):  # ON DELETE CASCADE on the real service
        store.remove("attachment", att["id"])
    store.remove("envelope", envelope_id)
    return files


@router.post("/envelope/distribute")
async def distribute(request: Request) -> Response:
    """Send: DRAFT -> PENDING (unknown or completed envelopes answer 500, as on the real service)."""
    path = "envelope.distribute"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), DISTRIBUTE, path)
    return ok(lifecycle.distribute(state, body["envelopeId"], body.get("meta"), webapp_url(request)))


@router.post("/envelope/redistribute")
async def redistribute(request: Request) -> Response:
    """Resend to listed recipients; PENDING only (others answer 500, as on the real service)."""
    path = "envelope.redistribute"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), REDISTRIBUTE, path)
    note_request(envelopeId=body["envelopeId"], recipients=body["recipients"])
    wanted = [int(i) for i in body["recipients"]]
    return ok(lifecycle.redistribute(state, body["envelopeId"], wanted, webapp_url(request)))


@router.post("/envelope/cancel")
async def cancel(request: Request) -> Response:
    """PENDING -> CANCELLED."""
    path = "envelope.cancel"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), CANCEL, path)
    note_request(envelopeId=body["envelopeId"], reason=body.get("reason"))
    lifecycle.cancel(state, body["envelopeId"], body.get("reason"))
    return success()


def _entry_time(entry: Obj) -> float:
    try:
        at = datetime.fromisoformat(str(entry["createdAt"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return 0.0
    return (at if at.tzinfo else at.replace(tzinfo=timezone.utc)).timestamp()


@router.get("/envelope/{envelope_id}/audit-log")
async def audit_log(request: Request, envelope_id: str) -> Response:
    """Paginated audit log, newest first by default (50 per page)."""
    path = "envelope.auditLog.find"
    authenticate(request, path)
    state = state_of(request)
    q = validate(dict(request.query_params), PAGE_QUERY, path)
    env = envelope_or_404(state, envelope_id, path)
    if env["type"] == "TEMPLATE":
        raise app_error(path, "INVALID_REQUEST", "Templates do not have audit logs.")
    rows = state.store.audit_of(envelope_id)
    # Newest first unless asked otherwise; as the real service, orderByDirection counts only with
    # orderByColumn=createdAt (documenso-api-v2.md, quirk). With the column, by the entry's time
    # (seeded times too); without it, in the order written, which is the real service's createdAt order
    # unless a test skews the sandbox's clock (tests that move it back rely on the order written).
    if q.get("orderByColumn") == "createdAt":
        asc = q.get("orderByDirection") == "asc"
        rows.sort(key=lambda a: (_entry_time(a), a["_seq"]), reverse=not asc)
    else:
        rows.sort(key=lambda a: a["_seq"], reverse=True)
    result = views.paginate(rows, int(q.get("page", 1)), int(q.get("perPage", 50)))
    result["data"] = [views.audit_view(a) for a in result["data"]]
    return ok(result)
