"""Contract-data export (issue 24): requests, wall time and peak RSS growth for 10,000 envelopes.

The sandbox is bulk-seeded (test-only ``/_sandbox/seed``) with 10,000 envelopes on one day (2
recipients and 6 fields each) plus 200 on the day before. In this process, after a warm-up export of
the small day (imports done, connection parsed):

- **export**: ``DocsignExportEnvelopesOperator.execute`` for the big day: list pages of 100, ``get-many``
  20 at a time, rows streamed to JSON Lines;
- **naive baseline** (same run, same data): list the same envelopes, ``GET /envelope/{id}`` one by one,
  keep every row in a list and write the files at the end.

Requests are counted at the sandbox (its request log). Peak RSS growth is ``VmHWM`` after the work minus
``VmRSS`` when the counter was reset just before it. Target: export growth under 64 MB, and requests at
most ceil(listed/100) + ceil(exported/20) + a small constant.

Usage: ``python bench/bench_export.py [--count 10000]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    API_KEY,
    docsign_conn_json,
    peak_mb,
    reset_peak,
    sandbox,
    setup_airflow_env,
    temp_dir,
    write_result,
)

setup_airflow_env()

from datetime import datetime, timezone  # noqa: E402

SEED_CHUNK = 1000
BIG_DAY = datetime(2026, 11, 2, tzinfo=timezone.utc)


def seed(sb: Any, count: int, day: datetime) -> None:
    from airflow_provider_docsign.sandbox.synthetic import synthetic_envelopes

    specs = synthetic_envelopes(count, days=1, first_day=day)
    for start in range(0, count, SEED_CHUNK):
        sb.seed(specs[start : start + SEED_CHUNK])


def export(destination: Path, day: datetime) -> dict[str, Any]:
    from datetime import timedelta

    from airflow_provider_docsign.operators.export import DocsignExportEnvelopesOperator

    op = DocsignExportEnvelopesOperator(
        task_id="export",
        destination=str(destination),
        start=day.isoformat(),
        end=(day + timedelta(days=1)).isoformat(),
        pii="hash",
    )
    result: dict[str, Any] = op.execute({"ti": None})  # type: ignore[arg-type]
    return result


def naive(destination: Path, day: datetime) -> dict[str, int]:
    """The obvious loop: list, GET each envelope, keep all rows, write at the end."""
    from datetime import timedelta

    from airflow_provider_docsign.export.rows import PiiPolicy, Window, envelope_rows, jsonl_line, select
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    hook = DocsignHook()
    policy = PiiPolicy("hash", b"bench-key")
    window = Window(day, day + timedelta(days=1))
    ids = [envelope_id for _, envelope_id in select(hook.find_envelopes(envelope_type="DOCUMENT"), window)]
    tables: dict[str, list[dict[str, Any]]] = {"envelopes": [], "recipients": [], "field_values": []}
    for envelope_id in ids:
        for table, rows in envelope_rows(hook.get_envelope(envelope_id), policy).items():
            tables[table].extend(rows)
    for table, rows in tables.items():
        out = destination / table
        out.mkdir(parents=True, exist_ok=True)
        (out / "part-0000.jsonl").write_bytes(b"".join(jsonl_line(r, table) for r in rows))
    return {t: len(r) for t, r in tables.items()}


def measure(sb: Any, fn: Any, *args: Any) -> dict[str, Any]:
    sb.clear_requests()
    base = reset_peak()
    started = time.perf_counter()
    out = fn(*args)
    wall = time.perf_counter() - started
    growth = max(0.0, peak_mb() - base)
    log = sb.requests()
    return {
        "out": out,
        "wall_s": wall,
        "growth_mb": growth,
        "requests": len(log),
        "list_pages": sum(1 for r in log if r["method"] == "GET" and r["path"] == "/envelope"),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=10_000)
    args = parser.parse_args()
    from datetime import timedelta

    with temp_dir("docsign-bench-export-") as tmp, sandbox() as sb:
        os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(
            sb.base_url, API_KEY, pii_hash_key="bench-hash-key"
        )
        seeding = time.perf_counter()
        seed(sb, 200, BIG_DAY - timedelta(days=1))
        seed(sb, args.count, BIG_DAY)
        seed_s = time.perf_counter() - seeding
        export(tmp / "warm", BIG_DAY - timedelta(days=1))  # imports, connection, pools
        streamed = measure(sb, export, tmp / "export", BIG_DAY)
        baseline = measure(sb, naive, tmp / "naive", BIG_DAY)

    exported = streamed["out"]["rows"]["envelopes"]
    listed = args.count + 200
    bound = math.ceil(listed / 100) + math.ceil(exported / 20) + 3
    rows = []
    for label, res, rows_out in (
        ("export (get-many, streamed)", streamed, streamed["out"]["rows"]),
        ("naive (GET each, rows in memory)", baseline, baseline["out"]),
    ):
        rows.append(
            [
                label,
                rows_out["envelopes"],
                rows_out["recipients"] + rows_out["field_values"],
                res["requests"],
                res["wall_s"],
                res["growth_mb"],
            ]
        )
    targets = [
        {
            "what": f"export peak RSS growth, {exported} envelopes",
            "target": "< 64 MB",
            "measured": f"{streamed['growth_mb']:.1f} MB",
            "met": streamed["growth_mb"] < 64,
        },
        {
            "what": "export requests",
            "target": f"<= ceil({listed}/100) + ceil({exported}/20) + 3 = {bound}",
            "measured": str(streamed["requests"]),
            "met": streamed["requests"] <= bound,
        },
    ]
    notes = [
        f"Seeded {listed} envelopes through /_sandbox/seed in {seed_s:.0f} s (test-only bulk route).",
        f"Requests: naive / export = {baseline['requests'] / max(streamed['requests'], 1):.1f}x; "
        f"wall time: naive / export = {baseline['wall_s'] / max(streamed['wall_s'], 1e-9):.1f}x.",
        "Both read the same listing; the export stops listing at its lookback floor (30 days back).",
    ]
    write_result(
        "export",
        title=f"Contract-data export: {exported} envelopes, streamed get-many against a naive GET loop",
        columns=["client", "envelopes", "recipient + field rows", "requests", "wall s", "peak RSS growth MB"],
        rows=rows,
        targets=targets,
        notes=notes,
        extra={"seed_s": seed_s, "listed": listed, "bound": bound},
    )
    print(json.dumps({"export_requests": streamed["requests"], "bound": bound}))


if __name__ == "__main__":
    main()
