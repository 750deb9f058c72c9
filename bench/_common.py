"""Shared helpers for the benchmarks: machine description, memory probes, tables and result files.

Every benchmark is a script run in its own process (``bench/run_all.py`` starts them one by one). Each
prints one table and writes the same figures to ``bench/results/<name>.json``, with the machine
description, so that a reader can tell what produced a number.

Memory is measured with Linux's peak-RSS counter: writing ``5`` to ``/proc/PID/clear_refs`` resets
``VmHWM`` to the current RSS, so "peak growth" is ``VmHWM`` after the work minus ``VmRSS`` at the reset.
Only loopback (127.0.0.1) is ever contacted.

Time limits (:mod:`_limits`) are written for a quiet machine and stretch with its load: a benchmark
that is slow because the machine is busy is not stopped as if it hung.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from _limits import Deadline

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
WORK_DIR = BENCH_DIR / ".work"
API_KEY = "api_benchmarkkey000000001"
MB = 1024 * 1024
#: The Fernet key of the benchmarks' throw-away Airflow home (it protects nothing there).
BENCH_FERNET_KEY = "ZG9jc2lnbi1iZW5jaC1mZXJuZXQta2V5LTMyYnl0ZXM="


def _terminate(signum: int, frame: Any) -> None:
    raise SystemExit(f"stopped by signal {signum}")


# A benchmark stopped by run_all's time limit (SIGTERM) unwinds normally: every `with sandbox()` stops
# its server by its handle and every temp dir is deleted.
signal.signal(signal.SIGTERM, _terminate)


# --------------------------------------------------------------------------------------------- env
def airflow_env() -> dict[str, str]:
    """Environment for a throw-away Airflow home under ``bench/.work`` (SQLite, no examples)."""
    home = WORK_DIR / "airflow-home"
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "True",
        # One key for every process and run: unit-test mode would make a new one per process, and the
        # asset triggers a run stores (the webhook example's) could then not be read by the next.
        "AIRFLOW__CORE__FERNET_KEY": BENCH_FERNET_KEY,
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_DIR / "dags_examples"),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
    }
    return env


def setup_airflow_env() -> None:
    """Apply :func:`airflow_env` to this process; call before anything imports Airflow."""
    for key, value in airflow_env().items():
        os.environ.setdefault(key, value)
    os.environ.pop("AIRFLOW_CONN_DOCSIGN_DEFAULT", None)


def docsign_conn_json(base_url: str, api_key: str = API_KEY, **extra: Any) -> str:
    """A ``docsign`` connection in Airflow's JSON form pointing at the sandbox."""
    extras: dict[str, Any] = {"max_retries": 3, "backoff_factor": 0.05, "max_retry_wait": 5, "timeout": 120}
    extras.update(extra)
    return json.dumps({"conn_type": "docsign", "host": base_url, "password": api_key, "extra": extras})


def http_conn_json(base_url: str, api_key: str = API_KEY) -> str:
    """An ``http`` connection (apache-airflow-providers-http) for the same sandbox."""
    return json.dumps(
        {
            "conn_type": "http",
            "host": base_url,
            # Only the key: a Content-Type here would be sent with every call and break multipart.
            "extra": {"Authorization": api_key},
        }
    )


