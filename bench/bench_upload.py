"""Upload: ``DocsignHook.create_envelope`` against curl, a naive ``requests`` client and documenso-sdk.

Two file sets go to the same sandbox on 127.0.0.1: three 1 MB PDFs and three 40 MB PDFs (120 MB). Each
client runs in a fresh process (see ``_client.py``); curl is timed the same way. Throughput is reported
as a ratio to curl measured in the same run (median of the repetitions).

Targets (issues 4 and 10): peak RSS growth of the client under 32 MB for the 120 MB set, and at least
0.8x curl's throughput.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    API_KEY,
    MB,
    make_pdfs,
    run_client,
    run_measured,
    sandbox,
    temp_dir,
    write_result,
)

CLIENTS = ["curl", "hook", "naive", "sdk"]
LABELS = {
    "curl": "curl -F (baseline)",
    "hook": "DocsignHook.create_envelope",
    "naive": "naive requests files=",
    "sdk": "documenso-sdk envelopes.create",
}
DOWNLOAD_LABELS = {
    "curl": "curl -o (baseline)",
    "hook": "DocsignHook.download_envelope_item",
    "naive": "naive requests .content",
    "sdk": "documenso-sdk envelopes.items.download",
}
SETS: list[tuple[str, list[float]]] = [("3 x 1 MB", [1, 1, 1]), ("3 x 40 MB", [40, 40, 40])]
COLUMNS = [
    "files",
    "client",
    "ok runs",
    "median wall s",
    "client CPU s",
    "MB/s",
    "x curl",
    "peak RSS growth MB",
    "import + set-up s",
    "note",
]
REPS = 3  # per Python client (each repetition is a fresh process); curl runs REPS + 1 times


def curl_upload(base_url: str, files: list[Path], title: str) -> dict[str, Any]:
    curl = shutil.which("curl")
    if curl is None:
        return {"ok": False, "error": "curl not installed"}
    cmd = [
        curl,
        "-sS",
        "--max-time",
        "300",
        "-H",
        f"Authorization: {API_KEY}",
        "-F",
        f"payload={json.dumps({'type': 'DOCUMENT', 'title': title})};type=application/json",
    ]
    for path in files:
        cmd += ["-F", f"files=@{path};type=application/pdf"]
    cmd += ["-w", "\n%{http_code}", base_url + "/envelope/create"]
    res = run_measured(cmd, timeout=320)
    body, _, code = res["stdout"].rpartition("\n")
    ok = res["rc"] == 0 and code == "200"
    out: dict[str, Any] = {
        "ok": ok,
        "wall_s": res["wall_s"],
        "cpu_s": res["cpu_s"],
        "process_maxrss_mb": res["maxrss_mb"],
    }
    if ok:
        out["envelope_id"] = json.loads(body)["id"]
    else:
        out["error"] = f"curl rc={res['rc']} http={code} {body[:200]} {res['stderr'][:200]}"
    return out


def summarize(
    label: str,
    total_mb: float,
    results: dict[str, list[dict[str, Any]]],
    what: str,
    sizes: list[float],
    labels: dict[str, str] | None = None,
) -> tuple[list[list[Any]], list[dict[str, Any]]]:
    """Table rows (median wall time, max RSS growth over the repetitions) and target checks."""
    labels = labels or (LABELS if what == "upload" else DOWNLOAD_LABELS)
    rows: list[list[Any]] = []
    targets: list[dict[str, Any]] = []
    ok_curl = [r["wall_s"] for r in results["curl"] if r.get("ok")]
    curl_wall = statistics.median(ok_curl) if ok_curl else None
    for client in labels:
        runs = results[client]
        good = [r for r in runs if r.get("ok")]
        if not good:
            err = next((r.get("error") for r in runs if r.get("error")), "failed")
            rows.append(
                [
                    label,
                    labels[client],
                    "FAILED",
                    *([None] * (len(COLUMNS) - 4)),
                    err,
                ]
            )
            continue
        wall = statistics.median(r["wall_s"] for r in good)
        key = "process_maxrss_mb" if client.startswith("curl") else "peak_growth_mb"
        growth = max(r[key] for r in good)
        ratio = (curl_wall / wall) if curl_wall else None
        note = "" if len(good) == len(runs) else f"{len(runs) - len(good)} of {len(runs)} runs failed"
        name = labels[client]
        cpus = [r["cpu_s"] for r in good if r.get("cpu_s") is not None]
        cpu = statistics.median(cpus) if cpus else None
        starts = [r["startup_s"] for r in good if r.get("startup_s") is not None]
        startup = statistics.median(starts) if starts else None
        rows.append(
            [
                label,
                name,
                f"{len(good)}/{len(runs)}",
                wall,
                cpu,
                total_mb / wall,
                ratio,
                growth,
                startup,
                note,
            ]
        )
        if client == "hook" and min(sizes) >= 40:
            targets.append(
                {
                    "what": f"hook {what} peak RSS growth, {total_mb:.0f} MB",
                    "target": "< 32 MB",
                    "measured": f"{growth:.1f} MB",
                    "met": growth < 32,
                }
            )
            if ratio is not None:
                targets.append(
                    {
                        "what": f"hook {what} throughput vs curl, {total_mb:.0f} MB",
                        "target": ">= 0.8x",
                        "measured": f"{ratio:.2f}x",
                        "met": ratio >= 0.8,
                    }
                )
        if client == "hook" and min(sizes) >= 40 and results.get("curl_sha"):
            same = [r["wall_s"] for r in results["curl_sha"] if r.get("ok")]
            if same:
                ratio_same = statistics.median(same) / wall
                targets.append(
                    {
                        "what": f"hook {what} throughput vs curl + sha256sum (same work), {total_mb:.0f} MB",
                        "target": ">= 0.8x",
                        "measured": f"{ratio_same:.2f}x",
                        "met": ratio_same >= 0.8,
                    }
                )
    return rows, targets


def main() -> None:
    rows: list[list[Any]] = []
    targets: list[dict[str, Any]] = []
    raw: dict[str, Any] = {}
    notes = [
        "Each Python client runs in a fresh process per repetition; after its imports, one authenticated "
        "call and one small upload of the same kind (warm-up), it resets its peak RSS before each job. "
        "RSS growth = peak RSS during the call minus RSS at the reset (Linux VmHWM, /proc/self/clear_refs).",
        "curl's RSS column is its whole-process peak RSS (polled VmHWM), since it has no Python baseline.",
        "import + set-up s: the Python client's imports, first authenticated call and warm-up, in its own "
        "process (not part of the wall time column).",
        "Throughput ratio = curl's median wall time / the client's median wall time (same files and server).",
        "client CPU s: CPU time of the client process during the operation (user + system); it does not "
        "depend on what else the machine is doing, unlike wall time.",
    ]
    with temp_dir("docsign-bench-upload-") as tmp, sandbox(max_file_mb=50) as sb:
        tiny = make_pdfs(tmp, [0.01], prefix="warmup")
        sets = [
            (label, sizes, make_pdfs(tmp, sizes, prefix=f"set{i}")) for i, (label, sizes) in enumerate(SETS)
        ]
        results = {label: {c: [] for c in CLIENTS} for label, _, _ in sets}
        for rep in range(REPS + 1):  # interleave clients so drift hits all of them alike
            for client in CLIENTS:
                if rep == REPS and client != "curl":
                    continue
                if client == "curl":
                    for label, _, files in sets:
                        results[label]["curl"].append(curl_upload(sb.base_url, files, f"curl {label} {rep}"))
                    continue
                spec = {
                    "client": client,
                    "op": "upload",
                    "base_url": sb.base_url,
                    "warmup": {"title": "warm-up", "files": [str(tiny[0])]},
                    "jobs": [
                        {
                            "title": f"{client} {label} {rep} {time.time_ns()}",
                            "files": [str(f) for f in files],
                        }
                        for label, _, files in sets
                    ],
                }
                report = run_client(spec)
                for i, (label, _, _) in enumerate(sets):
                    job = report["jobs"][i] if i < len(report.get("jobs", [])) else {}
                    if not job:
                        job = {"ok": False, "error": report.get("error", "no result")}
                    job["startup_s"] = report.get("startup_s")
                    results[label][client].append(job)
        for label, sizes, files in sets:
            total_mb = sum(f.stat().st_size for f in files) / MB
            set_rows, set_targets = summarize(label, total_mb, results[label], "upload", sizes)
            rows += set_rows
            targets += set_targets
        raw = results
    write_result(
        "upload",
        title="Upload: create_envelope with 3 PDFs (sandbox on 127.0.0.1)",
        columns=COLUMNS,
        rows=rows,
        targets=targets,
        notes=notes,
        extra={"runs": raw},
    )


if __name__ == "__main__":
    main()
