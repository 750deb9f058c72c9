"""Acceptance of the operators inside real Airflow tasks (``dag.test()``) against the sandbox over HTTP.

Each test runs a small DAG and then checks three things: the task states, the XCom values, and the
service's state as the sandbox reports it. Faults come from the sandbox's fault injection only.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignAddEnvelopeItemsOperator,
    DocsignAddFieldsOperator,
    DocsignAddRecipientsOperator,
    DocsignCancelEnvelopeOperator,
    DocsignCreateEnvelopeOperator,
    DocsignCreateFolderOperator,
    DocsignDeleteEnvelopeItemOperator,
    DocsignDistributeEnvelopeOperator,
    DocsignRejectRecipientOperator,
    DocsignUpdateEnvelopeItemsOperator,
)
from airflow_provider_docsign.operators.links import ENVELOPE_LINK_XCOM_KEY, DocsignEnvelopeLink
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


def signature(identifier: int = 0, page: int = 1, x: float = 10.0) -> dict[str, Any]:
    return {
        "identifier": identifier,
        "type": "SIGNATURE",
        "page": page,
        "positionX": x,
        "positionY": 80.0,
        "width": 20.0,
        "height": 5.0,
    }


def signer(email: str = "signer@example.test", fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"email": email, "name": "Sam Signer", "role": "SIGNER", "fields": fields or [signature()]}


def field_past_right_edge() -> dict[str, Any]:
    """A field whose right edge (positionX 95 + width 20) lies off the page: refused before any request."""
    return {
        "recipientId": 1,
        "type": "SIGNATURE",
        "page": 1,
        "positionX": 95,
        "positionY": 10,
        "width": 20,
        "height": 5,
    }


def _dag(dag_id: str) -> Any:
    if AIRFLOW_V_3_0_PLUS:
        from airflow.sdk import DAG
    else:  # Airflow 2.11
        from airflow import DAG  # type: ignore[no-redef]
    return DAG(
        dag_id=f"{dag_id}_{uuid.uuid4().hex[:8]}",
        schedule=None,
        start_date=datetime(2024, 1, 1),
        catchup=False,
        default_args={"retries": 0},
    )


def _serialize_to_db(dag: Any) -> None:
    """Airflow 3.x: ``dag.test()`` only runs DAGs the dag processor has serialized, so write this one.

    The DAG is built inside the test (not in a file of the dags folder), so it is written to the
    metadata database the way the dag processor would, under the ``dags-folder`` bundle.
    """
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
    from airflow.utils.session import create_session

    with create_session() as session:
        DagBundlesManager().sync_bundles_to_db(session=session)
    bag = DagBag(dag_folder=None, collect_dags=False)
    bag.bag_dag(dag)
    sync_bag_to_db(bag, "dags-folder", None)


def run(dag: Any) -> tuple[Any, dict[str, Any]]:
    """Run ``dag`` with ``dag.test()``; return the DagRun and its task instances by task id."""
    if AIRFLOW_V_3_0_PLUS:
        _serialize_to_db(dag)
    dag_run = dag.test()
    tis = {ti.task_id: ti for ti in dag_run.get_task_instances()}
    return dag_run, tis


def state(ti: Any) -> str:
    return str(getattr(ti.state, "value", ti.state))


def xcom(ti: Any, key: str = "return_value") -> Any:
    return ti.xcom_pull(task_ids=ti.task_id, key=key)


def envelopes_with_external_id(hook: DocsignHook, external_id: str) -> list[str]:
    return [e.id for e in hook.find_envelopes_by_external_id(external_id)]


def _requests(sb: SandboxServer, method: str, prefix: str) -> list[dict[str, Any]]:
    return [r for r in sb.requests() if r["method"] == method and r["path"].startswith(prefix)]


def test_create_add_update_distribute_pipeline(
    airflow_db: str,
    sandbox: SandboxServer,
    hook: DocsignHook,
    make_pdf: Callable[..., Path],
    api_key: str,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Create -> add items -> rename/reorder -> add a recipient and fields -> distribute, in one run."""
    agreement = make_pdf("agreement.pdf", pages=2)
    annex = make_pdf("annex.pdf")
    price = make_pdf("price.pdf", pages=3)
    ext = f"pipeline-{uuid.uuid4().hex}"
    dag = _dag("docsign_ops_pipeline")
    with dag:
        create = DocsignCreateEnvelopeOperator(
            task_id="create",
            title="Contract {{ dag.dag_id }}",
            files=[str(agreement), f"file://{annex}"],
            recipients=[signer(fields=[signature(0, 2), signature(1, 1, 40.0)])],
            external_id=ext,
            meta={"subject": "Please sign", "language": "en"},
        )
        add = DocsignAddEnvelopeItemsOperator(
            task_id="add", envelope_id=create.output["envelope_id"], files=[str(price)]
        )
        update = DocsignUpdateEnvelopeItemsOperator(
            task_id="update",
            envelope_id=create.output["envelope_id"],
            items=[
                {"envelopeItemId": "{{ ti.xcom_pull(task_ids='add')[0] }}", "title": "Prices", "order": 1},
                {"envelopeItemId": "{{ ti.xcom_pull(task_ids='create')['item_ids'][0] }}", "order": 2},
                {"envelopeItemId": "{{ ti.xcom_pull(task_ids='create')['item_ids'][1] }}", "order": 3},
            ],
        )
        recipients = DocsignAddRecipientsOperator(
            task_id="recipients",
            envelope_id=create.output["envelope_id"],
            recipients=[{"email": "approver@example.test", "name": "Ann Approver", "role": "APPROVER"}],
        )
        distribute = DocsignDistributeEnvelopeOperator(
            task_id="distribute", envelope_id=create.output["envelope_id"], return_signing_urls=True
        )
        add >> update >> recipients >> distribute

    # INFO, the default task log level. (At DEBUG the hook logs response bodies, which hold the
    # service's signing URLs before this operator can mask them: see the hook's own leak tests.)
    caplog.set_level("INFO")
    _, tis = run(dag)
    assert {k: state(v) for k, v in tis.items()} == dict.fromkeys(tis, "success")
    out, err = capfd.readouterr()
    assert api_key not in out + err + caplog.text

    created = xcom(tis["create"])
    envelope_id = created["envelope_id"]
    assert xcom(tis["create"], "envelope_id") == envelope_id
    assert created["external_id"] == ext
    assert created["status"] == "DRAFT"
    json.dumps(created)

    envelope = hook.get_envelope(envelope_id)
    assert envelope.title == f"Contract {dag.dag_id}"
    assert envelope.status == "PENDING"
    added = xcom(tis["add"])
    assert len(added) == 1
    # Prices moved to order 1; the two created items follow in file order.
    assert envelope.item_ids == [added[0], *created["item_ids"]]
    assert [i.order for i in envelope.items] == [1, 2, 3]
    assert envelope.items[0].title == "Prices"
    assert xcom(tis["update"])[0] == {"id": added[0], "title": "Prices", "order": 1}
    assert [i["id"] for i in xcom(tis["update"])] == envelope.item_ids

    (approver_id,) = xcom(tis["recipients"])
    assert {r.id: r.role for r in envelope.recipients}[approver_id] == "APPROVER"

    sent = xcom(tis["distribute"])
    assert sent["envelope_id"] == envelope_id
    assert sent["status"] == "PENDING"
    assert {r["email"] for r in sent["recipients"]} == {"signer@example.test", "approver@example.test"}
    assert all(r["signing_url"].startswith("http") for r in sent["recipients"])
    assert api_key not in json.dumps([xcom(tis[t]) for t in tis])
    # Signing URLs are bearer links: returned on request, but masked wherever the run logged.
    logged = out + err + caplog.text
    leaks = [line for line in logged.splitlines() for r in sent["recipients"] if r["signing_url"] in line]
    assert leaks == []
    assert {r["role"] for r in sent["recipients"]} == {"SIGNER", "APPROVER"}


