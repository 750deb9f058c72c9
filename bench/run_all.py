"""Run every benchmark (what ``make bench`` runs), each in its own process with a time limit.

Usage::

    python bench/run_all.py                      # all benchmarks
    python bench/run_all.py --only upload waiting
    python bench/run_all.py --update-docs        # also rewrite the tables in docs/benchmarks.md

Each benchmark prints one table and writes ``bench/results/<name>.json``; this script then writes
``bench/results/summary.md`` with every table and the targets. A benchmark that fails or overruns is
reported and the others still run. The printed summary and ``summary.md`` end with one line per
missed target (``MISSED <benchmark>: <what> (<target>): <measured>``), one per benchmark that failed,
overran or wrote no result in this run, and a verdict line. The exit status is non-zero when any
target is missed or any benchmark did not finish cleanly (targets are judged by
:func:`_common.target_met` alone).

Each time limit below is for a quiet machine; it stretches with the machine's load while the benchmark
runs (:class:`_limits.Deadline`: the load average per core, up to 6x), so a busy machine makes the
benchmarks slower, not red. A benchmark that overruns even so is stopped and reported as such.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_DIR, REPO_DIR, RESULTS_DIR, WORK_DIR, machine, missed_line, target_met
from _limits import Deadline

#: (name, script, time limit in seconds on a quiet machine). They add up to well under 10 minutes on
#: 2 quiet cores; each stretches with the load while its benchmark runs.
BENCHMARKS = [
    ("sandbox_memory", "bench_sandbox_memory.py", 90),
    # Quiet and busy (issue 38): two rounds of 5 interleaved repetitions, the busy one beside two
    # CPU-bound processes of its own (which stretch the limit through the load they make).
    ("upload", "bench_upload.py", 300),
    ("download", "bench_download.py", 120),
    # 75 s alone on a quiet machine: 90 s left no room at all.
    ("verify", "bench_verify.py", 180),
    ("cli", "bench_cli.py", 120),
    ("verify_timestamp", "bench_verify.py --evidence", 90),
    # docsign verify on a 500-envelope campaign folder against sha256sum and per-file verification.
    ("verify_campaign", "bench_verify.py --campaign", 180),
    ("waiting", "bench_waiting.py", 300),
    ("http_provider", "bench_http_provider.py", 90),
    ("pipeline", "bench_pipeline.py", 180),
    ("listener", "bench_listener.py", 180),
    ("export", "bench_export.py", 420),
    ("reconcile", "bench_reconcile.py", 180),
    # The small version (1,000 + 200 rows at 1,000 requests a minute in 6-second windows); the
    # acceptance run (10,000 + 2,000 rows, 60-second windows, the mapped baseline) is `make bench-bulk`.
    ("bulk_small", "bench_bulk.py --small", 300),
    # Issue 48: get_envelope with metrics off / StatsD / DogStatsD (15 fresh processes, 75 s alone on 2
    # quiet cores), and the Contracts rows + summary over 5,000 envelopes against the rows alone.
    ("turnaround_metrics", "bench_turnaround_metrics.py", 150),
]
DOCS = REPO_DIR / "docs" / "benchmarks.md"
BEGIN, END = "<!-- BEGIN RESULTS (bench/run_all.py --update-docs) -->", "<!-- END RESULTS -->"


def fresh_results(names: list[str], started: dict[str, float]) -> dict[str, dict[str, Any]]:
    """The result files the benchmarks of this run wrote (a file older than its benchmark's start is
    a previous run's and is left out)."""
    docs: dict[str, dict[str, Any]] = {}
    for name in names:
        path = RESULTS_DIR / f"{name}.json"
        if name in started and path.exists() and path.stat().st_mtime >= started[name]:
            docs[name] = json.loads(path.read_text())
    return docs


def verdict_lines(names: list[str], status: dict[str, str], docs: dict[str, dict[str, Any]]) -> list[str]:
    """The summary's last lines: each missed target, each benchmark that did not finish cleanly or
    wrote no result, and the verdict (``VERDICT: PASS ...`` or ``VERDICT: FAIL ...``).

    :param names: The benchmarks run, in order.
    :param status: ``"ok"`` or why not, per benchmark.
    :param docs: The result each benchmark wrote in this run (see :func:`fresh_results`).
    """
    lines: list[str] = []
    met = missed = failed = 0
    for name in names:
        for target in docs.get(name, {}).get("targets", []):
            if target_met(target):
                met += 1
            else:
                missed += 1
                lines.append(missed_line(name, target))
    for name in names:
        state = status.get(name, "not run")
        if state != "ok":
            failed += 1
            lines.append(f"FAILED {name}: {state}")
        elif name not in docs:
            failed += 1
            lines.append(f"FAILED {name}: exited 0 but wrote no bench/results/{name}.json in this run")
    if missed or failed:
        lines.append(
            f"VERDICT: FAIL ({missed} target(s) missed, {failed} of {len(names)} benchmark(s) failed; "
            f"{met} target(s) met)"
        )
    else:
        lines.append(f"VERDICT: PASS ({len(names)} benchmark(s) ok, all {met} target(s) met)")
    return lines


def summary_markdown(
    names: list[str], status: dict[str, str], limits: dict[str, str], docs: dict[str, dict[str, Any]]
) -> str:
    m = machine()
    out = [
        f"Measured {m['measured_at']} on {m['cores']} cores, {m['memory_mb']:.0f} MB RAM ({m['cpu']}), "
        f"Python {m['python']}, Airflow {m['airflow']}, provider {m['provider']}, "
        f"documenso-sdk {m['documenso_sdk']}, apache-airflow-providers-http "
        f"{m['apache_airflow_providers_http']}, {m['curl']}. Load average at the end: "
        f"{m['load_average_1m']} (other work on the machine moves wall-time ratios; CPU columns less so).",
        "",
    ]
    for name in names:
        doc = docs.get(name)
        if doc is None:
            why = status.get(name, "not run")
            why = "it wrote no result" if why == "ok" else why
            out += [f"### {name}", "", f"Not measured in this run: {why}.", ""]
            continue
        out += [f"### {doc['title']}", "", doc["markdown"], ""]
        if status.get(name) != "ok":
            out.append(f"- **{status.get(name, 'not run')}** after writing this result")
        out.append(
            f"- time limit: {limits.get(name, '—')}; load average when written: "
            f"{doc['machine'].get('load_average_1m')}"
        )
        for target in doc.get("targets", []):
            mark = "met" if target_met(target) else "**missed**"
            out.append(
                f"- target {target['what']}: {target['target']}; measured {target['measured']} ({mark})"
            )
        for note in doc.get("notes", []):
            out.append(f"- {note}")
        out.append("")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", nargs="*", help="names of the benchmarks to run")
    parser.add_argument("--update-docs", action="store_true", help="rewrite the tables in docs/benchmarks.md")
    args = parser.parse_args()
    unknown = sorted(set(args.only or ()) - {b[0] for b in BENCHMARKS})
    if unknown:
        parser.error(f"no benchmark named {', '.join(unknown)}; known: {', '.join(b[0] for b in BENCHMARKS)}")
    selected = [b for b in BENCHMARKS if not args.only or b[0] in args.only]
    # Every run starts from a fresh throw-away Airflow home (its SQLite DB holds the last run's DAGs,
    # runs and asset triggers).
    shutil.rmtree(WORK_DIR / "airflow-home", ignore_errors=True)
    status: dict[str, str] = {}
    started = time.monotonic()
    limits: dict[str, str] = {}
    begun: dict[str, float] = {}
    for name, script, limit in selected:
        deadline = Deadline(limit)
        begun[name] = time.time() - 1.0  # file times may be rounded: a second of slack, never a run
        print(f"\n=== {name} (limit {deadline.describe()}) ===", flush=True)
        program, *options = script.split()
        proc = subprocess.Popen([sys.executable, str(BENCH_DIR / program), *options], cwd=REPO_DIR)
        while proc.poll() is None and not deadline.expired():
            try:
                proc.wait(timeout=min(1.0, max(deadline.remaining(), 0.01)))
            except subprocess.TimeoutExpired:
                continue
        limits[name] = deadline.describe()
        if proc.returncode is not None:
            status[name] = "ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})"
        else:
            # SIGTERM first: the benchmark turns it into SystemExit, so its sandbox is stopped by its
            # handle and its temp files are deleted; SIGKILL only if that does not end it.
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            status[name] = f"stopped after its limit of {limits[name]}"
        print(
            f"=== {name}: {status[name]} in {deadline.elapsed():.1f} s (limit {limits[name]}) ===", flush=True
        )
    total = time.monotonic() - started
    names = [b[0] for b in selected]
    docs = fresh_results(names, begun)
    text = summary_markdown(names, status, limits, docs)
    final = verdict_lines(names, status, docs)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "summary.md").write_text(
        text + f"\nTotal benchmark time: {total:.0f} s.\n\n" + "\n".join(final) + "\n"
    )
    if args.update_docs and DOCS.exists():
        doc = DOCS.read_text()
        if BEGIN in doc and END in doc:
            head, rest = doc.split(BEGIN, 1)
            _, tail = rest.split(END, 1)
            verdict = "\n".join(final)
            DOCS.write_text(f"{head}{BEGIN}\n{text}\n```text\n{verdict}\n```\n{END}{tail}")
    print(f"\nAll benchmarks: {total:.0f} s. " + ", ".join(f"{k}: {v}" for k, v in status.items()))
    print("\n".join(final), flush=True)
    return 0 if final[-1].startswith("VERDICT: PASS") else 1


if __name__ == "__main__":
    sys.exit(main())
