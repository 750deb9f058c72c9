"""Signature verification: ``verify_pdf_signatures`` on 3 x 40 MB sealed PDFs vs the hook's download of them.

An envelope with three 40 MB PDFs is created and completed in the sandbox, which seals each PDF with
PAdES (pyHanko) like the real service. Then, in a fresh process per repetition, the hook downloads
the three sealed PDFs to files (the baseline), and the same process verifies the three saved files.
Both are measured in the same process and run: wall time and peak RSS growth above the RSS at the
reset (Linux ``VmHWM``), after a warm-up download and verification of a small sealed PDF.

Targets (issue 16): verification costs at most half the download's time, with less than 64 MB of RSS
growth.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    MB,
    docsign_conn_json,
    make_pdfs,
    peak_mb,
    reset_peak,
    run_measured,
    sandbox,
    setup_airflow_env,
    temp_dir,
    write_result,
)

SIZES = [40, 40, 40]
REPS = 3
COLUMNS = [
    "operation",
    "runs",
    "median wall s",
    "min wall s",
    "peak RSS growth MB (max)",
    "ratio to download",
]


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process: warm up, then download every item and verify every saved file."""
    setup_airflow_env()
    os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(spec["base_url"])
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.signatures import verify_pdf_signatures

    hook = DocsignHook()
    out_dir = Path(spec["out_dir"])
    warm = out_dir / "warmup.pdf"
    hook.download_envelope_item(spec["warmup_item"], warm, version="signed")
    if not verify_pdf_signatures(warm).passed:
        raise RuntimeError("the warm-up PDF does not verify")
    dests = [out_dir / f"item-{i}.pdf" for i in range(len(spec["items"]))]

    gc.collect()
    base = reset_peak()
    start = time.perf_counter()
    for item_id, dest in zip(spec["items"], dests, strict=True):
        hook.download_envelope_item(item_id, dest, version="signed")
    download = {"wall_s": time.perf_counter() - start, "rss_growth_mb": peak_mb() - base}

    gc.collect()
    base = reset_peak()
    start = time.perf_counter()
    reports = [verify_pdf_signatures(dest) for dest in dests]
    verify = {"wall_s": time.perf_counter() - start, "rss_growth_mb": peak_mb() - base}
    verify["passed"] = all(r.passed for r in reports)
    verify["coverage"] = sorted({c.coverage for r in reports for c in r.signatures})
    for dest in dests:
        dest.unlink()
    return {"download": download, "verify": verify, "bytes": sum(spec["sizes"])}


def main() -> None:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    setup_airflow_env()
    runs: list[dict[str, Any]] = []
    with temp_dir("docsign-bench-verify-", tmpfs=True) as tmp, sandbox(max_file_mb=50) as sb:
        os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(sb.base_url)
        hook = DocsignHook()
        field = {"identifier": 0, "type": "SIGNATURE", "page": 1, "positionX": 10, "positionY": 80}
        field.update({"width": 30, "height": 8})
        recipient = {"email": "bench@example.test", "name": "Bench", "role": "SIGNER", "fields": [field]}
        envelopes = []
        for label, sizes in (("warmup", [0.01]), ("big", SIZES)):
            files = make_pdfs(tmp, sizes, prefix=label)
            envelope_id = hook.create_envelope(
                title=f"bench verify {label}", files=files, recipients=[recipient]
            )
            hook.distribute_envelope(envelope_id)
            sb.complete(envelope_id)
            sb.wait_status(envelope_id, "COMPLETED", timeout=120)
            envelopes.append([i.id for i in hook.get_envelope(envelope_id).items])
            for f in files:
                f.unlink()
        (warmup_item,), items = envelopes
        sizes = [len(sb.item_bytes(i)) for i in items]
        for rep in range(REPS):
            out_dir = tmp / f"out-{rep}"
            out_dir.mkdir()
            spec = {
                "base_url": sb.base_url,
                "items": items,
                "warmup_item": warmup_item,
                "out_dir": str(out_dir),
                "sizes": sizes,
            }
            res = run_measured([sys.executable, __file__, "--child", json.dumps(spec)], timeout=300)
            lines = [ln for ln in res["stdout"].splitlines() if ln.startswith("{")]
            if res["rc"] != 0 or not lines:
                raise SystemExit(f"measurement run failed: {res['stderr'][-500:]}")
            runs.append(json.loads(lines[-1]))
    download_wall = [r["download"]["wall_s"] for r in runs]
    verify_wall = [r["verify"]["wall_s"] for r in runs]
    download_rss = max(r["download"]["rss_growth_mb"] for r in runs)
    verify_rss = max(r["verify"]["rss_growth_mb"] for r in runs)
    ratio = statistics.median(verify_wall) / statistics.median(download_wall)
    total_mb = sum(sizes) / MB
    rows = [
        [
            f"DocsignHook.download_envelope_item, 3 sealed PDFs ({total_mb:.0f} MB, baseline)",
            len(runs),
            statistics.median(download_wall),
            min(download_wall),
            download_rss,
            1.0,
        ],
        [
            "verify_pdf_signatures of the 3 saved files",
            len(runs),
            statistics.median(verify_wall),
            min(verify_wall),
            verify_rss,
            ratio,
        ],
    ]
    all_passed = all(r["verify"]["passed"] and r["verify"]["coverage"] == ["entire_file"] for r in runs)
    targets = [
        {
            "what": "verification time vs the hook's download of the same files",
            "target": "<= 0.5x",
            "measured": f"{ratio:.2f}x",
            "met": ratio <= 0.5,
        },
        {
            "what": "verification peak RSS growth, 3 x 40 MB",
            "target": "< 64 MB",
            "measured": f"{verify_rss:.1f} MB",
            "met": verify_rss < 64,
        },
        {
            "what": "every sealed PDF verifies (intact, valid, whole file)",
            "target": "yes",
            "measured": "yes" if all_passed else "no",
            "met": all_passed,
        },
    ]
    notes = [
        "The sandbox seals each completed PDF with pyHanko (PAdES, ETSI.CAdES.detached, RSA-2048, "
        "SHA-256), like a Documenso instance. Each repetition is a fresh process: warm-up download and "
        "verification of a small sealed PDF, then the download of the 3 sealed PDFs, then their "
        "verification, each after a peak-RSS reset.",
        "Verification reads the file through pyHanko's PdfFileReader on an open file (cross-reference "
        "table and signature dictionary only) and hashes the /ByteRange in chunks, so memory does not "
        "grow with the file size. Files are on tmpfs when available (the figures compare the work, "
        "not the disk).",
    ]
    write_result(
        "verify",
        title="Signature verification: 3 x 40 MB sealed PDFs vs the hook's download (same process)",
        columns=COLUMNS,
        rows=rows,
        targets=targets,
        notes=notes,
        extra={"runs": runs, "sizes": sizes},
    )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
    else:
        main()
