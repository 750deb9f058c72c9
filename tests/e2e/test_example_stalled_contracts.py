"""docsign_stalled_contracts against the sandbox (dag.test(), real HTTP): three envelopes in a folder,
one to remind, one with an expired link, one too old; each gets its action and ends in its state, the
report says so, and the requests are the list calls (the expired-link filter among them) plus one write
per action."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import run_example, sandbox_conn_json, task_states
from helpers import numbered_signers

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.e2e

WRITES = ("/envelope/redistribute", "/envelope/cancel")


@pytest.fixture
def stalled_env(
    sandbox: SandboxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, airflow_db: str
) -> dict[str, Any]:
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", sandbox_conn_json(sandbox))
    if not AIRFLOW_V_3_0_PLUS:
        monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "SequentialExecutor")
        from airflow.executors import executor_loader

        monkeypatch.setattr(executor_loader, "_executor_names", [])
    return {"report_dir": str(tmp_path / "reports"), "remind_after_days": 3, "cancel_after_days": 30}


def _state(value: Any) -> str:
    return str(getattr(value, "value", value))


def _report(report_dir: str) -> dict[str, dict[str, Any]]:
    [path] = sorted(Path(report_dir).glob("stalled-*.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {row["envelope_id"]: row for row in rows}


def _writes(sandbox: SandboxServer) -> list[dict[str, Any]]:
    return [r for r in sandbox.requests(bodies=True) if r["path"] in WRITES]


def test_reminds_renews_and_cancels_each_once(
    stalled_env: dict[str, Any], sandbox: SandboxServer, make_pdf: Any
) -> None:
    hook = DocsignHook()
    folder = hook.create_folder(f"stalled-{uuid.uuid4().hex[:8]}")

    def pending(title: str, days_old: float) -> str:
        envelope_id = hook.create_envelope(
            title=title, files=[make_pdf()], recipients=numbered_signers(2), folder_id=folder.id
        )
        hook.distribute_envelope(envelope_id)
        sandbox.backdate(envelope_id, days_old)
        return envelope_id

    remind = pending("Remind me", 5)
    expired = pending("Expired link", 1)
    old = pending("Too old", 40)
    quiet = pending("Fresh", 0)
    expired_signer = hook.get_envelope(expired).recipients[0]
    sandbox.expire(expired, expired_signer.id)
    sandbox.clear_requests()

    dag_run = run_example("docsign_stalled_contracts", folder_id=folder.id, **stalled_env)

    assert _state(dag_run.state) == "success", task_states(dag_run)
    # Bounded: list calls (one page of this folder: the envelopes whose link expired, as the service
    # judges, then all PENDING ones) and one write per action; no per-envelope reads.
    log = sandbox.requests(bodies=True)
    finds = [r for r in log if r["method"] == "GET"]
    assert [r["path"] for r in finds] == ["/envelope", "/envelope"]
    assert [r["body"]["params"].get("hasExpiredRecipients") for r in finds] == ["true", None]
    writes = {r["body"]["envelopeId"]: r for r in _writes(sandbox)}
    assert len(_writes(sandbox)) == 3
    remind_ids = [r.id for r in hook.get_envelope(remind).recipients]
    assert writes[remind]["path"] == "/envelope/redistribute"
    assert writes[remind]["body"]["recipients"] == remind_ids
    assert writes[expired]["body"]["recipients"] == [expired_signer.id]
    assert writes[old]["path"] == "/envelope/cancel"
    assert "no signature after 40 days" in writes[old]["body"]["reason"]

    # Final states.
    assert hook.get_envelope(old).status == "CANCELLED"
    assert hook.get_envelope(remind).status == "PENDING"
    renewed = next(r for r in hook.get_envelope(expired).recipients if r.id == expired_signer.id)
    assert datetime.fromisoformat((renewed.expires_at or "").replace("Z", "+00:00")) > datetime.now(
        timezone.utc
    )
    counts = {(row["envelopeId"], row["recipientId"]): row["count"] for row in sandbox.reminders()["data"]}
    assert all(counts[(remind, rid)] == 1 for rid in remind_ids)
    assert counts[(expired, expired_signer.id)] == 1

    report = _report(stalled_env["report_dir"])
    assert {e: row["action"] for e, row in report.items()} == {
        remind: "remind",
        expired: "renew",
        old: "cancel",
        quiet: "none",
    }
    assert report[old]["age_days"] == 40
    assert report[remind]["unsigned"] == ["s***@example.test", "s***@example.test"]
    assert "signer0@example.test" not in json.dumps(report)

    # The next day's run (same state file): nothing is repeated; the renewed link expires again.
    sandbox.expire(expired, expired_signer.id)
    sandbox.clear_requests()
    again = run_example("docsign_stalled_contracts", folder_id=folder.id, **stalled_env)
    assert _state(again.state) == "success"
    assert _writes(sandbox) == []
    report = _report(stalled_env["report_dir"])
    assert report[remind]["action"] == "none"  # reminded less than 3 days ago
    assert report[expired]["action"] == "expired_again"  # renewed once already
    assert old not in report  # CANCELLED is no longer PENDING
