"""Webhook listener under floods (issues 22 and 29): valid deliveries answered, and server RSS growth.

Two floods of 500 concurrent clients, for 8 s each, while a valid delivery (right secret, a
recorded-shape body) is sent every 0.5 s as Documenso sends it (up to 4 attempts, at once):

* ``body``: each client sends a POST with a wrong ``X-Documenso-Secret`` and ``Content-Length:
  1048576``, then trickles the body until the server answers or closes, and reconnects;
* ``idle``: each client opens a connection and sends nothing at all until the server closes it, then
  reconnects (issue 29: 64 such connections used to hold every slot for 10 s, and every attempt of a
  delivery got 503).

Each server runs in its own subprocess on 127.0.0.1 so that its RSS is its own, in the same run:

* ``listener``: the provider's :class:`~airflow_provider_docsign.triggers._listener.WebhookListener`;
* ``naive`` (baseline of the body flood): a plain ``asyncio.start_server`` handler written here that
  reads the declared body into memory and only then checks the secret (the listener before issue 22);
* ``capped`` (baseline of the idle flood): the same handler with the listener's policy before issue 29:
  at most 64 open connections, 503 at once above, 10 s for the request head.

The valid deliveries come from a process of their own, as Documenso's do. The figures: valid
deliveries answered 200 (target: all of them, within the service's 4 attempts), and
the server's peak RSS growth (``VmHWM`` after minus ``VmRSS`` at the reset, after a warm-up delivery;
target < 32 MB). Every server is stopped by its handle. Run alone: ``.venv/bin/python
bench/bench_listener.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import peak_mb, reset_peak, rss_mb, write_result

HOST = "127.0.0.1"
SECRET = "bench-webhook-secret"
CONNECTIONS = 500
DECLARED = 1024 * 1024
CHUNK = 16 * 1024
CHUNK_PAUSE = 0.1
#: The flood lasts this long; each flooder reconnects after every answer (after a short pause).
FLOOD_SECONDS = 8.0
RECONNECT_PAUSE = 1.0
#: A valid delivery every this many seconds during the flood.
DELIVERY_EVERY = 0.5
FLOOD_TIMEOUT = 60.0
#: An idle client reconnects this long after the server closed its connection.
IDLE_RECONNECT_PAUSE = 0.1
#: The ``capped`` baseline: the listener's policy before issue 29.
CAPPED_CONNECTIONS = 64
CAPPED_HEAD_TIMEOUT = 10.0
GOOD_BODY = json.dumps(
    {
        "event": "DOCUMENT_COMPLETED",
        "payload": {"envelopeId": "envelope_bench", "status": "COMPLETED", "recipients": []},
        "createdAt": "2026-01-01T00:00:00.000Z",
        "webhookEndpoint": "http://127.0.0.1/hook",
    }
).encode()


def _head(secret: str, length: int) -> bytes:
    return (
        f"POST /hook HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        f"X-Documenso-Secret: {secret}\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


# ------------------------------------------------------------------------------------ servers (child)
async def _serve_listener(ready: Any) -> None:
    import logging
    import socket

    from airflow_provider_docsign.triggers._listener import listener_for

    # 500 refusals would be 500 warning lines; the figures are what matters here.
    logging.getLogger("airflow_provider_docsign").setLevel(logging.ERROR)
    # The listener registry is keyed by port, so take a free one rather than 0.
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port = sock.getsockname()[1]
    listener = listener_for(HOST, port)
    sub = await listener.subscribe(SECRET, ["DOCUMENT_COMPLETED"], DECLARED)
    ready(port)
    try:
        while True:  # drain the queue so that accepted events do not pile up
            await sub.queue.get()
    finally:
        sub.close()


async def _naive_exchange(reader: asyncio.StreamReader) -> int:
    """Read the head, read the declared body into memory, then check the secret."""
    headers: dict[str, str] = {}
    await reader.readuntil(b"\r\n")
    while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return 200 if headers.get("x-documenso-secret") == SECRET and json.loads(body) else 401


async def _serve_naive(ready: Any, capped: bool = False) -> None:
    """The baselines: ``naive`` reads the body before the secret; ``capped`` adds the listener's policy
    before issue 29 (64 open connections, 503 at once above, 10 s for the head)."""
    active = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal active
        status = 400
        if capped and active >= CAPPED_CONNECTIONS:
            status = 503
        else:
            active += 1
            try:
                exchange = _naive_exchange(reader)
                status = await (asyncio.wait_for(exchange, CAPPED_HEAD_TIMEOUT) if capped else exchange)
            except (asyncio.TimeoutError, TimeoutError):
                status = 408
            except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.LimitOverrunError):
                pass
            finally:
                active -= 1
        with contextlib.suppress(ConnectionError, OSError):
            writer.write(f"HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".encode())
            await writer.drain()
            writer.close()

    server = await asyncio.start_server(handle, HOST, 0)
    ready(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


def serve(kind: str) -> None:
    """Child process: start the server, print its port, run until stdin closes (or SIGTERM)."""

    def ready(port: int) -> None:
        print(f"PORT {port}", flush=True)

    async def main() -> None:
        if kind == "listener":
            server = asyncio.ensure_future(_serve_listener(ready))
        else:
            server = asyncio.ensure_future(_serve_naive(ready, capped=kind == "capped"))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # the parent closes stdin to stop us
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server

    asyncio.run(main())


# --------------------------------------------------------------------------------- clients (parent)
async def _answer(reader: asyncio.StreamReader, timeout: float) -> int:
    line = await asyncio.wait_for(reader.readline(), timeout)
    return int(line.split()[1]) if line.startswith(b"HTTP/") else 0


async def _flooder(port: int, results: Counter[str], deadline: float) -> None:
    """One of the 500: connect, announce 1 MiB with a wrong secret, trickle it; again until the deadline."""
    while time.perf_counter() < deadline:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), 30)
        except (OSError, asyncio.TimeoutError, TimeoutError) as error:
            results[f"connect failed: {type(error).__name__}"] += 1
            await asyncio.sleep(RECONNECT_PAUSE)
            continue
        answer = asyncio.ensure_future(_answer(reader, FLOOD_TIMEOUT))
        answer.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved: no warning
        try:
            writer.write(_head("wrong-secret", DECLARED))
            await writer.drain()
            sent = 0
            while sent < DECLARED and not answer.done():
                writer.write(b"x" * CHUNK)
                await writer.drain()
                sent += CHUNK
                await asyncio.sleep(CHUNK_PAUSE)
            status = await answer
            results[str(status) if status else "closed without an answer"] += 1
        except (ConnectionError, OSError):
            if answer.done() and not answer.cancelled() and answer.exception() is None:
                results[str(answer.result())] += 1
            else:
                results["reset before an answer"] += 1
        except (asyncio.TimeoutError, TimeoutError):
            results["no answer in time"] += 1
        finally:
            answer.cancel()
            with contextlib.suppress(Exception):
                writer.close()
        await asyncio.sleep(RECONNECT_PAUSE)


async def _idle_flooder(port: int, results: Counter[str], deadline: float) -> None:
    """One of the 500: connect, send nothing, wait until the server closes; again until the deadline."""
    while time.perf_counter() < deadline:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), 30)
        except (OSError, asyncio.TimeoutError, TimeoutError) as error:
            results[f"connect failed: {type(error).__name__}"] += 1
            await asyncio.sleep(IDLE_RECONNECT_PAUSE)
            continue
        try:
            left = max(0.0, deadline - time.perf_counter())
            answer = await asyncio.wait_for(reader.read(), left)
            status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else "closed"
            results[status] += 1
        except (asyncio.TimeoutError, TimeoutError):
            results["still open at the end"] += 1
        except (ConnectionError, OSError):
            results["reset"] += 1
        finally:
            with contextlib.suppress(Exception):
                writer.close()
        await asyncio.sleep(IDLE_RECONNECT_PAUSE)


async def _valid_delivery(port: int) -> int:
    reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), 30)
    try:
        writer.write(_head(SECRET, len(GOOD_BODY)) + GOOD_BODY)
        await writer.drain()
        return await _answer(reader, 30)
    except (ConnectionError, OSError):
        return 0
    finally:
        writer.close()


async def _as_the_service(port: int) -> list[int]:
    """One delivery as Documenso makes it: up to 4 attempts, one right after the other, until a 2xx."""
    statuses: list[int] = []
    for _ in range(4):
        statuses.append(await _valid_delivery(port))
        if statuses[-1] == 200:
            break
    return statuses


async def _deliveries(port: int, seconds: float) -> list[list[int]]:
    """A delivery as the service makes it every :data:`DELIVERY_EVERY` seconds, for ``seconds``."""
    deadline = time.perf_counter() + seconds
    deliveries: list[list[int]] = []
    while time.perf_counter() < deadline - DELIVERY_EVERY:
        await asyncio.sleep(DELIVERY_EVERY)
        deliveries.append(await _as_the_service(port))
    return deliveries


def deliver(port: int, seconds: float) -> None:
    """Child process: the service's side, in a process of its own as Documenso is (not slowed down
    by the 500 flooding clients' event loop); prints the attempts' statuses as JSON."""
    print(json.dumps(asyncio.run(_deliveries(port, seconds))), flush=True)


async def _flood(port: int, flood: str) -> dict[str, Any]:
    results: Counter[str] = Counter()
    start = time.perf_counter()
    deadline = start + FLOOD_SECONDS
    service = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--deliver",
        str(port),
        "--seconds",
        str(FLOOD_SECONDS),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        flooder = _flooder if flood == "body" else _idle_flooder
        tasks = [asyncio.ensure_future(flooder(port, results, deadline)) for _ in range(CONNECTIONS)]
        out, _ = await asyncio.wait_for(service.communicate(), FLOOD_TIMEOUT + 30)
        await asyncio.wait_for(asyncio.gather(*tasks), FLOOD_TIMEOUT + 30)
    finally:
        if service.returncode is None:
            service.kill()
            await service.wait()
    deliveries = json.loads(out)
    return {"results": dict(results), "deliveries": deliveries, "wall_s": time.perf_counter() - start}


def measure(kind: str, flood: str) -> dict[str, Any]:
    """Start the ``kind`` server in a subprocess, warm it up, run the ``flood``, return its figures."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # bounded by the child: it prints its port or exits
        if not line.startswith("PORT "):
            raise SystemExit(f"{kind} server did not start (exit {proc.poll()})")
        port = int(line.split()[1])
        warm = asyncio.run(_valid_delivery(port))
        if warm != 200:
            raise SystemExit(f"{kind} server refused the warm-up delivery: {warm}")
        before = reset_peak(proc.pid)
        figures = asyncio.run(_flood(port, flood))
        peak = peak_mb(proc.pid)
        after = rss_mb(proc.pid)
        return {
            "kind": kind,
            "flood": flood,
            "rss_before_mb": before,
            "peak_growth_mb": peak - before,
            "rss_after_mb": after,
            **figures,
        }
    finally:
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _delivered(run: dict[str, Any]) -> tuple[int, int, int]:
    """(deliveries, answered 200 on the first attempt, answered 200 within the service's 4 attempts)."""
    deliveries = run["deliveries"]
    first = sum(1 for d in deliveries if d[0] == 200)
    within = sum(1 for d in deliveries if 200 in d)
    return len(deliveries), first, within


