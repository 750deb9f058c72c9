"""The webhook listener's limits, over real sockets on 127.0.0.1 (issues 22 and 29).

Each limit is shown by what a client gets back: an over-long request or header line, a head over
32 KiB, a wrong secret/method/path announcing a 1 MiB body that is never sent (answered at once, so the
body was not awaited), a head timeout that closes an idle connection, slots full of idle connections
that a delivery still gets through, 503 when the authenticated slots are taken, deeply nested JSON,
and CR/LF in an event name that must not forge a log line. The listener is used directly (it needs no
Airflow), so these run on Airflow 2.11 too. No test measures time: each waits (boundedly) for the
listener's own counts, or for what a socket receives.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from airflow_provider_docsign.triggers import _listener
from airflow_provider_docsign.triggers._listener import WebhookListener, listener_for

pytestmark = pytest.mark.integration

SECRET = "limits-secret"
EVENTS = ["DOCUMENT_COMPLETED"]
GOOD_BODY = json.dumps(
    {"event": "DOCUMENT_COMPLETED", "payload": {"envelopeId": "envelope_1", "status": "COMPLETED"}}
).encode()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _request(
    body: bytes = GOOD_BODY,
    *,
    method: str = "POST",
    path: str = "/hook",
    secret: str | None = SECRET,
    length: int | None = None,
    extra: list[str] = (),  # type: ignore[assignment]
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    if secret is not None:
        lines.append(f"X-Documenso-Secret: {secret}")
    lines.append(f"Content-Length: {len(body) if length is None else length}")
    lines += list(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def _open(port: int, client: str = "127.0.0.1") -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the listener from the loopback address ``client`` (any of 127.0.0.0/8)."""
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(client, 0))


async def _until(condition: Callable[[], bool]) -> None:
    """Wait (bounded: about 10 s) until the listener's state satisfies ``condition``."""
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the listener did not get there")


async def _status(reader: asyncio.StreamReader) -> int:
    """The status of the answer on ``reader``, read until the listener closes (bounded: 10 s)."""
    answer = await asyncio.wait_for(reader.read(), 10)
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


async def _exchange(port: int, data: bytes, client: str = "127.0.0.1") -> int:
    """Send ``data``, read the answer until the listener closes (bounded: 10 s); its status."""
    reader, writer = await _open(port, client)
    try:
        writer.write(data)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(65536), 10)
        return int(answer.split(b" ", 2)[1])
    finally:
        writer.close()


async def _with_listener(
    scenario: Callable[[WebhookListener, int, Any], Awaitable[Any]], *, port: int, **options: Any
) -> Any:
    listener = listener_for("127.0.0.1", port)
    sub = await listener.subscribe(SECRET, EVENTS, options.pop("max_body", 64 * 1024), **options)
    try:
        return await scenario(listener, port, sub)
    finally:
        sub.close()


def test_head_limits_per_line_and_in_all() -> None:
    async def scenario(listener: WebhookListener, port: int, sub: Any) -> dict[str, int]:
        return {
            "long request line": await _exchange(port, _request(path="/hook?" + "q" * 9000)),
            "long header line": await _exchange(port, _request(extra=["X-Pad: " + "a" * 9000])),
            # Five lines of 7 KiB: each under the line cap, 35 KiB together over the 32 KiB head cap.
            "head over 32 KiB": await _exchange(
                port, _request(extra=[f"X-Pad-{i}: " + "a" * 7000 for i in range(5)])
            ),
            "just under the caps": await _exchange(
                port, _request(extra=[f"X-Pad-{i}: " + "a" * 7000 for i in range(3)])
            ),
        }

    statuses = asyncio.run(_with_listener(scenario, port=_free_port()))
    assert statuses == {
        "long request line": 414,
        "long header line": 431,
        "head over 32 KiB": 431,
        "just under the caps": 200,
    }


def test_method_path_and_secret_are_checked_before_the_body_is_read() -> None:
    """Each request announces 1 MiB and sends none of it: an answer at all means the body was not awaited.

    (Had the listener waited for the body, the answer would have been 408 after the body timeout.)
    """
    mib = 1024 * 1024

    async def scenario(listener: WebhookListener, port: int, sub: Any) -> dict[str, int]:
        return {
            "wrong secret": await _exchange(port, _request(b"", secret="nope", length=mib)),
            "no secret": await _exchange(port, _request(b"", secret=None, length=mib)),
            "GET": await _exchange(port, _request(b"", method="GET", length=mib)),
            "other path": await _exchange(port, _request(b"", path="/elsewhere", length=mib)),
            "over max_body": await _exchange(port, _request(b"", length=mib)),
        }

    statuses = asyncio.run(_with_listener(scenario, port=_free_port(), path="/hook"))
    assert statuses == {
        "wrong secret": 401,
        "no secret": 401,
        "GET": 405,
        "other path": 404,
        "over max_body": 413,
    }


