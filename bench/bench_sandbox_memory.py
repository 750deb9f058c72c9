"""Sandbox memory (issue 3): server peak RSS growth while it receives a 100 MB PDF.

The sandbox runs with ``max_file_mb=200``. After a warm-up upload of 1 MB (so that lazy imports are
done), the peak-RSS counter of the server process tree is reset; curl then uploads a 1 MB PDF (the
baseline in this run) and, after another reset, a 100 MB PDF. Target: growth under 50 MB.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import MB, make_pdfs, peak_mb, process_tree, reset_peak, sandbox, temp_dir, write_result
from bench_upload import curl_upload


def measure(sb: Any, path: Path, title: str) -> dict[str, Any]:
    pids = process_tree(sb.pid)
    base = {pid: reset_peak(pid) for pid in pids}
    res = curl_upload(sb.base_url, [path], title)
    growth = 0.0
    for pid in pids:
        with contextlib.suppress(OSError, KeyError):
            growth += max(0.0, peak_mb(pid) - base[pid])
    return {
        "ok": res.get("ok"),
        "error": res.get("error"),
        "wall_s": res.get("wall_s"),
        "growth_mb": growth,
        "rss_before_mb": sum(base.values()),
        "processes": len(pids),
    }


def main() -> None:
    rows: list[list[Any]] = []
    targets: list[dict[str, Any]] = []
    with temp_dir("docsign-bench-sbmem-") as tmp, sandbox(max_file_mb=200) as sb:
        small, big = make_pdfs(tmp, [1, 100], prefix="sbmem")
        warm = measure(sb, small, "warm-up")
        if not warm["ok"]:
            raise SystemExit(f"warm-up upload failed: {warm['error']}")
        base = measure(sb, small, "baseline 1 MB")
        large = measure(sb, big, "100 MB")
        for label, path, res in (("1 MB (baseline)", small, base), ("100 MB", big, large)):
            size = path.stat().st_size / MB
            rows.append(
                [
                    label,
                    size,
                    "yes" if res["ok"] else f"no: {res['error']}",
                    res["wall_s"],
                    res["rss_before_mb"],
                    res["growth_mb"],
                    res["growth_mb"] / size,
                ]
            )
        ratio = large["growth_mb"] / base["growth_mb"] if base["growth_mb"] > 0.05 else None
        targets.append(
            {
                "what": "sandbox peak RSS growth, 100 MB upload",
                "target": "< 50 MB",
                "measured": f"{large['growth_mb']:.1f} MB",
                "met": bool(large["ok"]) and large["growth_mb"] < 50,
            }
        )
        notes = [
            f"Server process tree: {large['processes']} process(es); growth = peak RSS (VmHWM, reset through "
            "/proc/PID/clear_refs before each upload) minus RSS at the reset.",
            "Growth of the 100 MB upload against the 1 MB upload in the same run: "
            + (f"{ratio:.1f}x" if ratio is not None else "n/a (1 MB growth is ~0)"),
        ]
    write_result(
        "sandbox_memory",
        title="Sandbox memory: server peak RSS growth per upload (max_file_mb=200)",
        columns=[
            "upload",
            "size MB",
            "accepted",
            "wall s",
            "server RSS before MB",
            "peak growth MB",
            "growth / size",
        ],
        rows=rows,
        targets=targets,
        notes=notes,
    )


if __name__ == "__main__":
    main()
