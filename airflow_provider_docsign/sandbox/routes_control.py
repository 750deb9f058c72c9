"""Control API under ``/_sandbox/`` (same API key): simulate signers, inject faults, read the request log."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from . import expiry, signing, views
from .common import authenticate, json_body, ok, state_of
from .errors import ApiError
from .ids import clock_offset, iso, set_clock_offset
from .store import Obj

router = APIRouter(prefix="/_sandbox")


def _bad(message: str) -> ApiError:
    return ApiError(400, {"error": message})


def parse_iso(text: str) -> datetime:
    """The sandbox's own ISO timestamps (``...Z``) back to a datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _int_or_none(value: Any, name: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise _bad(f"{name} must be an integer") from None


@router.get("/health")
async def health() -> Response:
    """Liveness probe (no auth): used by the helper to wait until the server is up."""
    return JSONResponse({"ok": True})


@router.get("/certificate")
async def certificate(request: Request) -> Response:
    """The sandbox's sealing certificate as PEM (public, like an instance's certificate; no auth)."""
    sealer = state_of(request).sealer
    if sealer is None:
        raise ApiError(404, {"error": "this sandbox does not seal documents"})
    pem = await run_in_threadpool(lambda: sealer.certificate_pem)
    return Response(pem, media_type="application/x-pem-file")


@router.post("/sign")
async def sign(request: Request) -> Response:
    """``{envelopeId, recipientId?}``: sign as one recipient, or as every unsigned non-CC recipient."""
    authenticate(request, "sandbox.sign")
    body = await json_body(request)
    env_id = str(body.get("envelopeId", ""))
    rid = _int_or_none(body.get("recipientId"), "recipientId")
    signed = await run_in_threadpool(signing.sign, state_of(request), env_id, rid)
    return ok({"success": True, "signed": signed})


@router.post("/complete")
async def complete(request: Request) -> Response:
    """``{envelopeId}``: every recipient signs (sealing follows shortly after)."""
    authenticate(request, "sandbox.complete")
    body = await json_body(request)
    signed = await run_in_threadpool(signing.sign, state_of(request), str(body.get("envelopeId", "")), None)
    return ok({"success": True, "signed": signed})


@router.post("/reject")
async def reject(request: Request) -> Response:
    """``{envelopeId, recipientId, reason}``: reject as a recipient (REJECTED shortly after)."""
    authenticate(request, "sandbox.reject")
    body = await json_body(request)
    rid = _int_or_none(body.get("recipientId"), "recipientId")
    if rid is None:
        raise _bad("recipientId is required")
    reason = str(body.get("reason") or "Rejected in the sandbox")
    state = state_of(request)
    rec: Obj = await run_in_threadpool(
        lambda: signing.reject(state, str(body.get("envelopeId", "")), rid, reason, path="sandbox.reject")
    )
    return ok({"success": True, "recipientId": rec["id"]})


@router.post("/expire")
async def expire(request: Request) -> Response:
    """``{envelopeId, recipientId?}``: a signing link (or every unsigned signer's) expires now.

    The envelope stays PENDING and ``RECIPIENT_EXPIRED`` is sent, as on the real service.
    """
    authenticate(request, "sandbox.expire")
    body = await json_body(request)
    rid = _int_or_none(body.get("recipientId"), "recipientId")
    state = state_of(request)
    expired = await run_in_threadpool(expiry.expire, state, str(body.get("envelopeId", "")), rid)
    return ok({"success": True, "expired": expired})


@router.post("/backdate")
async def backdate(request: Request) -> Response:
    """``{envelopeId, days}``: move the envelope's ``createdAt`` this many days into the past.

    For tests of age-based rules (such as the stalled-contracts example) without waiting days.
    """
    authenticate(request, "sandbox.backdate")
    body = await json_body(request)
    try:
        days = float(body.get("days"))
    except (TypeError, ValueError):
        raise _bad("days must be a number") from None
    env_id = str(body.get("envelopeId", ""))
    state = state_of(request)
    with state.store.tx():
        env = state.store.edit("envelope", env_id)
        if env is None:
            raise ApiError(404, {"error": f"no envelope {env_id}"})
        env["createdAt"] = iso(parse_iso(env["createdAt"]) - timedelta(days=days))
        state.store.put("envelope", env)
    return ok({"success": True, "createdAt": env["createdAt"]})


