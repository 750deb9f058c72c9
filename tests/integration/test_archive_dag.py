"""The archive operator inside a real ``dag.test()`` run: templating, XCom and the asset event."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import asset_events, completed_envelope

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS, Asset, AssetAlias
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


DAG_FILE = """
from __future__ import annotations

import pendulum

try:
    from airflow.sdk import DAG
except ImportError:  # Airflow 2.11
    from airflow import DAG

from airflow_provider_docsign.operators import DocsignArchiveSignedDocumentsOperator

with DAG(
    dag_id="docsign_archive_dag_test",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
):
    DocsignArchiveSignedDocumentsOperator(
        task_id="archive",
        envelope_id="{{ dag_run.conf['envelope_id'] }}",
        destination=DESTINATION,
    )
    DocsignArchiveSignedDocumentsOperator(
        task_id="archive_templated",
        envelope_id="{{ dag_run.conf['envelope_id'] }}",
        destination="{{ dag_run.conf['templated_destination'] }}",
        asset_alias="docsign-contracts-archived",
    )
"""


def _load_dag(dags_dir: Path, destination: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Write the DAG file into its own bundle folder and parse it the way the dag processor does.

    Airflow 3's ``dag.test()`` runs DAGs from a bundle, so the test points the ``dags-folder`` bundle
    at a temporary folder (restored by monkeypatch afterwards).
    """
    dags_dir.mkdir()
    (dags_dir / "docsign_archive_dag_test.py").write_text(
        DAG_FILE.replace("DESTINATION", repr(str(destination)))
    )
    bundle = {
        "name": "dags-folder",
        "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
        "kwargs": {"path": str(dags_dir)},
    }
    monkeypatch.setenv("AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST", json.dumps([bundle]))
    if AIRFLOW_V_3_0_PLUS:
        from airflow.dag_processing.dagbag import DagBag

        bag = DagBag(dag_folder=str(dags_dir))  # examples are off (AIRFLOW__CORE__LOAD_EXAMPLES)
    else:  # Airflow 2.11
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]

        bag = DagBag(dag_folder=str(dags_dir), include_examples=False)
    assert not bag.import_errors, bag.import_errors
    return bag.dags["docsign_archive_dag_test"]


def test_archive_runs_in_dag_test_and_emits_asset_events_directly_and_through_an_alias(
    airflow_db: str,
    docsign_conn: str,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hook = DocsignHook()
    files = [make_pdf("dag-a.pdf", title="Agreement"), make_pdf("dag-b.pdf", title="Annex", pages=2)]
    envelope_id = completed_envelope(hook, sandbox, files, title="DAG contract", external_id="DAG-1")
    dest = tmp_path / "archive"
    dag = _load_dag(tmp_path / "dags", dest, monkeypatch)
    task = dag.get_task("archive")
    expected_uri = f"file://{dest}"
    assert [getattr(o, "uri", None) for o in task.outlets] == [expected_uri]
    assert isinstance(task.outlets[0], Asset)

    if not AIRFLOW_V_3_0_PLUS:
        # Airflow 2.11's dag.test() does not write the DAG (and its outlet datasets) to the database
        # the way the dag processor does; without the dataset row no event can be recorded.
        dag.sync_to_db()
    templated = tmp_path / "templated"
    alias_task = dag.get_task("archive_templated")
    assert len(alias_task.outlets) == 1
    assert isinstance(alias_task.outlets[0], AssetAlias)
    assert alias_task.outlets[0].name == "docsign-contracts-archived"
    dag_run = dag.test(run_conf={"envelope_id": envelope_id, "templated_destination": str(templated)})

    state = dag_run.state.value if hasattr(dag_run.state, "value") else dag_run.state
    assert state == "success"
    manifest = json.loads((dest / "DAG-1" / "manifest.json").read_text())
    assert manifest["envelope_id"] == envelope_id
    for entry in manifest["files"]:
        data = Path(entry["uri"][len("file://") :]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert entry["sha256"] == hashlib.sha256(sandbox.item_bytes(entry["item_id"], "signed")).hexdigest()
    tis = {ti.task_id: ti for ti in dag_run.get_task_instances()}
    assert tis["archive"].xcom_pull(task_ids="archive") == manifest
    events = asset_events(expected_uri)
    assert any(e.get("envelope_id") == envelope_id and e.get("files") == 2 for e in events), events
    # the templated task emitted its rendered destination through the alias
    assert (
        tis["archive_templated"].xcom_pull(task_ids="archive_templated")["destination"]
        == f"file://{templated}"
    )
    alias_events = asset_events(f"file://{templated}")
    assert any(e.get("envelope_id") == envelope_id for e in alias_events), alias_events