def test_a_chunked_body_is_cut_off_at_the_cap() -> None:
    def chunked(body: bytes, size: int = 4096) -> bytes:
        parts = [body[i : i + size] for i in range(0, len(body), size)]
        return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"

    def request(body: bytes) -> bytes:
        head = _request(b"", extra=["Transfer-Encoding: chunked"]).replace(b"Content-Length: 0\r\n", b"")
        return head + chunked(body)

    padded = json.dumps({**json.loads(GOOD_BODY), "pad": "x" * 70_000}).encode()

    async def scenario(listener: WebhookListener, port: int, sub: Any) -> dict[str, int]:
        return {
            "chunked, under the cap": await _exchange(port, request(GOOD_BODY)),
            "chunked, over the cap": await _exchange(port, request(padded)),
        }

    statuses = asyncio.run(_with_listener(scenario, port=_free_port(), max_body=64 * 1024))
    assert statuses == {"chunked, under the cap": 200, "chunked, over the cap": 413}


def test_a_delivery_gets_through_while_every_slot_holds_an_idle_connection() -> None:
    """Issue 29: 4 slots, 4 idle connections (no byte sent): a delivery used to get 503, and so lost."""

    async def scenario(listener: WebhookListener, port: int, sub: Any) -> dict[str, Any]:
        idle = [await _open(port) for _ in range(4)]
        await _until(lambda: listener.waiting == 4)
        delivered = await _exchange(port, _request())
        # The oldest idle connection gave its slot up: it was answered 503 and closed.
        oldest = await _status(idle[0][0])
        result = {"delivery": delivered, "oldest idle": oldest, "still waiting": listener.waiting}
        for _, writer in idle:
            writer.close()
        return result

    statuses = asyncio.run(_with_listener(scenario, port=_free_port(), max_connections=4, head_timeout=60))
    assert statuses == {"delivery": 200, "oldest idle": 503, "still waiting": 3}


def test_a_flood_from_many_addresses_keeps_no_delivery_out() -> None:
    """40 idle connections from five loopback addresses against 8 slots, then deliveries: all 200."""

    async def scenario(listener: WebhookListener, port: int, sub: Any) -> dict[str, Any]:
        idle = [await _open(port, f"127.0.0.{2 + i % 5}") for i in range(40)]
        await _until(lambda: listener.answered.get(503, 0) == 32 and listener.waiting == 8)
        deliveries = [await _exchange(port, _request(), client) for client in ("127.0.0.1", "127.0.0.2") * 3]
        for _, writer in idle:
            writer.close()
        return {"deliveries": deliveries, "idle ones answered 503": listener.answered[503]}

    result = asyncio.run(_with_listener(scenario, port=_free_port(), max_connections=8, head_timeout=60))
    # The first delivery took an idle connection's slot and gave it back once its head was read: the
    # later ones found a free slot.
    assert result == {"deliveries": [200] * 6, "idle ones answered 503": 32 + 1}


def test_the_busiest_address_gives_its_slot_up_first() -> None:
    """One idle connection from 127.0.0.3 (the oldest), three from 127.0.0.2, four slots: a delivery
    takes the slot of 127.0.0.2's oldest, and 127.0.0.3's connection can still send its request."""

    async def scenario(listener: WebhookListener, port: int, sub: Any) -> dict[str, Any]:
        lone = await _open(port, "127.0.0.3")
        await _until(lambda: listener.waiting == 1)
        busy = [await _open(port, "127.0.0.2") for _ in range(3)]
        await _until(lambda: listener.waiting == 4)
        delivered = await _exchange(port, _request())
        busiest_oldest = await _status(busy[0][0])
        lone[1].write(_request())  # the connection that was not chosen sends its delivery now
        await lone[1].drain()
        lone_status = await _status(lone[0])
        for _, writer in [lone, *busy]:
            writer.close()
        return {"delivery": delivered, "127.0.0.2 oldest": busiest_oldest, "127.0.0.3": lone_status}

    result = asyncio.run(_with_listener(scenario, port=_free_port(), max_connections=4, head_timeout=60))
    assert result == {"delivery": 200, "127.0.0.2 oldest": 503, "127.0.0.3": 200}


