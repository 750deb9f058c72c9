"""``POST /tsa``: the sandbox's RFC 3161 timestamp authority, and its control under ``/_sandbox/tsa``.

``/tsa`` itself needs no API key, like a public TSA; an ``Authorization`` header is accepted and
only its kind is logged. See :mod:`.tsa` for the faults.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from .common import authenticate, json_body, ok, state_of
from .errors import ApiError
from .tsa import MAX_QUERY_BYTES, TimestampAuthority

router = APIRouter()


def _tsa(request: Request) -> TimestampAuthority:
    tsa = state_of(request).tsa
    if tsa is None:
        raise ApiError(404, {"error": "this sandbox is not a TSA"})
    return tsa


@router.post("/tsa")
async def timestamp(request: Request) -> Response:
    """Answer a DER ``TimeStampReq`` with a DER ``TimeStampResp`` signed by the sandbox TSA."""
    tsa = _tsa(request)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_QUERY_BYTES:
            break
    answer = await run_in_threadpool(
        tsa.answer, body, request.headers.get("content-type"), request.headers.get("authorization")
    )
    if answer.delay:
        await asyncio.sleep(answer.delay)
    return Response(answer.body, status_code=answer.status, media_type=answer.content_type)


@router.get("/_sandbox/tsa/certificate")
async def certificate(request: Request) -> Response:
    """The TSA certificate as PEM (public; what clients pin and ``openssl ts -verify -CAfile`` takes)."""
    tsa = _tsa(request)
    return Response(await run_in_threadpool(lambda: tsa.certificate_pem), media_type="application/x-pem-file")


@router.post("/_sandbox/tsa/faults")
async def add_fault(request: Request) -> Response:
    """``{action, count?, delay?, status?}``: misbehave for the next ``count`` requests."""
    authenticate(request, "sandbox.tsa")
    body = await json_body(request)
    try:
        fault = _tsa(request).add_fault(body if isinstance(body, dict) else {})
    except (TypeError, ValueError) as exc:
        raise ApiError(400, {"error": str(exc)}) from None
    return ok(fault)


@router.get("/_sandbox/tsa/requests")
async def requests_log(request: Request) -> Response:
    """``{data: [{at, auth, fault, status, outcome}]}``, oldest first."""
    authenticate(request, "sandbox.tsa")
    return ok({"data": _tsa(request).requests()})


@router.post("/_sandbox/tsa/clear")
async def clear(request: Request) -> Response:
    """Drop pending TSA faults and empty the TSA request log."""
    authenticate(request, "sandbox.tsa")
    _tsa(request).clear()
    return ok({"success": True})
