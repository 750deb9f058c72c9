"""Attachment routes: labelled links of an envelope (``/envelope/attachment``, Documenso v2.17).

As on the real service (``packages/lib/server-only/envelope-attachment/*``): a label of at least one
character and an ``http``/``https`` URL; every change is refused on a COMPLETED or REJECTED envelope
(400 ``INVALID_REQUEST``); a find lists ``{id, type, label, data}`` oldest first. This router is mounted
before the envelope router, as the real one is, so that ``GET /envelope/attachment`` is not taken for
``GET /envelope/{id}``.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from .common import authenticate, json_body, ok, state_of, success
from .errors import app_error
from .faults import note_request
from .ids import cuid, iso
from .state import SandboxState
from .store import Obj
from .validation import S, check, raise_if

router = APIRouter()

FROZEN = ("COMPLETED", "REJECTED")
FROZEN_MESSAGE = "Attachments can not be modified after the document has been completed or rejected"

_DATA = S("object", props={"label": S("string"), "data": S("string")})
CREATE = S("object", props={"envelopeId": S("string"), "data": _DATA})
UPDATE = S("object", props={"id": S("string"), "data": _DATA})
DELETE = S("object", props={"id": S("string")})
FIND = S("object", props={"envelopeId": S("string"), "token": S("string", optional=True)})


def _link_issues(data: Any, issues: list[dict[str, Any]]) -> None:
    """Zod's ``label.min(1, 'Label is required')`` and ``data.url().refine(isHttpUrl)`` issues."""
    if not isinstance(data, dict):
        return
    label, url = data.get("label"), data.get("data")
    if isinstance(label, str) and len(label) < 1:
        issues.append(
            {
                "code": "too_small",
                "minimum": 1,
                "type": "string",
                "inclusive": True,
                "exact": False,
                "message": "Label is required",
                "path": ["data", "label"],
            }
        )
    if not isinstance(url, str):
        return
    try:
        parts = urlsplit(url)
        valid = bool(parts.scheme) and bool(parts.netloc or parts.path) and " " not in url
    except ValueError:
        valid = False
    if not valid:
        issues.append(
            {
                "validation": "url",
                "code": "invalid_string",
                "message": "Must be a valid URL",
                "path": ["data", "data"],
            }
        )
    elif parts.scheme.lower() not in ("http", "https"):
        issues.append(
            {"code": "custom", "message": "URL must use the http or https protocol", "path": ["data", "data"]}
        )


def _validated(body: Any, spec: Any, path: str) -> dict[str, Any]:
    issues: list[dict[str, Any]] = []
    out = check(body, spec, [], issues)
    if not issues and "data" in out:
        _link_issues(out["data"], issues)
    raise_if(issues, path)
    result: dict[str, Any] = out
    return result


def view(att: Obj) -> dict[str, Any]:
    """An attachment as the find route lists it (the output schema strips every other column)."""
    return {"id": att["id"], "type": att["type"], "label": att["label"], "data": att["data"]}


def new_attachment(envelope_id: str, label: str, data: str, kind: str = "link") -> Obj:
    """A stored attachment row (``EnvelopeAttachment``)."""
    now = iso()
    return {
        "id": cuid(),
        "envelopeId": envelope_id,
        "type": kind,
        "label": label,
        "data": data,
        "createdAt": now,
        "updatedAt": now,
        "_seq": time.time_ns(),
    }


def attachments_of(state: SandboxState, envelope_id: str) -> list[Obj]:
    """An envelope's attachments, oldest first."""
    return sorted(state.store.attachments_of(envelope_id), key=lambda a: (a["createdAt"], a["_seq"]))


def _frozen_check(env: Obj, path: str) -> None:
    if env["status"] in FROZEN:
        raise app_error(path, "INVALID_REQUEST", FROZEN_MESSAGE)


def _attachment_and_envelope(state: SandboxState, attachment_id: str, path: str) -> tuple[Obj, Obj]:
    att = state.store.get("attachment", attachment_id)
    env = state.store.get("envelope", att["envelopeId"]) if att else None
    if att is None or env is None:
        raise app_error(path, "NOT_FOUND", "Attachment not found")
    return att, env


@router.get("/envelope/attachment")
async def find_attachments(request: Request) -> Response:
    """Every attachment of an envelope (``?envelopeId=``), oldest first."""
    path = "envelope.attachment.find"
    authenticate(request, path)
    state = state_of(request)
    q = _validated(dict(request.query_params), FIND, path)
    env = state.store.get("envelope", q["envelopeId"])
    if env is None:
        raise app_error(path, "NOT_FOUND", "Envelope not found")
    return ok({"data": [view(a) for a in attachments_of(state, env["id"])]})


@router.post("/envelope/attachment/create")
async def create_attachment(request: Request) -> Response:
    """Attach a link; ``{id}``."""
    path = "envelope.attachment.create"
    authenticate(request, path)
    state = state_of(request)
    body = _validated(await json_body(request), CREATE, path)
    note_request(envelopeId=body["envelopeId"], data=body["data"])
    store = state.store
    with store.tx():
        env = store.get("envelope", body["envelopeId"])
        if env is None:
            raise app_error(path, "NOT_FOUND", "Envelope not found")
        _frozen_check(env, path)
        att = store.put("attachment", new_attachment(env["id"], body["data"]["label"], body["data"]["data"]))
    return ok({"id": att["id"]})


@router.post("/envelope/attachment/update")
async def update_attachment(request: Request) -> Response:
    """Change an attachment's label and link (both required)."""
    path = "envelope.attachment.update"
    authenticate(request, path)
    state = state_of(request)
    body = _validated(await json_body(request), UPDATE, path)
    note_request(id=body["id"], data=body["data"])
    store = state.store
    with store.tx():
        att, env = _attachment_and_envelope(state, body["id"], path)
        _frozen_check(env, path)
        att = dict(att, label=body["data"]["label"], data=body["data"]["data"], updatedAt=iso())
        store.put("attachment", att)
    return success()


@router.post("/envelope/attachment/delete")
async def delete_attachment(request: Request) -> Response:
    """Remove an attachment."""
    path = "envelope.attachment.delete"
    authenticate(request, path)
    state = state_of(request)
    body = _validated(await json_body(request), DELETE, path)
    note_request(id=body["id"])
    store = state.store
    with store.tx():
        att, env = _attachment_and_envelope(state, body["id"], path)
        _frozen_check(env, path)
        store.remove("attachment", att["id"])
    return success()
