"""Test-only control routes under ``/_sandbox/``: bulk-seed envelopes and set their timestamps.

The real service has no such routes. They exist so that tests and benchmarks can hold thousands of
envelopes with known ``createdAt``/``updatedAt``/``completedAt`` times (spread over past days) without
creating each one through multipart HTTP and waiting for real time to pass:

- ``POST /_sandbox/seed`` ``{"envelopes": [spec, ...]}`` stores envelopes as they would look after their
  life so far (status, times, recipients with their signing state, fields with their values) and
  returns ``{"ids": [...]}`` in the order given;
- ``POST /_sandbox/times`` ``{"envelopeId", "createdAt"?, "updatedAt"?, "completedAt"?, "sentAt"?,
  "recipients"?: [{"id", "signedAt"?, "expiresAt"?}], "audit"?: [...]}`` rewrites the timestamps of any
  envelope, including one created through the API.

A ``sentAt`` becomes a ``DOCUMENT_SENT`` audit-log entry at that time: the real service records the
sending time only there (no envelope or recipient attribute holds it). ``audit`` (in a spec or a
times call) adds further entries ``{"type", "createdAt"}`` in the order given, e.g. ``DOCUMENT_OPENED``,
where the service records when a recipient first opened the document.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from airflow_provider_docsign.samples import write_sample_pdf

from .builders import new_field, new_meta, new_recipient
from .common import authenticate, json_body, ok, state_of
from .errors import ApiError
from .ids import cuid, envelope_item_id, iso
from .ids import envelope_id as new_envelope_id
from .state import SandboxState
from .store import Obj

router = APIRouter(prefix="/_sandbox")

_STATUSES = ("DRAFT", "PENDING", "COMPLETED", "REJECTED", "CANCELLED")
_SEED_PDF = "seeded-envelope.pdf"
#: One seed call stores at most this many envelopes (a bounded request).
MAX_SEED = 20_000
#: One envelope spec (or times call) adds at most this many further audit entries.
MAX_AUDIT = 20_000


def _bad(message: str) -> ApiError:
    return ApiError(400, {"error": message})


def _time(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or "T" not in value:
        raise _bad(f"{where} must be an ISO-8601 timestamp")
    return value


def _sent_entry(env_id: str, at: str, kind: str = "DOCUMENT_SENT") -> Obj:
    return {
        "id": cuid(),
        "createdAt": at,
        "envelopeId": env_id,
        "name": "Sandbox Owner",
        "email": "owner@sandbox.test",
        "userId": 1,
        "userAgent": "airflow-provider-docsign-sandbox",
        "ipAddress": "127.0.0.1",
        "type": kind,
        "data": {},
        "_seq": time.time_ns(),
    }


def _extra_audit(store: Any, env_id: str, entries: Any, where: str) -> None:
    """``audit``: further entries ``{"type", "createdAt"}`` (``DOCUMENT_OPENED``...), stored in order."""
    if entries is None:
        return
    if not isinstance(entries, list) or len(entries) > MAX_AUDIT:
        raise _bad(f"{where}.audit must be a list of at most {MAX_AUDIT} entries")
    for a_index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise _bad(f"{where}.audit[{a_index}].type is required")
        at = _time(entry.get("createdAt"), f"{where}.audit[{a_index}].createdAt") or iso()
        store.put("audit", _sent_entry(env_id, at, entry["type"]))


def _seed_one(state: SandboxState, spec: Any, index: int) -> str:
    where = f"envelopes[{index}]"
    if not isinstance(spec, dict) or not isinstance(spec.get("title"), str):
        raise _bad(f"{where}.title is required")
    status = spec.get("status", "DRAFT")
    if status not in _STATUSES:
        raise _bad(f"{where}.status must be one of {', '.join(_STATUSES)}")
    created = _time(spec.get("createdAt"), f"{where}.createdAt") or iso()
    store = state.store
    folder_id = spec.get("folderId")
    if folder_id is not None and store.get("folder", folder_id) is None:
        raise _bad(f"{where}.folderId: folder {folder_id!r} not found")
    env_id = new_envelope_id()
    number = store.next_value("document")
    env: Obj = {
        "internalVersion": 2,
        "type": "DOCUMENT",
        "status": status,
        "source": "TEMPLATE" if spec.get("templateId") is not None else "DOCUMENT",
        "visibility": "EVERYONE",
        "templateType": "PRIVATE",
        "id": env_id,
        "secondaryId": f"document_{number}",
        "externalId": spec.get("externalId"),
        "createdAt": created,
        "updatedAt": _time(spec.get("updatedAt"), f"{where}.updatedAt") or created,
        "completedAt": _time(spec.get("completedAt"), f"{where}.completedAt"),
        "deletedAt": None,
        "title": spec["title"],
        "authOptions": {"globalAccessAuth": [], "globalActionAuth": []},
        "formValues": None,
        "publicTitle": "",
        "publicDescription": "",
        "userId": 1,
        "teamId": 1,
        "folderId": folder_id,
        "templateId": spec.get("templateId"),
        "documentMeta": new_meta(None),
        "_seq": time.time_ns(),
        "_autoSignAt": None,
    }
    store.put("envelope", env)
    item = store.put(
        "item",
        {
            "id": envelope_item_id(),
            "envelopeId": env_id,
            "documentDataId": cuid(),
            "title": "seeded.pdf",
            "order": 1,
            "_original": _SEED_PDF,
            "_originalSha256": None,
            "_signed": None,
            "_signedSha256": None,
            "_pages": 1,
            "_size": 0,
            "_seq": time.time_ns(),
        },
    )
    for r_index, rspec in enumerate(spec.get("recipients") or []):
        rwhere = f"{where}.recipients[{r_index}]"
        if not isinstance(rspec, dict):
            raise _bad(f"{rwhere} must be an object")
        rspec = {"role": "SIGNER", **rspec}
        rec = new_recipient(env_id, rspec, store.next_value("recipient"))
        for key in ("readStatus", "sendStatus", "signingStatus", "rejectionReason"):
            if key in rspec:
                rec[key] = rspec[key]
        for key in ("signedAt", "expiresAt"):
            rec[key] = _time(rspec.get(key), f"{rwhere}.{key}")
        store.put("recipient", rec)
        for f_index, fspec in enumerate(rspec.get("fields") or []):
            if not isinstance(fspec, dict) or not isinstance(fspec.get("type"), str):
                raise _bad(f"{rwhere}.fields[{f_index}].type is required")
            fld = new_field(env_id, item["id"], rec["id"], fspec, store.next_value("field"))
            if "customText" in fspec:
                fld["customText"] = str(fspec["customText"])
                fld["inserted"] = bool(fspec.get("inserted", True))
            store.put("field", fld)
    sent = _time(spec.get("sentAt"), f"{where}.sentAt")
    if sent is not None:
        store.put("audit", _sent_entry(env_id, sent))
    _extra_audit(store, env_id, spec.get("audit"), where)
    return env_id


def _seed(state: SandboxState, specs: list[Any]) -> list[str]:
    pdf = state.store.file_path(_SEED_PDF)
    if not pdf.exists():
        write_sample_pdf(pdf, title="seeded envelope")
    with state.store.tx():  # all or nothing
        return [_seed_one(state, spec, i) for i, spec in enumerate(specs)]


@router.post("/seed")
async def seed(request: Request) -> Response:
    """Bulk-store envelopes with given times and states (test-only; see the module docstring)."""
    authenticate(request, "sandbox.seed")
    body = await json_body(request)
    specs = body.get("envelopes") if isinstance(body, dict) else None
    if not isinstance(specs, list) or not 1 <= len(specs) <= MAX_SEED:
        raise _bad(f"envelopes must be a list of 1..{MAX_SEED} envelope specs")
    ids = await run_in_threadpool(_seed, state_of(request), specs)
    return ok({"ids": ids})


def _set_times(state: SandboxState, body: dict[str, Any]) -> Obj:
    store = state.store
    env_id = str(body.get("envelopeId", ""))
    with store.tx():
        env = store.edit("envelope", env_id)
        if env is None:
            raise ApiError(404, {"error": "Envelope not found"})
        for key in ("createdAt", "updatedAt", "completedAt"):
            if key in body:
                env[key] = _time(body[key], key)
        store.put("envelope", env)
        if body.get("sentAt") is not None:
            store.put("audit", _sent_entry(env_id, str(_time(body["sentAt"], "sentAt"))))
        _extra_audit(store, env_id, body.get("audit"), "body")
        for r_index, change in enumerate(body.get("recipients") or []):
            rec = store.edit("recipient", int(change.get("id", -1)))
            if rec is None or rec["envelopeId"] != env_id:
                raise _bad(f"recipients[{r_index}].id is not a recipient of {env_id}")
            for key in ("signedAt", "expiresAt"):
                if key in change:
                    rec[key] = _time(change[key], f"recipients[{r_index}].{key}")
            store.put("recipient", rec)
        return env


@router.post("/times")
async def set_times(request: Request) -> Response:
    """Rewrite an envelope's timestamps (test-only; see the module docstring)."""
    authenticate(request, "sandbox.times")
    body = await json_body(request)
    if not isinstance(body, dict):
        raise _bad("the body must be an object")
    env = await run_in_threadpool(_set_times, state_of(request), body)
    return ok({"success": True, "envelopeId": env["id"]})
