"""get_provider_info() must pass Airflow's own schema and name only classes that import."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import airflow
import jsonschema
import pytest

from airflow_provider_docsign import __version__, get_provider_info
from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS


def _schema() -> dict:
    path = Path(airflow.__file__).parent / "provider_info.schema.json"
    return json.loads(path.read_text())


def _import_dotted(path: str) -> object:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_provider_info_validates_against_airflow_schema() -> None:
    jsonschema.validate(get_provider_info(), _schema())


def test_package_name_equals_distribution_name() -> None:
    info = get_provider_info()
    dist = importlib.metadata.distribution(info["package-name"])
    assert dist.metadata["Name"] == "airflow-provider-docsign"
    assert dist.version == __version__


def test_entry_point_is_registered() -> None:
    eps = importlib.metadata.entry_points(group="apache_airflow_provider")
    ours = [ep for ep in eps if ep.value == "airflow_provider_docsign:get_provider_info"]
    assert len(ours) == 1
    assert ours[0].load()() == get_provider_info()


def test_version_is_one_everywhere() -> None:
    """0.3.0 in ``__version__``, the provider info, the distribution and the CHANGELOG's dated entry."""
    assert __version__ == "0.3.0"
    assert get_provider_info()["versions"] == [__version__]
    changelog = (Path(__file__).resolve().parents[2] / "CHANGELOG.md").read_text()
    headings = [line for line in changelog.splitlines() if line.startswith("## ")]
    assert headings[:2] == ["## [Unreleased]", f"## [{__version__}] - 2026-11-26"]


def test_every_trigger_module_is_listed() -> None:
    (entry,) = get_provider_info()["triggers"]
    assert entry["python-modules"] == [
        "airflow_provider_docsign.triggers.envelope",
        "airflow_provider_docsign.triggers.webhook",
    ]
    package = Path(__file__).resolve().parents[2] / "airflow_provider_docsign" / "triggers"
    on_disk = {f"airflow_provider_docsign.triggers.{p.stem}" for p in package.glob("[!_]*.py")}
    assert set(entry["python-modules"]) == on_disk


def test_every_named_class_and_module_imports() -> None:
    info = get_provider_info()
    for section in ("hooks", "operators", "sensors", "triggers"):
        for entry in info[section]:
            for module in entry["python-modules"]:
                if module.endswith(".webhook") and not AIRFLOW_V_3_0_PLUS:
                    # Airflow 2.11 has no event-driven scheduling: the import says so.
                    with pytest.raises(ImportError, match="AssetWatcher"):
                        importlib.import_module(module)
                    continue
                importlib.import_module(module)
    for link in info["extra-links"]:
        assert isinstance(_import_dotted(link), type)
    for conn in info["connection-types"]:
        hook = _import_dotted(conn["hook-class-name"])
        assert hook.conn_type == conn["connection-type"] == "docsign"
        assert hook.default_conn_name == "docsign_default"


def test_connection_form_declares_base_url_key_and_extras() -> None:
    (conn,) = get_provider_info()["connection-types"]
    behaviour = conn["ui-field-behaviour"]
    # The port is shown: Airflow 3.3.0-3.3.2's Test button refuses a connection stored without one.
    # Its label says when it is needed, its placeholder what to put there.
    assert set(behaviour["hidden-fields"]) == {"schema", "login"}
    assert behaviour["placeholders"]["host"] == "https://app.documenso.com/api/v2"
    assert behaviour["relabeling"]["port"] == "Port (required for Test on Airflow 3.3.0-3.3.2)"
    assert behaviour["placeholders"]["port"] == "443 for https, 80 for http, or the port in the URL"
    assert "password" in behaviour["relabeling"]
    assert {"timeout", "verify", "web_url", "signing_certificate_fingerprints"} <= set(conn["conn-fields"])


def test_airflow_cli_lists_the_docsign_connection_type() -> None:
    """`airflow providers hooks` (a fresh process, real provider discovery) shows our type."""
    out = subprocess.run(
        [sys.executable, "-m", "airflow", "providers", "hooks", "-o", "json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    # Airflow may log to stdout before the JSON document: take the line that holds the list.
    (line,) = [ln for ln in out.splitlines() if ln.startswith('[{"')]
    hooks = json.loads(line)
    (ours,) = [h for h in hooks if h.get("connection_type") == "docsign"]
    assert ours["class"] == "airflow_provider_docsign.hooks.docsign.DocsignHook"
    assert ours["package_name"] == "airflow-provider-docsign"


def test_airflow_cli_lists_both_triggers() -> None:
    """`airflow providers triggers` (real discovery) lists both, on 2.11 too where webhook cannot import."""
    out = subprocess.run(
        [sys.executable, "-m", "airflow", "providers", "triggers", "-o", "json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    (line,) = [ln for ln in out.splitlines() if ln.startswith('[{"')]
    ours = sorted(t["class"] for t in json.loads(line) if t["package_name"] == "airflow-provider-docsign")
    assert ours == ["airflow_provider_docsign.triggers.envelope", "airflow_provider_docsign.triggers.webhook"]


def test_hook_module_imports_without_deprecation_warnings() -> None:
    """Importing the hook warns about nothing of ours (``python -W error`` on Airflow 3.x)."""
    if AIRFLOW_V_3_0_PLUS:
        cmd = [sys.executable, "-W", "error", "-c", "import airflow_provider_docsign.hooks.docsign"]
    else:  # Airflow 2.11 itself emits RemovedInAirflow3Warning on import: only ours must be absent.
        cmd = [
            sys.executable,
            "-W",
            "error::DeprecationWarning:airflow_provider_docsign",
            "-W",
            "error::UserWarning:airflow_provider_docsign",
            "-c",
            "import airflow_provider_docsign.hooks.docsign",
        ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)


def test_operators_package_exports_every_operator_lazily() -> None:
    import airflow_provider_docsign.operators as operators

    assert sorted(operators._MODULES) == operators.__all__
    for name in operators.__all__:
        cls = getattr(operators, name)
        assert cls.__name__ == name
        assert cls.__doc__, f"{name} has no docstring"


def test_the_notifier_is_registered_and_is_an_airflow_notifier() -> None:
    from airflow_provider_docsign._compat import BaseNotifier

    assert get_provider_info()["notifications"] == [
        "airflow_provider_docsign.notifications.docsign.DocsignNotifier"
    ]
    notifier = _import_dotted(get_provider_info()["notifications"][0])
    assert isinstance(notifier, type)
    assert issubclass(notifier, BaseNotifier)
    # A deadline alert's AsyncCallback awaits it with a context keyword; construction needs no network.
    made = notifier(envelope_id="envelope_abc", context={"dag_run": None})
    assert made.envelope_id == "envelope_abc"
    assert "envelope_id" in notifier.template_fields
