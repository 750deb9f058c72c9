"""The auditor's command stands alone: ``docsign verify`` wall time against ``docsign --help``.

Each command runs as a user runs it (the ``docsign`` console script in a fresh process, no
``AIRFLOW_*`` variable set), ``REPS`` times in turn, in the same run:

* ``docsign --help`` (the baseline: Python, the provider package and argparse);
* ``docsign verify missing.pdf`` (issue 28: it imported all of Airflow, 10-17 s to say the file does
  not exist);
* ``docsign verify`` of a sealed PDF recorded from the real service, and ``--manifest`` of an archive
  of it (hash, signatures and the folder checks, pyHanko imported);
* for reference, ``python -c "import airflow_provider_docsign._compat"``: what every ``docsign verify``
  paid before, and what an ``s3://`` URI still pays (it needs Airflow's object storage).

Target (issue 28): ``docsign verify missing.pdf`` answers in under 1 s.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO_DIR, run_measured, temp_dir, write_result

REPS = 5
SEALED = (
    REPO_DIR
    / "tests"
    / "contract"
    / "data"
    / "documenso-2.17"
    / "recorded"
    / "sealed"
    / "29_sealed_signed.pdf"
)
COLUMNS = ["command", "runs", "exit", "median wall s", "min wall s", "max wall s", "ratio to --help"]


def _commands(tmp: Path) -> list[tuple[str, list[str]]]:
    docsign = str(Path(sys.executable).with_name("docsign"))
    folder = tmp / "ACME-1"
    folder.mkdir()
    shutil.copy(SEALED, folder / "01-contract.pdf")
    digest = hashlib.sha256(SEALED.read_bytes()).hexdigest()
    manifest = folder / "manifest.json"
    entry = {"name": "ACME-1/01-contract.pdf", "path": "01-contract.pdf", "sha256": digest}
    manifest.write_text(json.dumps({"version": "signed", "files": [entry]}))
    return [
        ("docsign --help", [docsign, "--help"]),
        ("docsign verify missing.pdf", [docsign, "verify", str(tmp / "missing.pdf")]),
        ("docsign verify sealed.pdf (75 KB)", [docsign, "verify", str(SEALED)]),
        ("docsign verify --manifest (1 sealed PDF)", [docsign, "verify", "--manifest", str(manifest)]),
        (
            "reference: python -c 'import airflow_provider_docsign._compat' (imports Airflow)",
            [sys.executable, "-c", "import airflow_provider_docsign._compat"],
        ),
    ]


def main() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    with temp_dir("docsign-bench-cli-") as tmp:
        commands = _commands(tmp)
        walls: dict[str, list[float]] = {name: [] for name, _ in commands}
        codes: dict[str, set[int]] = {name: set() for name, _ in commands}
        stderr: dict[str, str] = {}
        for _ in range(REPS):  # interleaved, so that load on the machine hits every command alike
            for name, cmd in commands:
                res = run_measured(cmd, timeout=120, env=env)
                walls[name].append(res["wall_s"])
                codes[name].add(res["rc"])
                stderr[name] = res["stderr"]
    base = statistics.median(walls["docsign --help"])
    rows: list[list[Any]] = []
    for name, _ in commands:
        median = statistics.median(walls[name])
        code = ",".join(str(c) for c in sorted(codes[name]))
        rows.append([name, REPS, code, median, min(walls[name]), max(walls[name]), median / base])
    missing = statistics.median(walls["docsign verify missing.pdf"])
    missing_lines = stderr["docsign verify missing.pdf"].splitlines()
    missing_codes = codes["docsign verify missing.pdf"]
    write_result(
        "cli",
        title="The auditor's command: docsign verify against docsign --help (fresh process each)",
        columns=COLUMNS,
        rows=rows,
        targets=[
            {
                "what": "docsign verify missing.pdf wall time (median)",
                "target": "< 1 s",
                "measured": f"{missing:.2f} s ({missing / base:.2f}x docsign --help)",
                "met": missing < 1.0,
            },
            {
                "what": "docsign verify missing.pdf output",
                "target": "one line on stderr, docsign verify: error: ..., exit 2",
                "measured": f"{len(missing_lines)} line(s), exit {sorted(missing_codes)}",
                "met": len(missing_lines) == 1
                and missing_lines[0].startswith("docsign verify: error: ")
                and missing_codes == {2},
            },
        ],
        notes=[
            f"Each command {REPS} times, interleaved, each run a fresh process with no AIRFLOW_* variable "
            "(as in a user's shell); wall time from fork to exit.",
            "Local files never import Airflow (a test checks sys.modules); the reference row is what "
            "every docsign verify paid before, and what an object-storage URI (s3://...) still pays.",
        ],
    )


if __name__ == "__main__":
    main()
