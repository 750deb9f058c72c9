"""docsign_reconcile archives a COMPLETED envelope whose webhook was lost (the sandbox's drop fault).

The sandbox has a webhook subscription; its one delivery for the envelope is dropped, so nothing else
would ever archive it. The reconcile DAG (dag.test(), real HTTP to the sandbox) finds it by its missing
manifest and archives it; a second run finds nothing left to do. On S3 (moto) the same holds for an
envelope inside a folder, and what is already archived is not archived again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import run_example, task_states
from helpers import numbered_signers

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.e2e


def _state(value: Any) -> str:
    return str(getattr(value, "value", value))


def _completed_with_dropped_webhook(
    sandbox: SandboxServer, make_pdf: Any, folder_id: str | None = None
) -> str:
    """A COMPLETED envelope whose only DOCUMENT_COMPLETED delivery the sandbox dropped."""
    # Nobody listens on this URL, and the fault drops the delivery before it is even tried.
    sandbox.add_webhook("http://127.0.0.1:9/hook", "s3cret", ["DOCUMENT_COMPLETED"])
    sandbox.drop_webhooks(1)
    try:
        hook = DocsignHook()
        envelope_id = hook.create_envelope(
            title="Missed webhook", files=[make_pdf()], recipients=numbered_signers(1), folder_id=folder_id
        )
        hook.distribute_envelope(envelope_id)  # the sandbox's signers sign by themselves
        sandbox.wait_status(envelope_id, "COMPLETED", timeout=60)
        deliveries: list[dict[str, Any]] = []
        for _ in range(200):  # bounded (~10 s): the delivery is queued right after the status flips
            log = sandbox.webhooks()["deliveries"]
            deliveries = [d for d in log if d["envelopeId"] == envelope_id]
            if deliveries:
                break
            time.sleep(0.05)
        assert [d.get("dropped") for d in deliveries] == [True]
    finally:
        sandbox.clear_webhooks()
    return envelope_id


def test_reconcile_archives_an_envelope_whose_webhook_was_dropped(
    example_env: dict[str, Any], autosign_sandbox: SandboxServer, make_pdf: Any
) -> None:
    archive_dir = Path(example_env["archive_dir"])
    envelope_id = _completed_with_dropped_webhook(autosign_sandbox, make_pdf)
    # Every other COMPLETED envelope of this module's sandbox is archived too, which is the point.
    dag_run = run_example("docsign_reconcile", **example_env)
    assert _state(dag_run.state) == "success", task_states(dag_run)
    manifest = archive_dir / envelope_id / "manifest.json"
    assert manifest.exists()
    assert json.loads(manifest.read_text())["envelope_id"] == envelope_id

    again = run_example("docsign_reconcile", **example_env)
    assert _state(again.state) == "success"
    states = task_states(again)
    # Nothing left: the mapped archive task has no instance to run (0 expanded, or skipped).
    assert [s for (task, _), s in states.items() if task == "archive" and s == "success"] == []


def _archived(run: Any) -> list[str]:
    """The envelope ids the run's mapped archive task archived."""
    return sorted(
        ti.xcom_pull(task_ids="find_unarchived")[ti.map_index]
        for ti in run.get_task_instances()
        if ti.task_id == "archive" and _state(ti.state) == "success"
    )


def _objects(client: Any, bucket: str) -> dict[str, Any]:
    listed = client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {o["Key"]: (o["ETag"], o["LastModified"]) for o in listed}


def test_reconcile_on_s3_archives_only_what_is_missing_in_every_folder(
    example_env: dict[str, Any],
    autosign_sandbox: SandboxServer,
    make_pdf: Any,
    make_s3_bucket: Any,
) -> None:
    conn, bucket = "docsign_reconcile_s3", "docsign-reconcile-archive"
    client = make_s3_bucket(bucket, conn_id=conn)
    example_env["archive_dir"] = f"s3://{conn}@{bucket}/signed"
    hook = DocsignHook()
    first = hook.create_envelope(title="Archived once", files=[make_pdf()], recipients=numbered_signers(1))
    hook.distribute_envelope(first)
    autosign_sandbox.wait_status(first, "COMPLETED", timeout=60)

    run = run_example("docsign_reconcile", **example_env)
    assert _state(run.state) == "success", task_states(run)
    assert first in _archived(run)
    before = _objects(client, bucket)
    assert f"signed/{first}/manifest.json" in before

    # A contract in a folder (the service lists the root only without folderId) whose webhook is lost.
    folder = hook.create_folder("Reconcile contracts")
    in_folder = _completed_with_dropped_webhook(autosign_sandbox, make_pdf, folder_id=folder.id)
    run = run_example("docsign_reconcile", **example_env)
    assert _state(run.state) == "success", task_states(run)
    assert _archived(run) == [in_folder]  # nothing already archived is archived again
    after = _objects(client, bucket)
    assert {k: v for k, v in after.items() if k in before} == before  # not rewritten either
    manifest = json.loads(
        client.get_object(Bucket=bucket, Key=f"signed/{in_folder}/manifest.json")["Body"].read()
    )
    assert manifest["envelope_id"] == in_folder
    assert all(f["uri"].startswith(f"s3://{bucket}/signed/{in_folder}/") for f in manifest["files"])
