"""Helpers shared by the route modules: auth, body parsing, JSON replies and lookups."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .errors import ApiError, app_error, trpc_error, unauthorized
from .state import SandboxState
from .store import Obj
from .upload import FormData, parse_body


def state_of(request: Request) -> SandboxState:
    """The sandbox state attached to the app."""
    state: SandboxState = request.app.state.sandbox
    return state


def authenticate(request: Request, path: str, *, download: bool = False) -> None:
    """Check the ``Authorization`` header like the real service.

    The header is split on the literal, case-sensitive ``"Bearer "``; ``Bearer `` with nothing after it
    is a plain error (HTTP 500) on the real service.
    """
    state = state_of(request)
    header = request.headers.get("authorization")
    if header is None or header == "":
        raise unauthorized(path, download=download, provided=False)
    # HTTP parsers may strip the trailing space of "Bearer ", so a bare "Bearer" counts as empty too.
    token = header.split("Bearer ")[1] if "Bearer " in header else header
    if token.strip() == "" or header.strip() == "Bearer":
        if download:
            raise ApiError(500, {"error": "Something went wrong"})
        raise trpc_error(path, 500, "No API token provided")
    if token != state.api_key:
        raise unauthorized(path, download=download, provided=True)


async def json_body(request: Request) -> Any:
    """The request body as a plain object (JSON, urlencoded or multipart text fields)."""
    raw = await request.body()
    ctype = request.headers.get("content-type", "")
    if not raw.strip():
        return {}
    if "application/x-www-form-urlencoded" in ctype:
        from urllib.parse import parse_qsl

        return dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
    try:
        return json.loads(raw)
    except ValueError:
        return {}


def ok(data: Any) -> Response:
    """HTTP 200 with a compact JSON body (as ``JSON.stringify`` would print it)."""
    return JSONResponse(data)


def success() -> Response:
    """``{"success": true}``."""
    return ok({"success": True})


def envelope_or_404(
    state: SandboxState, envelope_id: str, path: str, message: str = "Envelope not found"
) -> Obj:
    """The envelope (not soft-deleted) or the real NOT_FOUND AppError."""
    env = state.store.get("envelope", envelope_id)
    if env is None or env["deletedAt"] is not None:
        raise app_error(path, "NOT_FOUND", message)
    return env


def webapp_url(request: Request) -> str:
    """The sandbox's own root URL, standing in for ``WEBAPP_URL``."""
    return str(request.base_url).rstrip("/")


async def drain(request: Request) -> None:
    """Read and discard the rest of the request body (so the client can read the answer)."""
    with contextlib.suppress(Exception):
        async for _ in request.stream():
            pass


async def multipart_call(
    request: Request, path: str, handle: Callable[[SandboxState, FormData], Any]
) -> Response:
    """Authenticate an upload, stream its parts to disk and answer with ``handle(state, form)``.

    A refused request still has its body read to the end, so the client can read the answer; ``handle``
    runs in a worker thread, and the spooled files are removed afterwards whatever happens.
    """
    state = state_of(request)
    try:
        authenticate(request, path)
    except Exception:
        await drain(request)
        raise
    form = await parse_body(request, state.store.tmp_dir, state.max_file_bytes)
    try:
        return ok(await run_in_threadpool(handle, state, form))
    finally:
        form.cleanup()
