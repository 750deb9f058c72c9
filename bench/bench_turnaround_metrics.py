"""The cost of issue 48's numbers: metrics per request, and the Contracts page's summary over 5,000 rows.

**Metrics per request.** ``DocsignHook.get_envelope`` is called ``--calls`` times (after an untimed
warm-up) against the sandbox on 127.0.0.1, each run in a fresh process of its own, because
``airflow_provider_docsign.metrics`` reads ``[metrics]`` once per process: with Airflow metrics off
(the baseline), with StatsD on (``AIRFLOW__METRICS__STATSD_ON``) and with DogStatsD tags on
(``AIRFLOW__METRICS__STATSD_DATADOG_ENABLED``), both sending to a UDP socket this process binds on
127.0.0.1 and drains. The three modes alternate repetition by repetition, in a rotating order, so a
repetition's three runs met the same load. Wall time is that of the calls alone (not the interpreter's
start). The sink's datagrams are counted per run: one ``docsign.requests`` line per request counted at
the sandbox when metrics are on, none when off (a sanity line, not a target).

**The Contracts summary.** 5,000 ``EnvelopeSummary`` records built in memory (varied statuses, 1-3
recipients, ``signedAt``, ``expiresAt``, a send time for most) go through the page's code in
``airflow_provider_docsign.ui.reader``: the baseline builds the rows (``contract_row``), the measured
builds the rows and the summary over them (``contracts_summary``: counts, stalled, time to sign and its
histogram from ``service/turnaround.py``), alternated in one process.

Both targets are cost ratios judged with the run's own noise, as the throughput targets are
(:func:`_common.throughput_target`): met when ``cost <= goal / (1 - allowed)``, ``allowed`` being the
run's measured noise of the ratio (:func:`_common.ratio_noise`) but never more than 10 %.

Usage: ``python bench/bench_turnaround_metrics.py [--calls 2000] [--reps 5] [--envelopes 5000]``
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    airflow_env,
    docsign_conn_json,
    ratio_noise,
    sandbox,
    short_error,
    write_result,
)
from _limits import Deadline

NAME = "turnaround_metrics"
MODES = ("off", "statsd", "dogstatsd")
MODE_LABELS = {
    "off": "metrics off (baseline)",
    "statsd": "StatsD on",
    "dogstatsd": "DogStatsD on (tags)",
}
WARMUP_CALLS = 50
#: Envelopes the calls read in turn (seeded in the sandbox).
READ_ENVELOPES = 20
#: Metrics on may cost at most this much of the wall time with metrics off.
METRICS_GOAL = 1.10
#: The Contracts summary may add at most this much to the rows' time (1.5: half of it).
SUMMARY_GOAL = 1.5
#: A run's noise excuses at most this much (as every throughput target).
MAX_NOISE_ALLOWED = 0.10
RESULT_MARK = "RESULT "
#: How often the sink reads its socket (about 30 datagrams queue in between; the buffer holds far more).
DRAIN_SECONDS = 0.02
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


# ------------------------------------------------------------------------------------ the child
def child(ids: list[str], calls: int) -> None:
    """In a fresh process: warm up, then time ``calls`` reads; print one ``RESULT`` JSON line."""
    from airflow_provider_docsign import metrics
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    hook = DocsignHook()
    for i in range(WARMUP_CALLS):
        hook.get_envelope(ids[i % len(ids)])
    started = time.perf_counter()
    for i in range(calls):
        hook.get_envelope(ids[i % len(ids)])
    wall = time.perf_counter() - started
    out = {"wall_s": wall, "calls": calls, "warmup": WARMUP_CALLS, "metrics_on": metrics.enabled()}
    print(RESULT_MARK + json.dumps(out), flush=True)


# ------------------------------------------------------------------------------------- the sink
class UdpSink:
    """A UDP socket on 127.0.0.1 drained by a thread: the StatsD server's stand-in for one run."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.port: int = self.sock.getsockname()[1]
        self.raw: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                self.raw.append(self.sock.recv(65535))
            except OSError:  # BlockingIOError: nothing queued
                return

    def _receive(self) -> None:
        # Every DRAIN_SECONDS, not per datagram: a thread woken twice a request would take a core's
        # share from the client and the sandbox on 2 cores, a cost of this bench, not of the metrics.
        while not self._stop.wait(DRAIN_SECONDS):
            self._drain()

    def close(self) -> list[str]:
        """Stop, read what is still queued, close the socket; return every line received."""
        self._stop.set()
        self._thread.join()
        self._drain()
        self.sock.close()
        return [line for data in self.raw for line in data.decode("utf-8", "replace").splitlines() if line]