def test_an_idle_connection_is_closed_after_the_head_timeout_and_frees_its_slot() -> None:
    """The listener answers 408 and closes; the socket sees the end (no clock is read here)."""

    async def scenario(listener: WebhookListener, port: int, sub: Any) -> dict[str, Any]:
        silent = await _open(port)
        partial = await _open(port)
        partial[1].write(b"POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head never finished
        await partial[1].drain()
        result = {"silent": await _status(silent[0]), "partial": await _status(partial[0])}
        await _until(lambda: listener.waiting == 0)
        result["then a delivery"] = await _exchange(port, _request())
        for _, writer in (silent, partial):
            writer.close()
        return result

    result = asyncio.run(_with_listener(scenario, port=_free_port(), head_timeout=0.2))
    assert result == {"silent": 408, "partial": 408, "then a delivery": 200}


def test_authenticated_slots_are_capped_with_503_and_free_again_after() -> None:
    """Two authenticated deliveries sending their bodies hold both authenticated slots: a third gets 503."""

    async def scenario(listener: WebhookListener, port: int, sub: Any) -> dict[str, int]:
        held = [await _open(port) for _ in range(2)]
        for _, writer in held:  # the head and half of the body: authenticated, body still being read
            writer.write(_request(GOOD_BODY[:20], length=len(GOOD_BODY)))
            await writer.drain()
        await _until(lambda: listener.authenticated == 2)
        statuses = {"third": await _exchange(port, _request())}
        for index, (reader, writer) in enumerate(held):
            writer.write(GOOD_BODY[20:])
            await writer.drain()
            statuses[f"held {index}"] = await _status(reader)
            writer.close()
        statuses["after"] = await _exchange(port, _request())
        return statuses

    statuses = asyncio.run(_with_listener(scenario, port=_free_port(), max_connections=2))
    assert statuses == {"third": 503, "held 0": 200, "held 1": 200, "after": 200}


def test_a_client_that_never_sends_its_body_gets_408(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_listener, "BODY_TIMEOUT", 0.3)

    async def scenario(listener: WebhookListener, port: int, sub: Any) -> int:
        return await _exchange(port, _request(GOOD_BODY[:10], length=len(GOOD_BODY)))

    assert asyncio.run(_with_listener(scenario, port=_free_port())) == 408


def test_nested_json_is_refused_with_400_and_the_listener_keeps_answering() -> None:
    deep = b'{"event": "DOCUMENT_COMPLETED", "payload": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    just_too_deep = b'{"event": "DOCUMENT_COMPLETED", "payload": ' + b"[" * 40 + b"]" * 40 + b"}"

    async def scenario(listener: WebhookListener, port: int, sub: Any) -> dict[str, int]:
        return {
            "100,000 deep": await _exchange(port, _request(deep)),
            "41 deep": await _exchange(port, _request(just_too_deep)),
            "then a real delivery": await _exchange(port, _request()),
        }

    statuses = asyncio.run(_with_listener(scenario, port=_free_port(), max_body=1024 * 1024))
    assert statuses == {"100,000 deep": 400, "41 deep": 400, "then a real delivery": 200}


def test_control_characters_from_the_request_are_escaped_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=_listener.__name__)
    forged = "DOCUMENT_COMPLETED\r\nWARNING forged: all deliveries accepted"
    refused_body = json.dumps({"event": forged, "payload": {"envelopeId": "envelope_2"}}).encode()
    accepted_body = json.dumps(
        {"event": "DOCUMENT_COMPLETED", "payload": {"envelopeId": "envelope_3\nINFO forged too"}}
    ).encode()

    async def scenario(listener: WebhookListener, port: int, sub: Any) -> dict[str, int]:
        return {
            "forged event": await _exchange(port, _request(refused_body)),
            "forged envelope id": await _exchange(port, _request(accepted_body)),
            "forged path": await _exchange(port, _request(path="/other%0d%0a")),
        }

    statuses = asyncio.run(_with_listener(scenario, port=_free_port(), path="/hook"))
    assert statuses == {"forged event": 400, "forged envelope id": 200, "forged path": 404}
    messages = [record.getMessage() for record in caplog.records]
    assert not [m for m in messages if "\r" in m or "\n" in m or "\x7f" in m]
    assert any("DOCUMENT_COMPLETED\\x0d\\x0aWARNING forged" in m for m in messages)
    assert any("envelope_3\\x0aINFO forged too" in m for m in messages)
    assert any("no trigger listens on path /other%0d%0a (404)" in m for m in messages)


def test_the_trigger_serializes_its_limits_and_refuses_bad_ones() -> None:
    from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS

    if not AIRFLOW_V_3_0_PLUS:
        pytest.skip("DocsignWebhookEventTrigger exists from Airflow 3.0")
    from airflow_provider_docsign.triggers.webhook import DocsignWebhookEventTrigger

    trigger = DocsignWebhookEventTrigger(port=8790, path="/hook", max_connections=8, head_timeout=0.5)
    path, kwargs = trigger.serialize()
    assert kwargs["path"] == "/hook"
    assert kwargs["max_connections"] == 8
    assert kwargs["head_timeout"] == 0.5
    assert DocsignWebhookEventTrigger(**kwargs).serialize() == (path, kwargs)
    assert json.loads(json.dumps(kwargs)) == kwargs
    assert DocsignWebhookEventTrigger(port=8790).serialize()[1]["max_connections"] == 64
    assert DocsignWebhookEventTrigger(port=8790).serialize()[1]["head_timeout"] == 2.0
    with pytest.raises(ValueError, match="max_connections must be a positive integer"):
        DocsignWebhookEventTrigger(port=8790, max_connections=0)
    for bad in (0, -1, 61, True, "2"):
        with pytest.raises(ValueError, match="head_timeout must be a number of seconds"):
            DocsignWebhookEventTrigger(port=8790, head_timeout=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="path must start with '/'"):
        DocsignWebhookEventTrigger(port=8790, path="hook")
