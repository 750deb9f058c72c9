"""Numbers at scale (issue 14): the bulk DAG on the distributed stack against LocalExecutor + SQLite.

Both runs use ``scripts/stack.py`` on 127.0.0.1 with the same DAG, sandbox and S3 (moto):

* **celery**: CeleryExecutor, PostgreSQL, Redis, two workers with 4 slots each (``make stack``);
* **local** (baseline): LocalExecutor with SQLite and the same 8 task slots, no workers.

One ``docsign_bulk_signing_mapped`` run (dynamic task mapping) with ``N`` customers (default 200;
``BENCH_DISTRIBUTED_N``) whose signers sign 5 s after distribution. Measured from the trigger to the
run's success: envelopes per minute, requests per envelope (counted by the sandbox), the triggerer's
peak RSS (``VmHWM`` summed over its process tree) and the CPU seconds per envelope of the scheduler
and of the workers (user + system
of each component's process tree, including reaped children; on LocalExecutor the task processes are
the scheduler's children, so its figure is "scheduler + workers"). Ratios are celery / local.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

from _common import process_tree, write_result  # noqa: E402
from stack import API_KEY, USERNAME, WORKERS, Stack  # noqa: E402

N = int(os.environ.get("BENCH_DISTRIBUTED_N", "200"))
RUN_TIMEOUT = 1800.0
TICK = os.sysconf("SC_CLK_TCK")


def _tree_cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid``'s tree, including children already reaped."""
    total = 0
    for member in process_tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])
    return total / TICK


def _tree_peak_mb(pid: int) -> float:
    total = 0
    for member in process_tree(pid):
        try:
            lines = Path(f"/proc/{member}/status").read_text().splitlines()
        except OSError:
            continue
        total += next((int(x.split()[1]) for x in lines if x.startswith("VmHWM:")), 0)
    return total / 1024


def _cpu(stack: Stack, names: list[str]) -> float:
    return sum(_tree_cpu(stack.procs[n]["pid"]) for n in names if n in stack.procs)


def run(executor: str) -> dict[str, Any]:
    stack = Stack(auto_sign_after=5.0, poke_interval=5.0, executor=executor)
    stack.start()
    try:
        http = requests.Session()
        token = http.post(
            f"{stack.api_url}/auth/token", json={"username": USERNAME, "password": stack.password}, timeout=30
        ).json()["access_token"]
        http.headers["Authorization"] = f"Bearer {token}"
        sandbox = requests.Session()
        sandbox.headers["Authorization"] = f"Bearer {API_KEY}"
        root = stack.sandbox_url.removesuffix("/api/v2")
        dag = f"{stack.api_url}/api/v2/dags/docsign_bulk_signing_mapped"
        for _ in range(120):
            if http.get(dag, timeout=10).status_code == 200:
                break
            time.sleep(1)
        sandbox.post(f"{root}/_sandbox/requests/clear", timeout=30).raise_for_status()
        workers = [] if stack.local else list(WORKERS)
        cpu0 = {"scheduler": _cpu(stack, ["scheduler"]), "workers": _cpu(stack, workers)}
        customers = [
            {"id": f"P-{n:04d}", "name": f"Customer {n}", "email": f"c{n}@bench.example"} for n in range(N)
        ]
        started = time.monotonic()
        resp = http.post(
            f"{dag}/dagRuns", json={"logical_date": None, "conf": {"customers": customers}}, timeout=60
        )
        resp.raise_for_status()
        run_id = resp.json()["dag_run_id"]
        state = None
        deadline = started + RUN_TIMEOUT
        while time.monotonic() < deadline:
            stack.assert_alive()
            state = http.get(f"{dag}/dagRuns/{run_id}", timeout=30).json()["state"]
            if state in ("success", "failed"):
                break
            time.sleep(2)
        wall = time.monotonic() - started
        calls = len(sandbox.get(f"{root}/_sandbox/requests", timeout=60).json()["data"])
        return {
            "executor": executor,
            "state": state,
            "wall_s": wall,
            "envelopes_per_min": N / (wall / 60),
            "requests_per_envelope": calls / N,
            "triggerer_peak_mb": _tree_peak_mb(stack.procs["triggerer"]["pid"]),
            "scheduler_cpu_per_envelope": (_cpu(stack, ["scheduler"]) - cpu0["scheduler"]) / N,
            "worker_cpu_per_envelope": (_cpu(stack, workers) - cpu0["workers"]) / N if workers else None,
        }
    finally:
        stack.stop()
        import shutil

        shutil.rmtree(stack.base, ignore_errors=True)


def main() -> int:
    local = run("local")
    celery = run("celery")
    keys = [
        ("envelopes per minute", "envelopes_per_min"),
        ("requests per envelope", "requests_per_envelope"),
        ("triggerer peak RSS MB", "triggerer_peak_mb"),
        ("scheduler CPU s per envelope", "scheduler_cpu_per_envelope"),
        ("worker CPU s per envelope", "worker_cpu_per_envelope"),
        ("wall s", "wall_s"),
    ]
    rows = []
    for label, key in keys:
        a, b = celery[key], local[key]
        ratio = round(a / b, 2) if isinstance(a, float) and isinstance(b, float) and b else None
        rows.append([label, _r(a), _r(b), ratio])
    write_result(
        "distributed",
        title=f"Bulk DAG, {N} envelopes: CeleryExecutor + PostgreSQL (2 workers) vs LocalExecutor + SQLite",
        columns=["measure", "celery", "local (baseline)", "celery / local"],
        rows=rows,
        notes=[
            f"run states: celery {celery['state']}, local {local['state']}",
            "local: the scheduler's figure includes its LocalExecutor task processes",
        ],
        extra={"celery": celery, "local": local, "n": N},
    )
    return 0 if celery["state"] == local["state"] == "success" else 1


def _r(value: Any) -> Any:
    return round(value, 3) if isinstance(value, float) else value


if __name__ == "__main__":
    sys.exit(main())
