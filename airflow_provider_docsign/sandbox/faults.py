"""Outermost ASGI middleware: request ids, rate-limit headers, the request log and fault injection.

It wraps the whole application and receives uvicorn's own ``send``, whose bound object holds the
asyncio transport; aborting that transport drops the TCP connection with no response at all, which is
how "the write was committed but the client never heard back" is simulated.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import re
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from .errors import RATE_LIMIT_BODY, TRPC_STATUS_CODES
from .ids import http_date, request_id

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

API_PREFIX = "/api/v2"
ACTIONS = (
    "status",
    "delay",
    # Process the request at once, hold the answer back ``delay`` seconds: a client that dies meanwhile
    # never learns that its write took effect (what a killed worker leaves behind).
    "delay_reply",
    "drop_after_commit",
    "drop_before",
    "wrong_content_type",
    "truncate",
    "ignore_order",
    # Sealed downloads (``version=signed`` of a completed item) served broken, to reach every
    # signature-verification failure over HTTP: a byte flipped inside the signed range, the unsealed
    # rendering, and an incremental update that changes page content after the signature.
    "tamper_signed",
    "unsigned",
    "modified_after_signing",
)
SIGNED_VARIANTS = frozenset({"tamper_signed", "unsigned", "modified_after_signing"})
DOWNLOAD_ROUTE = re.compile(r"^/envelope/(item/[^/]+/download|[^/]+/(audit-log|certificate)/download)$")
_fault_ids = itertools.count(1)


@dataclass
class Fault:
    """A fault that applies to the next ``remaining`` requests matching ``method`` and ``pattern``."""

    id: str
    method: str
    path: str
    pattern: re.Pattern[str]
    action: str
    remaining: int
    status: int | None = None
    retry_after: float | None = None
    delay: float | None = None
    content_type: str | None = None
    truncate_at: int | None = None
    #: For ``status``: the service's error code in the body (``TOO_MANY_REQUESTS`` on a 500 is how the
    #: real service answers a download its rate limit refused).
    code: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the control API."""
        return {
            "id": self.id,
            "method": self.method,
            "path": self.path,
            "action": self.action,
            "remaining": self.remaining,
            "status": self.status,
            "retry_after": self.retry_after,
            "delay": self.delay,
            "content_type": self.content_type,
            "truncate_at": self.truncate_at,
            "code": self.code,
        }


def compile_path(path: str) -> re.Pattern[str]:
    """``*`` matches exactly one path segment; everything else is literal."""
    if not path.startswith("/"):
        path = "/" + path
    parts = [("[^/]+" if p == "*" else re.escape(p)) for p in path.split("/")]
    return re.compile("^" + "/".join(parts) + "/?$")


#: The real service's window for ``/api/v2`` (``apiV2RateLimit``, Documenso v2.17): 1,000 requests a
#: minute per client address, in fixed buckets aligned to the epoch.
DEFAULT_RATE_LIMIT = 1000
DEFAULT_RATE_WINDOW = 60.0


