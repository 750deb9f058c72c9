"""Webhook listener under a flood (issue 22): server RSS growth with 500 unauthenticated connections.

Each of 500 concurrent connections sends a POST with a wrong ``X-Documenso-Secret`` and
``Content-Length: 1048576``, then the body slowly (64 KiB every 50 ms) until the server answers or
closes. While they run, a valid delivery (right secret, a recorded-shape body) is sent and must get
its 200. The figure is the server process's peak RSS growth (``VmHWM`` after minus ``VmRSS`` at the
reset, after a warm-up delivery).

Two servers, each in its own subprocess on 127.0.0.1 so that its RSS is its own, in the same run:

* ``listener``: the provider's :class:`~airflow_provider_docsign.triggers._listener.WebhookListener`
  (h11, secret checked from the headers, 64 connections at most);
* ``naive``: the baseline, a plain ``asyncio.start_server`` handler written here that reads the
  declared body into memory and only then checks the secret, which is what the listener did before.

Target: the listener's growth under 32 MB. Both servers are stopped by their handles.
Run alone: ``.venv/bin/python bench/bench_listener.py``.
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


async def _serve_naive(ready: Any) -> None:
    """The baseline: read the head, read the declared body into memory, then check the secret."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        status = 400
        try:
            headers: dict[str, str] = {}
            await reader.readuntil(b"\r\n")
            while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            status = 200 if headers.get("x-documenso-secret") == SECRET and json.loads(body) else 401
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.LimitOverrunError):
            pass
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
        server = asyncio.ensure_future(_serve_listener(ready) if kind == "listener" else _serve_naive(ready))
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


async def _flood(port: int) -> dict[str, Any]:
    results: Counter[str] = Counter()
    start = time.perf_counter()
    deadline = start + FLOOD_SECONDS
    tasks = [asyncio.ensure_future(_flooder(port, results, deadline)) for _ in range(CONNECTIONS)]
    deliveries: list[list[int]] = []
    while time.perf_counter() < deadline - DELIVERY_EVERY:
        await asyncio.sleep(DELIVERY_EVERY)
        deliveries.append(await _as_the_service(port))
    await asyncio.wait_for(asyncio.gather(*tasks), FLOOD_TIMEOUT + 30)
    return {"results": dict(results), "deliveries": deliveries, "wall_s": time.perf_counter() - start}


def measure(kind: str) -> dict[str, Any]:
    """Start the ``kind`` server in a subprocess, warm it up, flood it, return its figures."""
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
        flood = asyncio.run(_flood(port))
        peak = peak_mb(proc.pid)
        after = rss_mb(proc.pid)
        return {
            "kind": kind,
            "rss_before_mb": before,
            "peak_growth_mb": peak - before,
            "rss_after_mb": after,
            **flood,
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


def main() -> None:
    runs = [measure("naive"), measure("listener")]
    rows = []
    for run in runs:
        answers = ", ".join(f"{k}: {v}" for k, v in sorted(run["results"].items()))
        count, first, within = _delivered(run)
        rows.append(
            [
                "naive asyncio server (baseline)" if run["kind"] == "naive" else "WebhookListener (h11)",
                run["rss_before_mb"],
                run["peak_growth_mb"],
                answers,
                f"{within}/{count} ({first} at the first attempt)",
                run["wall_s"],
            ]
        )
    naive, listener = runs
    count, first, within = _delivered(listener)
    growth = listener["peak_growth_mb"]
    ratio = naive["peak_growth_mb"] / growth if growth > 0.1 else None
    targets = [
        {
            "what": f"listener peak RSS growth, {CONNECTIONS} unauthenticated connections announcing 1 MiB",
            "target": "< 32 MB",
            "measured": f"{growth:.1f} MB (baseline {naive['peak_growth_mb']:.0f} MB)",
            "met": growth < 32,
        },
        {
            "what": "valid deliveries during the flood answered 200 (within the service's 4 attempts)",
            "target": "all",
            "measured": f"{within}/{count} ({first} at the first attempt)",
            "met": count > 0 and within == count,
        },
    ]
    notes = [
        f"{CONNECTIONS} flooders for {FLOOD_SECONDS:.0f} s, each: connect, wrong X-Documenso-Secret, "
        f"Content-Length: {DECLARED}, then {CHUNK // 1024} KiB every {CHUNK_PAUSE * 1000:.0f} ms until "
        f"answered or closed; reconnect {RECONNECT_PAUSE * 1000:.0f} ms later. A valid delivery every "
        f"{DELIVERY_EVERY} s, retried at once up to 4 attempts as Documenso does.",
        "Growth = peak RSS (VmHWM, reset through /proc/PID/clear_refs after a warm-up delivery) minus RSS at "
        "the reset, of the server's own process (a subprocess; the clients run in the benchmark process).",
        "Baseline growth against the listener's in the same run: "
        + (f"{ratio:.0f}x" if ratio is not None else "n/a (listener growth ~0)"),
        "The listener answers 401 from the headers (the body is never read) and 503 at once above its "
        "64-connection cap; a refused connection closed with body bytes unread reaches its client as a "
        "reset, which an attacker may see instead of the status.",
    ]
    write_result(
        "listener",
        title=f"Webhook listener: server peak RSS growth, {CONNECTIONS} unauthenticated 1 MiB deliveries",
        columns=[
            "server",
            "RSS before MB",
            "peak growth MB",
            "flood answers",
            "valid deliveries 200",
            "wall s",
        ],
        rows=rows,
        targets=targets,
        notes=notes,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--serve", choices=["listener", "naive"], help="(internal) run one server")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
    else:
        main()
