"""Download: ``DocsignHook.download_envelope_item`` to a file against curl -o, naive ``.content`` and the SDK.

An envelope with three 1 MB PDFs and one with three 40 MB PDFs are created once; then each client, in a
fresh process, downloads the three items to files. Every saved file's sha256 is compared with the
uploaded file. documenso-sdk is reported to treat the PDF as a JSON error: whatever it does is recorded.

Targets (issue 10): peak RSS growth under 32 MB for 120 MB, at least 0.8x curl's throughput.
"""

from __future__ import annotations

import hashlib
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import API_KEY, MB, make_pdfs, run_client, run_with_rusage, sandbox, temp_dir, write_result
from bench_upload import curl_upload

CLIENTS = ["curl", "hook", "naive", "sdk"]
LABELS = {
    "curl": "curl -o (baseline)",
    "hook": "DocsignHook.download_envelope_item",
    "naive": "naive requests .content",
    "sdk": "documenso-sdk envelopes.items.download",
}
SETS = [("3 x 1 MB", [1, 1, 1], 3), ("3 x 40 MB", [40, 40, 40], 2)]
VERSION = "original"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(MB), b""):
            digest.update(chunk)
    return digest.hexdigest()


def item_ids(base_url: str, envelope_id: str) -> list[str]:
    response = requests.get(
        f"{base_url}/envelope/{envelope_id}", headers={"Authorization": API_KEY}, timeout=30
    )
    response.raise_for_status()
    items = sorted(response.json()["envelopeItems"], key=lambda i: i.get("order", 0))
    return [i["id"] for i in items]


def curl_download(base_url: str, items: list[str], dests: list[Path]) -> dict[str, Any]:
    curl = shutil.which("curl")
    if curl is None:
        return {"ok": False, "error": "curl not installed"}
    cmd = [curl, "-sS", "--max-time", "300", "-H", f"Authorization: {API_KEY}", "-w", "%{http_code}\n"]
    for item, dest in zip(items, dests, strict=True):
        cmd += [f"{base_url}/envelope/item/{item}/download?version={VERSION}", "-o", str(dest)]
    res = run_with_rusage(cmd, timeout=320)
    codes = res["stdout"].split()
    ok = res["rc"] == 0 and codes == ["200"] * len(items)
    out: dict[str, Any] = {"ok": ok, "wall_s": res["wall_s"], "process_maxrss_mb": res["maxrss_mb"]}
    if ok:
        out["sha256"] = [sha256(d) for d in dests]
    else:
        out["error"] = f"curl rc={res['rc']} codes={codes} {res['stderr'][:200]}"
    return out


def main() -> None:
    rows: list[list[Any]] = []
    targets: list[dict[str, Any]] = []
    raw: dict[str, Any] = {}
    notes = [
        f"All clients download version={VERSION!r} of each item to a file; every file's sha256 is checked "
        "against the uploaded PDF.",
        "RSS growth = peak RSS during the downloads minus RSS after imports and one warm-up request; curl's "
        "column is its whole-process peak RSS.",
        "Throughput ratio = curl's median wall time / the client's median wall time.",
    ]
    with temp_dir("docsign-bench-download-") as tmp, sandbox(max_file_mb=50) as sb:
        for label, sizes, reps in SETS:
            files = make_pdfs(tmp, sizes, prefix="src" + label.replace(" ", "").replace("x", "_"))
            expected = [sha256(f) for f in files]
            total_mb = sum(f.stat().st_size for f in files) / MB
            created = curl_upload(sb.base_url, files, f"bench download {label}")
            if not created.get("ok"):
                raise SystemExit(f"could not create the envelope to download: {created.get('error')}")
            items = item_ids(sb.base_url, created["envelope_id"])
            results: dict[str, list[dict[str, Any]]] = {c: [] for c in CLIENTS}
            for rep in range(reps):
                for client in CLIENTS:
                    out_dir = tmp / f"out-{client}-{rep}"
                    out_dir.mkdir()
                    dests = [out_dir / f"item-{i}.pdf" for i in range(len(items))]
                    if client == "curl":
                        res = curl_download(sb.base_url, items, dests)
                    else:
                        spec = {
                            "client": client,
                            "op": "download",
                            "base_url": sb.base_url,
                            "items": items,
                            "dests": [str(d) for d in dests],
                            "version": VERSION,
                        }
                        res = run_client(spec)
                    if res.get("ok") and res.get("sha256") != expected:
                        res["ok"] = False
                        res["error"] = "saved bytes differ from the uploaded PDF (sha256 mismatch)"
                    results[client].append(res)
                    shutil.rmtree(out_dir, ignore_errors=True)
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
                key = "process_maxrss_mb" if client == "curl" else "peak_growth_mb"
                growth = max(r[key] for r in good)
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
                            "what": "hook download peak RSS growth, 120 MB",
                            "target": "< 32 MB",
                            "measured": f"{growth:.1f} MB",
                            "met": growth < 32,
                        }
                    )
                    if ratio is not None:
                        targets.append(
                            {
                                "what": "hook download throughput vs curl, 120 MB",
                                "target": ">= 0.8x",
                                "measured": f"{ratio:.2f}x",
                                "met": ratio >= 0.8,
                            }
                        )
            for f in files:
                f.unlink()
    write_result(
        "download",
        title="Download: 3 envelope items to files (sandbox on 127.0.0.1)",
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
