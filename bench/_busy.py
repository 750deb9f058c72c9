"""A reproducible busy machine for a benchmark: CPU-bound processes and a sandbox under request load.

:func:`busy` is a context manager. On entry it starts ``cpu`` processes, each a Python loop that only
burns CPU, and one load process that sends ``GET /envelope?perPage=1`` to the sandbox at ``rate``
requests a second over one keep-alive connection on 127.0.0.1. On exit every one of them is stopped by
its PID (SIGTERM, then SIGKILL after a grace period) and waited for, also when the body raises or the
benchmark is stopped by a signal.

Nothing here can hang or outlive the benchmark for long: every loop is bounded in count and in time
(each process ends by itself after ``seconds`` even if nobody stops it, and the load process after at
most ``rate * seconds`` requests), and stopping a process waits at most ``grace`` seconds before the
SIGKILL. Only loopback is contacted. The API key reaches the load process through its environment,
never its command line.

No side effects on import (``tests/unit/test_bench_busy.py`` runs it).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import urlsplit

#: A CPU-bound loop that ends by itself after ``argv[1]`` seconds (the bound if nobody stops it).
CPU_LOOP = """\
import sys, time
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for _ in range(10000):
        pass
"""

#: GETs against the sandbox at a fixed rate over one keep-alive connection: at most ``argv[5]``
#: requests, for at most ``argv[4]`` seconds, then one JSON line with the counts. SIGTERM ends it
#: cleanly (the counts are still printed). A failed request reconnects; it is counted, not retried.
LOAD_LOOP = """\
import http.client, json, os, signal, sys, time
host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seconds, limit, rate = float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
headers = {"Authorization": os.environ["BENCH_LOAD_API_KEY"]}
sent = ok = failed = 0
start = time.monotonic()
conn = http.client.HTTPConnection(host, port, timeout=10)
try:
    while not stop and sent < limit and time.monotonic() - start < seconds:
        wait = start + sent / rate - time.monotonic()
        if wait > 0:
            time.sleep(min(wait, 0.5))
            continue
        sent += 1
        try:
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            ok += response.status == 200
            failed += response.status != 200
        except (OSError, http.client.HTTPException):
            failed += 1
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=10)
finally:
    conn.close()
    elapsed = time.monotonic() - start
    print(json.dumps({"sent": sent, "ok": ok, "failed": failed, "seconds": round(elapsed, 2)}), flush=True)
"""


@dataclass
class BusyReport:
    """What the busy phase did; filled in when :func:`busy` exits.

    :param cpu_processes: How many CPU-bound processes ran.
    :param rate: The requested GET rate (requests a second).
    :param load: The load process's own counts (``sent``, ``ok``, ``failed``, ``seconds``), or empty
        when it printed none (killed).
    :param stopped: How each process ended: ``"terminated"``, ``"killed"`` or ``"exited"`` (its own
        time bound ran out first).
    :param pids: The PIDs of the processes started (the CPU-bound ones, then the load process).
    """

    cpu_processes: int
    rate: float
    pids: list[int] = field(default_factory=list)
    load: dict[str, Any] = field(default_factory=dict)
    stopped: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line for the notes: what ran beside the measurement and what the sandbox served."""
        load = self.load
        if load:
            achieved = load["sent"] / load["seconds"] if load.get("seconds") else 0.0
            served = (
                f"{load['sent']} GETs in {load['seconds']:.0f} s ({achieved:.0f}/s, "
                f"{load['failed']} not answered 200)"
            )
        else:
            served = "no count (the load process printed none)"
        return (
            f"busy: {self.cpu_processes} CPU-bound processes and {self.rate:g} GETs a second against the "
            f"same sandbox: {served}"
        )


def stop_process(proc: subprocess.Popen[Any], grace: float = 5.0) -> str:
    """Stop ``proc`` by its PID: SIGTERM, then SIGKILL if it is still running after ``grace`` seconds.

    :param proc: A process this benchmark started.
    :param grace: Seconds to wait after the SIGTERM.
    :returns: ``"exited"`` (it had already ended), ``"terminated"`` or ``"killed"``.
    """
    if proc.poll() is not None:
        return "exited"
    proc.terminate()
    try:
        proc.wait(timeout=grace)
        return "terminated"
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return "killed"


@contextlib.contextmanager
def busy(
    base_url: str,
    api_key: str,
    *,
    cpu: int = 2,
    rate: float = 50.0,
    seconds: float = 300.0,
    grace: float = 5.0,
) -> Iterator[BusyReport]:
    """Keep the machine busy while the body runs; stop everything started, by PID, on exit.

    :param base_url: The sandbox's API base URL (``http://127.0.0.1:PORT/api/v2``); only loopback.
    :param api_key: The sandbox's API key (passed to the load process in its environment).
    :param cpu: How many CPU-bound processes to start.
    :param rate: GETs a second the load process sends (one connection, paced).
    :param seconds: The longest any started process runs, even if never stopped.
    :param grace: Seconds between SIGTERM and SIGKILL when stopping a process.
    """
    parts = urlsplit(base_url)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost") or not parts.port:
        raise ValueError(f"busy(): the sandbox must be http on loopback with a port, not {base_url!r}")
    if cpu < 0 or rate <= 0 or seconds <= 0:
        raise ValueError(f"busy(): cpu >= 0, rate > 0 and seconds > 0 (got {cpu}, {rate}, {seconds})")
    report = BusyReport(cpu_processes=cpu, rate=rate)
    procs: list[subprocess.Popen[Any]] = []
    load: subprocess.Popen[Any] | None = None
    out: IO[str] = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed in the finally below
    try:
        for _ in range(cpu):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", CPU_LOOP, str(seconds)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                )
            )
        limit = int(rate * seconds) + 1
        path = f"{parts.path.rstrip('/')}/envelope?perPage=1"
        load = subprocess.Popen(
            [
                sys.executable,
                "-c",
                LOAD_LOOP,
                parts.hostname or "127.0.0.1",
                str(parts.port),
                path,
                str(seconds),
                str(limit),
                str(rate),
            ],
            env={**os.environ, "BENCH_LOAD_API_KEY": api_key},
            stdin=subprocess.DEVNULL,
            stdout=out,
        )
        procs.append(load)
        report.pids = [proc.pid for proc in procs]
        yield report
    finally:
        report.stopped = [stop_process(proc, grace) for proc in procs]
        if load is not None:
            out.seek(0)
            lines = [line for line in out.read().splitlines() if line.startswith("{")]
            if lines:
                report.load = json.loads(lines[-1])
        out.close()
