"""One shared webhook listener per address and port in a triggerer event loop.

Every :class:`~airflow_provider_docsign.triggers.webhook.DocsignWebhookEventTrigger` on the same
``host:port`` subscribes here; the first starts the server (``asyncio.start_server``), the last one to
leave stops it. Like the envelope poller it is owned by its event loop: no lock.

HTTP/1.1 is parsed by `h11 <https://h11.readthedocs.io>`_ (the protocol engine under httpx and
uvicorn), fed from asyncio streams; there is no hand-written request parsing here. The triggerer also
runs every deferred sensor, so an unauthenticated client must not be able to make it spend memory or
time, nor keep deliveries out. Each connection is handled in this order, and stops at the first
refusal:

1. admission: a new connection always gets a slot among the :attr:`WebhookListener.max_connections`
   connections still waiting for their request head; when they are all taken, one of them gives its
   slot up (answered ``503`` and closed): the oldest of the client address that holds the most;
2. the request line and headers, within the head timeout (:data:`DEFAULT_HEAD_TIMEOUT`, 2 s; else
   ``408`` and closed), each line at most :data:`MAX_LINE_BYTES` (else ``414`` for the request line,
   ``431`` for a header) and :data:`MAX_HEAD_BYTES` in all (``431``, h11's ``max_incomplete_event_size``);
3. the method (``405`` for anything but POST), the path (``404`` when no trigger listens there) and
   ``X-Documenso-Secret`` against every subscription (``hmac.compare_digest``, constant time; ``401``)
   -- all without reading a byte of the body;
4. an authenticated request takes one of ``max_connections`` slots of its own (``503`` when they are
   all taken: only clients that know the secret can take them); then the body: ``413`` when the
   declared ``Content-Length`` exceeds ``max_body_bytes`` (not read) or a chunked body grows past it;
   within :data:`BODY_TIMEOUT` seconds (else ``408``);
5. ``400`` for a body that is not a webhook (malformed or too deeply nested JSON, no event, no envelope
   id) or whose event no subscription with that secret accepts;
6. ``200``, then each matching subscription gets the parsed
   :class:`~airflow_provider_docsign.service.webhook_events.WebhookEvent`.

The connection policy (the limits and timeouts named above, the slots and who gives one up, and why
a flood of idle connections cannot starve deliveries) is :mod:`._listener_policy`'s; this module
parses and answers the requests.

A body is never logged: it carries every recipient's signing token. Values from the request that do
reach a log line (event name, envelope id) have their control characters escaped, so a CR/LF in an
event name cannot forge a log line.
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

import h11

from airflow_provider_docsign._text import printable as _printable
from airflow_provider_docsign.service.webhook_events import (
    SECRET_HEADER,
    WebhookEvent,
    WebhookRejected,
    parse_webhook,
)
from airflow_provider_docsign.triggers._listener_policy import (
    _READ_CHUNK,
    BODY_TIMEOUT,
    DEFAULT_HEAD_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    MAX_HEAD_BYTES,
    MAX_LINE_BYTES,
    ConnectionPolicy,
    _Waiting,
)

__all__ = [
    "DEFAULT_HEAD_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "WebhookListener",
    "WebhookSubscription",
    "listener_for",
    "printable",
]

log = logging.getLogger(__name__)

_SECRET = SECRET_HEADER.encode("ascii")
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}
_REASONS |= {405: "Method Not Allowed", 408: "Request Timeout", 413: "Content Too Large"}
_REASONS |= {414: "URI Too Long", 431: "Request Header Fields Too Large", 503: "Service Unavailable"}


def printable(value: object, limit: int = 200) -> str:
    """``value`` as text safe for one log line: control characters escaped, at most ``limit`` chars."""
    return _printable(value, limit)


class _Refused(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _serialise(conn: h11.Connection, status: int) -> bytes:
    """A whole response: status line, headers (connection: close) and the ``{"ok": ...}`` body."""
    body = json.dumps({"ok": status == 200}).encode()
    response = h11.Response(
        status_code=status,
        reason=_REASONS.get(status, "Error").encode("ascii"),
        headers=[
            ("content-type", "application/json"),
            ("content-length", str(len(body))),
            ("connection", "close"),
        ],
    )
    data = conn.send(response) or b""
    data += conn.send(h11.Data(data=body)) or b""
    return data + (conn.send(h11.EndOfMessage()) or b"")


#: What a waiting connection that gives its slot up gets before it is closed.
_EVICTED = _serialise(h11.Connection(h11.SERVER), 503)


class WebhookSubscription:
    """One trigger's registration: its secret, path, limits, accepted events and queue of events.

    :param listener: The listener.
    :param secret: The expected ``X-Documenso-Secret``.
    :param events: The accepted event names.
    :param max_body: The largest body this subscription accepts, in bytes.
    :param path: The request path it listens on (``None``: any path).
    :param max_connections: The listener's slots for connections waiting for their head, and for
        authenticated requests (the largest of all subscriptions wins).
    :param head_timeout: Seconds a connection may take to send its request head (the largest wins).
    """

    def __init__(
        self,
        listener: WebhookListener,
        secret: str,
        events: Sequence[str],
        max_body: int,
        path: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        head_timeout: float = DEFAULT_HEAD_TIMEOUT,
    ) -> None:
        self.listener = listener
        self._secret = secret.encode("utf-8")
        self.events = frozenset(events)
        self.max_body = max_body
        self.path = path
        self.max_connections = max_connections
        self.head_timeout = head_timeout
        self.queue: asyncio.Queue[WebhookEvent] = asyncio.Queue()
        self.closed = False

    def __repr__(self) -> str:  # the secret is never shown
        return f"WebhookSubscription(events={sorted(self.events)}, path={self.path!r})"

    def matches(self, secret: bytes) -> bool:
        """Constant-time comparison of ``secret`` with this subscription's."""
        return hmac.compare_digest(self._secret, secret)

    def listens_on(self, path: str) -> bool:
        """Whether a request for ``path`` (no query string) is for this subscription."""
        return self.path is None or self.path == path

    def close(self) -> None:
        """Unregister (idempotent); the listener stops when its last subscription closes."""
        if not self.closed:
            self.closed = True
            self.listener.unsubscribe(self)


