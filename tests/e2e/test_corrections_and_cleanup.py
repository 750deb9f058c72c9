"""Issue 32's acceptance, in real Airflow runs (``dag.test()``) against the sandbox over HTTP:

* a draft gets an attachment, a corrected recipient e-mail and a moved field, then is sent, signed and
  archived;
* a rejected envelope is duplicated and sent again;
* the clean-up operator in dry-run lists exactly the seeded old drafts, then deletes them; its first
  try loses the answer of a delete (the sandbox drops the connection after committing it) and the
  task's retry finishes the job;
* ``DocsignNotifier`` in a failing task's ``on_failure_callback`` sends a template: exactly one
  envelope is created, counted at the sandbox.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import build_dag, run_dag, sandbox_conn_json

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.notifications import DocsignNotifier
from airflow_provider_docsign.operators import (
    DocsignAddAttachmentsOperator,
    DocsignArchiveSignedDocumentsOperator,
    DocsignCreateEnvelopeOperator,
    DocsignDeleteEnvelopesOperator,
    DocsignDistributeEnvelopeOperator,
    DocsignDuplicateEnvelopeOperator,
    DocsignUpdateFieldsOperator,
    DocsignUpdateRecipientsOperator,
)
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

try:
    from airflow.sdk import task
except ImportError:  # Airflow 2.11
    from airflow.decorators import task

pytestmark = pytest.mark.e2e

TERMS = {"label": "Terms and conditions", "url": "https://example.com/terms"}


@pytest.fixture
def plain_env(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch, airflow_db: str) -> SandboxServer:
    """``docsign_default`` pointing at the session sandbox (signers act only when a test says so)."""
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", sandbox_conn_json(sandbox))
    if not AIRFLOW_V_3_0_PLUS:
        monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "SequentialExecutor")
        from airflow.executors import executor_loader

        monkeypatch.setattr(executor_loader, "_executor_names", [])
    return sandbox


def state(obj: Any) -> str:
    value = getattr(obj, "state", obj)
    return str(getattr(value, "value", value))


def ti_states(tis: dict[str, Any]) -> dict[str, str]:
    return {k: state(v) for k, v in tis.items()}


def xcom(ti: Any) -> Any:
    return ti.xcom_pull(task_ids=ti.task_id)


def corrections(envelope_id: str) -> dict[str, Any]:
    """The task that reads the draft and says what to correct (ids are known only at run time)."""
    hook = DocsignHook()
    envelope = hook.get_envelope(envelope_id)
    return {
        "recipients": [{"id": envelope.recipients[0].id, "email": "right.signer@example.test"}],
        "fields": [{"id": envelope.fields[0].id, "page": 2, "positionX": 55, "positionY": 70}],
    }


def test_a_corrected_draft_is_sent_signed_and_archived(
    example_env: dict[str, Any], autosign_sandbox: SandboxServer, make_pdf: Any
) -> None:
    archive_dir = Path(example_env["archive_dir"])
    ext = f"corrected-{uuid.uuid4().hex[:8]}"
    dag = build_dag("docsign_corrected_draft")
    with dag:
        create = DocsignCreateEnvelopeOperator(
            task_id="create",
            title="Supply agreement",
            files=[str(make_pdf("agreement.pdf", pages=2))],
            recipients=[
                {
                    "email": "wrong.signer@example.test",
                    "name": "Sam Signer",
                    "role": "SIGNER",
                    "fields": [
                        {
                            "identifier": 0,
                            "type": "SIGNATURE",
                            "page": 1,
                            "positionX": 10,
                            "positionY": 10,
                            "width": 20,
                            "height": 5,
                        }
                    ],
                }
            ],
            external_id=ext,
        )
        envelope_id = create.output["envelope_id"]
        plan = task(task_id="plan")(corrections)(envelope_id)
        attach = DocsignAddAttachmentsOperator(task_id="attach", envelope_id=envelope_id, attachments=[TERMS])
        fix = DocsignUpdateRecipientsOperator(
            task_id="fix_email", envelope_id=envelope_id, recipients=plan["recipients"]
        )
        move = DocsignUpdateFieldsOperator(
            task_id="move_field", envelope_id=envelope_id, fields=plan["fields"]
        )
        send = DocsignDistributeEnvelopeOperator(task_id="send", envelope_id=envelope_id)
        wait = DocsignEnvelopeSensor(
            task_id="wait", envelope_id=envelope_id, deferrable=False, poke_interval=1, timeout=120
        )
        archive = DocsignArchiveSignedDocumentsOperator(
            task_id="archive", envelope_id=envelope_id, destination=str(archive_dir)
        )
        plan >> attach >> fix >> move >> send >> wait >> archive
    dag_run, tis = run_dag(dag)
    assert state(dag_run) == "success", ti_states(tis)
    hook = DocsignHook()
    [envelope] = hook.find_envelopes_by_external_id(ext)
    final = hook.get_envelope(envelope.id)
    assert final.status == "COMPLETED"
    assert [r.email for r in final.recipients] == ["right.signer@example.test"]
    [field] = final.fields
    assert (field.page, field.position_x, field.position_y) == (2, 55.0, 70.0)
    assert field.id == xcom(tis["move_field"])[0]["id"] != xcom(tis["plan"])["fields"][0]["id"]
    assert [(a.label, a.url) for a in hook.find_attachments(envelope.id)] == [(TERMS["label"], TERMS["url"])]
    manifest = json.loads(next(archive_dir.rglob("manifest.json")).read_text())
    assert manifest["envelope_id"] == envelope.id
    assert manifest["status"] == "COMPLETED"
    [item] = manifest["files"]
    assert (archive_dir / ext / Path(item["path"]).name).read_bytes() == autosign_sandbox.item_bytes(
        final.items[0].id
    )


def test_a_rejected_envelope_is_duplicated_and_sent_again(plain_env: SandboxServer, make_pdf: Any) -> None:
    hook = DocsignHook()
    source = hook.create_envelope(
        title="Offer",
        files=[make_pdf()],
        recipients=[
            {
                "email": "buyer@example.test",
                "name": "B",
                "role": "SIGNER",
                "fields": [
                    {
                        "identifier": 0,
                        "type": "SIGNATURE",
                        "page": 1,
                        "positionX": 10,
                        "positionY": 10,
                        "width": 20,
                        "height": 5,
                    }
                ],
            }
        ],
        external_id="offer-1",
    )
    hook.distribute_envelope(source)
    plain_env.reject(source, hook.get_envelope(source).recipients[0].id, "wrong price")
    plain_env.wait_status(source, "REJECTED", timeout=20)
    ext = f"offer-1-resent-{uuid.uuid4().hex[:6]}"
    dag = build_dag("docsign_resend_rejected")
    with dag:
        dup = DocsignDuplicateEnvelopeOperator(
            task_id="duplicate", envelope_id=source, title="Offer (corrected)", external_id=ext
        )
        send = DocsignDistributeEnvelopeOperator(task_id="send", envelope_id=dup.output["envelope_id"])
        dup >> send
    dag_run, tis = run_dag(dag)
    assert state(dag_run) == "success", ti_states(tis)
    copy_id = xcom(tis["duplicate"])["envelope_id"]
    assert copy_id != source
    copy = hook.get_envelope(copy_id)
    assert (copy.status, copy.title, copy.external_id) == ("PENDING", "Offer (corrected)", ext)
    assert [r.signing_status for r in copy.recipients] == ["NOT_SIGNED"]
    assert hook.get_envelope(source).status == "REJECTED"


def test_cleanup_dry_run_lists_the_old_drafts_then_deletes_them_and_the_retry_finishes(
    plain_env: SandboxServer, make_pdf: Any
) -> None:
    hook = DocsignHook()
    folder = hook.create_folder(f"retention-{uuid.uuid4().hex[:6]}").id
    old = plain_env.seed(
        [
            {
                "title": f"old draft {i}",
                "status": "DRAFT",
                "folderId": folder,
                "createdAt": f"2026-0{i + 1}-10T08:00:00.000Z",
            }
            for i in range(3)
        ]
    )
    young = [
        hook.create_envelope(title=f"new draft {i}", files=[make_pdf()], folder_id=folder) for i in range(2)
    ]
    completed_old = plain_env.seed(
        [
            {
                "title": "signed",
                "status": "COMPLETED",
                "folderId": folder,
                "createdAt": "2026-01-01T08:00:00.000Z",
            }
        ]
    )
    # The first delete is committed, but its answer is lost: the first try fails, the retry finishes.
    plain_env.inject_fault(method="POST", path="/envelope/delete", action="drop_after_commit", count=1)
    query = {"status": "DRAFT", "folder_id": folder, "older_than_days": 30}
    dag = build_dag("docsign_retention", default_args={"retries": 1, "retry_delay": timedelta(seconds=0)})
    with dag:
        dry = DocsignDeleteEnvelopesOperator(task_id="dry_run", dry_run=True, **query)
        delete = DocsignDeleteEnvelopesOperator(task_id="delete", **query)
        dry >> delete
    dag_run, tis = run_dag(dag)
    assert state(dag_run) == "success", ti_states(tis)
    assert [row["id"] for row in xcom(tis["dry_run"])["selected"]] == old
    assert tis["delete"].try_number == 2  # the first try failed on the lost answer
    result = xcom(tis["delete"])
    assert (
        result["deleted"] == old[1:]
    )  # the first was deleted by the failed try, so the retry no longer sees it
    assert {e.id for e in hook.find_envelopes(folder_id=folder)} == {*young, *completed_old}
    deletes = [r for r in plain_env.requests() if r["path"] == "/envelope/delete"]
    assert len(deletes) == 3


def test_the_notifier_sends_one_envelope_from_a_failing_tasks_callback(
    plain_env: SandboxServer, make_pdf: Any
) -> None:
    hook = DocsignHook()
    template_id = hook.create_template(
        title="Incident acknowledgement",
        files=[make_pdf("incident.pdf")],
        recipients=[
            {
                "email": "oncall@placeholder.test",
                "name": "On call",
                "role": "SIGNER",
                "fields": [
                    {
                        "identifier": 0,
                        "type": "TEXT",
                        "page": 1,
                        "positionX": 10,
                        "positionY": y,
                        "width": 60,
                        "height": 5,
                        "fieldMeta": {"type": "text", "label": label},
                    }
                    for label, y in (("dag", 10), ("run", 20), ("error", 30))
                ]
                + [
                    {
                        "identifier": 0,
                        "type": "SIGNATURE",
                        "page": 1,
                        "positionX": 10,
                        "positionY": 60,
                        "width": 20,
                        "height": 5,
                    }
                ],
            }
        ],
    )
    notifier = DocsignNotifier(
        template_id=template_id,
        recipients=[{"placeholder": "On call", "email": "oncall@example.test", "name": "Olive"}],
        prefill_fields={"dag": "{{ dag.dag_id }}", "run": "{{ run_id }}", "error": "{{ exception }}"},
        title="Incident in {{ dag.dag_id }}",
        external_id="incident-{{ run_id }}",
    )
    dag = build_dag("docsign_incident")

    def fail() -> None:
        raise RuntimeError("the nightly load broke")

    with dag:
        task(task_id="load", on_failure_callback=notifier)(fail)()
    plain_env.clear_requests()
    dag_run, _ = run_dag(dag)
    assert state(dag_run) == "failed"
    uses = [r for r in plain_env.requests() if r["path"] == "/envelope/use"]
    assert len(uses) == 1
    [made] = hook.find_envelopes_by_external_id(f"incident-{dag_run.run_id}")
    envelope = hook.get_envelope(made.id)
    assert envelope.status == "PENDING"  # sent at once
    assert envelope.title == f"Incident in {dag.dag_id}"
    # The real service does not carry the template's labels onto the document's fields: find them by place.
    values = {f.position_y: f.custom_text for f in envelope.fields if f.type == "TEXT"}
    assert values[10.0] == dag.dag_id
    assert values[20.0] == dag_run.run_id
    assert "the nightly load broke" in (values[30.0] or "")
    assert [r.email for r in envelope.recipients] == ["oncall@example.test"]
