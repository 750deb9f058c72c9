"""Pipeline: ``docsign_contract_signing`` under ``dag.test()``, Airflow's overhead against provider time.

The example DAG runs against a sandbox on 127.0.0.1 whose signers sign automatically shortly after the
envelope is sent. The DAG runs three times in this process: a first (cold) run, a warm
unprofiled run (the headline figure), then a warm run under cProfile. From the profile:

- **idle** is time nobody works: the event loop waiting for the trigger's next poll, sleeps, lock waits;
- **provider work** is the time spent inside ``airflow_provider_docsign`` code (including what it
  calls: HTTP, PDF parsing, connection look-ups), summed over every call that enters the package from
  outside it, so nested provider frames are not counted twice (minus its own sleeps);
- **Airflow's own work** is the rest of ``dag.test()``.

It also counts what a provider can do needlessly: connection look-ups, ``requests.Session`` and
``httpx`` client constructions, and envelope reads (counted at the sandbox).
"""

from __future__ import annotations

import cProfile
import importlib.util
import os
import pstats
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    REPO_DIR,
    airflow_env,
    docsign_conn_json,
    sandbox,
    setup_airflow_env,
    temp_dir,
    write_result,
)
from _limits import budget

setup_airflow_env()

DAG_FILE = REPO_DIR / "dags_examples" / "docsign_contract_signing.py"
PKG = str(REPO_DIR / "airflow_provider_docsign")


def migrate() -> None:
    env = dict(os.environ)
    env.update(airflow_env())
    db = Path(env["AIRFLOW_HOME"]) / "airflow.db"
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        check=True,
        env=env,
        capture_output=True,
        timeout=budget(600),
    )
    assert db.exists()


