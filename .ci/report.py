#!/usr/bin/env python3
"""The end of a CI run: each suite's test count and wall time against its budget, and the slowest tests.

Usage: ``python3 .ci/report.py REPORT_DIR`` (standard library only). ``REPORT_DIR`` holds the JUnit XML
each ``.ci/pytest.sh`` run wrote (``<venv name>.xml``); ``.ci/budgets.json`` says, per venv, the
fewest tests that must have passed (so a dropped test is seen) and the wall-time budget with its
margin (so a slow test is seen the day it lands). The wall time is the one pytest measured for its
whole session (the ``time`` of the JUnit suite), not a timer in a test.

Prints one line per suite, the twenty slowest tests of all suites (setup, call and teardown together),
and a closing ``total: N passed, N failed`` line. Exits 1 when a suite is missing, ran fewer tests than
its floor, failed a test, or took longer than its budget plus the margin.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
SLOWEST = 20


def _suite(path: Path) -> tuple[dict[str, float], list[tuple[float, str]]]:
    root = ET.parse(path).getroot()  # noqa: S314 (our own pytest's report, not untrusted XML)
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    totals = {"tests": 0.0, "failures": 0.0, "errors": 0.0, "skipped": 0.0, "time": 0.0}
    cases: list[tuple[float, str]] = []
    for suite in suites:
        for key in totals:
            totals[key] += float(suite.get(key, 0))
        for case in suite.iter("testcase"):
            name = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name', '')}"
            cases.append((float(case.get("time", 0)), name))
    return totals, cases


def main(argv: list[str]) -> int:
    """Print the report of the suites in ``argv[1]``; 0 when every suite is within its bounds."""
    if len(argv) != 2:
        print("usage: report.py REPORT_DIR", file=sys.stderr)
        return 2
    report_dir = Path(argv[1])
    budgets = json.loads((HERE / "budgets.json").read_text())
    ok = True
    slow: list[tuple[float, str, str]] = []
    passed_all = failed_all = 0
    for venv, budget in budgets["suites"].items():
        label = f"{budget['label']} ({venv})"
        path = report_dir / f"{venv}.xml"
        if not path.exists():
            print(f"[ci] {label}: no report ({path.name} missing): the suite did not run to its end")
            ok = False
            continue
        totals, cases = _suite(path)
        failed = int(totals["failures"] + totals["errors"])
        skipped = int(totals["skipped"])
        passed = int(totals["tests"]) - failed - skipped
        passed_all += passed
        failed_all += failed
        wall, limit = totals["time"], budget["wall_s"] * (1 + budgets["margin"])
        problems = []
        if failed:
            problems.append(f"{failed} failed")
        if passed < budget["min_passed"]:
            floor = budget["min_passed"]
            problems.append(f"fewer than the {floor} tests that passed before: was a test dropped?")
        if wall > limit:
            problems.append(
                f"over its budget of {budget['wall_s']} s + {budgets['margin']:.0%}: find the new slow tests "
                "below (docs/development.md, 'Keeping the suite fast')"
            )
        verdict = "; ".join(problems) or "ok"
        ok = ok and not problems
        print(
            f"[ci] {label}: {passed} passed, {failed} failed, {skipped} skipped; "
            f"wall {wall:.0f} s, budget {budget['wall_s']} s "
            f"(+{budgets['margin']:.0%} = {limit:.0f} s): {verdict}"
        )
        slow += [(seconds, venv, name) for seconds, name in cases]
    print(f"[ci] the {SLOWEST} slowest tests (setup + call + teardown, as JUnit reports them):")
    for seconds, venv, name in sorted(slow, reverse=True)[:SLOWEST]:
        print(f"[ci] {seconds:8.1f} s  {venv:<10} {name}")
    print(f"total: {passed_all} passed, {failed_all} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
