"""Signature verification: ``verify_pdf_signatures`` on 3 x 40 MB sealed PDFs vs the hook's download of them.

An envelope with three 40 MB PDFs is created and completed in the sandbox, which seals each PDF with
PAdES (pyHanko) like the real service. Then, in a fresh process per repetition, the hook downloads
the three sealed PDFs to files (the baseline), and the same process verifies the three saved files.
Both are measured in the same process and run: wall time and peak RSS growth above the RSS at the
reset (Linux ``VmHWM``), after a warm-up download and verification of a small sealed PDF.

Targets (issue 16): verification costs at most half the download's time, with less than 64 MB of RSS
growth.

Hostile PDFs (issue 22), generated here, each verified alone in a fresh process after the same
warm-up: 10^6 objects (~50 MB, the attackers' case), 10^6 signature fields in ``/AcroForm``, and
100,000-deep nesting in ``/AcroForm /Fields``. Each is verified with the shipped bounds
(``MAX_VERIFY_MEMORY_BYTES``, ``MAX_VERIFY_SECONDS``) and the 10^6-object one also without them (what
pyHanko costs unbounded, i.e. before issue 22). Target: the process's peak RSS stays under 512 MB
for every input, and none crashes (each is reported unreadable or failing).

The hostile PDFs are made in ``_verify_hostile.py``; ``--evidence`` (issue 31, its own table) is
``_verify_evidence.py``; ``--campaign`` (issue 37, its own table: ``docsign verify`` on a 500-envelope
campaign folder against ``sha256sum`` of the same files) is ``_verify_campaign.py``.
"""

from __future__ import annotations

import gc
import hashlib
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
from _verify_campaign import measure_campaign
from _verify_evidence import measure_evidence
from _verify_hostile import HOSTILE, hostile_child, make_hostile