class WebhookListener(ConnectionPolicy[WebhookSubscription]):
    """A loopback (or interface) HTTP listener shared by the webhook triggers of one port.

    :param host: The address to bind, e.g. ``127.0.0.1``.
    :param port: The TCP port.
    """

    def __init__(self, host: str, port: int) -> None:
        super().__init__()
        self.host, self.port = host, port
        self._server: asyncio.Server | None = None
        self._starting: asyncio.Lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"WebhookListener({self.host}:{self.port}, subscriptions={len(self._subs)})"

    async def subscribe(
        self,
        secret: str,
        events: Sequence[str],
        max_body: int,
        *,
        path: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        head_timeout: float = DEFAULT_HEAD_TIMEOUT,
    ) -> WebhookSubscription:
        """Register a trigger; starts the server on first use."""
        sub = WebhookSubscription(self, secret, events, max_body, path, max_connections, head_timeout)
        self._subs[sub] = None
        async with self._starting:
            if self._server is None:
                try:
                    # limit: the stream buffers at most 2 x 8 KiB per connection before it stops reading,
                    # and readuntil() refuses a line longer than that.
                    self._server = await asyncio.start_server(
                        self._handle, self.host, self.port, limit=MAX_LINE_BYTES
                    )
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

    # ------------------------------------------------------------------------------- one connection
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._connection(reader, writer)
        except asyncio.CancelledError:
            # The event loop is shutting down. End quietly: asyncio before Python 3.11.8 reports a
            # cancelled connection task as an "unhandled exception in client_connected_cb".
            writer.transport.abort()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        waiting = self._admit(writer, _EVICTED)
        deliver: list[tuple[WebhookSubscription, WebhookEvent]] = []
        try:
            status, deliver = await self._exchange(conn, reader, waiting)
        except (ConnectionError, OSError):
            status = 0  # the client went away: nobody to answer
        except Exception as error:  # a bug here must not kill the connection silently
            # The type only: a message could quote the request.
            log.warning("Docsign webhook refused (400): %s while reading it", type(error).__name__)
            status = 400
        finally:
            self._waiting.pop(waiting, None)
        if waiting.evicted:
            return  # answered 503 and closed when a newer connection took its slot
        if status:
            await self._answer(writer, conn, status)
        # Answered first: only now does any trigger (and so Airflow) see the event.
        for sub, event in deliver:
            if not sub.closed:
                sub.queue.put_nowait(event)
        # A client that timed out is not waited for again; one refused with its body unsent is, briefly.
        if status and status != 408 and conn.their_state is not h11.DONE:
            await self._linger(reader)
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()

    async def _exchange(
        self, conn: h11.Connection, reader: asyncio.StreamReader, waiting: _Waiting
    ) -> tuple[int, list[tuple[WebhookSubscription, WebhookEvent]]]:
        async def head() -> h11.Request | None:
            try:
                return await _read_head(conn, reader)
            finally:
                # Complete (or never to be): the slot is free, and the connection can no longer be
                # chosen to give it up. Done here, in the reading task, with no await in between.
                self._waiting.pop(waiting, None)

        try:
            request = await asyncio.wait_for(head(), self.head_timeout)
        except (asyncio.TimeoutError, TimeoutError):
            return 408, []
        except _Refused as refused:
            return refused.status, []
        if request is None or waiting.evicted:
            return 0, []
        # Method, path and secret: all decided from the head, with the body still unread.
        if request.method != b"POST":
            return 405, []
        path = request.target.split(b"?", 1)[0].decode("latin-1")
        listening = [s for s in list(self._subs) if s.listens_on(path)]
        if not listening:
            log.warning("Docsign webhook refused: no trigger listens on path %s (404)", printable(path))
            return 404, []
        secrets = [value for name, value in request.headers if name == _SECRET]
        secret = secrets[0] if len(secrets) == 1 else b""
        # Compare against every subscription (no early exit): the timing says nothing about the secret.
        matching = [s for s in listening if s.matches(secret)]
        if not matching:
            log.warning("Docsign webhook refused: wrong or missing %s (401)", SECRET_HEADER)
            return 401, []
        cap = max(s.max_body for s in matching)
        lengths = [value for name, value in request.headers if name == b"content-length"]
        if lengths and int(lengths[0]) > cap:  # h11 has checked it is one non-negative integer
            return 413, []
        if self._authenticated >= self.max_connections:
            log.warning(
                "Docsign webhook refused (503): %d authenticated deliveries are already being read",
                self._authenticated,
            )
            return 503, []
        self._authenticated += 1
        try:
            return await self._body(conn, reader, matching, cap)
        finally:
            self._authenticated -= 1

    async def _body(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        matching: list[WebhookSubscription],
        cap: int,
    ) -> tuple[int, list[tuple[WebhookSubscription, WebhookEvent]]]:
        try:
            body = await asyncio.wait_for(_read_body(conn, reader, cap), BODY_TIMEOUT)
        except (asyncio.TimeoutError, TimeoutError):
            return 408, []
        except _Refused as refused:
            return refused.status, []
        try:
            event = parse_webhook(body)
        except WebhookRejected as refused:
            log.warning("Docsign webhook refused (%d): %s", refused.status, printable(refused))
            return refused.status, []
        accepted = [s for s in matching if event.event in s.events and len(body) <= s.max_body]
        if not accepted:
            log.warning(
                "Docsign webhook refused: event %s is not one this listener accepts (400)",
                printable(event.event),
            )
            return 400, []
        log.info(
            "Docsign webhook accepted: %s for envelope %s",
            printable(event.event),
            printable(event.envelope_id),
        )
        return 200, [(s, event) for s in accepted]

    async def _answer(self, writer: asyncio.StreamWriter, conn: h11.Connection, status: int) -> None:
        self.answered[status] = self.answered.get(status, 0) + 1
        try:
            data = _serialise(conn, status)
        except h11.LocalProtocolError:  # e.g. after a protocol error mid-way: a fresh state machine
            data = _serialise(h11.Connection(h11.SERVER), status)
        with contextlib.suppress(ConnectionError, OSError):
            writer.write(data)
            await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()


