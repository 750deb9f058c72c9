"""Every import path and ``python -m`` command users were shown keeps working across the 0.3 move.

0.3 moved 27 modules into domain packages (``service/``, ``evidence/``, ``archive/``, ``bulk/``,
``export/``). The 0.2 paths stay importable until 0.4: the same module object, one
``DeprecationWarning`` naming the new path. What the README, ``docs/`` and ``dags_examples/`` name
today must import without a warning.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from airflow_provider_docsign import _moved
from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "airflow_provider_docsign"

#: Paths the 0.2 README, docs and example DAGs named (module, names imported from it).
DOCUMENTED_IN_0_2: list[tuple[str, tuple[str, ...]]] = [
    ("operators", ("DocsignCreateEnvelopeOperator", "DocsignExportEnvelopesOperator")),
    ("sensors", ("DocsignEnvelopeSensor",)),
    ("hooks", ("DocsignHook",)),
    ("hooks.docsign", ("DocsignHook",)),
    ("notifications", ("DocsignNotifier",)),
    ("samples", ("write_sample_pdf", "store_sample_pdf")),
    ("sandbox", ("SandboxServer",)),
    ("assets", ("webhook_uri",)),
    ("preview", ("render_field_preview", "preview_envelope")),
    ("cli", ("run",)),
    ("_compat", ("Asset", "ObjectStoragePath", "AIRFLOW_V_3_0_PLUS")),
    ("export", ("DEFAULT_PII_COLUMNS", "parse_ts", "partition_date")),
    ("expiry", ("expired_recipients", "parse_timestamp", "mask_email")),
    ("webhook_urls", ("check_webhook_url",)),
    ("templates", ("validate_use_payload",)),
    ("verify", ("audit_manifest",)),
]
#: Old modules that are still packages or modules of the same name (no warning on import).
STILL_HERE = {"operators", "sensors", "hooks", "hooks.docsign", "notifications", "samples", "sandbox"}
STILL_HERE |= {"assets", "preview", "cli", "_compat", "export"}


def _import_catching(module: str) -> tuple[object, list[warnings.WarningMessage]]:
    """Import ``module`` (an old alias afresh: the finder warns on first import) and return what warned.

    Only alias entries are dropped from ``sys.modules``: the real modules stay the ones every other
    test holds, so no class is created twice.
    """
    if module.rpartition(".")[2] in _moved.MOVED:
        sys.modules.pop(module, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        __import__(module)  # an import statement's path: the warning points at this file
    return sys.modules[module], [w for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize(("module", "names"), DOCUMENTED_IN_0_2, ids=[m for m, _ in DOCUMENTED_IN_0_2])
def test_every_path_the_0_2_docs_named_still_imports(module: str, names: tuple[str, ...]) -> None:
    imported, caught = _import_catching(f"{PACKAGE}.{module}")
    for name in names:
        if module == "export":  # a name served by the package's __getattr__ is kept once served
            vars(imported).pop(name, None)
        with warnings.catch_warnings(record=True) as more:
            warnings.simplefilter("always")
            assert getattr(imported, name) is not None
        caught += [w for w in more if issubclass(w.category, DeprecationWarning)]
    if module in STILL_HERE and module != "export":
        assert caught == []
    else:
        assert caught, f"{module} moved: importing its old path must warn"
        assert all("moved to" in str(w.message) for w in caught)


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_a_moved_module_is_the_new_module_and_names_it_once(old: str) -> None:
    new = f"{PACKAGE}.{_moved.MOVED[old]}"
    fresh = importlib.import_module(new)
    imported, caught = _import_catching(f"{PACKAGE}.{old}")
    assert imported is fresh
    assert len(caught) == 1
    assert new in str(caught[0].message)
    assert "0.4" in str(caught[0].message)
    assert caught[0].filename == __file__  # pointed at the importer, not at importlib


def test_an_old_name_of_a_package_that_was_a_module_warns_once_then_is_plain() -> None:
    package = importlib.import_module(f"{PACKAGE}.bulk")
    package.__dict__.pop("read_rows", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = package.read_rows
        second = package.read_rows
    assert first is second is importlib.import_module(f"{PACKAGE}.bulk.plan").read_rows
    assert [str(w.message) for w in caught] == [
        f"{PACKAGE}.bulk.read_rows moved to {PACKAGE}.bulk.plan.read_rows in 0.3; the old path goes in 0.4"
    ]
    with pytest.raises(AttributeError):
        _ = package.no_such_name
    assert importlib.import_module(f"{PACKAGE}.bulk.state").__name__ == f"{PACKAGE}.bulk.state"


def test_names_that_never_existed_are_still_import_errors() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"{PACKAGE}.no_such_module")


def _documented_paths() -> set[str]:
    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "dags_examples").glob("*.py")]
    found: set[str] = set()
    for path in texts:
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(rf"from ({PACKAGE}(?:\.\w+)*) import", text))
        found |= set(re.findall(rf"^\s*import ({PACKAGE}(?:\.\w+)*)", text, re.M))
    return found


def test_what_the_docs_and_examples_import_now_imports_without_a_warning(tmp_path: Path) -> None:
    paths = _documented_paths()
    assert f"{PACKAGE}.operators" in paths
    if not AIRFLOW_V_3_0_PLUS:  # the webhook trigger exists on Airflow 3 only (the docs say so)
        paths = {p for p in paths if not p.endswith(".webhook")}
    # A fresh interpreter, so that nothing is imported already, and a deprecation warning that the
    # imports themselves raise, or that our package raises, is an error. Airflow's own warnings about
    # its own settings (2.11's RemovedInAirflow3Warning on importing airflow.triggers.base, say) are
    # not ours to fix, and depend on the installed Airflow's dependencies: they are left alone.
    prelude = (
        "import warnings\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "warnings.filterwarnings('error', category=DeprecationWarning, "
        "module=r'(__main__|airflow_provider_docsign)(\\..*)?$')\n"
    )
    code = prelude + "".join(f"import {module}\n" for module in sorted(paths))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize(
    ("module", "usage"),
    [
        ("verify", "usage: python -m airflow_provider_docsign.verify"),
        ("templates", "usage: python -m airflow_provider_docsign.templates"),
        ("cli", "usage: docsign"),
        ("sandbox", "usage: python -m airflow_provider_docsign.sandbox"),
    ],
)
def test_the_documented_python_m_commands_still_run(module: str, usage: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"{PACKAGE}.{module}", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(usage)
