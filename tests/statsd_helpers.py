"""A real UDP socket on 127.0.0.1 standing in for a StatsD server, and the parsing of what it received."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType


@dataclass(frozen=True)
class Datagram:
    """One StatsD line: ``airflow.docsign.requests:1|c|#conn_id:x,operation:y``."""

    raw: str
    name: str
    value: str
    kind: str
    tags: dict[str, str] = field(default_factory=dict)


def parse(line: str) -> Datagram:
    """Split a StatsD or DogStatsD line into its name, value, type and tags."""
    head, _, rest = line.partition(":")
    parts = rest.split("|")
    tags: dict[str, str] = {}
    for part in parts[2:]:
        if part.startswith("#"):
            for tag in part[1:].split(","):
                key, _, value = tag.partition(":")
                tags[key] = value
    return Datagram(line, head, parts[0], parts[1] if len(parts) > 1 else "", tags)


class StatsdSink:
    """Receives every datagram sent to its port until closed (a thread; the socket is closed on exit)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)  # how often the thread looks whether it should stop
        self.port: int = self.sock.getsockname()[1]
        self.raw: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)

    def __enter__(self) -> StatsdSink:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                self.raw.append(self.sock.recv(65535))
            except TimeoutError:
                continue
            except OSError:
                return

    def close(self) -> None:
        """Stop receiving (what is queued in the socket is read first) and close the socket."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.sock.setblocking(False)
        while True:
            try:
                self.raw.append(self.sock.recv(65535))
            except OSError:
                break
        self.sock.close()

    def lines(self) -> list[str]:
        """Every line received (a DogStatsD datagram may hold several)."""
        return [line for data in self.raw for line in data.decode("utf-8", "replace").splitlines() if line]

    def datagrams(self, prefix: str = "airflow.docsign.") -> list[Datagram]:
        """The parsed lines whose name starts with ``prefix`` (Airflow's ``statsd_prefix`` first)."""
        return [d for d in map(parse, self.lines()) if d.name.startswith(prefix)]


def metrics_env(port: int, *, datadog: bool = False, on: bool = True) -> dict[str, str]:
    """``[metrics]`` for a process that sends to ``port`` (StatsD, or DogStatsD with tags)."""
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("AIRFLOW__METRICS__"):
            del env[key]
    env.update(
        AIRFLOW__METRICS__STATSD_ON=str(on),
        AIRFLOW__METRICS__STATSD_HOST="127.0.0.1",
        AIRFLOW__METRICS__STATSD_PORT=str(port),
        AIRFLOW__METRICS__STATSD_DATADOG_ENABLED=str(datadog and on),
    )
    return env


def run_python(script: Path, env: dict[str, str]) -> str:
    """Run ``script`` with this interpreter and ``env``; fail with its output unless it exits 0."""
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, timeout=600, check=False, text=True
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    return output
