"""Upgrades keep their links: a DAG serialized by 0.2 still shows its "Docsign envelope" link.

0.2 kept the link class at ``airflow_provider_docsign.links.DocsignEnvelopeLink``; 0.3 moved it to
``operators.links``. Airflow 2.11 stores each extra link in the serialized DAG by its class path and, on
reading it back (the webserver, before the DAG is parsed again), drops every extra link of a task whose
class path no provider registers. ``get_provider_info()`` registers both paths. Airflow 3 stores the
link by its name and XCom key, which did not change: the same serialized DAG keeps its link there too.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from datetime import datetime
from typing import Any

from airflow_provider_docsign import get_provider_info
from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.operators import DocsignCreateEnvelopeOperator
from airflow_provider_docsign.operators.links import DocsignEnvelopeLink

OLD_PATH = "airflow_provider_docsign.links.DocsignEnvelopeLink"
NEW_PATH = "airflow_provider_docsign.operators.links.DocsignEnvelopeLink"


def _serializer() -> Any:
    """Airflow's DAG serializer: ``DagSerialization`` on 3.3, ``SerializedDAG`` on 2.11."""
    from airflow.serialization import serialized_objects

    return getattr(serialized_objects, "DagSerialization", None) or serialized_objects.SerializedDAG


def _import(path: str) -> Any:
    """What Airflow's ``import_string`` does with a class path."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _serialized_as_0_2() -> dict[str, Any]:
    """A DAG with a create task, serialized as 0.2 serialized it (the link under its old path on 2.11)."""
    if AIRFLOW_V_3_0_PLUS:
        from airflow.sdk import DAG
    else:  # Airflow 2.11
        from airflow import DAG  # type: ignore[no-redef]
    with DAG("docsign_serialized_0_2", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        DocsignCreateEnvelopeOperator(task_id="create", title="NDA", files=["nda.pdf"], external_id="nda-1")
    text = json.dumps(_serializer().to_dict(dag))
    if AIRFLOW_V_3_0_PLUS:
        assert NEW_PATH not in text  # stored by name and XCom key, not by class
        assert '"Docsign envelope"' in text
    else:
        assert NEW_PATH in text
        text = text.replace(NEW_PATH, OLD_PATH)
    data: dict[str, Any] = json.loads(text)
    return data


def test_both_paths_of_the_link_are_registered() -> None:
    links = get_provider_info()["extra-links"]
    assert links == [NEW_PATH, OLD_PATH]
    from airflow.providers_manager import ProvidersManager

    assert {NEW_PATH, OLD_PATH} <= set(ProvidersManager().extra_links_class_names)
    assert _import(OLD_PATH) is _import(NEW_PATH) is DocsignEnvelopeLink


def test_a_dag_serialized_by_0_2_keeps_its_docsign_envelope_link() -> None:
    restored = _serializer().from_dict(_serialized_as_0_2())
    task = restored.get_task("create")
    assert "Docsign envelope" in task.extra_links
    links = task.operator_extra_link_dict
    assert "Docsign envelope" in links
    if not AIRFLOW_V_3_0_PLUS:
        assert isinstance(links["Docsign envelope"], DocsignEnvelopeLink)


def test_registering_the_old_path_warns_no_airflow_process() -> None:
    # Every Airflow process loads the providers; the old path, imported by Airflow itself there, must
    # not log a deprecation nobody can act on (a DAG importing it still does: test_moved_imports.py).
    code = (
        "from airflow.providers_manager import ProvidersManager\n"
        "names = ProvidersManager().extra_links_class_names\n"
        f"assert {OLD_PATH!r} in names, names\n"
        "print('registered')\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=dict(os.environ),
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "registered" in output
    assert "moved to" not in output
