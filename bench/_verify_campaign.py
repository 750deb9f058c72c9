"""A campaign's archive audited whole (issue 37): ``bench_verify.py --campaign``, its own table.

500 envelope folders, each with one small PDF sealed by the sandbox (PAdES, like the real service) and
its ``manifest.json``, as the batch archive lays them out. In each round, one after the other: the
baseline ``sha256sum`` over the same 500 PDFs (the floor of any check of the bytes), ``docsign verify
--manifest FOLDER`` (the campaign: walk, 500 manifests, SHA-256 and signature of each PDF, folder
checks) and ``docsign verify PDF...`` over the same 500 PDFs (signatures only, no manifests): each a
fresh process, so Python's start-up and imports are in the figures, as a user meets them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _common import (
    docsign_conn_json,
    make_pdfs,
    run_measured,
    sandbox,
    setup_airflow_env,
    temp_dir,
    write_result,
)

CAMPAIGN_ENVELOPES = 500
CAMPAIGN_SEALED = 4  # distinct sealed PDFs, used in turn
CAMPAIGN_REPS = 3
COLUMNS = [
    "operation",
    "runs",
    "median wall s",
    "min wall s",
    "median CPU s",
    "peak RSS MB",
    "ratio to sha256sum",
]


def _sealed_pdfs(tmp: Path) -> list[bytes]:
    """A few small PDFs, sealed by the sandbox (one envelope, completed)."""
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    with sandbox(max_file_mb=5) as sb:
        os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(sb.base_url)
        hook = DocsignHook()
        field = {"identifier": 0, "type": "SIGNATURE", "page": 1, "positionX": 10, "positionY": 80}
        field.update({"width": 30, "height": 8})
        recipient = {"email": "bench@example.test", "name": "Bench", "role": "SIGNER", "fields": [field]}
        files = make_pdfs(tmp, [0.02] * CAMPAIGN_SEALED, prefix="campaign")
        envelope_id = hook.create_envelope(title="bench campaign", files=files, recipients=[recipient])
        hook.distribute_envelope(envelope_id)
        sb.complete(envelope_id)
        sb.wait_status(envelope_id, "COMPLETED", timeout=120)
        return [sb.item_bytes(item.id) for item in hook.get_envelope(envelope_id).items]


def write_campaign(root: Path, sealed: list[bytes], count: int = CAMPAIGN_ENVELOPES) -> list[Path]:
    """``count`` envelope folders, each with one sealed PDF and its manifest; the PDFs' paths."""
    digests = [hashlib.sha256(data).hexdigest() for data in sealed]
    pdfs = []
    for i in range(count):
        key = f"renewals-2027({i:04d})"
        folder = root / key
        folder.mkdir(parents=True)
        which = i % len(sealed)
        pdf = folder / "01-Contract renewal.pdf"
        pdf.write_bytes(sealed[which])
        entry = {
            "item_id": f"envelope_item_{i}",
            "name": f"{key}/{pdf.name}",
            "path": pdf.name,
            "uri": pdf.as_uri(),
            "sha256": digests[which],
            "size": len(sealed[which]),
        }
        manifest = {"envelope_id": f"envelope_{i}", "version": "signed", "files": [entry]}
        (folder / "manifest.json").write_text(json.dumps(manifest))
        pdfs.append(pdf)
    return pdfs


def measure_campaign() -> None:
    """Build the 500-envelope archive, then time the three commands in interleaved rounds."""
    setup_airflow_env()
    docsign = [sys.executable, "-m", "airflow_provider_docsign.cli", "verify"]
    with temp_dir("docsign-bench-campaign-", tmpfs=True) as tmp:
        sealed = _sealed_pdfs(tmp)
        root = tmp / "archive"
        pdfs = write_campaign(root, sealed)
        commands = {
            "sha256sum": ["sha256sum", *map(str, pdfs)],
            "campaign": [*docsign, "--manifest", str(root)],
            "files": [*docsign, *map(str, pdfs)],
        }
        env = dict(os.environ)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
        for _ in range(CAMPAIGN_REPS):
            for name, cmd in commands.items():
                res = run_measured(cmd, timeout=900, env=env)
                if res["rc"] != 0:
                    raise SystemExit(f"{name} failed (exit {res['rc']}): {res['stderr'][-500:]}")
                runs[name].append(res)
        summary = runs["campaign"][-1]["stdout"].splitlines()[-1]
        start = time.perf_counter()
        from airflow_provider_docsign.archive.audit_campaign import find_manifests

        walk = find_manifests(root)
        walk_s = time.perf_counter() - start
        total_bytes = sum(p.stat().st_size for p in pdfs)
        shutil.rmtree(root)

    def ratios(name: str) -> list[float]:
        return [a["wall_s"] / b["wall_s"] for a, b in zip(runs[name], runs["sha256sum"], strict=True)]

    def row(label: str, name: str) -> list[Any]:
        walls = [r["wall_s"] for r in runs[name]]
        cpus = [r["cpu_s"] for r in runs[name] if r["cpu_s"] is not None]
        return [
            label,
            len(walls),
            statistics.median(walls),
            min(walls),
            statistics.median(cpus) if cpus else None,
            max(r["maxrss_mb"] for r in runs[name]),
            statistics.median(ratios(name)),
        ]

    n = CAMPAIGN_ENVELOPES
    rows = [
        row(f"sha256sum over the {n} PDFs ({total_bytes / 1e6:.1f} MB, baseline)", "sha256sum"),
        row(f"docsign verify --manifest FOLDER: {n} envelopes (walk, manifests, SHA-256, seals)", "campaign"),
        row(f"docsign verify PDF x {n}: the same PDFs' seals alone, no manifests", "files"),
    ]
    campaign_wall = statistics.median(r["wall_s"] for r in runs["campaign"])
    files_wall = statistics.median(r["wall_s"] for r in runs["files"])
    passed = summary == f"docsign verify: {n} envelopes, {n} ok, 0 failed" and len(walk.manifests) == n
    targets = [
        {
            "what": f"a {n}-envelope campaign audited whole, every envelope passing",
            "target": "yes, one summary line",
            "measured": summary,
            "met": passed,
        },
        {
            "what": "the campaign's own cost (walk, manifests, folder checks) over verifying the same PDFs",
            "target": "<= 1.25x",
            "measured": f"{campaign_wall / files_wall:.2f}x",
            "met": campaign_wall / files_wall <= 1.25,
        },
    ]
    notes = [
        f"{n} folders of one sealed PDF each ({CAMPAIGN_SEALED} distinct PDFs of about "
        f"{total_bytes / n / 1e3:.0f} kB sealed by the sandbox with pyHanko, used in turn) and a manifest "
        "with its SHA-256, on tmpfs when available. Each command is a fresh process; rounds interleave "
        "the three so that each meets the same moments of the machine's load.",
        f"Where the time goes: the signature check of each PDF (pyHanko: parse, CMS, certificate) is "
        f"nearly all of it, about {files_wall / n * 1000:.0f} ms a PDF here; the walk of the {n + 1} "
        f"folders alone took {walk_s * 1000:.0f} ms. sha256sum only hashes the bytes, so the ratio to "
        "it is the price of checking the seals, not of the campaign.",
    ]
    write_result(
        "verify_campaign",
        title=f"docsign verify on a campaign's archive: {n} envelopes vs sha256sum of the same files",
        columns=COLUMNS,
        rows=rows,
        targets=targets,
        notes=notes,
        extra={
            "runs": {
                k: [{x: r[x] for x in ("wall_s", "cpu_s", "maxrss_mb")} for r in v] for k, v in runs.items()
            }
        },
    )
