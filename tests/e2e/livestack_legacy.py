"""The live-stack test's DAG written for 0.2: three moved import paths, seen where a user looks.

The live stack runs on a temporary DAGs folder: a copy of ``dags_examples/`` plus
``docsign_legacy_imports.py``, a DAG that imports three 0.2 module paths (issue 49, item 2) and has one
task that needs no signing service. The file never lives in ``dags_examples/``: the example tests parse
that folder and must see no old path.

Where the warnings land (found by running each stack):

* Airflow 3 (standalone ``dag-processor``): the file's parse log,
  ``$AIRFLOW_HOME/logs/dag_processor/<date>/dags-folder/docsign_legacy_imports.py.log``.
* Airflow 2.11 (the scheduler parses): ``$AIRFLOW_HOME/logs/scheduler/<date>/docsign_legacy_imports.py.log``
  (``[scheduler] child_process_log_directory``).
* The task's own log, ``$AIRFLOW_HOME/logs/dag_id=docsign_legacy_imports/run_id=…/task_id=…/attempt=1.log``.
  On Airflow 3 the task process parses the file with its log already attached. On Airflow 2.11
  ``airflow tasks run --local`` parses the file *before* it attaches the task log, and its forked
  ``--raw`` child is handed the parsed DAG: the provider's plugin registers a listener there
  (``ui/moved_listener.py``) that logs the parse's warnings again as the task starts, into its log.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from e2e_helpers import DAGS_FOLDER

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS

PACKAGE = "airflow_provider_docsign"
LEGACY_DAG_ID = "docsign_legacy_imports"
LEGACY_FILE = f"{LEGACY_DAG_ID}.py"
LEGACY_TASK_ID = "uses_old_paths"

#: A DAG a 0.2 user wrote: three old paths, three forms (``import``, ``from pkg import``, ``from … import``).
LEGACY_DAG = f'''\
"""Written for 0.2: three module paths that 0.3 moved (the live-stack test's; not an example)."""

import pendulum

import {PACKAGE}.verify
from {PACKAGE} import retention
from {PACKAGE}.models import Envelope

try:
    from airflow.sdk import DAG, task
except ImportError:  # Airflow 2.11
    from airflow import DAG
    from airflow.decorators import task

with DAG("{LEGACY_DAG_ID}", schedule=None, start_date=pendulum.datetime(2026, 1, 1), catchup=False):

    @task(task_id="{LEGACY_TASK_ID}")
    def uses_old_paths() -> list[str]:
        return [Envelope.__module__, {PACKAGE}.verify.__name__, retention.__name__]

    uses_old_paths()
'''
#: ``(line in LEGACY_DAG, old, new)``: what the logs and ``docsign moved-imports`` must name.
MOVES = [
    (5, f"{PACKAGE}.verify", f"{PACKAGE}.archive.auditor"),
    (6, f"{PACKAGE}.retention", f"{PACKAGE}.archive.retention"),
    (7, f"{PACKAGE}.models", f"{PACKAGE}.service.models"),
]


def dags_folder_with_legacy_dag(tmp_path: Path) -> Path:
    """A copy of ``dags_examples/`` with ``docsign_legacy_imports.py`` added: the stack's DAGS_FOLDER."""
    dags = tmp_path / "dags"
    shutil.copytree(DAGS_FOLDER, dags, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (dags / LEGACY_FILE).write_text(LEGACY_DAG)
    return dags


def dag_processor_logs(home: Path) -> list[Path]:
    """The parse logs of the legacy file: the dag-processor's on Airflow 3, the scheduler's on 2.11."""
    if AIRFLOW_V_3_0_PLUS:
        found = (home / "logs" / "dag_processor").glob(f"*/dags-folder/{LEGACY_FILE}.log")
    else:
        found = (home / "logs" / "scheduler").glob(f"*/{LEGACY_FILE}.log")
    return sorted({log.resolve() for log in found})  # once each: "latest" is a symlink to today's folder


def task_logs(home: Path, run_id: str) -> list[Path]:
    run_dir = home / "logs" / f"dag_id={LEGACY_DAG_ID}" / f"run_id={run_id}" / f"task_id={LEGACY_TASK_ID}"
    return sorted(run_dir.glob("attempt=*.log"))


def assert_task_saw_moves(home: Path, run_id: str, dag_file: Path) -> None:
    """The legacy task's own log names each move, on both Airflow versions."""
    assert_logged_moves("task", task_logs(home, run_id), dag_file)


def missing_moves(text: str, dag_file: Path | None = None) -> list[str]:
    """The moves ``text`` does not name as ``OLD moved to NEW`` (with the importing line, if given)."""
    missing = []
    for line, old, new in MOVES:
        found = [row for row in text.splitlines() if f"{old} moved to {new} in 0.3" in row]
        if not found or (dag_file and not any(f"imported by {dag_file} line {line}" in r for r in found)):
            missing.append(old)
    return missing


def assert_logged_moves(what: str, logs: list[Path], dag_file: Path) -> None:
    """Each log in ``logs`` (at least one) names every old path, where it moved and the importing line."""
    assert logs, f"no {what} log"
    for log in logs:
        text = log.read_text(errors="replace")
        assert not missing_moves(text, dag_file), (
            what,
            str(log),
            missing_moves(text, dag_file),
            text[-3000:],
        )


def assert_command_lists_moves(dags: Path) -> None:
    """``docsign moved-imports DAGS_FOLDER`` (the documented command) lists the three, nothing else."""
    docsign = Path(sys.executable).parent / "docsign"
    done = subprocess.run(
        [str(docsign), "moved-imports", str(dags)], capture_output=True, text=True, timeout=120
    )
    files = sum(1 for _ in dags.rglob("*.py"))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout.splitlines() == [
        *(
            f"{dags / LEGACY_FILE}:{line}: {old} moved to {new} (the old path goes in 0.4)"
            for line, old, new in MOVES
        ),
        f"3 old import paths in {files} files: import the new paths shown",
    ], done.stdout