@dataclass
class RateWindow:
    """The real service's fixed-window limiter, per client address (pure bookkeeping, thread-safe).

    Like ``createRateLimit`` in Documenso (``packages/lib/server-only/rate-limit/rate-limit.ts``):
    every request adds one to its client's counter for the current bucket (``now - now % window``),
    including refused ones, and a request is refused when the counter **reaches** the limit, so a
    limit of 1,000 lets 999 requests through per bucket. ``remaining`` is ``limit - count`` (0 on a
    refusal) and ``reset`` the end of the bucket in epoch seconds, rounded up.

    :param limit: Requests per window.
    :param window: The window's length in seconds.
    :param enforce: Refuse requests over the limit; ``False`` only reports the headers.
    """

    limit: int = DEFAULT_RATE_LIMIT
    window: float = DEFAULT_RATE_WINDOW
    enforce: bool = True
    _counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, client: str, now: float | None = None) -> tuple[int, int, bool]:
        """Count one request of ``client``: ``(remaining, reset epoch seconds, refused)``."""
        now = time.time() if now is None else now
        bucket = int(now // self.window)
        with self._lock:
            seen_bucket, count = self._counts.get(client, (bucket, 0))
            count = count + 1 if seen_bucket == bucket else 1
            if len(self._counts) > 10_000:  # old clients' buckets, so the map cannot grow forever
                self._counts = {k: v for k, v in self._counts.items() if v[0] == bucket}
            self._counts[client] = (bucket, count)
        refused = self.enforce and count >= self.limit
        reset = math.ceil((bucket + 1) * self.window)
        return (0 if refused else max(0, self.limit - count)), reset, refused


@dataclass
class Traffic:
    """Shared, thread-safe fault list, request log and rate-limit window."""

    rate: RateWindow = field(default_factory=RateWindow)
    faults: list[Fault] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Bumped by every :meth:`clear_requests`: a request is logged only in the epoch it arrived in.
    epoch: int = 0

    @property
    def rate_limit(self) -> int:
        """Requests allowed per window (the ``X-RateLimit-Limit`` header)."""
        return self.rate.limit

    def add_fault(self, spec: dict[str, Any]) -> Fault:
        """Register a fault from a control-API body; raises ValueError on bad input."""
        action = spec.get("action", "status")
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
        method = str(spec.get("method", "POST")).upper()
        path = str(spec.get("path", "/envelope/create"))
        count = int(spec.get("count", 1))
        if count < 1:
            raise ValueError("count must be at least 1")
        status = spec.get("status")
        if action == "status" and status is None:
            raise ValueError("action 'status' needs a status")
        if action in ("delay", "delay_reply") and spec.get("delay") is None:
            raise ValueError(f"action {action!r} needs a delay in seconds")
        fault = Fault(
            id=f"fault_{next(_fault_ids)}",
            method=method,
            path=path,
            pattern=compile_path(path),
            action=action,
            remaining=count,
            status=int(status) if status is not None else None,
            retry_after=spec.get("retry_after"),
            delay=float(spec["delay"]) if spec.get("delay") is not None else None,
            content_type=spec.get("content_type"),
            truncate_at=int(spec["truncate_at"]) if spec.get("truncate_at") is not None else None,
            code=str(spec["code"]) if spec.get("code") else None,
        )
        with self.lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Drop every pending fault."""
        with self.lock:
            self.faults.clear()

    def take(self, method: str, path: str) -> Fault | None:
        """The first pending fault matching the request (its count is used up by one)."""
        with self.lock:
            for fault in self.faults:
                if fault.method in (method, "*") and fault.pattern.match(path):
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self.faults.remove(fault)
                    return fault
        return None

    def record(
        self,
        method: str,
        path: str,
        status: int,
        note: dict[str, Any] | None = None,
        *,
        epoch: int,
    ) -> None:
        """Append one ``/api/v2`` request to the log (with what the route noted, under ``body``).

        :param epoch: :attr:`epoch` when the request arrived. A request answered after a
            :meth:`clear_requests` that came after its arrival (a delayed answer whose client gave up
            long ago, say) belongs to the log that was cleared, and is dropped.
        """
        entry: dict[str, Any] = {"method": method, "path": path, "status": status, "at": time.time()}
        if note:
            entry["body"] = json.loads(json.dumps(note))
        with self.lock:
            if epoch == self.epoch:
                self.log.append(entry)

    def requests(self, bodies: bool = False, *, times: bool = False) -> list[dict[str, Any]]:
        """A copy of the request log (the noted ``body`` parts and the ``at`` times only when asked)."""
        hidden = {k for k, shown in (("body", bodies), ("at", times)) if not shown}
        with self.lock:
            return [{k: v for k, v in r.items() if k not in hidden} for r in self.log]

    def clear_requests(self) -> None:
        """Empty the request log; requests still being answered will not be logged when they end."""
        with self.lock:
            self.log.clear()
            self.epoch += 1


def _transport(send: Send) -> Any:
    owner = getattr(send, "__self__", None)
    transport = getattr(owner, "transport", None)
    if transport is None:
        raise RuntimeError("cannot reach the connection's transport to drop it")
    return transport


async def _abort(send: Send) -> None:
    _transport(send).abort()
    # Let the server notice the lost connection before the app returns.
    for _ in range(3):
        await asyncio.sleep(0)


async def _drain(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return


def _header_list(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


#: The parts of the current request's body a route chose to show in the request log (see
#: :func:`note_request`); a fresh dict per ``/api/v2`` request.
_LOG_NOTE: ContextVar[dict[str, Any] | None] = ContextVar("sandbox_log_note", default=None)


def note_request(**values: Any) -> None:
    """Show these parts of the request body in ``GET /_sandbox/requests`` (for example ``meta``)."""
    note = _LOG_NOTE.get()
    if note is not None:
        note.update(values)


class SandboxMiddleware:
    """Adds the real service's common headers, logs ``/api/v2`` requests and applies injected faults.

    :param app: The wrapped ASGI application.
    :param traffic: Shared fault list, request log and rate-limit counter.
    """

    def __init__(self, app: ASGIApp, traffic: Traffic) -> None:
        self.app = app
        self.traffic = traffic

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection scope."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        is_api = path == API_PREFIX or path.startswith(API_PREFIX + "/")
        rel = path[len(API_PREFIX) :] or "/"
        method: str = scope["method"]
        extra = {"access-control-allow-origin": "*"}
        over, reset = False, 0
        if is_api:
            client = scope.get("client")
            remaining, reset, over = self.traffic.rate.count(str(client[0]) if client else "unknown")
            extra.update(
                {
                    "x-ratelimit-limit": str(self.traffic.rate_limit),
                    "x-ratelimit-remaining": str(remaining),
                    "x-ratelimit-reset": str(reset),
                }
            )
        extra["x-request-id"] = request_id()
        extra["date"] = http_date()  # the sandbox's own clock, which a test may skew (uvicorn's is off)
        status_seen = {"status": 0, "logged": False}
        arrived_in = self.traffic.epoch
        note: dict[str, Any] = {}
        _LOG_NOTE.set(note)

        def log_once(status: int) -> None:
            if is_api and not status_seen["logged"]:
                status_seen["logged"] = True
                self.traffic.record(method, rel, status, note, epoch=arrived_in)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                log_once(int(message["status"]))
                names = {k.lower() for k in extra}
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.decode("latin-1").lower() not in names
                ]
                message = dict(message)
                message["headers"] = headers + _header_list(extra)
            await send(message)

        if not is_api:
            await self.app(scope, receive, send_with_headers)
            return

        fault = None if over else self.traffic.take(method, rel)
        try:
            if over:
                await _drain(receive)
                # Real service: Retry-After is the bucket's remaining time in whole seconds, at least 1.
                retry = max(1, math.ceil(reset - time.time()))
                await self._reply(send_with_headers, 429, RATE_LIMIT_BODY, {"retry-after": str(retry)})
            elif fault is None:
                await self.app(scope, receive, send_with_headers)
            else:
                committed = await self._apply(fault, rel, scope, receive, send, send_with_headers)
                if committed is not None:
                    log_once(committed)
        finally:
            log_once(0)

    async def _reply(self, send: Send, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        raw = json.dumps(body, separators=(",", ":")).encode()
        all_headers = {"content-type": "application/json", "content-length": str(len(raw)), **headers}
        await send({"type": "http.response.start", "status": status, "headers": _header_list(all_headers)})
        await send({"type": "http.response.body", "body": raw, "more_body": False})

    async def _apply(
        self, fault: Fault, rel: str, scope: Scope, receive: Receive, raw_send: Send, send: Send
    ) -> int | None:
        """Apply one fault; returns the status the app committed when the reply was dropped."""
        action = fault.action
        if action == "status":
            status = int(fault.status or 500)
            await _drain(receive)
            headers: dict[str, str] = {}
            if fault.retry_after is not None:
                ra = fault.retry_after
                headers["retry-after"] = str(int(ra)) if float(ra).is_integer() else str(ra)
            if status == 429:
                body: dict[str, Any] = dict(RATE_LIMIT_BODY)
            elif DOWNLOAD_ROUTE.match(rel):
                body = {
                    "error": "Something went wrong",
                    "code": fault.code or TRPC_STATUS_CODES.get(status, "UNKNOWN_ERROR"),
                }
            else:
                code = fault.code or TRPC_STATUS_CODES.get(status, "INTERNAL_SERVER_ERROR")
                body = {
                    "message": f"Injected fault: HTTP {status}",
                    "code": code,
                    "data": {"code": code, "httpStatus": status},
                }
            await self._reply(send, status, body, headers)
        elif action == "delay":
            await asyncio.sleep(float(fault.delay or 0))
            await self.app(scope, receive, send)
        elif action == "delay_reply":
            held: list[Message] = []

            async def hold(message: Message) -> None:
                held.append(message)

            await self.app(scope, receive, hold)
            await asyncio.sleep(float(fault.delay or 0))
            for message in held:
                await send(message)
        elif action == "drop_before":
            await _abort(raw_send)
        elif action == "drop_after_commit":
            captured = {"status": 0}

            async def swallow(message: Message) -> None:
                if message["type"] == "http.response.start":
                    captured["status"] = message["status"]

            await self.app(scope, receive, swallow)
            await _abort(raw_send)
            return captured["status"]
        elif action in SIGNED_VARIANTS:
            scope["sandbox.signed_variant"] = action
            await self.app(scope, receive, send)
        elif action == "ignore_order":
            scope["sandbox.ignore_order"] = True
            await self.app(scope, receive, send)
        elif action == "wrong_content_type":
            ctype = (fault.content_type or "text/html").encode("latin-1")

            async def retype(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message = dict(message)
                    message["headers"] = [
                        (k, ctype if k.lower() == b"content-type" else v)
                        for k, v in message.get("headers", [])
                    ]
                await send(message)

            await self.app(scope, receive, retype)
        elif action == "truncate":
            state = {"limit": fault.truncate_at, "sent": 0, "cut": False}

            async def cut(message: Message) -> None:
                if state["cut"]:
                    return
                if message["type"] == "http.response.start":
                    if state["limit"] is None:
                        length = dict(message.get("headers", [])).get(b"content-length", b"0")
                        state["limit"] = int(length) // 2
                    await send(message)
                    return
                if message["type"] == "http.response.body":
                    body = message.get("body", b"")
                    room = int(state["limit"] or 0) - int(state["sent"] or 0)
                    if len(body) >= room:
                        await send({"type": "http.response.body", "body": body[:room], "more_body": True})
                        state["cut"] = True
                        await _abort(raw_send)
                        return
                    state["sent"] = int(state["sent"] or 0) + len(body)
                    await send(message)

            await self.app(scope, receive, cut)
        return None
