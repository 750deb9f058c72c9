"""Pipeline: ``docsign_contract_signing`` under ``dag.test()``, Airflow's overhead against provider time.

The example DAG runs against a sandbox on 127.0.0.1 whose signers sign automatically shortly after the
envelope is sent. The DAG runs twice in this process: first unprofiled (its wall time is the headline
figure), then under cProfile. From the profile:

- **provider time** is the time spent inside ``airflow_provider_docsign`` code (including what it calls:
  HTTP, PDF parsing, connection look-ups), summed over every call that enters the package from outside
  it, so nested provider frames are not counted twice;
- **waiting** is the part of it spent sleeping between polls or waiting on the socket;
- **Airflow overhead** is the rest of ``dag.test()``.

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
        timeout=600,
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
    # Waiting inside the provider: sleeps and socket waits called (directly) from provider code, plus
    # asyncio sleeps of the trigger (the trigger's await shows up as time in its frames).
    waiting = 0.0
    for func, (_cc, _nc, _tt, _ct, callers) in raw.items():
        name = func[2].strip("<>").split(" ")[-1].rstrip(">").split(".")[-1]
        if name in {"sleep"}:
            for caller, edge in callers.items():
                if in_pkg(caller):
                    waiting += edge[3]
    counts: Counter[str] = Counter()
    for func, (_cc, nc, _tt, _ct, _callers) in raw.items():
        name = func[2]
        path = func[0]
        if name == "get_connection" and ("airflow" in path):
            counts["connection look-ups (BaseHook.get_connection)"] += nc
        elif name == "__init__" and path.endswith(os.path.join("requests", "sessions.py")):
            counts["requests.Session created"] += nc
        elif name == "__init__" and path.endswith(os.path.join("httpx", "_client.py")):
            counts["httpx clients created"] += nc
    return {
        "provider_s": provider,
        "waiting_s": waiting,
        "entries": entries.most_common(8),
        "counts": dict(counts),
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

        sb.clear_requests()
        start = time.perf_counter()
        state1 = run_dag(dag, 1)
        wall1 = time.perf_counter() - start
        reqs1 = Counter(f"{r['method']} {_shape(r['path'])}" for r in sb.requests())

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
        profile_path = tmp / "pipeline.prof"
        stats.dump_stats(profile_path)

    provider = parts["provider_s"]
    waiting = parts["waiting_s"]
    rows.append(["dag.test() wall time, unprofiled run", wall1, 1.0, f"state={state1}"])
    rows.append(
        [
            "dag.test() wall time, profiled run",
            wall2,
            wall2 / wall1,
            f"state={state2}; cProfile total {total:.2f} s",
        ]
    )
    rows.append(
        [
            "  Airflow's own overhead (profiled total - provider)",
            total - provider,
            (total - provider) / total,
            "",
        ]
    )
    rows.append(["  time in airflow_provider_docsign (inclusive)", provider, provider / total, ""])
    rows.append(["    of which sleeping between polls / auto-sign wait", waiting, waiting / total, ""])
    rows.append(["    provider time excluding sleeps", provider - waiting, (provider - waiting) / total, ""])
    for what, count in sorted(parts["counts"].items()):
        rows.append([f"count: {what}", count, None, "profiled run"])
    for what, count in sorted(reqs2.items()):
        rows.append([f"requests: {what}", count, None, f"unprofiled run: {reqs1.get(what, 0)}"])
    write_result(
        "pipeline",
        title="Pipeline: docsign_contract_signing under dag.test() (auto-sign after 1 s, poke_interval 1 s)",
        columns=["measure", "value (s or count)", "share of profiled total / ratio", "note"],
        rows=rows,
        notes=[
            "Provider time sums cProfile's cumulative time on every call edge entering "
            "airflow_provider_docsign from outside it; Airflow overhead is the rest of the profiled "
            "dag.test().",
            "Top entry points (s): " + "; ".join(f"{name} {sec:.2f}" for name, sec in parts["entries"]),
        ],
        extra={
            "requests_unprofiled": dict(reqs1),
            "requests_profiled": dict(reqs2),
            "entries": parts["entries"],
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