SIZES = [40, 40, 40]
REPS = 3
COLUMNS = [
    "operation",
    "runs",
    "median wall s",
    "min wall s",
    "median CPU s",
    "peak RSS growth MB (max)",
    "ratio to download",
    "CPU ratio to download",
]


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process: warm up, then download every item and verify every saved file."""
    setup_airflow_env()
    os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(spec["base_url"])
    from airflow_provider_docsign.evidence.signatures import verify_pdf_signatures
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    hook = DocsignHook()
    out_dir = Path(spec["out_dir"])
    warm = out_dir / "warmup.pdf"
    hook.download_envelope_item(spec["warmup_item"], warm, version="signed")
    if not verify_pdf_signatures(warm).passed:
        raise RuntimeError("the warm-up PDF does not verify")
    dests = [out_dir / f"item-{i}.pdf" for i in range(len(spec["items"]))]

    def measured(work: Any) -> tuple[dict[str, Any], Any]:
        gc.collect()
        base = reset_peak()
        start, cpu = time.perf_counter(), time.process_time()
        value = work()
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        return {"wall_s": wall, "cpu_s": cpu, "rss_growth_mb": peak_mb() - base}, value

    def download_all() -> None:
        for item_id, dest in zip(spec["items"], dests, strict=True):
            hook.download_envelope_item(item_id, dest, version="signed")

    download, _ = measured(download_all)
    verify, reports = measured(lambda: [verify_pdf_signatures(dest) for dest in dests])
    verify["passed"] = all(r.passed for r in reports)
    verify["coverage"] = sorted({c.coverage for r in reports for c in r.signatures})
    # Where the time goes: the same verification with pyHanko's own 4 KiB /ByteRange reads (as before
    # issue 28), and the floor of any check of the signed bytes, one SHA-256 of each file.
    from airflow_provider_docsign.evidence import signatures

    ours = signatures._digest_byte_range
    signatures._digest_byte_range = lambda sig: None  # type: ignore[assignment]
    try:
        small_reads, reports = measured(lambda: [verify_pdf_signatures(dest) for dest in dests])
    finally:
        signatures._digest_byte_range = ours  # type: ignore[assignment]
    small_reads["passed"] = all(r.passed for r in reports)
    floor, _ = measured(lambda: [_sha256(dest) for dest in dests])
    for dest in dests:
        dest.unlink()
    return {
        "download": download,
        "verify": verify,
        "verify_4k_reads": small_reads,
        "sha256": floor,
        "bytes": sum(spec["sizes"]),
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(MB):
            digest.update(chunk)
    return digest.hexdigest()


def measure_hostile(tmp: Path, warmup: Path) -> list[dict[str, Any]]:
    """Generate the hostile PDFs and verify each in a fresh process."""
    out = []
    for case, kind, count, bounded in HOSTILE:
        path = tmp / f"hostile-{kind}.pdf"
        if not path.exists():
            make_hostile(path, kind, count)
        spec = {"path": str(path), "bounded": bounded, "warmup": str(warmup)}
        res = run_measured([sys.executable, __file__, "--hostile", json.dumps(spec)], timeout=600)
        lines = [ln for ln in res["stdout"].splitlines() if ln.startswith("{")]
        if res["rc"] != 0 or not lines:
            out.append({"case": case, "bytes": path.stat().st_size, "crashed": res["stderr"][-300:]})
            continue
        out.append({"case": case, "bytes": path.stat().st_size, "bounded": bounded, **json.loads(lines[-1])})
    return out


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
        warmup_pdf = tmp / "warmup-sealed.pdf"
        warmup_pdf.write_bytes(sb.item_bytes(warmup_item))
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
        hostile = measure_hostile(tmp, warmup_pdf)

    def stats(key: str) -> dict[str, float]:
        return {
            "wall": statistics.median(r[key]["wall_s"] for r in runs),
            "min": min(r[key]["wall_s"] for r in runs),
            "cpu": statistics.median(r[key]["cpu_s"] for r in runs),
            "rss": max(r[key]["rss_growth_mb"] for r in runs),
        }

    measured = {key: stats(key) for key in ("download", "verify", "verify_4k_reads", "sha256")}
    base = measured["download"]
    ratio = measured["verify"]["wall"] / base["wall"]
    cpu_ratio = measured["verify"]["cpu"] / base["cpu"]
    verify_rss = measured["verify"]["rss"]
    total_mb = sum(sizes) / MB
    labels = {
        "download": f"DocsignHook.download_envelope_item, 3 sealed PDFs ({total_mb:.0f} MB, baseline)",
        "verify": "verify_pdf_signatures of the 3 saved files",
        "verify_4k_reads": "the same, with pyHanko's own 4 KiB /ByteRange reads (before issue 28)",
        "sha256": "where the time goes: one SHA-256 of each saved file (the floor of any check)",
    }
    rows = [
        [
            label,
            len(runs),
            measured[key]["wall"],
            measured[key]["min"],
            measured[key]["cpu"],
            measured[key]["rss"],
            measured[key]["wall"] / base["wall"],
            measured[key]["cpu"] / base["cpu"],
        ]
        for key, label in labels.items()
    ]
    download_median = base["wall"]
    for h in hostile:
        if "crashed" in h:
            rows.append(
                [
                    f"hostile: {h['case']} ({h['bytes'] / MB:.0f} MB): CRASHED",
                    1,
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                ]
            )
            continue
        rows.append(
            [
                f"hostile: {h['case']} ({h['bytes'] / MB:.0f} MB) -> {h['outcome'][:70]}",
                1,
                h["wall_s"],
                h["wall_s"],
                None,
                h["rss_growth_mb"],
                h["wall_s"] / download_median,
                None,
            ]
        )
    bounded = [h for h in hostile if h.get("bounded")]
    worst_peak = max((h.get("peak_rss_mb", float("inf")) for h in bounded), default=float("inf"))
    none_crashed = all("crashed" not in h for h in hostile)
    nesting = next((h for h in hostile if h["case"].startswith("100,000")), {})
    all_passed = all(
        r["verify"]["passed"]
        and r["verify_4k_reads"]["passed"]
        and r["verify"]["coverage"] == ["entire_file"]
        for r in runs
    )
    targets = [
        {
            "what": "verification time vs the hook's download of the same files",
            "target": "<= 0.5x",
            "measured": f"{ratio:.2f}x (CPU {cpu_ratio:.2f}x)",
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
        {
            "what": "process peak RSS verifying any hostile PDF (bounded)",
            "target": "< 512 MB",
            "measured": f"{worst_peak:.0f} MB",
            "met": worst_peak < 512,
        },
        {
            "what": "hostile PDFs: no crash; the deep nesting is reported unreadable",
            "target": "yes",
            "measured": "yes"
            if none_crashed and nesting.get("outcome", "").startswith("unreadable")
            else "no",
            "met": none_crashed and nesting.get("outcome", "").startswith("unreadable"),
        },
    ]
    notes = [
        "The sandbox seals each completed PDF with pyHanko (PAdES, ETSI.CAdES.detached, RSA-2048, "
        "SHA-256), like a Documenso instance. Each repetition is a fresh process: warm-up download and "
        "verification of a small sealed PDF, then the download of the 3 sealed PDFs, then their "
        "verification, each after a peak-RSS reset.",
        "Verification reads the file through pyHanko's PdfFileReader on an open file (cross-reference "
        "table and signature dictionary only) and hashes the /ByteRange (the whole file but the "
        "signature itself) with pyHanko's byte_range_digest in 1 MiB reads, so memory does not grow "
        "with the file size. Files are on tmpfs when available (the figures compare the work, not the "
        "disk).",
        "Where the time goes: the /ByteRange digest is most of a verification; the SHA-256 row is that "
        "floor alone, and the 4 KiB row is pyHanko's default read size (before issue 28), measured in "
        "the same process right after. Wall-time ratios move with the machine's load; the CPU columns "
        "much less.",
        "Hostile rows: one fresh process each, after the warm-up verification of a small sealed PDF; "
        "'peak RSS growth' is above the RSS at the reset, the target is on the process's absolute peak "
        "(extra.hostile). The attackers measured 3.8 s and 397 MB for a 47 MB PDF of 10^6 objects before "
        "issue 22; the unbounded row measures the same pyHanko path here, without the bound.",
    ]
    write_result(
        "verify",
        title="Signature verification: 3 x 40 MB sealed PDFs vs the hook's download (same process)",
        columns=COLUMNS,
        rows=rows,
        targets=targets,
        notes=notes,
        extra={"runs": runs, "sizes": sizes, "hostile": hostile},
    )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
    elif len(sys.argv) == 3 and sys.argv[1] == "--hostile":
        print(json.dumps(hostile_child(json.loads(sys.argv[2]))))
    elif len(sys.argv) == 2 and sys.argv[1] == "--evidence":
        measure_evidence()  # its own table, "verify_timestamp" in bench/run_all.py
    elif len(sys.argv) == 2 and sys.argv[1] == "--campaign":
        measure_campaign()  # its own table, "verify_campaign"
    else:
        main()
