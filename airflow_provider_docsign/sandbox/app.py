"""The FastAPI application: routers, error handlers and the fault/header middleware."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from . import (
    lifecycle,
    routes_attachments,
    routes_control,
    routes_envelopes,
    routes_folders,
    routes_items,
    routes_people,
    routes_seed,
    routes_templates,
    routes_tsa,
    routes_web,
    routes_webhooks,
)
from .errors import ApiError, not_found_route
from .faults import SandboxMiddleware, Traffic
from .sealing import Sealer
from .state import SandboxState
from .store import Store
from .tsa import TimestampAuthority


def _error_response(exc: ApiError) -> Response:
    return JSONResponse(exc.body, status_code=exc.status, headers=exc.headers or None)


def create_app(
    data_dir: str | os.PathLike[str],
    api_key: str,
    *,
    max_file_mb: float = 50,
    auto_sign_after: float | None = None,
    rate_limit: int | None = None,
    seal_delay: float = 0.3,
    webhooks: list[tuple[str, str, str]] | None = None,
    webhook_ssrf_bypass_hosts: str | None = None,
    seal_cert_lifetime: float | None = None,
) -> Any:
    """Build the sandbox ASGI app (FastAPI wrapped in :class:`~.faults.SandboxMiddleware`).

    :param data_dir: Directory for SQLite state and PDF files (created if missing).
    :param api_key: The team API key the sandbox accepts.
    :param max_file_mb: Per-file upload limit in MB (the real default is 50).
    :param auto_sign_after: Seconds after distribution at which every recipient signs, or None.
    :param rate_limit: Enforce this many requests per minute (429 after); None only reports headers.
    :param seal_delay: Seconds between the last signature and the status change.
    :param webhooks: ``(url, secret, comma-separated events)`` subscriptions to start with.
    :param webhook_ssrf_bypass_hosts: Comma-separated hosts exempt from the private-address rule, as
        the real instance's ``NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS``; None reads that environment
        variable (as the real instance does), unset meaning none.
    :param seal_cert_lifetime: Seconds: seal every document with a certificate issued for it that
        expires this long after the signing time (long-term validation tests); None: the ten-year one.
    """
    os.makedirs(data_dir, exist_ok=True)
    traffic = Traffic(rate_limit=rate_limit or 1000, enforce_rate_limit=rate_limit is not None)
    state = SandboxState(
        store=Store(data_dir),
        api_key=api_key,
        max_file_bytes=int(max_file_mb * 1024 * 1024),
        auto_sign_after=auto_sign_after,
        seal_delay=seal_delay,
        traffic=traffic,
        sealer=Sealer(data_dir, cert_lifetime=seal_cert_lifetime),  # key and certificate made on first start
        tsa=TimestampAuthority(data_dir),  # the RFC 3161 TSA at /tsa, its key made on first start
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        state.close()

    app = FastAPI(title="docsign sandbox", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.sandbox = state
    if webhook_ssrf_bypass_hosts is None:
        webhook_ssrf_bypass_hosts = os.environ.get("NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS", "")
    state.webhooks.set_bypass_hosts(webhook_ssrf_bypass_hosts)
    for url, secret, events in webhooks or ():
        state.webhooks.subscribe(url, secret, events)
    # Attachments first, as on the real router: GET /envelope/attachment before GET /envelope/{id}.
    modules = (
        routes_attachments,
        routes_envelopes,
        routes_items,
        routes_people,
        routes_folders,
        routes_templates,
    )
    for module in modules:
        app.include_router(module.router, prefix="/api/v2")
    app.include_router(routes_control.router)
    app.include_router(routes_seed.router)
    app.include_router(routes_webhooks.router)
    app.include_router(routes_tsa.router)
    app.include_router(routes_web.router)  # the web app's envelope page, for the extra link

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        return _error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code in (404, 405):
            return _error_response(not_found_route())
        return JSONResponse({"message": str(exc.detail)}, status_code=exc.status_code)

    lifecycle.recover(state)
    return SandboxMiddleware(app, traffic)
