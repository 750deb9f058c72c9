"""Airflow's generic ``HttpOperator``/``HttpSensor`` against our hook and sensor, for the calls both can make.

The same sandbox on 127.0.0.1 serves both. Requests are counted at the sandbox (``sb.requests()``), so
retries and extra look-ups show up. The generic operators get an ``http`` connection with the API key
in its extras (sent as a header); ours get a ``docsign`` connection. Each operator runs its
``execute``/``poke`` directly (no scheduler), the way a task would call it.

Cases:
- read 20 envelopes: 20 ``HttpOperator`` GETs against ``DocsignHook.get_envelope`` x20 and
  ``DocsignHook.get_envelopes`` (batched, 20 ids a call);
- one status poll of 100 envelopes: 100 ``HttpSensor`` pokes against one ``DocsignEnvelopeSensor`` poke;
- create an envelope from 3 x 1 MB PDFs: ``HttpOperator`` POST with ``files=`` (in memory) against
  ``DocsignHook.create_envelope``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    docsign_conn_json,
    http_conn_json,
    make_pdfs,
    sandbox,
    setup_airflow_env,
    short_error,
    temp_dir,
    write_result,
)
from _limits import Deadline

setup_airflow_env()

N_READ = 20
N_POLL = 100


def create_small_envelopes(sb: Any, pdf: Path, count: int) -> list[str]:
    import requests

    session = requests.Session()
    session.headers["Authorization"] = sb.api_key
    ids = []
    body = pdf.read_bytes()
    deadline = Deadline(120)
    for i in range(count):
        if deadline.expired():
            raise SystemExit(f"creating envelopes took over {deadline.describe()}")
        response = session.post(
            sb.base_url + "/envelope/create",
            data={"payload": json.dumps({"type": "DOCUMENT", "title": f"http-bench {i}"})},
            files=[("files", ("c.pdf", body, "application/pdf"))],
            timeout=30,
        )
        response.raise_for_status()
        ids.append(response.json()["id"])
    return ids


def _whole(value: float) -> float | int:
    return int(value) if value.is_integer() else value


def measure(sb: Any, fn: Callable[[], Any], runs: int = 3) -> dict[str, Any]:
    """One untimed warm-up call, then ``runs`` timed calls: median wall time, requests per call."""
    try:
        fn()
    except Exception as exc:
        return {"ok": False, "error": short_error(exc), "wall_s": None, "requests": None}
    sb.clear_requests()
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        try:
            fn()
        except Exception as exc:
            return {"ok": False, "error": short_error(exc), "wall_s": None, "requests": None}
        walls.append(time.perf_counter() - start)
    return {
        "ok": True,
        "error": None,
        "wall_s": statistics.median(walls),
        "requests": _whole(len(sb.requests()) / runs),
    }


def main() -> None:
    from airflow.providers.http.operators.http import HttpOperator
    from airflow.providers.http.sensors.http import HttpSensor

    rows: list[list[Any]] = []
    with temp_dir("docsign-bench-http-") as tmp, sandbox() as sb:
        os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(sb.base_url)
        os.environ["AIRFLOW_CONN_DOCSIGN_HTTP"] = http_conn_json(sb.base_url)
        small = make_pdfs(tmp, [0.01], prefix="tiny")[0]
        ids = create_small_envelopes(sb, small, N_POLL)
        read_ids = ids[:N_READ]
        big = make_pdfs(tmp, [1, 1, 1], prefix="one")

        def http_reads() -> int:
            for i, envelope_id in enumerate(read_ids):
                op = HttpOperator(
                    task_id=f"get_{i}",
                    http_conn_id="docsign_http",
                    method="GET",
                    endpoint=f"envelope/{envelope_id}",
                    response_filter=lambda r: r.json(),
                )
                assert op.execute({})["id"] == envelope_id  # type: ignore[arg-type]
            return len(read_ids)

        def hook_reads() -> int:
            from airflow_provider_docsign.hooks.docsign import DocsignHook

            hook = DocsignHook()
            return sum(hook.get_envelope(e).id == e for e in read_ids)

        def hook_batch() -> int:
            from airflow_provider_docsign.hooks.docsign import DocsignHook

            return len(DocsignHook().get_envelopes(read_ids))

        def http_poll() -> int:
            done = 0
            for i, envelope_id in enumerate(ids):
                sensor = HttpSensor(
                    task_id=f"poke_{i}",
                    http_conn_id="docsign_http",
                    endpoint=f"envelope/{envelope_id}",
                    response_check=lambda r: r.json()["status"] == "COMPLETED",
                )
                done += bool(sensor.poke({}))  # type: ignore[arg-type]
            return done

        def sensor_poll() -> Any:
            from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

            sensor = DocsignEnvelopeSensor(task_id="wait_all", envelope_ids=ids, poke_interval=60)
            return sensor.poke({})  # type: ignore[arg-type]

        def http_create() -> str:
            handles = [open(p, "rb") for p in big]  # noqa: SIM115
            try:
                op = HttpOperator(
                    task_id="create",
                    http_conn_id="docsign_http",
                    method="POST",
                    endpoint="envelope/create",
                    data={"payload": json.dumps({"type": "DOCUMENT", "title": "http create"})},
                    request_kwargs={
                        "files": [
                            ("files", (p.name, h, "application/pdf"))
                            for p, h in zip(big, handles, strict=True)
                        ]
                    },
                    response_filter=lambda r: r.json()["id"],
                )
                return str(op.execute({}))  # type: ignore[arg-type]
            finally:
                for h in handles:
                    h.close()

        def hook_create() -> str:
            from airflow_provider_docsign.hooks.docsign import DocsignHook

            return str(DocsignHook().create_envelope(title="hook create", files=big))

        cases = [
            (
                f"read {N_READ} envelopes",
                [
                    ("HttpOperator x20 (baseline)", http_reads),
                    ("DocsignHook.get_envelope x20", hook_reads),
                    ("DocsignHook.get_envelopes (batched)", hook_batch),
                ],
            ),
            (
                f"one status poll of {N_POLL} envelopes",
                [
                    ("HttpSensor x100 pokes (baseline)", http_poll),
                    ("DocsignEnvelopeSensor(envelope_ids=100) poke", sensor_poll),
                ],
            ),
            (
                "create from 3 x 1 MB PDFs",
                [
                    ("HttpOperator POST files= (baseline)", http_create),
                    ("DocsignHook.create_envelope", hook_create),
                ],
            ),
        ]
        raw: dict[str, Any] = {}
        for case, variants in cases:
            base: dict[str, Any] | None = None
            for label, fn in variants:
                res = measure(sb, fn)
                raw[f"{case} / {label}"] = res
                if base is None:
                    base = res
                if res["ok"] and base["ok"]:
                    rows.append(
                        [
                            case,
                            label,
                            res["requests"],
                            res["requests"] / max(base["requests"], 1),
                            res["wall_s"],
                            base["wall_s"] / res["wall_s"],
                            "",
                        ]
                    )
                else:
                    rows.append(
                        [
                            case,
                            label,
                            res["requests"],
                            None,
                            res["wall_s"],
                            None,
                            res["error"] or "baseline failed",
                        ]
                    )
    write_result(
        "http_provider",
        title="Generic HttpOperator/HttpSensor vs DocsignHook/DocsignEnvelopeSensor (same sandbox)",
        columns=[
            "case",
            "client",
            "requests",
            "requests vs baseline",
            "wall s",
            "speed-up vs baseline",
            "error",
        ],
        rows=rows,
        notes=[
            "Requests are counted at the sandbox. HttpOperator/HttpSensor build a new HttpHook (connection "
            "look-up and requests.Session) per task; they can read and poll, but have no typed results, no "
            "batching, no streaming upload, and no PDF checks on download.",
            "speed-up = baseline wall time / this wall time (> 1 is faster than the generic operator); "
            "each figure is the median of 3 timed calls after one untimed warm-up call.",
        ],
        extra={"runs": raw},
    )


if __name__ == "__main__":
    main()