@router.post("/clock")
async def clock(request: Request) -> Response:
    """``{offsetSeconds}``: skew the sandbox's clock against the machine's (``0`` puts it back).

    Every timestamp the sandbox writes (``createdAt`` of audit entries, ``expiresAt``...) and its
    ``Date`` header follow it, as a service whose clock differs from Airflow's would. Answers
    ``{offsetSeconds, now}``.
    """
    authenticate(request, "sandbox.clock")
    body = await json_body(request)
    try:
        offset = float(body.get("offsetSeconds"))
    except (TypeError, ValueError):
        raise _bad("offsetSeconds must be a number") from None
    if not -366 * 86400 <= offset <= 366 * 86400:
        raise _bad("offsetSeconds must be within a year")
    set_clock_offset(offset)
    return ok({"offsetSeconds": clock_offset(), "now": iso()})


@router.get("/reminders")
async def reminders(request: Request) -> Response:
    """Reminder e-mails counted by redistribute (never sent).

    Answers ``{data: [{envelopeId, recipientId, count}], total}``; ``?envelopeId=`` narrows it.
    """
    authenticate(request, "sandbox.reminders")
    env_id = request.query_params.get("envelopeId")
    rows = expiry.reminders(state_of(request), env_id)
    return ok({"data": rows, "total": sum(r["count"] for r in rows)})


@router.post("/faults")
async def add_fault(request: Request) -> Response:
    """Register a fault; see :mod:`.faults` for the actions."""
    authenticate(request, "sandbox.faults")
    body = await json_body(request)
    try:
        fault = state_of(request).traffic.add_fault(body)
    except (TypeError, ValueError) as exc:
        raise _bad(str(exc)) from None
    return ok(fault.to_dict())


@router.get("/faults")
async def list_faults(request: Request) -> Response:
    """Pending faults."""
    authenticate(request, "sandbox.faults")
    traffic = state_of(request).traffic
    with traffic.lock:
        faults = [f.to_dict() for f in traffic.faults]
    return ok({"data": faults})


@router.post("/faults/clear")
async def clear_faults(request: Request) -> Response:
    """Drop all pending faults."""
    authenticate(request, "sandbox.faults")
    state_of(request).traffic.clear_faults()
    return ok({"success": True})


@router.get("/requests")
async def requests_log(request: Request) -> Response:
    """The ``/api/v2`` request log: ``[{method, path, status}]`` in order.

    ``?bodies=true`` adds ``body``: the parts of a request body its route notes (``meta`` of create
    and update, ``override`` of use, the whole body of redistribute and cancel). ``?times=true`` adds
    ``at``: when the answer started (epoch seconds), for rates per rate-limit window.
    """
    authenticate(request, "sandbox.requests")
    bodies = request.query_params.get("bodies") == "true"
    times = request.query_params.get("times") == "true"
    return ok({"data": state_of(request).traffic.requests(bodies, times=times)})


@router.post("/requests/clear")
async def clear_requests(request: Request) -> Response:
    """Empty the request log."""
    authenticate(request, "sandbox.requests")
    state_of(request).traffic.clear_requests()
    return ok({"success": True})


@router.get("/envelopes/{envelope_id}")
async def peek_envelope(request: Request, envelope_id: str) -> Response:
    """The envelope in its ``GET /envelope/{id}`` shape, without appearing in the request log."""
    authenticate(request, "sandbox.envelopes")
    state = state_of(request)
    env = state.store.get("envelope", envelope_id)
    if env is None:
        raise ApiError(404, {"error": "Envelope not found"})
    return ok(views.envelope_full(state.store, env))


@router.get("/items/{envelope_item_id}/bytes")
async def item_bytes(request: Request, envelope_item_id: str) -> Response:
    """The stored bytes of an item version (``original`` or ``signed``) without download faults."""
    authenticate(request, "sandbox.items")
    state = state_of(request)
    version = request.query_params.get("version", "signed")
    item = state.store.get("item", envelope_item_id)
    if item is None:
        raise ApiError(404, {"error": "Envelope item not found"})
    name = item["_original"] if version == "original" or not item.get("_signed") else item["_signed"]
    data = await run_in_threadpool(state.store.file_path(name).read_bytes)
    return Response(data, media_type="application/pdf")
