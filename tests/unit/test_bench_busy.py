"""The upload benchmark's busy mode cannot hang or leave processes behind (``bench/_busy.py``, issue 38).

The processes are real; nothing waits on a clock: the bounds are checked by giving each loop a bound
that is already spent (0 seconds, or a count reached at once), and :func:`busy` is checked to stop
by PID every process it started, also when the body raises.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _busy import CPU_LOOP, LOAD_LOOP, BusyReport, busy, stop_process


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed: connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_cpu_loop_ends_by_itself_when_its_time_is_up() -> None:
    done = subprocess.run([sys.executable, "-c", CPU_LOOP, "0"], timeout=60, check=False)
    assert done.returncode == 0


def test_the_load_loop_stops_at_its_request_count_and_reports_it() -> None:
    port = closed_port()
    args = ["127.0.0.1", str(port), "/api/v2/envelope?perPage=1", "300", "3", "1000"]
    done = subprocess.run(
        [sys.executable, "-c", LOAD_LOOP, *args],
        env={**os.environ, "BENCH_LOAD_API_KEY": "api_x"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert (report["sent"], report["ok"], report["failed"]) == (3, 0, 3)  # refused, counted, not retried


def test_busy_stops_every_process_it_started_by_pid() -> None:
    port = closed_port()
    with busy(f"http://127.0.0.1:{port}/api/v2", "api_secret_key_0001", cpu=2, rate=5, seconds=120) as report:
        assert len(report.pids) == 3  # two CPU-bound processes and the load process
        assert not any(gone(pid) for pid in report.pids)
    assert report.stopped == ["terminated", "terminated", "terminated"]
    assert all(gone(pid) for pid in report.pids)


def test_busy_stops_them_when_the_measurement_fails() -> None:
    port = closed_port()
    pids: list[int] = []
    with (
        pytest.raises(RuntimeError, match="the benchmark broke"),
        busy(f"http://127.0.0.1:{port}/api/v2", "api_secret_key_0001", cpu=1, rate=5, seconds=120) as rep,
    ):
        pids = rep.pids
        raise RuntimeError("the benchmark broke")
    assert len(pids) == 2
    assert all(gone(pid) for pid in pids)


def test_the_api_key_is_not_on_any_command_line() -> None:
    port = closed_port()
    with busy(f"http://127.0.0.1:{port}/api/v2", "api_secret_key_0001", cpu=1, rate=5, seconds=120) as report:
        for pid in report.pids:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            assert b"api_secret_key_0001" not in cmdline


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com:8080/api/v2",
        "https://127.0.0.1:8080/api/v2",
        "http://127.0.0.1/api/v2",
        "not a url",
    ],
)
def test_busy_refuses_anything_but_loopback_http_before_starting_a_process(url: str) -> None:
    with pytest.raises(ValueError, match="loopback"), busy(url, "api_x"):
        pass  # pragma: no cover - never entered


def test_a_process_that_ignores_sigterm_is_killed() -> None:
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\n"
    code += "end = time.monotonic() + 120\nwhile time.monotonic() < end:\n    signal.pause()\n"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"  # SIGTERM is ignored from now on
        assert stop_process(proc, grace=0.2) == "killed"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert stop_process(proc) == "exited"


def test_the_report_says_what_ran_beside_the_measurement() -> None:
    report = BusyReport(cpu_processes=2, rate=50, load={"sent": 500, "ok": 498, "failed": 2, "seconds": 10.0})
    assert report.describe() == (
        "busy: 2 CPU-bound processes and 50 GETs a second against the same sandbox: "
        "500 GETs in 10 s (50/s, 2 not answered 200)"
    )
    assert "no count" in BusyReport(cpu_processes=2, rate=50).describe()
