"""A missed benchmark target fails ``make bench`` (issue 38): the judging, the summary's last lines, the
exit status of ``bench/run_all.py``, and the upload benchmark's own targets.

``run_all.main`` is run for real on stand-in benchmarks: small scripts in ``tmp_path`` that write a
result file the way ``bench/_common.write_result`` does (or write none, or a stale one, or fail), so
the exit status and ``summary.md`` are those a real run gives. No sandbox, no timing.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

# bench/_common.py turns SIGTERM into SystemExit for the benchmarks' own processes; the test process
# keeps its own handler.
_saved_sigterm = signal.getsignal(signal.SIGTERM)
try:
    import _common
    import bench_upload
    import run_all
    from _common import median_ratio_noise, missed_line, spread, target_met
    from _served import ServedClient
finally:
    signal.signal(signal.SIGTERM, _saved_sigterm)

MISSED_BUSY = {
    "what": "hook upload throughput vs curl, 120 MB, busy",
    "target": ">= 0.9x",
    "measured": "0.84x",
    "met": False,
}
MET_QUIET = {
    "what": "hook upload throughput vs curl, 120 MB, quiet",
    "target": ">= 0.9x",
    "measured": "1.01x",
    "met": True,
}

# A stand-in benchmark: writes a result file argv[1] with the targets in the JSON file argv[2] ("none":
# writes nothing), then exits with argv[3].
FAKE_BENCH = textwrap.dedent(
    """
    import json, sys
    path, targets, code = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if targets != "none":
        with open(targets) as fh:
            targets = fh.read()
        doc = {"name": "x", "title": "A stand-in", "machine": {"load_average_1m": 0.1},
               "markdown": "| a |\\n|---|\\n| 1 |", "targets": json.loads(targets), "notes": []}
        with open(path, "w") as fh:
            json.dump(doc, fh)
    sys.exit(code)
    """
)


# ----------------------------------------------------------------------------------------- judging
@pytest.mark.parametrize("met", [False, None, "yes", "True", 1, [True]])
def test_only_met_true_itself_is_a_target_met(met: Any) -> None:
    assert target_met({"what": "w", "target": "t", "measured": "m", "met": True})
    assert not target_met({"what": "w", "target": "t", "measured": "m", "met": met})


def test_a_target_nobody_judged_is_missed() -> None:
    assert not target_met({"what": "w", "target": "t", "measured": "m"})


def test_the_missed_line_names_the_benchmark_the_target_and_the_figure() -> None:
    assert missed_line("upload", MISSED_BUSY) == (
        "MISSED upload: hook upload throughput vs curl, 120 MB, busy (>= 0.9x): 0.84x"
    )
    assert missed_line("cli", {"met": False}) == "MISSED cli: a target without a name (?): not measured"


def test_the_verdict_lists_every_miss_and_failure_then_fails() -> None:
    docs = {
        "upload": {"targets": [MET_QUIET, MISSED_BUSY]},
        "verify": {"targets": [{**MET_QUIET, "met": None}]},
    }
    status = {"upload": "ok", "verify": "ok", "cli": "stopped after its limit of 120 s", "export": "ok"}
    lines = run_all.verdict_lines(["upload", "verify", "cli", "export"], status, docs)
    assert lines == [
        "MISSED upload: hook upload throughput vs curl, 120 MB, busy (>= 0.9x): 0.84x",
        "MISSED verify: hook upload throughput vs curl, 120 MB, quiet (>= 0.9x): 1.01x",
        "FAILED cli: stopped after its limit of 120 s",
        "FAILED export: exited 0 but wrote no bench/results/export.json in this run",
        "VERDICT: FAIL (2 target(s) missed, 2 of 4 benchmark(s) failed; 1 target(s) met)",
    ]


def test_every_target_met_and_every_benchmark_ok_passes() -> None:
    lines = run_all.verdict_lines(
        ["upload", "cli"],
        {"upload": "ok", "cli": "ok"},
        {
            "upload": {"targets": [MET_QUIET, MET_QUIET]},
            "cli": {"targets": []},
        },
    )
    assert lines == ["VERDICT: PASS (2 benchmark(s) ok, all 2 target(s) met)"]


# -------------------------------------------------------------------------------- run_all, for real
@pytest.fixture
def bench_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "fake_bench.py").write_text(FAKE_BENCH)
    results = tmp_path / "results"
    results.mkdir()
    monkeypatch.setattr(run_all, "BENCH_DIR", tmp_path)
    monkeypatch.setattr(run_all, "RESULTS_DIR", results)
    monkeypatch.setattr(run_all, "WORK_DIR", tmp_path / "work")
    monkeypatch.setattr(sys, "argv", ["run_all.py"])
    return tmp_path


def use(monkeypatch: pytest.MonkeyPatch, bench_dir: Path, *benches: tuple[str, Any, int]) -> None:
    """Run these stand-ins: (name, targets or "none", exit code)."""
    table = []
    for name, targets, code in benches:
        arg = "none"
        if targets != "none":
            arg = str(bench_dir / f"{name}.targets.json")
            Path(arg).write_text(json.dumps(targets))
        table.append((name, f"fake_bench.py {bench_dir / 'results' / f'{name}.json'} {arg} {code}", 60))
    monkeypatch.setattr(run_all, "BENCHMARKS", table)


def tail(bench_dir: Path, n: int) -> list[str]:
    return (bench_dir / "results" / "summary.md").read_text().rstrip("\n").splitlines()[-n:]


def test_a_missed_target_makes_the_run_exit_non_zero_and_says_which(
    bench_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(monkeypatch, bench_dir, ("download", [MET_QUIET], 0), ("upload", [MET_QUIET, MISSED_BUSY], 0))
    assert run_all.main() == 1
    expected = [
        "MISSED upload: hook upload throughput vs curl, 120 MB, busy (>= 0.9x): 0.84x",
        "VERDICT: FAIL (1 target(s) missed, 0 of 2 benchmark(s) failed; 2 target(s) met)",
    ]
    assert tail(bench_dir, 2) == expected
    assert capsys.readouterr().out.rstrip("\n").splitlines()[-2:] == expected
    assert "measured 0.84x (**missed**)" in (bench_dir / "results" / "summary.md").read_text()


def test_all_targets_met_exits_zero(bench_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, bench_dir, ("download", [MET_QUIET], 0), ("upload", [MET_QUIET, MET_QUIET], 0))
    assert run_all.main() == 0
    assert tail(bench_dir, 1) == ["VERDICT: PASS (2 benchmark(s) ok, all 3 target(s) met)"]


def test_a_previous_runs_result_does_not_count(bench_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = bench_dir / "results" / "upload.json"
    stale.write_text(json.dumps({"title": "old", "markdown": "", "machine": {}, "targets": [MET_QUIET]}))
    os.utime(stale, (1_000_000_000, 1_000_000_000))  # written in 2001
    use(monkeypatch, bench_dir, ("upload", "none", 0))
    assert run_all.main() == 1
    assert tail(bench_dir, 2) == [
        "FAILED upload: exited 0 but wrote no bench/results/upload.json in this run",
        "VERDICT: FAIL (0 target(s) missed, 1 of 1 benchmark(s) failed; 0 target(s) met)",
    ]
    assert (
        "Not measured in this run: it wrote no result." in (bench_dir / "results" / "summary.md").read_text()
    )


def test_a_benchmark_that_fails_after_writing_its_result_fails_the_run(
    bench_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, bench_dir, ("bulk_small", [MET_QUIET, MISSED_BUSY], 1))
    assert run_all.main() == 1
    summary = (bench_dir / "results" / "summary.md").read_text()
    assert "- **failed (exit 1)** after writing this result" in summary  # its table is still shown
    assert tail(bench_dir, 3) == [
        "MISSED bulk_small: hook upload throughput vs curl, 120 MB, busy (>= 0.9x): 0.84x",
        "FAILED bulk_small: failed (exit 1)",
        "VERDICT: FAIL (1 target(s) missed, 1 of 1 benchmark(s) failed; 1 target(s) met)",
    ]


def test_an_unknown_benchmark_name_is_refused_before_anything_runs(
    bench_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use(monkeypatch, bench_dir, ("upload", [MET_QUIET], 0))
    monkeypatch.setattr(sys, "argv", ["run_all.py", "--only", "uplaod"])
    with pytest.raises(SystemExit) as exc:
        run_all.main()
    assert exc.value.code == 2
    assert "no benchmark named uplaod; known: upload" in capsys.readouterr().err
    assert not (bench_dir / "results" / "summary.md").exists()


# ------------------------------------------------------------------------------ the upload's targets
def run(wall: float, rep: int, ok: bool = True) -> dict[str, Any]:
    return {
        "ok": ok,
        "wall_s": wall,
        "rep": rep,
        "cpu_s": 0.05,
        "peak_growth_mb": 4.0,
        "process_maxrss_mb": 11.0,
    }


def results(hook: list[float], sdk: list[float], curl: list[float]) -> dict[str, list[dict[str, Any]]]:
    return {
        "hook": [run(w, i) for i, w in enumerate(hook)],
        "sdk": [run(w, i) for i, w in enumerate(sdk)],
        "curl": [run(w, i) for i, w in enumerate(curl)],
    }


def test_the_hook_slower_than_the_sdk_misses_its_target() -> None:
    res = results([0.50, 0.52, 0.51], [0.40, 0.41, 0.42], [0.45] * 3)
    target = bench_upload.sdk_target(res, 120, "busy", 0.10)
    assert target["met"] is False
    assert target["measured"] == "0.88x vs sdk 1.10x (noise ±4%, allowed 4%)"
    assert target["what"].endswith("120 MB, busy")
    assert target["target"] == ">= sdk's ratio, less this run's noise (at most 10%)"


def test_without_measured_noise_nothing_is_allowed() -> None:
    # hook 3 % slower than the sdk, every run the same: no noise, so the 3 % is a miss
    res = results([0.515] * 5, [0.50] * 5, [0.50] * 5)
    target = bench_upload.sdk_target(res, 120, "quiet", 0.10)
    assert (target["met"], target["measured"]) == (False, "0.97x vs sdk 1.00x (noise ±0%, allowed 0%)")


def test_a_shortfall_within_the_runs_noise_is_allowed() -> None:
    hook = [0.40, 0.45, 0.50, 0.55, 0.60, 0.52, 0.47]  # median 0.50
    sdk = [0.38, 0.44, 0.47, 0.485, 0.53, 0.58, 0.41]  # median 0.47: the hook 3 % behind
    target = bench_upload.sdk_target(results(hook, sdk, [0.5] * 7), 120, "busy", 0.10)
    assert target["met"] is True
    assert target["measured"].startswith("1.00x vs sdk 1.06x (noise ±")


def test_noise_never_excuses_more_than_the_stated_cap() -> None:
    hook = [0.3, 0.9, 0.6, 1.5, 0.65, 0.2, 1.2]  # median 0.65, wildly spread
    sdk = [0.25, 1.1, 0.5, 0.4, 0.55, 1.3, 0.1]  # median 0.50: the hook 23 % behind
    target = bench_upload.sdk_target(results(hook, sdk, [0.5] * 7), 120, "busy", 0.10)
    assert median_ratio_noise(sdk, hook) > 0.10
    assert target["met"] is False
    assert target["measured"].endswith("allowed 10%)")


def test_the_noise_figure_is_the_same_for_the_same_runs() -> None:
    hook, sdk = [0.4, 0.5, 0.6, 0.55, 0.45], [0.42, 0.5, 0.58, 0.61, 0.44]
    assert median_ratio_noise(sdk, hook) == median_ratio_noise(sdk, hook) > 0
    assert median_ratio_noise(sdk[:2], hook) == 0.0


def test_a_baseline_that_never_ran_is_a_target_not_met() -> None:
    res = results([0.5] * 3, [0.4] * 3, [0.45] * 3)
    res["sdk"] = [run(0.4, i, ok=False) for i in range(3)]
    target = bench_upload.sdk_target(res, 120, "busy", 0.10)
    assert target["met"] is False
    assert target["measured"] == "not measured (documenso-sdk: no successful run)"


def test_the_hook_below_0_9x_curl_is_missed_and_named_by_mode() -> None:
    rows, targets = bench_upload.summarize(
        "3 x 40 MB",
        120.0,
        results([0.60] * 3, [0.50] * 3, [0.504] * 3),
        "upload",
        [40, 40, 40],
        {c: bench_upload.LABELS[c] for c in ("curl", "hook", "sdk")},
        min_ratio=0.9,
        mode="busy",
    )
    ratio = {t["what"]: t for t in targets}["hook upload throughput vs curl, 120 MB, busy"]
    assert (ratio["target"], ratio["measured"], ratio["met"]) == (
        ">= 0.9x, less this run's noise (at most 10%)",
        "0.84x (noise ±0%, allowed 0%)",
        False,
    )
    assert len(rows) == 3


# ------------------------------------------------------------- every throughput target, with its noise
def walls_of(values: list[float], slot: bool = False) -> list[dict[str, Any]]:
    return [
        {"ok": True, "wall_s": w, "rep": i, **({"slot": [i, 0]} if slot else {})}
        for i, w in enumerate(values)
    ]


def test_a_client_at_parity_with_a_noisy_baseline_meets_a_goal_at_parity() -> None:
    # the same distribution, shuffled between the two: at parity, and the run says how noisy it was
    base = [0.50, 0.58, 0.44, 0.61, 0.47, 0.53, 0.49, 0.56]
    client = [0.53, 0.47, 0.61, 0.44, 0.56, 0.50, 0.58, 0.49]
    target = _common.throughput_target("x", walls_of(base), walls_of(client), 1.0, max_tolerance=0.10)
    assert target["met"] is True
    assert target["measured"].startswith("1.00x (noise ±")


def test_a_truly_slower_client_fails_whatever_the_noise() -> None:
    base = [0.40, 0.52, 0.35, 0.61, 0.47, 0.30, 0.49, 0.66]  # median 0.48
    client = [w * 1.3 for w in base]  # 30 % slower in every pair
    target = _common.throughput_target("x", walls_of(base), walls_of(client), 1.0, max_tolerance=0.10)
    assert _common.ratio_noise(walls_of(base), walls_of(client)) > 0  # the spread is there
    assert target["met"] is False
    assert target["measured"].startswith("0.77x")


def test_the_paired_noise_counts_when_the_load_moved_between_pairs() -> None:
    # Each pair met its own load (x1 .. x3): the medians of each side say little, the pairs say more.
    base = [0.5, 1.0, 1.5, 0.52, 1.04, 1.56]
    client = [0.55, 0.98, 1.72, 0.5, 1.2, 1.5]
    pairs = _common.paired_walls(walls_of(base, slot=True), walls_of(client, slot=True))
    assert pairs == list(zip(base, client, strict=True))
    assert _common.ratio_noise(walls_of(base, slot=True), walls_of(client, slot=True)) >= (
        _common.paired_ratio_noise(pairs)
    )
    assert _common.paired_ratio_noise(pairs[:2]) == 0.0  # fewer than 3 pairs: no measured noise


def test_a_throughput_target_without_a_run_on_either_side_is_not_met() -> None:
    failed = [{"ok": False, "error": "x", "rep": 0}]
    target = _common.throughput_target("x", failed, walls_of([0.5] * 3), 0.8, max_tolerance=0.10)
    assert (target["met"], target["measured"]) == (False, "not measured (the baseline: no run)")


def test_a_hook_that_always_failed_is_a_missed_target_not_a_missing_row() -> None:
    res = results([0.5] * 3, [0.5] * 3, [0.5] * 3)
    res["hook"] = [{"ok": False, "error": "ConnectionError: refused", "rep": i} for i in range(3)]
    _, targets = bench_upload.summarize(
        "3 x 40 MB", 120.0, res, "upload", [40, 40, 40], {"curl": "c", "hook": "h"}
    )
    assert targets == [
        {
            "what": "hook upload succeeds, 120 MB",
            "target": "every run",
            "measured": "0 of 3 runs: ConnectionError: refused",
            "met": False,
        }
    ]


def test_paired_ratios_compare_the_hook_and_the_sdk_within_each_repetition() -> None:
    res = {
        "hook": [run(1.0, 0), run(1.2, 0), run(2.0, 1), run(9.9, 2, ok=False)],
        "sdk": [run(1.1, 0), run(1.1, 0), run(3.0, 1), run(1.0, 2)],
    }
    # rep 0: 1.1 / 1.1; rep 1: 3.0 / 2.0; rep 2 has no successful hook run
    assert bench_upload.paired_ratios(res) == [1.0, 1.5]


def test_paired_ratios_pair_each_upload_slot_with_its_neighbour() -> None:
    # issue 38: uploads alternate one by one; each slot (rep, job) is one pair, not a rep's median
    res = {
        "hook": [{**run(1.0, 0), "slot": [0, 0]}, {**run(2.0, 0), "slot": [0, 1]}],
        "sdk": [{**run(1.5, 0), "slot": [0, 0]}, {**run(1.0, 0), "slot": [0, 1]}],
    }
    assert bench_upload.paired_ratios(res) == [1.5, 0.5]


def test_a_served_client_whose_set_up_fails_reports_it_and_is_gone(tmp_path: Path) -> None:
    # A real bench/_client.py process in serve mode; its hook cannot reach anything (port 9 on
    # loopback: discard, closed here), so set-up fails and every job says so instead of hanging.
    client = ServedClient(
        {"client": "hook", "op": "upload", "base_url": "http://127.0.0.1:9/api/v2", "max_jobs": 2},
        timeout=120,
    )
    client.start()
    try:
        assert client.ready() is False
        assert client.report["ok"] is False
        assert "test_connection failed" in client.report["error"]
        job = client.job({"title": "t", "files": []})
        assert job["ok"] is False
        assert job["error"]
        assert client.proc is not None
        assert client.proc.poll() is not None
    finally:
        client.stop()


def test_spread_is_the_range_over_the_median() -> None:
    assert spread([1.0]) is None
    assert spread([0.9, 1.0, 1.2]) == pytest.approx(0.3)
