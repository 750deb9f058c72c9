"""A moved (0.2) import path tells the user where they will see it, and one command finds them all.

Airflow parses a DAG file as a module that is not ``__main__``, so Python's default filters hide the
``DeprecationWarning`` of an old path. Each old path also logs a warning, once per process, naming the
old path, the new one and the importing file: Airflow's DagBag (what the dag-processor and the task
runner parse a file with) is run here in a fresh interpreter, with Airflow's own logging, on a DAG that
imports three old paths. ``docsign moved-imports DAGS_FOLDER`` lists them without running the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_docsign import _moved
from airflow_provider_docsign.cli import run

PACKAGE = "airflow_provider_docsign"

#: A DAG file a 0.2 user wrote: three old paths (two moved modules, one name a package forwards).
OLD_DAG = f"""\
import pendulum

from {PACKAGE}.models import Envelope  # noqa: F401
from {PACKAGE}.verify import audit_manifest  # noqa: F401
from {PACKAGE}.export import parse_ts  # noqa: F401
from {PACKAGE}.operators import DocsignCreateFolderOperator

try:
    from airflow.sdk import DAG
except ImportError:
    from airflow import DAG

with DAG("docsign_old_paths", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):
    DocsignCreateFolderOperator(task_id="folder", name="Contracts")
"""
#: (line, old, new) of the three, as the log and the command name them.
EXPECTED = [
    (3, f"{PACKAGE}.models", f"{PACKAGE}.service.models"),
    (4, f"{PACKAGE}.verify", f"{PACKAGE}.archive.auditor"),
    (5, f"{PACKAGE}.export.parse_ts", f"{PACKAGE}.export.rows.parse_ts"),
]

#: Parse the folder twice with Airflow's DagBag, as the dag-processor parses a file (Airflow's logging).
PARSE = """\
import sys
try:
    from airflow.dag_processing.dagbag import DagBag  # Airflow 3
except ImportError:
    from airflow.models.dagbag import DagBag  # Airflow 2.11
kwargs = {"include_examples": False} if "models" in DagBag.__module__ else {}
for _ in range(2):
    bag = DagBag(dag_folder=sys.argv[1], **kwargs)
    print("parsed", sorted(bag.dags), "errors", len(bag.import_errors), flush=True)
"""


@pytest.fixture
def dags(tmp_path: Path) -> Path:
    folder = tmp_path / "dags"
    (folder / "contracts").mkdir(parents=True)
    (folder / "contracts" / "old_paths.py").write_text(OLD_DAG)
    (folder / "new_paths.py").write_text(f"from {PACKAGE}.service.models import Envelope  # noqa: F401\n")
    return folder


def test_parsing_a_dag_with_old_paths_logs_each_once_with_the_file(dags: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PARSE, str(dags)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": ""},  # Python's default filters, as a dag-processor has
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert output.count("parsed ['docsign_old_paths'] errors 0") == 2, output
    dag_file = dags / "contracts" / "old_paths.py"
    for line, old, new in EXPECTED:
        lines = [text for text in output.splitlines() if f"{old} moved to {new} in 0.3" in text]
        assert len(lines) == 1, (old, output)  # once per process, though the file was parsed twice
        assert "warning" in lines[0].lower()
        assert f"imported by {dag_file} line {line}" in lines[0]
        assert "docsign moved-imports DAGS_FOLDER" in lines[0]
    assert "DeprecationWarning" not in output  # what Python alone shows here: nothing


def test_docsign_moved_imports_lists_every_old_path(dags: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (dags / ".hidden").mkdir()
    (dags / ".hidden" / "skipped.py").write_text(f"import {PACKAGE}.models\n")
    (dags / "notes.txt").write_text(f"import {PACKAGE}.models\n")
    (dags / "broken.py").write_text("def (:\n")
    assert run(["moved-imports", str(dags)]) == 1
    out = capsys.readouterr().out.splitlines()
    dag_file = dags / "contracts" / "old_paths.py"
    assert out == [
        *(
            f"{dag_file}:{line}: {old} moved to {new} (the old path goes in 0.4)"
            for line, old, new in EXPECTED
        ),
        f"{dags / 'broken.py'}: not read: it is not valid Python",
        "3 old import paths in 3 files: import the new paths shown",
    ]


def test_a_clean_folder_passes_and_a_missing_one_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = tmp_path / "clean.py"
    clean.write_text(f"from {PACKAGE}.operators import DocsignCreateEnvelopeOperator  # noqa: F401\n")
    assert run(["moved-imports", str(clean)]) == 0
    assert capsys.readouterr().out == "no old import paths in 1 file\n"
    assert run(["moved-imports", str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'}: no such file or folder" in capsys.readouterr().err


def test_every_old_path_and_form_is_found() -> None:
    source = "\n".join(
        [
            *(f"import {PACKAGE}.{old}" for old in _moved.MOVED),
            *(f"from {PACKAGE}.{old} import x" for old in _moved.MOVED),
            f"from {PACKAGE} import models, operators, verify as v",
            f"import {PACKAGE}.models.sub as m",
            f"from {PACKAGE}.bulk import read_rows, state, plan",
            f"from {PACKAGE}.archive import sanitize_value",
            f"from {PACKAGE}.export import DEFAULT_PII_COLUMNS",
            f"from {PACKAGE}.service.models import Envelope",
            "from .models import relative",
            "import airflow.models",
        ]
    )
    found = _moved.find_moved_imports(source)
    olds = [old for _, old, _ in found]
    for old, new in _moved.MOVED.items():
        assert olds.count(f"{PACKAGE}.{old}") >= 2, old
        assert (1 + list(_moved.MOVED).index(old), f"{PACKAGE}.{old}", f"{PACKAGE}.{new}") in found
    rest = found[2 * len(_moved.MOVED) :]
    base = 2 * len(_moved.MOVED)
    assert rest == [
        (base + 1, f"{PACKAGE}.models", f"{PACKAGE}.service.models"),
        (base + 1, f"{PACKAGE}.verify", f"{PACKAGE}.archive.auditor"),
        (base + 2, f"{PACKAGE}.models", f"{PACKAGE}.service.models"),
        (base + 3, f"{PACKAGE}.bulk.read_rows", f"{PACKAGE}.bulk.plan.read_rows"),
        (base + 4, f"{PACKAGE}.archive.sanitize_value", f"{PACKAGE}.archive.naming.sanitize_value"),
        (base + 5, f"{PACKAGE}.export.DEFAULT_PII_COLUMNS", f"{PACKAGE}.export.rows.DEFAULT_PII_COLUMNS"),
    ]


def test_the_forwarded_packages_are_the_ones_that_forward() -> None:
    import importlib

    for package, holder in _moved.FORWARDED.items():
        names = _moved._forwarded_names(package)
        assert names, package
        module = importlib.import_module(f"{PACKAGE}.{package}")
        assert module.__getattr__.__closure__ is not None
        cells = [c.cell_contents for c in module.__getattr__.__closure__]
        assert f"{PACKAGE}.{package}.{holder}" in cells