def test_retry_after_commit_then_drop_leaves_one_envelope(
    airflow_db: str, sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    """The create commits, the connection drops; the second try adopts the envelope: exactly one exists."""
    pdf = make_pdf("retry.pdf")
    ext = f"retry-{uuid.uuid4().hex}"
    sandbox.inject_fault(method="POST", path="/envelope/create", action="drop_after_commit", count=1)
    dag = _dag("docsign_ops_retry")
    with dag:
        DocsignCreateEnvelopeOperator(
            task_id="create",
            title="Retried contract",
            files=[str(pdf)],
            recipients=[signer()],
            external_id=ext,
            if_exists="reuse",
            retries=1,
            retry_delay=timedelta(seconds=0),
        )
    _, tis = run(dag)
    ti = tis["create"]
    assert state(ti) == "success"
    ids = envelopes_with_external_id(hook, ext)
    assert len(ids) == 1
    result = xcom(ti)
    assert result["envelope_id"] == ids[0]
    assert len(result["item_ids"]) == 1
    # One create reached the service; the envelope was then found by externalId, not created again.
    assert len(_requests(sandbox, "POST", "/envelope/create")) == 1


def test_invalid_recipient_and_field_fail_before_any_request(
    airflow_db: str, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf("one-page.pdf", pages=1)
    dag = _dag("docsign_ops_invalid")
    with dag:
        DocsignCreateEnvelopeOperator(
            task_id="bad_create",
            title="Invalid",
            files=[str(pdf)],
            recipients=[
                {"email": "x@example.test", "name": "X", "role": "SIGNEE", "fields": [signature(0, 3)]},
            ],
            external_id=f"bad-{uuid.uuid4().hex}",
        )
        DocsignAddFieldsOperator(
            task_id="bad_fields",
            envelope_id="envelope_doesnotmatter",
            fields=[field_past_right_edge()],
        )
    sandbox.clear_requests()
    _, tis = run(dag)
    assert state(tis["bad_create"]) == "failed"
    assert state(tis["bad_fields"]) == "failed"
    assert sandbox.requests() == []


def test_invalid_payload_message_names_the_bad_field(
    docsign_conn: str, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    """The message a failed task logs names the recipient, field and problem (no request is made)."""
    from airflow_provider_docsign._compat import AirflowFailException

    pdf = make_pdf("one-page.pdf", pages=1)
    op = DocsignCreateEnvelopeOperator(
        task_id="bad_create",
        title="Invalid",
        files=[str(pdf)],
        recipients=[{"email": "x@example.test", "name": "X", "role": "SIGNER", "fields": [signature(0, 3)]}],
        external_id="bad-message",
    )
    field_op = DocsignAddFieldsOperator(
        task_id="bad_fields",
        envelope_id="envelope_whatever",
        fields=[field_past_right_edge()],
    )
    sandbox.clear_requests()
    context: Any = {"ti": _FakeTI()}
    with pytest.raises(AirflowFailException) as create_err:
        op.execute(context)
    assert "page 3" in str(create_err.value)
    assert "x@example.test" in str(create_err.value) or "recipient" in str(create_err.value)
    with pytest.raises(AirflowFailException) as field_err:
        field_op.execute(context)
    assert "fields[0]" in str(field_err.value)
    assert "positionX + width" in str(field_err.value)
    assert sandbox.requests() == []


class _FakeTI:
    """Only what the operators read from ``ti`` before any request: the try number and xcom_push."""

    try_number = 1

    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def test_update_items_catches_an_order_the_service_ignored(
    airflow_db: str, sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    first, second = make_pdf("first.pdf"), make_pdf("second.pdf")
    envelope_id = hook.create_envelope(title="Reorder me", files=[first, second], recipients=[signer()])
    item_ids = hook.get_envelope(envelope_id).item_ids
    sandbox.inject_fault(method="POST", path="/envelope/item/update-many", action="ignore_order", count=1)
    dag = _dag("docsign_ops_ignore_order")
    with dag:
        DocsignUpdateEnvelopeItemsOperator(
            task_id="update",
            envelope_id=envelope_id,
            items=[
                {"envelopeItemId": item_ids[1], "title": "Now first", "order": 1},
                {"envelopeItemId": item_ids[0], "title": "Now second", "order": 2},
            ],
        )
    _, tis = run(dag)
    assert state(tis["update"]) == "failed"
    after = hook.get_envelope(envelope_id)
    # Titles were applied, the order was not: the task noticed and failed.
    assert after.item_ids == item_ids
    assert {i.title for i in after.items} == {"Now first", "Now second"}


def test_folder_operator_twice_gives_one_folder(
    airflow_db: str, sandbox: SandboxServer, hook: DocsignHook
) -> None:
    name = f"Contracts {uuid.uuid4().hex[:8]}"
    dag = _dag("docsign_ops_folder")
    with dag:
        first = DocsignCreateFolderOperator(task_id="first", name=name)
        second = DocsignCreateFolderOperator(task_id="second", name=name)
        child = DocsignCreateFolderOperator(task_id="child", name=name, parent_id=first.output)
        first >> second >> child
    _, tis = run(dag)
    assert {k: state(v) for k, v in tis.items()} == dict.fromkeys(tis, "success")
    folder_id = xcom(tis["first"])
    assert xcom(tis["second"]) == folder_id
    child_id = xcom(tis["child"])
    assert child_id != folder_id
    same_name = [f for f in hook.list_folders() if f.name == name]
    assert sorted(f.id for f in same_name) == sorted([folder_id, child_id])
    assert {f.id: f.parent_id for f in same_name} == {folder_id: None, child_id: folder_id}
    assert len(_requests(sandbox, "POST", "/folder/create")) == 2


def test_extra_link_resolves_after_the_task_runs(
    airflow_db: str, sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf("linked.pdf")
    dag = _dag("docsign_ops_link")
    with dag:
        create = DocsignCreateEnvelopeOperator(
            task_id="create", title="Linked", files=[str(pdf)], recipients=[signer()], external_id="link-1"
        )
    _, tis = run(dag)
    ti = tis["create"]
    assert state(ti) == "success"
    envelope_id = xcom(ti)["envelope_id"]
    team_url = hook.get_envelope(envelope_id).raw["team"]["url"]
    expected = f"{hook.web_url.rstrip('/')}/t/{team_url}/documents/{envelope_id}"
    assert xcom(ti, ENVELOPE_LINK_XCOM_KEY)["envelope_id"] == envelope_id
    if AIRFLOW_V_3_0_PLUS:
        # Airflow 3 computes the link in the worker when the task ends and stores it in XCom.
        link = DocsignEnvelopeLink()
        assert xcom(ti, link.xcom_key) == expected
    else:
        assert create.get_extra_links(ti, "Docsign envelope") == expected


def test_delete_item_cancel_and_reject(
    airflow_db: str, sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    """Delete-item logs/refuses fields, reject records an external rejection, cancel cancels."""
    a, b = make_pdf("keep.pdf"), make_pdf("drop.pdf")
    # Envelope 1: two items, a field on the second; will be distributed then rejected.
    env1 = hook.create_envelope(
        title="Reject me", files=[a, b], recipients=[signer(fields=[signature(0, 1), signature(1, 1, 50.0)])]
    )
    items1 = hook.get_envelope(env1).item_ids
    # Envelope 2: a pending envelope to cancel.
    env2 = hook.create_envelope(title="Cancel me", files=[a], recipients=[signer()])
    hook.distribute_envelope(env2)
    dag = _dag("docsign_ops_delete_reject_cancel")
    with dag:
        DocsignDeleteEnvelopeItemOperator(
            task_id="refuse", envelope_id=env1, envelope_item_id=items1[1], fail_if_fields=True
        )
        delete = DocsignDeleteEnvelopeItemOperator(
            task_id="delete", envelope_id=env1, envelope_item_id=items1[1]
        )
        distribute = DocsignDistributeEnvelopeOperator(task_id="distribute", envelope_id=env1)
        reject = DocsignRejectRecipientOperator(
            task_id="reject",
            envelope_id=env1,
            recipient_id="{{ ti.xcom_pull(task_ids='distribute')['recipients'][0]['id'] }}",
            reason="Declined by phone",
        )
        DocsignCancelEnvelopeOperator(task_id="cancel", envelope_id=env2, reason="No longer needed")
        delete >> distribute >> reject
    _, tis = run(dag)
    assert state(tis["refuse"]) == "failed"
    assert {k: state(tis[k]) for k in ("delete", "distribute", "reject", "cancel")} == dict.fromkeys(
        ("delete", "distribute", "reject", "cancel"), "success"
    )
    deleted = xcom(tis["delete"])
    assert deleted["envelope_item_id"] == items1[1]
    assert len(deleted["deleted_field_ids"]) == 1
    assert sandbox.wait_status(env1, "REJECTED", timeout=10)
    after1 = hook.get_envelope(env1)
    assert after1.item_ids == items1[:1]
    assert after1.recipients[0].signing_status == "REJECTED"
    assert after1.recipients[0].rejection_reason == "Declined by phone"
    assert xcom(tis["cancel"]) == {"envelope_id": env2, "status": "CANCELLED"}
    assert hook.get_envelope(env2).status == "CANCELLED"
