"""Part 4 of ``bench/bench_bulk.py``, the baseline: the mapped DAG on ``scripts/stack.py``'s LocalExecutor.

``docsign_bulk_signing_mapped`` (dynamic task mapping) sends ``rows`` customers through a sandbox
enforcing the same window; measured from the trigger until the sandbox has seen every distribute.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

from _common import REPO_DIR


def mapped_baseline(rows: int) -> dict[str, Any]:
    import requests

    sys.path.insert(0, str(REPO_DIR / "scripts"))
    from stack import API_KEY as STACK_KEY
    from stack import USERNAME, Stack

    stack = Stack(auto_sign_after=5.0, poke_interval=5.0, executor="local")
    stack.start()
    try:
        http = requests.Session()
        token = http.post(
            f"{stack.api_url}/auth/token",
            json={"username": USERNAME, "password": stack.password},
            timeout=120,
        ).json()["access_token"]
        http.headers["Authorization"] = f"Bearer {token}"
        control = requests.Session()
        control.headers["Authorization"] = f"Bearer {STACK_KEY}"
        root = stack.sandbox_url.removesuffix("/api/v2")
        dag = f"{stack.api_url}/api/v2/dags/docsign_bulk_signing_mapped"
        parsed_by = time.monotonic() + 600  # a busy machine parses and answers slowly
        while time.monotonic() < parsed_by:
            with contextlib.suppress(requests.RequestException):
                if http.get(dag, timeout=60).status_code == 200:
                    break
            time.sleep(2)
        http.patch(dag, json={"is_paused": False}, timeout=120)
        control.post(f"{root}/_sandbox/requests/clear", timeout=30).raise_for_status()
        customers = [
            {"id": f"M-{n:04d}", "name": f"Customer {n}", "email": f"m{n}@bench.test"} for n in range(rows)
        ]
        started = time.monotonic()
        resp = http.post(
            f"{dag}/dagRuns", json={"logical_date": None, "conf": {"customers": customers}}, timeout=120
        )
        resp.raise_for_status()
        run_id = resp.json()["dag_run_id"]
        sent_at = None
        log: list[dict[str, Any]] = []
        state = None
        deadline = started + 3 * 3600
        while time.monotonic() < deadline:
            stack.assert_alive()
            try:
                log = control.get(f"{root}/_sandbox/requests", timeout=120).json()["data"]
                if sent_at is None and sum(1 for r in log if r["path"] == "/envelope/distribute") >= rows:
                    sent_at, sent_log = time.monotonic() - started, list(log)
                state = http.get(f"{dag}/dagRuns/{run_id}", timeout=120).json()["state"]
            except requests.RequestException as err:  # a busy api-server: ask again
                print(f"mapped DAG: polling failed ({type(err).__name__}); asking again", flush=True)
            if state in ("success", "failed"):
                break
            time.sleep(2)
        if sent_at is None:
            raise RuntimeError(f"the mapped DAG did not send every envelope (state {state})")
        per_envelope = len(sent_log) / rows
        per_minute = rows * 60.0 / sent_at
        bound = 1000.0 / per_envelope
        return {
            "rows": rows,
            "state": state,
            "send_s": sent_at,
            "envelopes_per_min": per_minute,
            "requests_per_envelope": per_envelope,
            "requests_429": sum(1 for r in sent_log if r["status"] == 429),
            "limit_bound_per_min": bound,
            "ratio": per_minute / bound,
            "run_s": time.monotonic() - started,
        }
    finally:
        stack.stop()
        import shutil

        shutil.rmtree(stack.base, ignore_errors=True)