async def _read_head(conn: h11.Connection, reader: asyncio.StreamReader) -> h11.Request | None:
    """Feed h11 line by line until it has the request line and headers; ``None`` if the client left."""
    first = True
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as error:
            raise _Refused(error.error_status_hint) from None
        if isinstance(event, h11.Request):
            return event
        if isinstance(event, h11.ConnectionClosed):
            return None
        if event is not h11.NEED_DATA:  # pragma: no cover - h11 yields nothing else before a Request
            raise _Refused(400)
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            raise _Refused(414 if first else 431) from None
        except asyncio.IncompleteReadError as error:
            line = error.partial  # then end of stream: h11 says whether that was a whole request
            conn.receive_data(line)
            conn.receive_data(b"")
            continue
        if len(line) > MAX_LINE_BYTES:  # our own per-line cap, whatever the stream's limit
            raise _Refused(414 if first else 431)
        first = False
        conn.receive_data(line)


async def _read_body(conn: h11.Connection, reader: asyncio.StreamReader, cap: int) -> bytes:
    """The request body, refused with 413 as soon as it grows past ``cap``."""
    parts: list[bytes] = []
    size = 0
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:
            raise _Refused(400) from None
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(_READ_CHUNK))
        elif isinstance(event, h11.Data):
            size += len(event.data)
            if size > cap:
                raise _Refused(413)
            parts.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            return b"".join(parts)
        else:
            raise _Refused(400)


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