SERVERS = {
    "naive": "naive asyncio server (baseline: body before secret)",
    "capped": "capped asyncio server (baseline: 64 slots, 503 above, 10 s head)",
    "listener": "WebhookListener (h11)",
}
FLOODS = {
    "body": "wrong secret, 1 MiB announced and trickled",
    "idle": "idle: connect, send nothing",
}


def _targets(runs: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    targets = []
    for flood, baseline in (("body", "naive"), ("idle", "capped")):
        listener, base = runs[("listener", flood)], runs[(baseline, flood)]
        growth = listener["peak_growth_mb"]
        count, first, within = _delivered(listener)
        base_count, _, base_within = _delivered(base)
        targets += [
            {
                "what": f"listener peak RSS growth, {CONNECTIONS} clients, flood: {FLOODS[flood]}",
                "target": "< 32 MB",
                "measured": f"{growth:.1f} MB (baseline {base['peak_growth_mb']:.1f} MB)",
                "met": growth < 32,
            },
            {
                "what": f"valid deliveries answered 200 within 4 attempts, flood: {FLOODS[flood]}",
                "target": "100 %",
                "measured": f"{within}/{count} = {100 * within / max(count, 1):.0f} % ({first} at the first "
                f"attempt; baseline {base_within}/{base_count})",
                "met": count > 0 and within == count,
            },
        ]
    return targets


def main() -> None:
    plan = [("naive", "body"), ("listener", "body"), ("capped", "idle"), ("listener", "idle")]
    runs = {(kind, flood): measure(kind, flood) for kind, flood in plan}
    rows = []
    for (kind, flood), run in runs.items():
        answers = ", ".join(f"{k}: {v}" for k, v in sorted(run["results"].items()))
        count, first, within = _delivered(run)
        rows.append(
            [
                FLOODS[flood],
                SERVERS[kind],
                run["rss_before_mb"],
                run["peak_growth_mb"],
                answers,
                f"{within}/{count} ({first} at the first attempt)",
                run["wall_s"],
            ]
        )
    notes = [
        f"{CONNECTIONS} clients for {FLOOD_SECONDS:.0f} s per flood. Body flood: connect, wrong "
        f"X-Documenso-Secret, Content-Length: {DECLARED}, then {CHUNK // 1024} KiB every "
        f"{CHUNK_PAUSE * 1000:.0f} ms until answered or closed; reconnect {RECONNECT_PAUSE * 1000:.0f} ms "
        f"later. Idle flood: connect, send nothing, wait for the server to close; reconnect "
        f"{IDLE_RECONNECT_PAUSE * 1000:.0f} ms later. A valid delivery every {DELIVERY_EVERY} s from a "
        "process of its own, retried at once up to 4 attempts as Documenso does.",
        "Growth = peak RSS (VmHWM, reset through /proc/PID/clear_refs after a warm-up delivery) minus RSS at "
        "the reset, of the server's own process (a subprocess; the clients run in the benchmark process).",
        "The listener answers 401 from the headers (the body is never read); a connection that has not "
        "sent its head within 2 s is answered 408 and closed; when its 64 slots for waiting connections "
        "are taken, the oldest waiting connection of the busiest address gives its slot up (503), so a "
        "new connection is never refused; authenticated requests read their bodies in 64 slots of their "
        "own. A refused connection closed with body bytes unread reaches its client as a reset.",
    ]
    write_result(
        "listener",
        title=f"Webhook listener under floods of {CONNECTIONS} clients: deliveries answered, RSS growth",
        columns=[
            "flood",
            "server",
            "RSS before MB",
            "peak growth MB",
            "flood answers",
            "valid deliveries 200",
            "wall s",
        ],
        rows=rows,
        targets=_targets(runs),
        notes=notes,
        extra={
            "attempts": {f"{kind}/{flood}": run["deliveries"] for (kind, flood), run in runs.items()},
        },
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--serve", choices=sorted(SERVERS), help="(internal) run one server")
    parser.add_argument("--deliver", type=int, metavar="PORT", help="(internal) send valid deliveries")
    parser.add_argument("--seconds", type=float, default=FLOOD_SECONDS, help="(internal) for --deliver")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
    elif args.deliver:
        deliver(args.deliver, args.seconds)
    else:
        main()
