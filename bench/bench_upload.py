"""Upload: ``DocsignHook.create_envelope`` against curl, a naive ``requests`` client and documenso-sdk.

Two file sets go to the same sandbox on 127.0.0.1: three 1 MB PDFs and three 40 MB PDFs (120 MB). Each
client runs in a fresh process (see ``_client.py``); curl is timed the same way. Throughput is reported
as a ratio to curl measured in the same run and mode (median of the repetitions).

Two modes, one after the other against the same sandbox:

- **quiet**: nothing else started by the benchmark (curl, the hook, naive requests, documenso-sdk);
- **busy** (issue 38): :func:`_busy.busy` starts two CPU-bound processes and a load process sending
  GETs to the same sandbox at a fixed rate, then the same uploads run again (curl, the hook,
  documenso-sdk); every process it started is stopped by its PID when the mode ends.

In both modes the clients are interleaved upload by upload (each Python client is a fresh process per
repetition that runs each upload when told, see ``_client.py``'s serve mode) and their order rotates
with each upload, so a drift in the machine's load hits all of them alike.

Targets, for the 120 MB set: peak RSS growth of the hook under 32 MB (issues 4 and 10); in both modes
the hook at least 0.9x curl's throughput and at least documenso-sdk's ratio to curl (issue 38).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _busy import busy
from _common import (
    API_KEY,
    MB,
    make_pdfs,
    ratio_noise,
    run_measured,
    sandbox,
    spread,
    temp_dir,
    throughput_target,
    write_result,
)
from _served import served_clients

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

#: The modes bench_upload runs, in this order, and the clients of each.
MODES = ("quiet", "busy")
BUSY_CLIENTS = ["curl", "hook", "sdk"]
#: Repetitions per client and mode (each a fresh process), and how many times the 120 MB set is
#: uploaded in each: the medians are over UPLOAD_REPS x BIG_REPEATS uploads.
UPLOAD_REPS = 5
BIG_REPEATS = 4
#: The busy mode: CPU-bound processes, GETs a second against the sandbox, and the longest any of
#: them runs (the round stops starting repetitions after 3/4 of it).
BUSY_CPU = 2
BUSY_RATE = 50.0
BUSY_SECONDS = 300.0
#: The hook's throughput target against curl, in both modes (issue 38; 0.8x before). Like every
#: throughput target it is judged with the run's own noise (:func:`_common.throughput_target`, issue
#: 50): 0.9x less the measured noise, capped at MAX_NOISE_ALLOWED. Why 0.9 and not 1.0: curl sends
#: from C with sendfile-sized writes and no Python; the hook streams the same multipart through
#: requests-toolbelt, and measured at 0.92-1.18x of curl over issues 38-50 (docs/benchmarks.md).
MIN_RATIO = 0.9
#: Every throughput target allows at most this much of its run's measured noise (a 90 % bootstrap
#: half-width): a run noisier than that cannot excuse a slower client.
MAX_NOISE_ALLOWED = 0.10
#: The download against curl + sha256sum, the same work as the hook's (it hashes what it writes):
#: 0.8x, unchanged since issue 10 (measured 2.6-3.7x: the hook hashes while it downloads).
SAME_WORK_RATIO = 0.8
UPLOAD_COLUMNS = ["mode", *COLUMNS[:4], "wall spread %", *COLUMNS[4:]]


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
    *,
    min_ratio: float = 0.8,
    mode: str = "",
) -> tuple[list[list[Any]], list[dict[str, Any]]]:
    """Table rows (median wall time, max RSS growth over the repetitions) and target checks.

    ``min_ratio`` is the hook's throughput target against curl; ``mode`` (``"quiet"``, ``"busy"``) is
    added to the targets' names when given.
    """
    labels = labels or (LABELS if what == "upload" else DOWNLOAD_LABELS)
    suffix = f", {mode}" if mode else ""
    rows: list[list[Any]] = []
    targets: list[dict[str, Any]] = []
    ok_curl = [r["wall_s"] for r in results["curl"] if r.get("ok")]
    curl_wall = statistics.median(ok_curl) if ok_curl else None
    for client in labels:
        runs = results[client]
        good = [r for r in runs if r.get("ok")]
        if not good:
            err = next((r.get("error") for r in runs if r.get("error")), "failed")
            rows.append([label, labels[client], "FAILED", *([None] * (len(COLUMNS) - 4)), err])
            if client == "hook" and min(sizes) >= 40:
                targets.append(
                    {
                        "what": f"hook {what} succeeds, {total_mb:.0f} MB{suffix}",
                        "target": "every run",
                        "measured": f"0 of {len(runs)} runs: {err}",
                        "met": False,
                    }
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
                    "what": f"hook {what} peak RSS growth, {total_mb:.0f} MB{suffix}",
                    "target": "< 32 MB",
                    "measured": f"{growth:.1f} MB",
                    "met": growth < 32,
                }
            )
            targets.append(
                throughput_target(
                    f"hook {what} throughput vs curl, {total_mb:.0f} MB{suffix}",
                    results["curl"],
                    runs,
                    min_ratio,
                    max_tolerance=MAX_NOISE_ALLOWED,
                )
            )
        if client == "hook" and min(sizes) >= 40 and results.get("curl_sha"):
            targets.append(
                throughput_target(
                    f"hook {what} throughput vs curl + sha256sum (same work), {total_mb:.0f} MB",
                    results["curl_sha"],
                    runs,
                    SAME_WORK_RATIO,
                    max_tolerance=MAX_NOISE_ALLOWED,
                )
            )
    return rows, targets


def walls(runs: list[dict[str, Any]]) -> list[float]:
    """The wall times of the runs that succeeded."""
    return [r["wall_s"] for r in runs if r.get("ok")]


def paired_ratios(results: dict[str, list[dict[str, Any]]]) -> list[float]:
    """Per upload slot, the sdk's wall time over the hook's (> 1: the hook was faster).

    The two ran one right after the other in each slot (``slot`` of each run: the repetition and the
    job; results without one are paired by ``rep``, the median of each client's runs in it), so a
    drift of the load between slots cancels out. Only successful runs count; a slot without one is
    left out.
    """
    by_rep: dict[Any, dict[str, list[float]]] = {}  # slot (or rep) -> client -> walls
    for client in ("hook", "sdk"):
        for run in results.get(client, []):
            if run.get("ok") and run.get("wall_s", 0) > 0:
                key = tuple(run["slot"]) if run.get("slot") is not None else run.get("rep")
                by_rep.setdefault(key, {}).setdefault(client, []).append(run["wall_s"])
    return [
        statistics.median(pair["sdk"]) / statistics.median(pair["hook"])
        for pair in by_rep.values()
        if pair.get("hook") and pair.get("sdk")
    ]


def sdk_target(
    results: dict[str, list[dict[str, Any]]], total_mb: float, mode: str, max_tolerance: float
) -> dict[str, Any]:
    """The target "the hook's ratio to curl at least documenso-sdk's", judged on the medians.

    Met when ``hook ratio >= sdk ratio x (1 - allowed)``, ``allowed`` being this run's measured noise
    of that comparison (:func:`_common.ratio_noise`) but never more than ``max_tolerance``;
    not met when any of the three has no successful run (a figure not measured is not a target met).
    """
    hook, sdk, curl = walls(results["hook"]), walls(results["sdk"]), walls(results["curl"])
    goal = f">= sdk's ratio, less this run's noise (at most {max_tolerance:.0%})"
    what = f"hook upload throughput vs curl at least documenso-sdk's, {total_mb:.0f} MB, {mode}"
    if not (hook and sdk and curl):
        missing = ", ".join(n for n, v in (("hook", hook), ("documenso-sdk", sdk), ("curl", curl)) if not v)
        return {
            "what": what,
            "target": goal,
            "measured": f"not measured ({missing}: no successful run)",
            "met": False,
        }
    base = statistics.median(curl)
    hook_ratio, sdk_ratio = base / statistics.median(hook), base / statistics.median(sdk)
    noise = ratio_noise(results["sdk"], results["hook"])
    allowed = min(noise, max_tolerance)
    return {
        "what": what,
        "target": goal,
        "measured": f"{hook_ratio:.2f}x vs sdk {sdk_ratio:.2f}x (noise ±{noise:.0%}, allowed {allowed:.0%})",
        "met": hook_ratio >= sdk_ratio * (1 - allowed),
    }


def delete_envelopes(base_url: str, runs: list[dict[str, Any]]) -> int:
    """Delete the draft envelopes ``runs`` created (outside any timing); return how many failed.

    The sandbox keeps every uploaded PDF on tmpfs: without this, one run of both modes would hold
    several GB of them.
    """
    failed = 0
    for run in runs:
        if run.get("envelope_id"):
            try:
                response = requests.post(
                    f"{base_url}/envelope/delete",
                    json={"envelopeId": run["envelope_id"]},
                    headers={"Authorization": API_KEY},
                    timeout=30,
                )
                failed += not response.ok
            except requests.RequestException:
                failed += 1
    return failed


def run_round(
    base_url: str,
    sets: list[tuple[str, list[float], list[Path]]],
    warmup: Path,
    clients: list[str],
    reps: int,
    mode: str,
    *,
    until: float | None = None,
) -> tuple[dict[str, dict[str, list[dict[str, Any]]]], int]:
    """Upload every set with every client ``reps`` times, interleaved; returns the runs and the reps done.

    Each repetition starts a fresh process per Python client (:func:`_served.served_clients`: their
    imports and set-up run before any measured upload), then uploads job by job: the small set once
    and the largest set :data:`BIG_REPEATS` times, each job by every client in turn, in an order
    rotated by one each job. So the uploads compared with one another ran seconds apart at most, and
    a change of the machine's load between them hits each client alike (issue 38: with jobs batched
    per client process, a burst of outside load could fall on one client's four uploads).
    ``until`` (a ``time.monotonic()`` value) stops the round before a repetition that would start
    after it. Every run is tagged with its ``rep`` and ``slot`` (rep, job); its envelopes are deleted
    after each job, outside any timing.
    """
    results: dict[str, dict[str, list[dict[str, Any]]]] = {
        label: {c: [] for c in clients} for label, _, _ in sets
    }
    jobs = [(label, files) for label, _, files in sets[:-1]] + [(sets[-1][0], sets[-1][2])] * BIG_REPEATS
    python_clients = [c for c in clients if c != "curl"]
    done = 0
    turn = 0
    for rep in range(reps):
        if until is not None and time.monotonic() >= until:
            break
        specs = {
            c: {
                "client": c,
                "op": "upload",
                "base_url": base_url,
                "warmup": {"title": "warm-up", "files": [str(warmup)]},
                "max_jobs": len(jobs),
            }
            for c in python_clients
        }
        with served_clients(specs) as served:
            for index, (label, files) in enumerate(jobs):
                order = clients[turn % len(clients) :] + clients[: turn % len(clients)]
                turn += 1
                made: list[dict[str, Any]] = []
                for client in order:
                    title = f"{client} {mode} {label} {rep} {index} {time.time_ns()}"
                    if client == "curl":
                        run = curl_upload(base_url, files, title)
                    else:
                        run = served[client].job({"title": title, "files": [str(f) for f in files]})
                    run["rep"], run["slot"] = rep, [rep, index]
                    results[label][client].append(run)
                    made.append(run)
                if delete_envelopes(base_url, made):
                    print(f"[upload] {mode}: some envelopes of {label} could not be deleted", file=sys.stderr)
        done += 1
    return results, done


def mode_rows(
    mode: str,
    sets: list[tuple[str, list[float], list[Path]]],
    results: dict[str, dict[str, list[dict[str, Any]]]],
    labels: dict[str, str],
) -> tuple[list[list[Any]], list[dict[str, Any]]]:
    """The table rows (with the mode and each client's wall-time spread) and the targets of one mode."""
    rows: list[list[Any]] = []
    targets: list[dict[str, Any]] = []
    for label, sizes, files in sets:
        total_mb = sum(f.stat().st_size for f in files) / MB
        set_rows, set_targets = summarize(
            label, total_mb, results[label], "upload", sizes, labels, min_ratio=MIN_RATIO, mode=mode
        )
        for client, row in zip(labels, set_rows, strict=True):
            spread_pct = spread(walls(results[label][client]))
            rows.append([mode, *row[:4], None if spread_pct is None else 100 * spread_pct, *row[4:]])
        if min(sizes) >= 40:
            targets += set_targets
            targets.append(sdk_target(results[label], total_mb, mode, MAX_NOISE_ALLOWED))
    return rows, targets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="which modes to run")
    parser.add_argument("--reps", type=int, default=UPLOAD_REPS, help="repetitions per client and mode")
    parser.add_argument("--busy-cpu", type=int, default=BUSY_CPU, help="CPU-bound processes in busy mode")
    parser.add_argument("--busy-rate", type=float, default=BUSY_RATE, help="GETs a second in busy mode")
    args = parser.parse_args(argv)
    reps = max(1, min(args.reps, 50))
    cpu, rate = max(0, min(args.busy_cpu, 16)), max(1.0, min(args.busy_rate, 1000.0))
    rows: list[list[Any]] = []
    targets: list[dict[str, Any]] = []
    runs: dict[str, Any] = {}
    extra: dict[str, Any] = {"runs": runs, "reps": {}, "hook_vs_sdk_paired": {}}
    notes = [
        "Each Python client runs in a fresh process per repetition; after its imports, one authenticated "
        "call and one small upload of the same kind (warm-up), it resets its peak RSS before each job. "
        "RSS growth = peak RSS during the call minus RSS at the reset (Linux VmHWM, /proc/self/clear_refs).",
        "curl's RSS column is its whole-process peak RSS (polled VmHWM), since it has no Python baseline.",
        "import + set-up s: the Python client's imports, first authenticated call and warm-up, in its own "
        "process (not part of the wall time column).",
        "Throughput ratio = curl's median wall time / the client's median wall time (same files, server "
        "and mode). wall spread % = (slowest - fastest) / median wall time of the client's runs.",
        "client CPU s: CPU time of the client process during the operation (user + system); it does not "
        "depend on what else the machine is doing, unlike wall time.",
        f"Clients interleaved upload by upload, their order rotated by one each upload; {reps} "
        f"repetitions per mode (a fresh process per Python client each), the 120 MB set uploaded "
        f"{BIG_REPEATS} times in each (medians over {reps * BIG_REPEATS}).",
    ]
    with temp_dir("docsign-bench-upload-") as tmp, sandbox(max_file_mb=50) as sb:
        tiny = make_pdfs(tmp, [0.01], prefix="warmup")[0]
        sets = [
            (label, sizes, make_pdfs(tmp, sizes, prefix=f"set{i}")) for i, (label, sizes) in enumerate(SETS)
        ]
        for mode in args.modes:
            clients = CLIENTS if mode == "quiet" else BUSY_CLIENTS
            labels = {c: LABELS[c] for c in clients}
            if mode == "quiet":
                results, done = run_round(sb.base_url, sets, tiny, clients, reps, mode)
            else:
                # The busy processes end by themselves after BUSY_SECONDS; the round stops starting
                # repetitions well before, so every measured upload ran with them.
                with busy(sb.base_url, API_KEY, cpu=cpu, rate=rate, seconds=BUSY_SECONDS) as report:
                    until = time.monotonic() + BUSY_SECONDS * 0.75
                    results, done = run_round(sb.base_url, sets, tiny, clients, reps, mode, until=until)
                notes.append(report.describe() + f"; processes stopped: {', '.join(report.stopped)}.")
                extra["busy"] = {"cpu_processes": cpu, "rate": rate, "load": report.load}
                if "exited" in report.stopped:
                    notes.append("busy: a process ended by its own time bound before the round did.")
            if done < reps:
                notes.append(f"{mode}: {done} of {reps} repetitions (stopped by the round's time bound).")
            runs[mode] = results
            extra["reps"][mode] = done
            mode_table, mode_targets = mode_rows(mode, sets, results, labels)
            rows += mode_table
            targets += mode_targets
            big = SETS[-1][0]
            pairs = paired_ratios(results[big])
            extra["hook_vs_sdk_paired"][mode] = pairs
            if pairs:
                notes.append(
                    f"{mode}, {big}: sdk wall / hook wall in each repetition (> 1: the hook faster): "
                    + ", ".join(f"{p:.2f}" for p in pairs)
                    + f"; median {statistics.median(pairs):.2f}."
                )
    notes.append(
        "Targets 'at least G x curl' and 'at least documenso-sdk's ratio': met when the ratio reaches "
        "the goal x (1 - allowed); allowed = this run's noise of the ratio (the wider of the 90 % "
        "bootstrap half-widths of the ratio of medians and of the median of side-by-side pairs, fixed "
        f"seed), at most {MAX_NOISE_ALLOWED:.0%}: a miss means the hook is slower by more than "
        "chance explains."
    )
    write_result(
        "upload",
        title="Upload: create_envelope with 3 PDFs, quiet and busy (sandbox on 127.0.0.1)",
        columns=UPLOAD_COLUMNS,
        rows=rows,
        targets=targets,
        notes=notes,
        extra=extra,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