# ----------------------------------------------------------------------------------------- machine
def _meminfo_total_mb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return float("nan")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """Describe the machine and the software versions the figures were measured with."""
    curl = shutil.which("curl")
    curl_version = None
    if curl:
        out = subprocess.run([curl, "--version"], capture_output=True, text=True, check=False).stdout
        curl_version = out.split("\n", 1)[0]
    return {
        "cores": os.cpu_count(),
        "memory_mb": _meminfo_total_mb(),
        "cpu": _cpu_model(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "airflow": _version("apache-airflow"),
        "provider": _version("airflow-provider-docsign"),
        "requests": _version("requests"),
        "httpx": _version("httpx"),
        "documenso_sdk": _version("documenso-sdk") or _version("documenso_sdk"),
        "apache_airflow_providers_http": _version("apache-airflow-providers-http"),
        "curl": curl_version,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


# ------------------------------------------------------------------------------------------ memory
def _status_kb(pid: int | str, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def reset_peak(pid: int | str = "self") -> float:
    """Reset the peak-RSS counter of ``pid`` and return its current RSS in MB."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return _status_kb(pid, "VmRSS") / 1024


def peak_mb(pid: int | str = "self") -> float:
    """Peak RSS (``VmHWM``) of ``pid`` in MB since start or the last :func:`reset_peak`."""
    return _status_kb(pid, "VmHWM") / 1024


def rss_mb(pid: int | str = "self") -> float:
    """Current RSS of ``pid`` in MB."""
    return _status_kb(pid, "VmRSS") / 1024


def cpu_seconds(pid: int | str = "self") -> float:
    """User + system CPU seconds used so far by ``pid`` (from ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (read from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def run_measured(cmd: Sequence[str], *, timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd`` with output to temp files; return exit code, wall time, output and its peak RSS.

    ``timeout`` is for a quiet machine: it stretches with the load (:class:`_limits.Deadline`).
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=err, env=env, cwd=REPO_DIR)
        deadline = Deadline(timeout)
        status, hwm, usage = 0, 0.0, None
        while True:
            # The child's own peak RSS, polled while it runs: wait4's ru_maxrss would also count the
            # RSS of this (forking) Python process, which is not the child's.
            with contextlib.suppress(OSError, KeyError, ValueError):
                hwm = max(hwm, peak_mb(proc.pid))
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if deadline.expired():
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                status = -9
                break
            time.sleep(0.002)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status) if status != -9 else -9
        out.seek(0)
        err.seek(0)
        return {
            "rc": proc.returncode,
            "wall_s": wall,
            "stdout": out.read(),
            "stderr": err.read(),
            "maxrss_mb": hwm,
            "cpu_s": (usage.ru_utime + usage.ru_stime) if usage else None,
        }


# ------------------------------------------------------------------------------------------ sandbox
@contextmanager
def sandbox(**kwargs: Any) -> Iterator[Any]:
    """Start a :class:`SandboxServer` on 127.0.0.1 with a temp data dir; stop it and delete the dir."""
    from airflow_provider_docsign.sandbox import SandboxServer

    # The server's state goes to tmpfs when there is one: 1-2 GB of uploads per run would otherwise hit
    # the disk's write-back throttling at random moments, adding noise to whichever client runs then.
    data = Path(tempfile.mkdtemp(prefix="docsign-bench-sandbox-", dir=_tmpfs()))
    try:
        with SandboxServer(data, api_key=API_KEY, host="127.0.0.1", port=0, **kwargs) as sb:
            yield sb
    finally:
        shutil.rmtree(data, ignore_errors=True)


def _tmpfs() -> Path | None:
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and shutil.disk_usage(shm).free > 4 * 1024 * MB else None


@contextmanager
def temp_dir(prefix: str, *, tmpfs: bool = False) -> Iterator[Path]:
    """A temp dir for large files (on tmpfs if asked and available), always deleted."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=_tmpfs() if tmpfs else None))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def make_pdfs(directory: Path, sizes_mb: Sequence[float], prefix: str) -> list[Path]:
    """Write sample PDFs of about the given sizes (MB) with ``write_sample_pdf(padding_bytes=...)``."""
    from airflow_provider_docsign.samples import write_sample_pdf

    paths = []
    for i, size in enumerate(sizes_mb):
        path = directory / f"{prefix}-{i + 1}.pdf"
        write_sample_pdf(path, title=f"{prefix} {i + 1}", pages=2, padding_bytes=int(size * MB))
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------- statistics
def spread(values: Sequence[float]) -> float | None:
    """``(max - min) / median`` of ``values`` (None for fewer than two)."""
    if len(values) < 2:
        return None
    return (max(values) - min(values)) / statistics.median(values)


def median_ratio_noise(a: Sequence[float], b: Sequence[float], *, rounds: int = 2000, seed: int = 0) -> float:
    """How far ``median(a) / median(b)`` moves by chance, relative to its value.

    The half-width of its 90 % bootstrap interval (each sample resampled with replacement, ``rounds``
    times, with a fixed ``seed``: the same figures always give the same answer). 0 with fewer than 3
    values in either: no measured noise.
    """
    if len(a) < 3 or len(b) < 3:
        return 0.0
    rng = random.Random(seed)
    point = statistics.median(a) / statistics.median(b)
    draws = sorted(
        statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b)))
        for _ in range(rounds)
    )
    low, high = draws[int(0.05 * rounds)], draws[int(0.95 * rounds) - 1]
    return (high - low) / 2 / point


def paired_walls(
    base: Sequence[Mapping[str, Any]], client: Sequence[Mapping[str, Any]]
) -> list[tuple[float, float]]:
    """``(base wall, client wall)`` of the successful runs made side by side: the same ``slot`` (or
    ``rep`` when runs carry no slot), the median of each side's runs in it. The benchmarks alternate
    their clients transfer by transfer, so a pair met the same load."""
    sides: dict[Any, tuple[list[float], list[float]]] = {}
    for index, runs in ((0, base), (1, client)):
        for run in runs:
            if run.get("ok") and run.get("wall_s", 0) > 0:
                key = tuple(run["slot"]) if run.get("slot") is not None else run.get("rep")
                sides.setdefault(key, ([], []))[index].append(float(run["wall_s"]))
    return [(statistics.median(a), statistics.median(b)) for a, b in sides.values() if a and b]


def paired_ratio_noise(pairs: Sequence[tuple[float, float]], *, rounds: int = 2000, seed: int = 0) -> float:
    """How far the median of the paired ratios ``base / client`` moves by chance, relative to its value:
    the half-width of its 90 % bootstrap interval (fixed ``seed``); 0 with fewer than 3 pairs."""
    if len(pairs) < 3:
        return 0.0
    ratios = [a / b for a, b in pairs]
    rng = random.Random(seed)
    draws = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(rounds))
    low, high = draws[int(0.05 * rounds)], draws[int(0.95 * rounds) - 1]
    return (high - low) / 2 / statistics.median(ratios)


def ratio_noise(base: Sequence[Mapping[str, Any]], client: Sequence[Mapping[str, Any]]) -> float:
    """This run's noise of the throughput ratio ``median(base) / median(client)``: the wider of the
    bootstrap interval of the ratio of medians (:func:`median_ratio_noise`) and that of the median of
    the side-by-side pairs (:func:`paired_ratio_noise`). The first sees each client's own spread, the
    second the load that changed between pairs; either alone was seen to understate a run's noise."""
    a = [float(r["wall_s"]) for r in base if r.get("ok")]
    b = [float(r["wall_s"]) for r in client if r.get("ok")]
    return max(median_ratio_noise(a, b), paired_ratio_noise(paired_walls(base, client)))


def throughput_target(
    what: str,
    base: Sequence[Mapping[str, Any]],
    client: Sequence[Mapping[str, Any]],
    goal: float,
    *,
    max_tolerance: float,
) -> dict[str, Any]:
    """The target "the client's throughput at least ``goal`` x the baseline's", judged with this run's
    noise as the sdk comparison is: met when ``ratio >= goal x (1 - allowed)``, ``allowed`` being the
    run's measured noise of the ratio (:func:`ratio_noise`) but never more than ``max_tolerance``. So a
    client at the goal passes whatever the noise, one truly slower fails, and no noise excuses more
    than the stated cap. Not met when either side has no successful run.
    """
    goal_text = f">= {goal:g}x, less this run's noise (at most {max_tolerance:.0%})"
    a = [float(r["wall_s"]) for r in base if r.get("ok")]
    b = [float(r["wall_s"]) for r in client if r.get("ok")]
    if not (a and b):
        missing = "the baseline" if not a else "the client"
        return {
            "what": what,
            "target": goal_text,
            "measured": f"not measured ({missing}: no run)",
            "met": False,
        }
    ratio = statistics.median(a) / statistics.median(b)
    noise = ratio_noise(base, client)
    allowed = min(noise, max_tolerance)
    return {
        "what": what,
        "target": goal_text,
        "measured": f"{ratio:.2f}x (noise ±{noise:.0%}, allowed {allowed:.0%})",
        "met": ratio >= goal * (1 - allowed),
    }


# ------------------------------------------------------------------------------------------- targets
def target_met(target: Mapping[str, Any]) -> bool:
    """Whether one target row of a result (``{"what", "target", "measured", "met"}``) is met.

    The one place a target is judged: :func:`write_result` prints by it and ``run_all.py`` fails the
    run by it. Only ``met`` being ``True`` itself is met; ``False``, a missing ``met``, ``None`` or
    anything else (a string ``"yes"``) is missed, so a target nobody judged cannot pass.
    """
    return target.get("met") is True


def missed_line(name: str, target: Mapping[str, Any]) -> str:
    """``MISSED <benchmark>: <what> (<target>): <measured>``, the summary's line for a missed target."""
    what = str(target.get("what", "a target without a name"))
    goal = str(target.get("target", "?"))
    measured = str(target.get("measured", "not measured"))
    return f"MISSED {name}: {what} ({goal}): {measured}"


# -------------------------------------------------------------------------------------------- output
def fmt(value: Any, digits: int = 2) -> str:
    """Format a cell: floats rounded, ``None`` as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:  # NaN
            return "—"
        return f"{value:.{digits}f}"
    return str(value)


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Render a GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(fmt(c).replace("|", "\\|").replace("\n", " ") for c in row) + " |")
    return "\n".join(lines)


def write_result(
    name: str,
    *,
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    notes: Sequence[str] = (),
    targets: Sequence[dict[str, Any]] = (),
    extra: dict[str, Any] | None = None,
) -> Path:
    """Print the table and write ``bench/results/<name>.json`` (atomically) with the machine."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    doc = {
        "name": name,
        "title": title,
        "machine": machine(),
        "columns": list(columns),
        "rows": [list(r) for r in rows],
        "targets": list(targets),
        "notes": list(notes),
        "markdown": markdown_table(columns, rows),
    }
    if extra:
        doc["extra"] = extra
    print(f"\n## {title}\n")
    print(doc["markdown"])
    for target in targets:
        mark = "MET" if target_met(target) else "MISSED"
        print(f"- target: {target['what']}: {target['target']} -> {target['measured']} [{mark}]")
    for note in notes:
        print(f"- {note}")
    tmp = RESULTS_DIR / f"{name}.json.tmp"
    tmp.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    final = RESULTS_DIR / f"{name}.json"
    tmp.replace(final)
    return final


def short_error(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` cut to ``limit`` characters (never contains the API key: it is scrubbed)."""
    text = f"{type(exc).__name__}: {exc}".replace(API_KEY, "***")
    if "%PDF-" in text:  # an SDK that puts the PDF body into its error message: keep the start only
        text = text.split("%PDF-", 1)[0] + "%PDF-... (the PDF bytes)"
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def python() -> str:
    """The interpreter running the benchmarks (the project venv)."""
    return sys.executable
