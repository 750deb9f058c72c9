"""The example DAGs, unchanged, on two Celery workers that share only the broker, the database and S3.

The contract DAG and the mapped bulk DAG (12 customers, more than the 8 task slots of both workers)
run at the same time. Their task instances are spread over both workers (by the hostname recorded in
``task_instance``); the deferred sensors' triggers run in the triggerer (their logs are written by it,
not by a worker); every archived object on S3 equals the signed bytes the sandbox serves. A rejection
fails at the sensor and archives nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from stack import ARCHIVE_BUCKET, S3_CONN_ID, Stack

from .dist_helpers import archive_prefix, assert_signed_bytes, hostnames, keys, manifests

pytestmark = pytest.mark.distributed

BULK_CUSTOMERS = 12


def _trigger_logs(stack: Stack, dag_id: str, run_id: str, where: str) -> list[str]:
    folder = stack.base / where
    pattern = f"dag_id={dag_id}/run_id={run_id}/task_id=wait_for_signatures/*.log.trigger.*.log"
    return [p.read_text(errors="replace") for p in folder.rglob(pattern)]


def test_contract_and_bulk_run_on_both_workers(
    stack: Stack, api: Any, sandbox: Any, s3: Any, db: Any
) -> None:
    customers = [
        {"id": f"B-{n:03d}", "name": f"Customer {n}", "email": f"customer{n}@bulk.example"}
        for n in range(BULK_CUSTOMERS)
    ]
    contract = api.trigger("docsign_contract_signing", archive_dir=archive_prefix("celery-contract"))
    bulk = api.trigger(
        "docsign_bulk_signing_mapped", customers=customers, archive_dir=archive_prefix("celery-bulk")
    )

    for dag_id, run_id in (("docsign_contract_signing", contract), ("docsign_bulk_signing_mapped", bulk)):
        state = api.finish(dag_id, run_id)
        states = {(t["task_id"], t["map_index"]): t["state"] for t in api.task_instances(dag_id, run_id)}
        assert state == "success", {k: v for k, v in states.items() if v != "success"}
        assert set(states.values()) == {"success"}

    bulk_hosts = hostnames(db, "docsign_bulk_signing_mapped", bulk)
    assert sum(1 for task_id, _ in bulk_hosts if task_id == "create_envelope") == BULK_CUSTOMERS
    all_hosts = set(bulk_hosts.values()) | set(hostnames(db, "docsign_contract_signing", contract).values())
    assert all_hosts == {"worker1.stack.test", "worker2.stack.test"}

    # The sensors deferred: their triggers ran in the triggerer, whose log folder holds the polls;
    # no worker wrote a trigger log.
    for dag_id, run_id in (("docsign_contract_signing", contract), ("docsign_bulk_signing_mapped", bulk)):
        (trigger_log,) = _trigger_logs(stack, dag_id, run_id, "airflow-home")
        assert "reached COMPLETED" in trigger_log
        assert not _trigger_logs(stack, dag_id, run_id, "hosts")

    (contract_manifest,) = manifests(s3, "celery-contract/")
    assert contract_manifest["external_id"] == f"contract-{contract}-ACME-001"
    assert len(contract_manifest["files"]) == 3
    bulk_manifests = manifests(s3, "celery-bulk/")
    assert sorted(m["external_id"] for m in bulk_manifests) == sorted(
        f"renewal-{bulk}-{c['id']}" for c in customers
    )
    for manifest in [contract_manifest, *bulk_manifests]:
        assert manifest["status"] == "COMPLETED"
        assert_signed_bytes(s3, sandbox, manifest)


def test_connections_live_in_the_database_not_in_any_component_environment(stack: Stack, db: Any) -> None:
    """The stack added its connections with `airflow connections add`; no process has AIRFLOW_CONN_*."""
    with db.cursor() as cur:
        cur.execute("SELECT conn_id, conn_type, port FROM connection ORDER BY conn_id")
        rows = cur.fetchall()
    assert ("docsign_default", "docsign", None) in rows  # stored with no port, and the runs work
    assert any(conn_id == S3_CONN_ID for conn_id, _, _ in rows)
    for name, info in stack.procs.items():
        if not stack.alive(name):
            continue
        environ = Path(f"/proc/{info['pid']}/environ").read_bytes().split(b"\0")
        assert not [v for v in environ if v.startswith(b"AIRFLOW_CONN_")], name


def test_rejected_signer_fails_at_the_sensor_and_archives_nothing(stack: Stack, api: Any, s3: Any) -> None:
    reason = "Clause 9 is not what we agreed"
    run_id = api.trigger(
        "docsign_rejected_signer", reason=reason, archive_dir=archive_prefix("celery-rejected")
    )

    assert api.finish("docsign_rejected_signer", run_id) == "failed"
    states = {t["task_id"]: t["state"] for t in api.task_instances("docsign_rejected_signer", run_id)}
    assert states["wait_for_signatures"] == "failed"
    assert states["archive"] == "upstream_failed"
    assert keys(s3, ARCHIVE_BUCKET, "celery-rejected/") == []
    # The sensor resumed on a worker and failed there with the signer's reason in its task log.
    pattern = f"dag_id=docsign_rejected_signer/run_id={run_id}/task_id=wait_for_signatures/attempt=*.log"
    task_logs = [p.read_text(errors="replace") for p in (stack.base / "hosts").rglob(pattern)]
    assert any("REJECTED" in log and reason in log for log in task_logs), task_logs
