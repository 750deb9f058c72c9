"""Helpers shared by the end-to-end tests (a module with a unique name, so tests can import it)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.sandbox import SandboxServer

AIRFLOW = [sys.executable, "-m", "airflow"]
DAGS_FOLDER = Path(__file__).resolve().parents[2] / "dags_examples"
EXAMPLE_DAG_IDS = {
    "docsign_contract_signing",
    "docsign_bulk_signing",
    "docsign_bulk_signing_mapped",
    "docsign_contract_metrics",
    "docsign_folders",
    "docsign_rejected_signer",
    "docsign_template_onboarding",
    "docsign_reconcile",
    "docsign_stalled_contracts",
}
if AIRFLOW_V_3_0_PLUS:  # AssetWatcher (webhooks) exists from Airflow 3.0; the file defines no DAG on 2.11
    EXAMPLE_DAG_IDS.add("docsign_archive_on_completion")


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sandbox_conn_json(server: SandboxServer) -> str:
    """A ``docsign`` connection (Airflow JSON form) for ``server``, with fast, bounded retries.

    It pins the sandbox's sealing certificate (``signing_certificate_fingerprints``), as a user pins a
    self-hosted instance's self-signed certificate.
    """
    from airflow_provider_docsign.evidence.signatures import certificate_fingerprints

    return json.dumps(
        {
            "conn_type": "docsign",
            "host": server.base_url,
            "password": server.api_key,
            "extra": {
                "max_retries": 3,
                "backoff_factor": 0.05,
                "max_retry_wait": 2,
                "timeout": 10,
                "signing_certificate_fingerprints": certificate_fingerprints(server.certificate_pem()),
            },
        }
    )


def load_dagbag() -> Any:
    """Parse ``dags_examples/`` the way the dag processor does (no examples, no DB)."""
    try:
        from airflow.dag_processing.dagbag import DagBag  # Airflow 3: examples are a separate bundle
    except ImportError:  # Airflow 2.11
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]

        return DagBag(dag_folder=str(DAGS_FOLDER), include_examples=False)
    return DagBag(dag_folder=str(DAGS_FOLDER))


def run_example(dag_id: str, **conf: Any) -> Any:
    """Run one example DAG with ``dag.test()`` and return its DagRun."""
    bag = load_dagbag()
    assert not bag.import_errors, bag.import_errors
    return bag.dags[dag_id].test(run_conf=conf)


def task_states(dag_run: Any) -> dict[tuple[str, int], str | None]:
    """``{(task_id, map_index): state}`` of every task instance of the run."""
    return {
        (ti.task_id, ti.map_index): (str(ti.state.value) if hasattr(ti.state, "value") else ti.state)
        for ti in dag_run.get_task_instances()
    }


def load_manifests(archive_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    return [(p, json.loads(p.read_text())) for p in sorted(archive_dir.rglob("manifest.json"))]


def build_dag(dag_id: str, **kwargs: Any) -> Any:
    """A DAG object built inside a test (a unique id, no schedule); run it with :func:`run_dag`."""
    import uuid
    from datetime import datetime

    if AIRFLOW_V_3_0_PLUS:
        from airflow.sdk import DAG
    else:  # Airflow 2.11
        from airflow import DAG  # type: ignore[no-redef]
    kwargs.setdefault("default_args", {"retries": 0})
    return DAG(
        dag_id=f"{dag_id}_{uuid.uuid4().hex[:8]}", schedule=None, start_date=datetime(2024, 1, 1), **kwargs
    )


def run_dag(dag: Any) -> tuple[Any, dict[str, Any]]:
    """Run a DAG built in the test with ``dag.test()``; return the DagRun and its task instances by id.

    Airflow 3's ``dag.test()`` runs only DAGs the dag processor has serialized, so the DAG is first
    written to the metadata database under the ``dags-folder`` bundle, as the dag processor would.
    """
    if AIRFLOW_V_3_0_PLUS:
        from airflow.dag_processing.bundles.manager import DagBundlesManager
        from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
        from airflow.utils.session import create_session

        with create_session() as session:
            DagBundlesManager().sync_bundles_to_db(session=session)
        bag = DagBag(dag_folder=None, collect_dags=False)
        bag.bag_dag(dag)
        sync_bag_to_db(bag, "dags-folder", None)
    dag_run = dag.test()
    return dag_run, {ti.task_id: ti for ti in dag_run.get_task_instances()}


def airflow_cli(env: dict[str, str], *args: str) -> str:
    """Run one ``airflow`` command with ``env``; fail the test with its output unless it exits 0."""
    done = subprocess.run([*AIRFLOW, *args], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (args[:2], done.stdout[-2000:], done.stderr[-2000:])
    return done.stdout


def connections_add(env: dict[str, str], conn_id: str, conn: dict[str, Any]) -> None:
    """``airflow connections add`` with the form's fields, as the README shows (no ``--conn-port``)."""
    args = [
        "connections",
        "add",
        conn_id,
        "--conn-type",
        conn["conn_type"],
        "--conn-password",
        conn["password"],
    ]
    if conn.get("host"):
        args += ["--conn-host", conn["host"]]
    if conn.get("extra"):
        args += ["--conn-extra", json.dumps(conn["extra"])]
    airflow_cli(env, *args)
