"""``bench/_client.py`` in serve mode, driven from the benchmark: clients that alternate transfer by transfer.

:class:`ServedClient` starts one fresh client process, waits until its imports, set-up and warm-up are
done, then hands it one job at a time and reads one result per job; :func:`served_clients` starts
several at once and stops them all. Used by ``bench_upload.py`` and ``bench_download.py`` (issue 38):
with every client's uploads alternating one by one, a burst of outside load hits them alike.

Every wait is bounded (stretched with the machine's load by :class:`_limits.Deadline`), and every
process is stopped by its PID. No side effects on import.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from _common import BENCH_DIR, REPO_DIR
from _limits import Deadline


class ServedClient:
    """``bench/_client.py`` in serve mode: one fresh process that runs jobs when told, one at a time.

    :meth:`start` launches it (its imports, set-up and warm-up run then); :meth:`ready` waits for its
    ``ready`` line; :meth:`job` sends one job and waits for its result line; :meth:`stop` closes its
    stdin and waits, then kills it by its PID. Every wait is bounded (``timeout``, stretched with the
    load by :class:`_limits.Deadline`); a client that fails or stalls reports ``ok: false`` and is
    killed, so the benchmark goes on without it.
    """

    def __init__(self, spec: dict[str, Any], *, timeout: float = 300) -> None:
        self.spec = dict(spec)
        self.timeout = timeout
        self.proc: subprocess.Popen[str] | None = None
        self.report: dict[str, Any] = {}
        self._err: Any = None

    def start(self) -> None:
        """Launch the process (it does its set-up while other clients start theirs)."""
        self._err = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by stop())
        self.proc = subprocess.Popen(
            [sys.executable, str(BENCH_DIR / "_client.py"), json.dumps(self.spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
            bufsize=1,
            cwd=REPO_DIR,
        )

    def _line(self) -> dict[str, Any] | None:
        """The next JSON line of the process, or None when it ended or stalled (then it is killed)."""
        proc = self.proc
        if proc is None or proc.stdout is None:
            return None
        deadline = Deadline(self.timeout)
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while not deadline.expired():
                if sel.select(timeout=1.0):
                    line = proc.stdout.readline()
                    if not line:
                        break
                    if line.startswith("{"):
                        parsed: dict[str, Any] = json.loads(line)
                        return parsed
                elif proc.poll() is not None:
                    break
        self._kill()
        return None

    def _error(self) -> str:
        tail: list[str] = []
        if self._err is not None:
            self._err.seek(0)
            tail = self._err.read().strip().splitlines()[-3:]
        code = self.proc.poll() if self.proc else None
        return f"exit {code}: {' / '.join(tail)}"[:300]

    def ready(self) -> bool:
        """Wait for the ``ready`` line; False (with ``report["error"]``) when set-up failed."""
        line = self._line()
        if not line or not line.get("ready"):
            self.report = line or {"ok": False, "error": self._error()}
            self.report.setdefault("error", "set-up failed")
            self._kill()
            return False
        self.report = line
        return True

    def job(self, job: dict[str, Any]) -> dict[str, Any]:
        """Run one job: its result line, or ``ok: false`` with the error when the process failed or
        stalled; either way with the process's ``startup_s`` (its imports, set-up and warm-up)."""
        result = self._run(job)
        result["startup_s"] = self.report.get("startup_s")
        return result

    def _run(self, job: dict[str, Any]) -> dict[str, Any]:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.poll() is not None:
            return {"ok": False, "error": self.report.get("error") or self._error()}
        try:
            proc.stdin.write(json.dumps(job) + "\n")
            proc.stdin.flush()
        except OSError:
            return {"ok": False, "error": self._error()}
        line = self._line()
        return line if line is not None else {"ok": False, "error": self._error()}

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        """End the process: close its stdin, wait up to 10 s, then kill it by its PID."""
        proc = self.proc
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._kill()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._err is not None:
            self._err.close()
            self._err = None


@contextmanager
def served_clients(
    specs: Mapping[str, dict[str, Any]], *, timeout: float = 300
) -> Iterator[dict[str, ServedClient]]:
    """Start one :class:`ServedClient` per spec (all at once), wait until each is ready, stop all on exit.

    The set-ups overlap one another but never a measured job: the first job is sent after every client
    answered ready (or failed).
    """
    clients = {name: ServedClient(spec, timeout=timeout) for name, spec in specs.items()}
    try:
        for client in clients.values():
            client.start()
        for client in clients.values():
            client.ready()
        yield clients
    finally:
        for client in clients.values():
            client.stop()