def load_dag() -> Any:
    spec = importlib.util.spec_from_file_location("docsign_contract_signing_bench", DAG_FILE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def run_dag(dag: Any, run_no: int) -> str:
    result = dag.test(run_conf={"customer_id": f"BENCH-{run_no}-{time.time_ns()}"})
    state = getattr(result, "state", result)
    return str(getattr(state, "value", state))


def in_pkg(func: tuple[str, int, str]) -> bool:
    return func[0].startswith(PKG)


def split(stats: pstats.Stats) -> dict[str, Any]:
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    provider = 0.0
    entries: Counter[str] = Counter()
    for func, (_cc, _nc, _tt, _ct, callers) in raw.items():
        if not in_pkg(func):
            continue
        for caller, edge in callers.items():
            if not in_pkg(caller):
                provider += edge[3]
                entries[f"{Path(func[0]).relative_to(REPO_DIR)}:{func[2]}"] += edge[3]
    # Idle time, whoever waits: the event loop's epoll/select (the inline triggerer waiting for the
    # trigger's next poll), sleeps and lock waits (threads waiting on each other or on the server).
    idle = 0.0
    idle_names = ("poll' of 'select.epoll", "select.select", "time.sleep", "acquire' of '_thread.lock")
    for func, (_cc, _nc, tt, _ct, _callers) in raw.items():
        if any(name in func[2] for name in idle_names):
            idle += tt
    provider_idle = 0.0
    for func, (_cc, _nc, _tt, _ct, callers) in raw.items():
        if "time.sleep" in func[2]:
            provider_idle += sum(edge[3] for caller, edge in callers.items() if in_pkg(caller))
    # Needless work: count calls made *from provider code* (direct callers inside the package).
    counts: Counter[str] = Counter()
    targets = {
        "connection look-ups by the provider": (
            os.path.join("airflow_provider_docsign", "_compat.py"),
            "get_connection",
        ),
        "requests.Session created by the provider": (os.path.join("requests", "sessions.py"), "__init__"),
        "httpx clients created by the provider": (os.path.join("httpx", "_client.py"), "__init__"),
        "DocsignHook objects created": (os.path.join("hooks", "docsign.py"), "__init__"),
    }
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    hook_init_line = DocsignHook.__init__.__code__.co_firstlineno
    creators: Counter[str] = Counter()
    for func, (_cc, _nc, _tt, _ct, callers) in raw.items():
        if func[0].endswith(os.path.join("hooks", "docsign.py")) and func[1] == hook_init_line:
            for caller, edge in callers.items():
                creators[f"DocsignHook() <- {Path(caller[0]).name}:{caller[2]}"] += edge[1]
        for what, (path_end, name) in targets.items():
            if what.startswith("DocsignHook") and func[1] != hook_init_line:
                continue
            if func[0].endswith(path_end) and func[2] == name:
                counts[what] += sum(
                    edge[1]
                    for caller, edge in callers.items()
                    if in_pkg(caller) or what.startswith("DocsignHook")
                )
    return {
        "provider_s": provider,
        "idle_s": idle,
        "provider_idle_s": provider_idle,
        "entries": entries.most_common(8),
        "counts": dict(counts),
        "hook_creators": dict(creators),
    }


def main() -> None:
    migrate()
    rows: list[list[Any]] = []
    with temp_dir("docsign-bench-pipeline-") as tmp, sandbox(auto_sign_after=1.0) as sb:
        os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(sb.base_url, timeout=30)
        os.environ["DOCSIGN_EXAMPLE_ARCHIVE_DIR"] = str(tmp / "archive")
        os.environ["DOCSIGN_EXAMPLE_WORK_DIR"] = str(tmp / "work")
        os.environ["DOCSIGN_EXAMPLE_POKE_INTERVAL"] = "1"
        dag = load_dag()

        start = time.perf_counter()
        state0 = run_dag(dag, 0)  # first run: imports, DAG serialisation and DB rows are created here
        wall0 = time.perf_counter() - start

        sb.clear_requests()
        start = time.perf_counter()
        state1 = run_dag(dag, 1)
        wall1 = time.perf_counter() - start
        sequence = [f"{r['method']} {_shape(r['path'])}" for r in sb.requests()]
        reqs1 = Counter(sequence)

        sb.clear_requests()
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.enable()
        try:
            state2 = run_dag(dag, 2)
        finally:
            profiler.disable()
        wall2 = time.perf_counter() - start
        reqs2 = Counter(f"{r['method']} {_shape(r['path'])}" for r in sb.requests())
        stats = pstats.Stats(profiler)
        parts = split(stats)
        total = stats.total_tt  # type: ignore[attr-defined]

    busy_provider = parts["provider_s"] - parts["provider_idle_s"]
    idle = parts["idle_s"]
    busy_airflow = total - busy_provider - idle
    rows.append(
        [
            "dag.test() wall time, first run (cold: imports, DAG serialisation)",
            wall0,
            wall0 / wall1,
            f"state={state0}",
        ]
    )
    rows.append(["dag.test() wall time, warm run (baseline)", wall1, 1.0, f"state={state1}"])
    rows.append(["dag.test() wall time, profiled warm run", wall2, wall2 / wall1, f"state={state2}"])
    rows.append(
        ["  idle: waiting for signers and poll intervals (epoll/sleep/locks)", idle, idle / total, ""]
    )
    rows.append(["  Airflow's own work (total - provider - idle)", busy_airflow, busy_airflow / total, ""])
    rows.append(
        [
            "  provider's own work (inclusive: HTTP, PDF checks, look-ups)",
            busy_provider,
            busy_provider / total,
            f"Airflow work / provider work = {busy_airflow / max(busy_provider, 1e-9):.1f}x",
        ]
    )
    for what, count in sorted(parts["counts"].items()):
        rows.append([f"count: {what}", count, None, "profiled run"])
    for what, count in sorted(reqs2.items()):
        rows.append([f"requests: {what}", count, None, f"unprofiled warm run: {reqs1.get(what, 0)}"])
    write_result(
        "pipeline",
        title="Pipeline: docsign_contract_signing under dag.test() (auto-sign after 1 s, poke_interval 1 s)",
        columns=["measure", "value (s or count)", "share of profiled total / ratio", "note"],
        rows=rows,
        notes=[
            "Provider time sums cProfile's cumulative time on every call edge entering "
            "airflow_provider_docsign from outside it (minus its own sleeps); idle is epoll/select, sleeps "
            "and lock waits; Airflow's own work is the rest of the profiled dag.test().",
            "Top entry points (s): " + "; ".join(f"{name} {sec:.2f}" for name, sec in parts["entries"]),
        ],
        extra={
            "requests_unprofiled": dict(reqs1),
            "requests_profiled": dict(reqs2),
            "entries": parts["entries"],
            "request_sequence_warm_run": sequence,
            "hook_creators": parts["hook_creators"],
        },
    )


def _shape(path: str) -> str:
    """``/envelope/envelope_abc`` -> ``/envelope/{id}``, so requests group by endpoint."""
    parts = []
    for seg in path.split("?")[0].split("/"):
        parts.append("{id}" if (seg.startswith(("envelope_", "envelope_item_")) or seg.isdigit()) else seg)
    return "/".join(parts)


if __name__ == "__main__":
    main()
