"""Download: ``DocsignHook.download_envelope_item`` to a file against curl -o, naive ``.content`` and the SDK.

An envelope with three 1 MB PDFs and one with three 40 MB PDFs are created once; then each client
downloads the three items to files, :data:`DOWNLOAD_REPS` times, each Python client in a fresh process
per repetition. The clients alternate download by download, their order rotated each time, so a
change of the machine's load hits them alike. Every saved file's sha256 is compared with the
uploaded file. documenso-sdk is reported to treat the PDF as a JSON error: whatever it does is recorded.

Targets (issue 10): peak RSS growth under 32 MB for 120 MB, at least 0.8x curl's throughput.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import API_KEY, MB, make_pdfs, run_measured, sandbox, temp_dir, write_result
from _served import served_clients
from bench_upload import COLUMNS, SETS, curl_upload, summarize

CLIENTS = ["curl", "curl_sha", "hook", "naive", "sdk"]
LABELS = {
    "curl": "curl -o (baseline)",
    "curl_sha": "curl -o + sha256sum (the hook's work)",
    "hook": "DocsignHook.download_envelope_item",
    "naive": "naive requests .content",
    "sdk": "documenso-sdk envelopes.items.download",
}
VERSION = "original"
#: Repetitions per client (each Python client a fresh process in each); medians over these.
DOWNLOAD_REPS = 5


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


def curl_download(
    base_url: str, items: list[str], dests: list[Path], *, checksum: bool = False
) -> dict[str, Any]:
    curl = shutil.which("curl")
    if curl is None:
        return {"ok": False, "error": "curl not installed"}
    cmd = [curl, "-sS", "--max-time", "300", "-H", f"Authorization: {API_KEY}", "-w", "%{http_code}\n"]
    for item, dest in zip(items, dests, strict=True):
        cmd += [f"{base_url}/envelope/item/{item}/download?version={VERSION}", "-o", str(dest)]
    res = run_measured(cmd, timeout=320)
    codes = res["stdout"].split()
    ok = res["rc"] == 0 and codes == ["200"] * len(items)
    out: dict[str, Any] = {
        "ok": ok,
        "wall_s": res["wall_s"],
        "cpu_s": res["cpu_s"],
        "process_maxrss_mb": res["maxrss_mb"],
    }
    if ok and checksum:
        # The same work as the hook, which hashes while it streams: curl, then sha256sum.
        summed = run_measured(["sha256sum", *map(str, dests)], timeout=120)
        out["wall_s"] += summed["wall_s"]
        out["cpu_s"] = (out["cpu_s"] or 0.0) + (summed["cpu_s"] or 0.0)
        out["ok"] = ok = summed["rc"] == 0
        out["sha256"] = [line.split()[0] for line in summed["stdout"].splitlines()]
        if not ok:
            out["error"] = f"sha256sum failed: {summed['stderr'][:200]}"
    elif ok:
        out["sha256"] = [sha256(d) for d in dests]
    else:
        out["error"] = f"curl rc={res['rc']} codes={codes} {res['stderr'][:200]}"
    return out


def main() -> None:
    rows: list[list[Any]] = []
    targets: list[dict[str, Any]] = []
    notes = [
        f"All clients download version={VERSION!r} of each item to a file; every saved file's sha256 is "
        "checked against the uploaded PDF (a mismatch counts as a failed run).",
        f"{DOWNLOAD_REPS} repetitions; the clients alternate download by download, their order "
        "rotated each time. Each Python client runs in a fresh process per repetition; after its "
        "imports, one authenticated call and one small download (warm-up), it resets its peak RSS "
        "before each job. RSS growth = peak RSS during the downloads minus RSS at the reset; curl's "
        "column is its whole-process peak RSS.",
        "Throughput ratio = curl's median wall time / the client's median wall time. client CPU s: CPU "
        "time of the client process during the downloads (user + system).",
        "Destinations (and the sandbox's state) are on tmpfs when available, so that disk write-back does "
        "not add noise; the figures compare the clients, not the disk. On a disk the hook's fsync before "
        "its atomic rename (a durable archive) adds the disk's write time, which curl and the others skip.",
    ]
    with temp_dir("docsign-bench-download-", tmpfs=True) as tmp, sandbox(max_file_mb=50) as sb:
        tiny = make_pdfs(tmp, [0.01], prefix="warmup")
        made = curl_upload(sb.base_url, tiny, "bench download warm-up")
        if not made.get("ok"):
            raise SystemExit(f"could not create the warm-up envelope: {made.get('error')}")
        tiny_items = item_ids(sb.base_url, made["envelope_id"])
        sets = []
        for i, (label, sizes) in enumerate(SETS):
            files = make_pdfs(tmp, sizes, prefix=f"src{i}")
            created = curl_upload(sb.base_url, files, f"bench download {label}")
            if not created.get("ok"):
                raise SystemExit(f"could not create the envelope to download: {created.get('error')}")
            sets.append(
                (
                    label,
                    sizes,
                    files,
                    [sha256(f) for f in files],
                    item_ids(sb.base_url, created["envelope_id"]),
                )
            )
        results: dict[str, dict[str, list[dict[str, Any]]]] = {
            label: {c: [] for c in CLIENTS} for label, *_ in sets
        }
        python_clients = [c for c in CLIENTS if not c.startswith("curl")]
        turn = 0
        for rep in range(DOWNLOAD_REPS):
            specs = {
                c: {
                    "client": c,
                    "op": "download",
                    "base_url": sb.base_url,
                    "version": VERSION,
                    "warmup": {"items": tiny_items, "dests": [str(tmp / f"warmup-{c}-{rep}.pdf")]},
                    "max_jobs": len(sets),
                }
                for c in python_clients
            }
            # A fresh process per Python client and repetition; the downloads then alternate one by
            # one (each set by every client in turn, the order rotated each time), as in the upload.
            with served_clients(specs) as served:
                for i, (label, _sizes, _files, expected, items) in enumerate(sets):
                    order = CLIENTS[turn % len(CLIENTS) :] + CLIENTS[: turn % len(CLIENTS)]
                    turn += 1
                    for client in order:
                        out_dir = tmp / f"out-{client}-{rep}-{i}"
                        out_dir.mkdir()
                        dests = [out_dir / f"item{j}.pdf" for j in range(len(items))]
                        if client.startswith("curl"):
                            res = curl_download(sb.base_url, items, dests, checksum=client == "curl_sha")
                        else:
                            res = served[client].job({"items": items, "dests": [str(d) for d in dests]})
                        if res.get("ok") and res.get("sha256") != expected:
                            res["ok"] = False
                            res["error"] = "saved bytes differ from the uploaded PDF (sha256 mismatch)"
                        res["rep"] = rep
                        results[label][client].append(res)
                        shutil.rmtree(out_dir, ignore_errors=True)
        for label, sizes, files, _expected, _items in sets:
            total_mb = sum(f.stat().st_size for f in files) / MB
            set_rows, set_targets = summarize(label, total_mb, results[label], "download", sizes, LABELS)
            rows += set_rows
            targets += set_targets
    write_result(
        "download",
        title="Download: 3 envelope items to files (sandbox on 127.0.0.1)",
        columns=COLUMNS,
        rows=rows,
        targets=targets,
        notes=notes,
        extra={"runs": results},
    )


if __name__ == "__main__":
    main()
