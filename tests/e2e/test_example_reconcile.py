"""docsign_reconcile archives a COMPLETED envelope whose webhook was lost (the sandbox's drop fault).

The sandbox has a webhook subscription; its one delivery for the envelope is dropped, so nothing else
would ever archive it. The reconcile DAG (dag.test(), real HTTP to the sandbox) finds it by its missing
manifest and archives it; a second run finds nothing left to do.
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


def test_reconcile_archives_an_envelope_whose_webhook_was_dropped(
    example_env: dict[str, Any], autosign_sandbox: SandboxServer, make_pdf: Any
) -> None:
    archive_dir = Path(example_env["archive_dir"])
    # Nobody listens on this URL, and the fault drops the delivery before it is even tried.
    autosign_sandbox.add_webhook("http://127.0.0.1:9/hook", "s3cret", ["DOCUMENT_COMPLETED"])
    autosign_sandbox.drop_webhooks(1)
    try:
        hook = DocsignHook()
        envelope_id = hook.create_envelope(
            title="Missed webhook", files=[make_pdf()], recipients=numbered_signers(1)
        )
        hook.distribute_envelope(envelope_id)  # the sandbox's signers sign by themselves
        autosign_sandbox.wait_status(envelope_id, "COMPLETED", timeout=60)
        deliveries: list[dict[str, Any]] = []
        for _ in range(200):  # bounded (~10 s): the delivery is queued right after the status flips
            log = autosign_sandbox.webhooks()["deliveries"]
            deliveries = [d for d in log if d["envelopeId"] == envelope_id]
            if deliveries:
                break
            time.sleep(0.05)
        assert [d.get("dropped") for d in deliveries] == [True]
    finally:
        autosign_sandbox.clear_webhooks()
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