def request_lines(lines: list[str]) -> int:
    """The ``docsign.requests`` counter's lines (one per request; Airflow's prefix before it)."""
    return sum(1 for line in lines if line.partition(":")[0].endswith(".docsign.requests"))


def mode_env(mode: str, base_url: str, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__METRICS__")}
    env.update(airflow_env())
    env["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(base_url)
    if mode != "off":
        env.update(
            AIRFLOW__METRICS__STATSD_ON="True",
            AIRFLOW__METRICS__STATSD_HOST="127.0.0.1",
            AIRFLOW__METRICS__STATSD_PORT=str(port),
            AIRFLOW__METRICS__STATSD_DATADOG_ENABLED=str(mode == "dogstatsd"),
        )
    return env


def run_mode(sb: Any, mode: str, rep: int, ids: list[str], calls: int) -> dict[str, Any]:
    sink = UdpSink()
    sb.clear_requests()
    cmd = [sys.executable, __file__, "--child", "--calls", str(calls), "--ids", ",".join(ids)]
    try:
        done = subprocess.run(
            cmd, env=mode_env(mode, sb.base_url, sink.port), capture_output=True, text=True, timeout=300
        )
    finally:
        lines = sink.close()
    run: dict[str, Any] = {"mode": mode, "rep": rep, "ok": False, "datagram_lines": len(lines)}
    marked = [line for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
    if done.returncode != 0 or not marked:
        run["error"] = f"exit {done.returncode}: {(done.stderr or done.stdout)[-300:]}"
        return run
    out = json.loads(marked[-1][len(RESULT_MARK) :])
    run.update(out)
    run["sandbox_requests"] = len(sb.requests())
    run["request_datagrams"] = request_lines(lines)
    names = (line.partition(":")[0] for line in lines)
    run["other_names"] = sorted({n for n in names if ".docsign.requests" not in n})
    run["ok"] = out["metrics_on"] == (mode != "off")
    if not run["ok"]:
        run["error"] = f"metrics.enabled() is {out['metrics_on']} in mode {mode}"
    return run


def seed_reads(sb: Any) -> list[str]:
    from airflow_provider_docsign.sandbox.synthetic import synthetic_envelopes

    return [str(i) for i in sb.seed(synthetic_envelopes(READ_ENVELOPES, days=1))]


def cost_target(what: str, base: list[dict[str, Any]], measured: list[dict[str, Any]], goal: float) -> dict:
    """ "``measured`` costs at most ``goal`` x ``base``'s wall time", judged with the run's noise."""
    text = f"<= {goal:g}x, plus this run's noise (at most {MAX_NOISE_ALLOWED:.0%})"
    a = [float(r["wall_s"]) for r in base if r.get("ok")]
    b = [float(r["wall_s"]) for r in measured if r.get("ok")]
    if not (a and b):
        return {"what": what, "target": text, "measured": "not measured (no successful run)", "met": False}
    cost = statistics.median(b) / statistics.median(a)
    noise = ratio_noise(base, measured)
    allowed = min(noise, MAX_NOISE_ALLOWED)
    return {
        "what": what,
        "target": text,
        "measured": f"{cost:.3f}x (noise ±{noise:.0%}, allowed {allowed:.0%})",
        "met": cost <= goal / (1 - allowed),
    }


def metrics_part(calls: int, reps: int) -> tuple[list[list[Any]], list[dict], list[str], dict]:
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    deadline = Deadline(100)
    with sandbox() as sb:
        ids = seed_reads(sb)
        for rep in range(reps):
            if deadline.expired() and rep >= 3:
                break
            order = MODES[rep % len(MODES) :] + MODES[: rep % len(MODES)]
            for mode in order:
                try:
                    runs[mode].append(run_mode(sb, mode, rep, ids, calls))
                except Exception as exc:
                    runs[mode].append({"mode": mode, "rep": rep, "ok": False, "error": short_error(exc)})
    rows: list[list[Any]] = []
    targets: list[dict[str, Any]] = []
    notes: list[str] = []
    base = runs["off"]
    base_walls = [r["wall_s"] for r in base if r.get("ok")]
    for mode in MODES:
        good = [r for r in runs[mode] if r.get("ok")]
        if not good:
            err = next((r.get("error") for r in runs[mode] if r.get("error")), "failed")
            rows.append(["metrics", MODE_LABELS[mode], f"0/{len(runs[mode])}", None, None, None, err])
            continue
        wall = statistics.median(r["wall_s"] for r in good)
        per_request_us = wall / calls * 1e6
        ratio = wall / statistics.median(base_walls) if base_walls else None
        made = sum(r["sandbox_requests"] for r in good)
        counted = sum(r["request_datagrams"] for r in good)
        expected = made if mode != "off" else 0
        sanity = f"{counted} docsign.requests lines for {made} requests" + (
            " (equal)" if counted == expected else f" (expected {expected}: NOT equal)"
        )
        rows.append(
            [
                "metrics",
                MODE_LABELS[mode],
                f"{len(good)}/{len(runs[mode])}",
                per_request_us,
                ratio,
                None,
                sanity,
            ]
        )
        others = sorted({n for r in good for n in r["other_names"]})
        notes.append(
            f"{MODE_LABELS[mode]}: {sanity}; datagram lines in all: {sum(r['datagram_lines'] for r in good)}"
            + (f" (besides docsign.requests*: {', '.join(others)})." if others else ".")
        )
        if mode != "off":
            targets.append(
                cost_target(
                    f"get_envelope wall with {MODE_LABELS[mode]} vs metrics off",
                    base,
                    runs[mode],
                    METRICS_GOAL,
                )
            )
    return rows, targets, notes, runs


# --------------------------------------------------------------------------- the Contracts summary
def envelope_json(i: int) -> dict[str, Any]:
    """One listed envelope as the service sends it (deterministic variety by ``i``)."""
    statuses = ("COMPLETED", "PENDING", "PENDING", "COMPLETED", "REJECTED", "DRAFT", "CANCELLED")
    status = statuses[i % len(statuses)]
    created = NOW - timedelta(days=1 + i % 40, minutes=(i * 37) % 1440)
    sent = created + timedelta(minutes=5 + i % 50)
    recipients = []
    for j in range(1 + i % 3):
        signed = (
            status == "COMPLETED" or (status == "PENDING" and j < i % 3) or (status == "REJECTED" and j == 0)
        )
        signing = "REJECTED" if status == "REJECTED" and j == 0 else ("SIGNED" if signed else "NOT_SIGNED")
        recipients.append(
            {
                "id": i * 10 + j,
                "email": f"person{(i + j * 31) % 997}@example.test",
                "name": f"Person Number {(i + j * 31) % 997}",
                "role": "SIGNER" if j < 2 else "APPROVER",
                "signingOrder": j + 1,
                "readStatus": "OPENED" if signed or j % 2 else "NOT_OPENED",
                "sendStatus": "NOT_SENT" if status == "DRAFT" else "SENT",
                "signingStatus": signing,
                "signedAt": (sent + timedelta(hours=(i * 7 + j * 13) % 400)).isoformat() if signed else None,
                "rejectionReason": "Person Number 3 asked for changes" if signing == "REJECTED" else None,
                "expiresAt": (sent + timedelta(days=7 + i % 30)).isoformat() if status != "DRAFT" else None,
            }
        )
    return {
        "id": f"envelope_{i:06d}",
        "status": status,
        "title": f"Contract {i}",
        "externalId": f"row-{i}",
        "type": "DOCUMENT",
        "folderId": f"folder_{i % 4}" if i % 5 else None,
        "templateId": 100 + i % 3 if i % 2 else None,
        "createdAt": created.isoformat(),
        "updatedAt": created.isoformat(),
        "completedAt": (sent + timedelta(days=2)).isoformat()
        if status in ("COMPLETED", "REJECTED", "CANCELLED")
        else None,
        "recipients": recipients,
    }


def build_page(count: int) -> tuple[list[Any], list[Any]]:
    """``count`` EnvelopeSummary records and each one's send time (none for drafts and every 9th)."""
    from airflow_provider_docsign.service import turnaround
    from airflow_provider_docsign.service.models import EnvelopeSummary

    envelopes, sent = [], []
    for i in range(count):
        data = envelope_json(i)
        envelopes.append(EnvelopeSummary.from_json(data))
        known = data["status"] != "DRAFT" and i % 9
        at = datetime.fromisoformat(data["createdAt"]) + timedelta(minutes=5 + i % 50)
        sent.append(turnaround.Sent(at, ("audit", "campaign", "task")[i % 3]) if known else None)
    return envelopes, sent


def summary_part(count: int, reps: int) -> tuple[list[list[Any]], list[dict], list[str], dict]:
    from airflow_provider_docsign.ui import reader

    envelopes, sent = build_page(count)
    folders = {f"folder_{k}": f"Folder {k}" for k in range(4)}

    def rows_only() -> list[tuple[dict[str, Any], Any, Any]]:
        return [
            (
                reader.contract_row(
                    e, folders=folders, web_url="http://127.0.0.1:9/", now=NOW, stalled_days=7.0, sent=s
                ),
                e,
                s,
            )
            for e, s in zip(envelopes, sent, strict=True)
        ]

    def rows_and_summary() -> dict[str, Any]:
        return reader.contracts_summary(rows_only())

    shown = rows_only()
    summary = rows_and_summary()  # warm-up of both, and the figures for the notes
    runs: dict[str, list[dict[str, Any]]] = {"rows": [], "rows_summary": [], "summary": []}
    cases = (
        ("rows", rows_only),
        ("rows_summary", rows_and_summary),
        ("summary", lambda: reader.contracts_summary(shown)),
    )
    gc.collect()
    for rep in range(reps):
        order = cases if rep % 2 == 0 else cases[::-1]
        for key, fn in order:
            started = time.perf_counter()
            fn()
            runs[key].append({"ok": True, "rep": rep, "wall_s": time.perf_counter() - started})
    base = statistics.median(r["wall_s"] for r in runs["rows"])
    labels = {
        "rows": f"contract_row x {count} (baseline)",
        "rows_summary": f"contract_row x {count} + contracts_summary",
        "summary": f"contracts_summary alone over {count} rows",
    }
    rows = []
    for key, label in labels.items():
        wall = statistics.median(r["wall_s"] for r in runs[key])
        rows.append(["Contracts page", label, f"{reps}/{reps}", None, wall / base, wall * 1000, ""])
    tts = summary["time_to_sign"]
    notes = [
        f"Contracts summary over {count} envelopes: counts {summary['counts']}, stalled "
        f"{summary['stalled']}, time to sign over {tts['count']} (median {tts['median_seconds']} s, p90 "
        f"{tts['p90_seconds']} s), without a send time {summary['without_sent']}.",
    ]
    targets = [
        cost_target(
            f"Contracts rows + summary vs rows alone, {count} envelopes",
            runs["rows"],
            runs["rows_summary"],
            SUMMARY_GOAL,
        )
    ]
    return rows, targets, notes, runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--envelopes", type=int, default=5000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ids", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.ids.split(","), args.calls)
        return
    m_rows, m_targets, m_notes, m_runs = metrics_part(args.calls, args.reps)
    s_rows, s_targets, s_notes, s_runs = summary_part(args.envelopes, 2 * args.reps + 1)
    write_result(
        NAME,
        title=(
            f"Issue 48's costs: metrics per get_envelope ({args.calls} calls a run), "
            f"the Contracts summary over {args.envelopes} envelopes"
        ),
        columns=["part", "case", "runs ok", "µs per request", "ratio vs baseline", "ms", "notes"],
        rows=[*m_rows, *s_rows],
        targets=[*m_targets, *s_targets],
        notes=[
            *m_notes,
            *s_notes,
            "Metrics: each run a fresh process (metrics.py reads [metrics] once per process), the modes "
            "alternating run by run in a rotating order; median over the runs; the calls alone are timed, "
            f"after {WARMUP_CALLS} untimed ones.",
            "Targets are cost ratios (measured / baseline), met when <= goal / (1 - allowed); allowed is the "
            "run's noise of the ratio (90 % bootstrap half-width, the wider of medians and pairs), at most "
            f"{MAX_NOISE_ALLOWED:.0%}.",
        ],
        extra={"metrics_runs": m_runs, "summary_runs": s_runs},
    )


if __name__ == "__main__":
    main()
