"""One shared webhook listener per address and port in a triggerer event loop.

Every :class:`~airflow_provider_docsign.triggers.webhook.DocsignWebhookEventTrigger` on the same
``host:port`` subscribes here; the first starts a small HTTP/1.1 server (``asyncio.start_server``), the
last one to leave stops it. Like the envelope poller it is owned by its event loop: no lock.

Each request is answered before any Airflow work happens, then dispatched:

- ``405`` for anything but POST, ``411`` without ``Content-Length``, ``413`` over the body cap (the body
  is not read), ``408`` when the client is too slow;
- ``401`` when ``X-Documenso-Secret`` matches no subscription (``hmac.compare_digest``, constant time);
- ``400`` for a body that is not a webhook (malformed JSON, no event, no envelope id) or whose event no
  subscription with that secret accepts;
- ``200``, then each matching subscription gets the parsed
  :class:`~airflow_provider_docsign.webhook_events.WebhookEvent`.

A body is never logged: it carries every recipient's signing token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import threading
import weakref
from collections.abc import Sequence

from airflow_provider_docsign.webhook_events import (
    SECRET_HEADER,
    WebhookEvent,
    WebhookRejected,
    parse_webhook,
)

__all__ = ["WebhookListener", "WebhookSubscription", "listener_for"]

log = logging.getLogger(__name__)

#: Seconds a client may take to send its request line, headers and body.
READ_TIMEOUT = 10.0
#: At most this many header lines, of at most 8 KiB each.
MAX_HEADERS = 100
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 405: "Method Not Allowed"}
_REASONS |= {408: "Request Timeout", 411: "Length Required", 413: "Content Too Large"}


class WebhookSubscription:
    """One trigger's registration: its secret, the events it accepts and its queue of events.

    :param listener: The listener.
    :param secret: The expected ``X-Documenso-Secret``.
    :param events: The accepted event names.
    :param max_body: The largest body this subscription accepts, in bytes.
    """

    def __init__(self, listener: WebhookListener, secret: str, events: Sequence[str], max_body: int) -> None:
        self.listener = listener
        self._secret = secret.encode("utf-8")
        self.events = frozenset(events)
        self.max_body = max_body
        self.queue: asyncio.Queue[WebhookEvent] = asyncio.Queue()
        self.closed = False

    def __repr__(self) -> str:  # the secret is never shown
        return f"WebhookSubscription(events={sorted(self.events)})"

    def matches(self, secret: bytes) -> bool:
        """Constant-time comparison of ``secret`` with this subscription's."""
        return hmac.compare_digest(self._secret, secret)

    def close(self) -> None:
        """Unregister (idempotent); the listener stops when its last subscription closes."""
        if not self.closed:
            self.closed = True
            self.listener.unsubscribe(self)


class WebhookListener:
    """A loopback (or interface) HTTP listener shared by the webhook triggers of one port.

    :param host: The address to bind, e.g. ``127.0.0.1``.
    :param port: The TCP port.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._subs: dict[WebhookSubscription, None] = {}
        self._server: asyncio.Server | None = None
        self._starting: asyncio.Lock = asyncio.Lock()
        #: Requests answered, by status (for tests and operators' curiosity).
        self.answered: dict[int, int] = {}

    def __repr__(self) -> str:
        return f"WebhookListener({self.host}:{self.port}, subscriptions={len(self._subs)})"

    async def subscribe(self, secret: str, events: Sequence[str], max_body: int) -> WebhookSubscription:
        """Register a trigger; starts the server on first use."""
        sub = WebhookSubscription(self, secret, events, max_body)
        self._subs[sub] = None
        async with self._starting:
            if self._server is None:
                try:
                    self._server = await asyncio.start_server(self._handle, self.host, self.port)
                except BaseException:
                    self._subs.pop(sub, None)
                    raise
                log.info("Docsign webhook listener started on %s:%d", self.host, self.port)
        return sub

    def unsubscribe(self, sub: WebhookSubscription) -> None:
        """Remove ``sub``; the last one out stops the server."""
        self._subs.pop(sub, None)
        if not self._subs:
            _forget(self)
            server, self._server = self._server, None
            if server is not None:
                server.close()
                log.info("Docsign webhook listener on %s:%d stopped", self.host, self.port)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, deliver = await asyncio.wait_for(self._read(reader), READ_TIMEOUT)
        except (asyncio.TimeoutError, TimeoutError):
            status, deliver = 408, []
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            status, deliver = 400, []
        self.answered[status] = self.answered.get(status, 0) + 1
        body = json.dumps({"ok": status == 200}).encode()
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        with contextlib.suppress(ConnectionError, OSError):
            writer.write(head.encode("latin-1") + body)
            await writer.drain()
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()
        # Answered first: only now does any trigger (and so Airflow) see the event.
        for sub, event in deliver:
            if not sub.closed:
                sub.queue.put_nowait(event)

    async def _read(
        self, reader: asyncio.StreamReader
    ) -> tuple[int, list[tuple[WebhookSubscription, WebhookEvent]]]:
        request_line = (await reader.readuntil(b"\r\n")).decode("latin-1").split()
        headers: dict[str, str] = {}
        for _ in range(MAX_HEADERS + 1):
            line = await reader.readuntil(b"\r\n")
            if line == b"\r\n":
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        else:
            return 400, []
        if len(request_line) != 3 or request_line[0] != "POST":
            return 405, []
        if "chunked" in headers.get("transfer-encoding", "").lower() or "content-length" not in headers:
            return 411, []
        length = int(headers["content-length"])
        cap = max((s.max_body for s in self._subs), default=0)
        if length < 0 or length > cap:
            return 413, []
        body = await reader.readexactly(length)
        secret = headers.get(SECRET_HEADER, "").encode("utf-8")
        # Compare against every subscription (no early exit): the timing says nothing about the secret.
        matching = [s for s in list(self._subs) if s.matches(secret)]
        if not matching:
            log.warning("Docsign webhook refused: wrong or missing %s (401)", SECRET_HEADER)
            return 401, []
        try:
            event = parse_webhook(body)
        except WebhookRejected as refused:
            log.warning("Docsign webhook refused (%d): %s", refused.status, refused)
            return refused.status, []
        accepted = [s for s in matching if event.event in s.events and length <= s.max_body]
        if not accepted:
            log.warning(
                "Docsign webhook refused: event %s is not one this listener accepts (400)", event.event
            )
            return 400, []
        log.info("Docsign webhook accepted: %s for envelope %s", event.event, event.envelope_id)
        return 200, [(s, event) for s in accepted]


# ------------------------------------------------------------------------------------------- registry
_local = threading.local()


def _registry() -> weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, int], WebhookListener]
]:
    registry = getattr(_local, "listeners", None)
    if registry is None:
        registry = _local.listeners = weakref.WeakKeyDictionary()
    return registry  # type: ignore[no-any-return]


def _forget(listener: WebhookListener) -> None:
    with contextlib.suppress(RuntimeError):
        listeners = _registry().get(asyncio.get_running_loop(), {})
        if listeners.get((listener.host, listener.port)) is listener:
            del listeners[(listener.host, listener.port)]


def listener_for(host: str, port: int) -> WebhookListener:
    """The running loop's listener for ``host:port`` (created on first use, started on subscribe)."""
    listeners = _registry().setdefault(asyncio.get_running_loop(), {})
    listener = listeners.get((host, port))
    if listener is None:
        listener = listeners[(host, port)] = WebhookListener(host, port)
    return listener
