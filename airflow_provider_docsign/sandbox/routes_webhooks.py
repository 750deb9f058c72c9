"""Control API for the sandbox's outgoing webhooks: subscribe, deliveries, drop (a fault), DNS answers."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from .common import authenticate, json_body, ok, state_of
from .errors import ApiError

router = APIRouter(prefix="/_sandbox")


@router.post("/webhooks")
async def subscribe(request: Request) -> Response:
    """``{url, secret, events?}``: deliver those events (default completed, rejected, cancelled) to url."""
    authenticate(request, "sandbox.webhooks")
    body = await json_body(request)
    try:
        sub = state_of(request).webhooks.subscribe(
            str(body.get("url", "")), str(body.get("secret", "")), body.get("events")
        )
    except ValueError as error:
        raise ApiError(400, {"error": str(error)}) from None
    return ok(sub.public())


@router.get("/webhooks")
async def deliveries(request: Request) -> Response:
    """Subscriptions (without secrets) and the delivery log (never a body)."""
    authenticate(request, "sandbox.webhooks")
    return ok(state_of(request).webhooks.snapshot())


@router.post("/webhooks/drop")
async def drop(request: Request) -> Response:
    """Fault ``{count}``: the next count deliveries are lost, never sent."""
    authenticate(request, "sandbox.webhooks")
    body = await json_body(request)
    sender = state_of(request).webhooks
    with sender.lock:
        sender.drop += max(0, int(body.get("count", 1)))
    return ok({"success": True})


@router.post("/webhooks/clear")
async def clear(request: Request) -> Response:
    """Remove every subscription, the drop fault and the log."""
    authenticate(request, "sandbox.webhooks")
    state_of(request).webhooks.clear()
    return ok({"success": True})


@router.post("/webhooks/dns")
async def dns(request: Request) -> Response:
    """``{answers: {name: [[address, ...], ...]}}``: fixed answers for names, one list per lookup."""
    authenticate(request, "sandbox.webhooks")
    body = await json_body(request)
    answers = body.get("answers")
    if not isinstance(answers, dict):
        raise ApiError(400, {"error": "answers must be an object: {name: [[address, ...], ...]}"})
    try:
        state_of(request).webhooks.set_dns(answers)
    except ValueError as error:
        raise ApiError(400, {"error": str(error)}) from None
    return ok({"success": True})
