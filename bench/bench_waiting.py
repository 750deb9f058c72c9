"""Waiting (issue 6): 1,000 triggers in one event loop, and one batch sensor against 1,000 single ones.

1. 1,000 DRAFT envelopes are created in the sandbox on 127.0.0.1 (tiny PDF, a bounded loop).
2. **One poll each:** 1,000 ``DocsignEnvelopeTrigger`` s (one envelope each) whose deadline has already
   passed make exactly one poll and yield a timeout event. Requests counted at the sandbox / 1,000 is
   the exact number of requests per envelope per poll. This also warms up the imports.
3. **Steady state:** 1,000 triggers run concurrently in one asyncio loop for a bounded window with a
   short poll interval. Requests are counted at the sandbox (polls = requests / the exact figure of
   step 2), CPU seconds of this process with ``time.process_time`` and the peak RSS growth through
   ``/proc/self/clear_refs`` + ``VmHWM``.
4. **Sensor:** one ``DocsignEnvelopeSensor(envelope_ids=<1,000 ids>)`` poke against 1,000
   single-envelope sensor pokes; requests counted at the sandbox.
5. **Worker slots:** a poke-mode sensor occupies a worker slot for the whole wait; a deferrable one
   releases it while its trigger waits in the triggerer (reasoned from the mode; the pipeline benchmark
   runs the deferrable path for real).

Targets (issue 10): 1,000 triggers under 200 MB in all and 1 request per envelope per poll; the batch
sensor at most one request per 20 envelopes per poll.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    cpu_seconds,
    docsign_conn_json,
    make_pdfs,
    peak_mb,
    reset_peak,
    sandbox,
    setup_airflow_env,
    temp_dir,
    write_result,
)

setup_airflow_env()

N = 1000
POLL_INTERVAL = 5.0
STEADY_WINDOW = 30.0  # seconds of steady-state polling (2-3 polls per trigger on 2 cores)
CREATE_BUDGET = 240.0  # seconds allowed for creating the envelopes


def raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 8192) if hard != resource.RLIM_INFINITY else 8192
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def create_envelopes(sb: Any, pdf: Path, count: int) -> list[str]:
    import requests

    session = requests.Session()
    session.headers["Authorization"] = sb.api_key
    body = pdf.read_bytes()
    ids: list[str] = []
    deadline = time.monotonic() + CREATE_BUDGET
    for i in range(count):
        if time.monotonic() > deadline:
            raise SystemExit(f"created only {i} envelopes in {CREATE_BUDGET:.0f} s")
        response = session.post(
            sb.base_url + "/envelope/create",
            data={"payload": json.dumps({"type": "DOCUMENT", "title": f"wait-bench {i}"})},
            files=[("files", ("c.pdf", body, "application/pdf"))],
            timeout=30,
        )
        response.raise_for_status()
        ids.append(response.json()["id"])
    return ids


def read_requests(sb: Any) -> int:
    """Envelope reads seen by the sandbox since the last clear (GET /envelope/<id> and get-many)."""
    return sum(
        1 for r in sb.requests() if r["path"].startswith("/envelope/") and r["method"] in ("GET", "POST")
    )


async def run_triggers(triggers: list[Any], window: float | None) -> list[Any]:
    events: list[Any] = []

    async def consume(trigger: Any) -> None:
        async for event in trigger.run():
            events.append(event)

    tasks = [asyncio.create_task(consume(t)) for t in triggers]
    if window is None:
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=300)
    else:
        await asyncio.sleep(window)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return events


def main() -> None:
    raise_fd_limit()
    from airflow_provider_docsign.sensors import DocsignEnvelopeSensor
    from airflow_provider_docsign.triggers import DocsignEnvelopeTrigger

    rows: list[list[Any]] = []
    targets: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    with temp_dir("docsign-bench-wait-") as tmp, sandbox() as sb:
        os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(sb.base_url, timeout=60)
        pdf = make_pdfs(tmp, [0.001], prefix="tiny")[0]
        t0 = time.monotonic()
        ids = create_envelopes(sb, pdf, N)
        extra["create_s"] = time.monotonic() - t0

        # --- 2. exactly one poll per trigger ------------------------------------------------------
        sb.clear_requests()
        past = time.time() - 1
        one_shot = [DocsignEnvelopeTrigger([e], poll_interval=POLL_INTERVAL, deadline=past) for e in ids]
        start = time.perf_counter()
        events = asyncio.run(run_triggers(one_shot, None))
        one_wall = time.perf_counter() - start
        one_requests = read_requests(sb)
        statuses: dict[str, int] = {}
        for event in events:
            status = event.payload.get("status")
            statuses[status] = statuses.get(status, 0) + 1
        per_env_poll = one_requests / N
        rows.append(
            [
                "1,000 triggers, one poll each",
                one_requests,
                per_env_poll,
                one_wall,
                None,
                None,
                f"events: {statuses}",
            ]
        )
        targets.append(
            {
                "what": "trigger requests per envelope per poll",
                "target": "1",
                "measured": f"{per_env_poll:.2f}",
                "met": per_env_poll <= 1.0,
            }
        )
        del one_shot, events

        # --- 3. steady state ------------------------------------------------------------------------
        gc.collect()
        sb.clear_requests()
        base_rss = reset_peak()
        deadline = time.time() + 3600
        triggers = [DocsignEnvelopeTrigger([e], poll_interval=POLL_INTERVAL, deadline=deadline) for e in ids]
        cpu0, wall0, server_cpu0 = time.process_time(), time.perf_counter(), cpu_seconds(sb.pid)
        asyncio.run(run_triggers(triggers, STEADY_WINDOW))
        cpu = time.process_time() - cpu0
        server_cpu = cpu_seconds(sb.pid) - server_cpu0
        wall = time.perf_counter() - wall0
        growth = peak_mb() - base_rss
        steady_requests = read_requests(sb)
        # Polls: the requests seen at the sandbox divided by the requests per poll measured exactly
        # above (each of those 1,000 triggers made exactly one poll). A transient error would show as
        # extra requests; with none injected, each request is one trigger's poll.
        polls = round(steady_requests / per_env_poll) if per_env_poll else 0
        rows.append(
            [
                f"1,000 triggers, {STEADY_WINDOW:.0f} s at poll_interval={POLL_INTERVAL:.0f} s",
                steady_requests,
                steady_requests / max(polls, 1),
                wall,
                (cpu / polls * 1000) if polls else None,
                growth / N,
                f"{polls} polls; peak RSS growth {growth:.1f} MB in all; sandbox CPU "
                f"{server_cpu / max(polls, 1) * 1000:.1f} s per 1,000 polls",
            ]
        )
        targets.append(
            {
                "what": "1,000 triggers, memory in all",
                "target": "< 200 MB",
                "measured": f"{growth:.1f} MB",
                "met": growth < 200,
            }
        )
        extra.update(steady_polls=polls, steady_cpu_s=cpu, steady_growth_mb=growth, server_cpu_s=server_cpu)
        del triggers
        gc.collect()

        # --- 4. one batch sensor against 1,000 single sensors ---------------------------------------
        sb.clear_requests()
        sensor = DocsignEnvelopeSensor(task_id="wait_all", envelope_ids=ids, poke_interval=60)
        start = time.perf_counter()
        cpu0 = time.process_time()
        batch_result = sensor.poke({})  # type: ignore[arg-type]
        batch_wall, batch_cpu = time.perf_counter() - start, time.process_time() - cpu0
        batch_requests = read_requests(sb)

        sb.clear_requests()
        singles = [
            DocsignEnvelopeSensor(task_id=f"wait_{i}", envelope_id=e, poke_interval=60)
            for i, e in enumerate(ids)
        ]
        start = time.perf_counter()
        cpu0 = time.process_time()
        single_results = [s.poke({}) for s in singles]  # type: ignore[arg-type]
        single_wall, single_cpu = time.perf_counter() - start, time.process_time() - cpu0
        single_requests = read_requests(sb)
        rows.append(
            [
                "1,000 single-envelope sensors, one poke each (baseline)",
                single_requests,
                single_requests / N,
                single_wall,
                single_cpu,
                None,
                f"{sum(not bool(r) for r in single_results)} not yet done",
            ]
        )
        rows.append(
            [
                "one DocsignEnvelopeSensor(envelope_ids=1,000), one poke",
                batch_requests,
                batch_requests / N,
                batch_wall,
                batch_cpu,
                None,
                f"{single_requests / max(batch_requests, 1):.0f}x fewer requests, "
                f"{single_wall / batch_wall:.1f}x faster; done={bool(batch_result)}",
            ]
        )
        targets.append(
            {
                "what": "batch sensor requests per envelope per poll",
                "target": "<= 1/20 (0.05)",
                "measured": f"{batch_requests / N:.3f}",
                "met": batch_requests / N <= 0.05,
            }
        )

        # --- 5. worker slots ------------------------------------------------------------------------
        rows.append(
            [
                "poke-mode sensor, whole wait (baseline)",
                None,
                None,
                None,
                None,
                None,
                "holds 1 worker slot per sensor task for the whole wait",
            ]
        )
        rows.append(
            [
                "deferrable sensor, whole wait",
                None,
                None,
                None,
                None,
                None,
                "0 worker slots while deferred (the trigger runs in the triggerer)",
            ]
        )

    write_result(
        "waiting",
        title="Waiting: 1,000 triggers in one event loop; batch sensor vs 1,000 sensors",
        columns=[
            "case",
            "requests",
            "requests per envelope per poll",
            "wall s",
            "CPU s (per 1,000 polls for triggers)",
            "RSS growth per trigger MB",
            "note",
        ],
        rows=rows,
        targets=targets,
        notes=[
            "CPU s for the trigger row is this process's CPU time (asyncio loop, httpx, parsing) per 1,000 "
            "polls; the sandbox's CPU is not included. For sensor rows it is the CPU time of the poke(s).",
            "Requests are counted at the sandbox; steady-state polls = requests / the requests per poll "
            "measured exactly in the first row (no faults are injected, so no request is a retry).",
            "Slots: a poke-mode sensor is a running task instance (one executor/pool slot) until it "
            "finishes; a deferred task instance is in state 'deferred' and occupies no worker slot.",
        ],
        extra=extra,
    )


if __name__ == "__main__":
    main()
