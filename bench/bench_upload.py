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
    run_with_rusage,
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
SETS = [("3 x 1 MB", [1, 1, 1], 3), ("3 x 40 MB", [40, 40, 40], 2)]


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
    res = run_with_rusage(cmd, timeout=320)
    body, _, code = res["stdout"].rpartition("\n")
    ok = res["rc"] == 0 and code == "200"
    out = {"ok": ok, "wall_s": res["wall_s"], "process_maxrss_mb": res["maxrss_mb"], "peak_growth_mb": None}
    if ok:
        out["envelope_id"] = json.loads(body)["id"]
    else:
        out["error"] = f"curl rc={res['rc']} http={code} {body[:200]} {res['stderr'][:200]}"
    return out


def run_once(client: str, base_url: str, files: list[Path], title: str) -> dict[str, Any]:
    if client == "curl":
        return curl_upload(base_url, files, title)
    spec = {
        "client": client,
        "op": "upload",
        "base_url": base_url,
        "title": title,
        "files": [str(f) for f in files],
    }
    return run_client(spec)


def main() -> None:
    rows: list[list[Any]] = []
    targets: list[dict[str, Any]] = []
    raw: dict[str, Any] = {}
    notes = [
        "Each client runs in a fresh process; RSS growth = peak RSS during the call minus RSS after imports "
        "and one warm-up request (Linux VmHWM reset through /proc/self/clear_refs).",
        "curl's column shows its whole-process peak RSS, since it has no Python baseline.",
        "Throughput ratio = curl's median wall time / the client's median wall time (same files and server).",
    ]
    with temp_dir("docsign-bench-upload-") as tmp, sandbox(max_file_mb=50) as sb:
        for label, sizes, reps in SETS:
            files = make_pdfs(tmp, sizes, prefix=label.replace(" ", "").replace("x", "_"))
            total_mb = sum(f.stat().st_size for f in files) / MB
            results: dict[str, list[dict[str, Any]]] = {c: [] for c in CLIENTS}
            for rep in range(reps):  # interleave clients so drift hits all of them alike
                for client in CLIENTS:
                    title = f"bench upload {label} {client} {rep} {time.time_ns()}"
                    results[client].append(run_once(client, sb.base_url, files, title))
            raw[label] = results
            ok_curl = [r["wall_s"] for r in results["curl"] if r.get("ok")]
            curl_wall = statistics.median(ok_curl) if ok_curl else None
            for client in CLIENTS:
                runs = results[client]
                good = [r for r in runs if r.get("ok")]
                if not good:
                    err = next((r.get("error") for r in runs if r.get("error")), "failed")
                    rows.append([label, LABELS[client], "FAILED", None, None, None, None, err])
                    continue
                wall = statistics.median(r["wall_s"] for r in good)
                growth = (
                    max(r["peak_growth_mb"] for r in good)
                    if client != "curl"
                    else max(r["process_maxrss_mb"] for r in good)
                )
                ratio = (curl_wall / wall) if curl_wall else None
                note = "" if len(good) == len(runs) else f"{len(runs) - len(good)} of {len(runs)} runs failed"
                rows.append(
                    [
                        label,
                        LABELS[client],
                        f"{len(good)}/{len(runs)}",
                        wall,
                        total_mb / wall,
                        ratio,
                        growth,
                        note,
                    ]
                )
                if client == "hook" and sizes[0] >= 40:
                    targets.append(
                        {
                            "what": "hook upload peak RSS growth, 120 MB",
                            "target": "< 32 MB",
                            "measured": f"{growth:.1f} MB",
                            "met": growth < 32,
                        }
                    )
                    if ratio is not None:
                        targets.append(
                            {
                                "what": "hook upload throughput vs curl, 120 MB",
                                "target": ">= 0.8x",
                                "measured": f"{ratio:.2f}x",
                                "met": ratio >= 0.8,
                            }
                        )
            for f in files:
                f.unlink()
    write_result(
        "upload",
        title="Upload: create_envelope with 3 PDFs (sandbox on 127.0.0.1)",
        columns=[
            "files",
            "client",
            "ok runs",
            "median wall s",
            "MB/s",
            "x curl",
            "peak RSS growth MB",
            "note",
        ],
        rows=rows,
        targets=targets,
        notes=notes,
        extra={"runs": raw},
    )


if __name__ == "__main__":
    main()
