"""Recipient and field ids as a DAG really passes them: pulled with Jinja, so rendered as strings.

The create operators return the new envelope's recipient and field ids; a later task pulls one with
``{{ ti.xcom_pull(task_ids='create')['recipients'][0]['id'] }}`` and gets ``"100"``. Every place that
takes an integer id takes its ASCII digit string too, and nothing looser: ``"1e3"``, ``" 1"``, ``"+1"``,
``"1_0"``, Arabic-Indic ``"١٢"`` (which Python's ``int`` reads as 12), ``1.0`` and ``True`` are refused
before anything is sent. Counted at the sandbox: the writes each input caused.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e.e2e_helpers import build_dag, run_dag, sandbox_conn_json
from helpers import ctx, sig, signer
from template_helpers import onboarding_recipients

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS, AirflowFailException
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignAddFieldsOperator,
    DocsignCreateEnvelopeFromTemplateOperator,
    DocsignCreateEnvelopeOperator,
    DocsignDeleteFieldOperator,
    DocsignDeleteRecipientOperator,
    DocsignDistributeEnvelopeOperator,
    DocsignRejectRecipientOperator,
    DocsignRemindRecipientsOperator,
    DocsignUpdateFieldsOperator,
    DocsignUpdateRecipientsOperator,
)
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.ids import as_id

#: What is not an id, though Python's int() or str.isdigit() would take most of it.
NOT_IDS: list[Any] = [
    "1e3",
    " 1",
    "1 ",
    "+1",
    "-1",
    "1_0",
    "\u0661\u0662",  # Arabic-Indic 12
    "\uff11\uff12",  # full-width 12
    "\u00b2",  # superscript 2
    "",
    "0x1f",
    1.0,
    True,
    None,
    "9" * 19,
]


def _box(recipient_id: Any, y: float = 60) -> dict[str, Any]:
    """A SIGNATURE field in the service's shape (what DocsignAddFieldsOperator takes)."""
    return {"recipientId": recipient_id, "type": "SIGNATURE", "page": 1, "positionX": 10, "positionY": y,
            "width": 20, "height": 5}  # fmt: skip


def _writes(sandbox: SandboxServer) -> list[str]:
    return [r["path"] for r in sandbox.requests() if r["method"] != "GET"]


def _envelope(hook: DocsignHook, make_pdf: Callable[..., Path], *, sent: bool = False) -> str:
    envelope_id = hook.create_envelope(
        title="Ids",
        files=[make_pdf()],
        recipients=[
            signer(sig(positionY=10), email="ada@example.test", name="Ada"),
            signer(sig(positionY=30), email="bob@example.test", name="Bob"),
        ],
    )
    if sent:
        hook.distribute_envelope(envelope_id)
    return envelope_id


@pytest.mark.parametrize("value", NOT_IDS, ids=repr)
def test_as_id_takes_an_int_or_ascii_digits_and_nothing_else(value: Any) -> None:
    assert as_id(value) is None
    assert as_id("100") == 100
    assert as_id(100) == 100
    assert as_id("007") == 7


@pytest.mark.parametrize("value", NOT_IDS, ids=repr)
def test_what_is_not_an_id_is_refused_by_every_operator_before_a_write(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    value: Any,
) -> None:
    envelope_id = _envelope(hook, make_pdf)
    sandbox.clear_requests()
    operators: list[Any] = [
        DocsignUpdateRecipientsOperator(
            task_id="r", envelope_id=envelope_id, recipients=[{"id": value, "name": "X"}]
        ),
        DocsignUpdateFieldsOperator(task_id="f", envelope_id=envelope_id, fields=[{"id": value, "width": 9}]),
        DocsignDeleteRecipientOperator(task_id="dr", envelope_id=envelope_id, recipient_id=value),
        DocsignDeleteFieldOperator(task_id="df", envelope_id=envelope_id, field_id=value),
        DocsignRejectRecipientOperator(task_id="rj", envelope_id=envelope_id, recipient_id=value, reason="x"),
        DocsignAddFieldsOperator(task_id="af", envelope_id=envelope_id, fields=[_box(value)]),
    ]
    for op in operators:
        with pytest.raises(AirflowFailException) as err:
            op.execute(ctx())
        assert "id" in str(err.value)
        assert repr(value) in str(err.value) or "recipientId" in str(err.value)
    assert sandbox.requests() == []  # refused before even the envelope was read


def test_digit_strings_are_ids_for_every_operator(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = _envelope(hook, make_pdf)
    ada, bob = sorted(hook.get_envelope(envelope_id).recipients, key=lambda r: r.id)
    [done] = DocsignUpdateRecipientsOperator(
        task_id="r", envelope_id=envelope_id, recipients=[{"id": str(ada.id), "name": "Ada Lovelace"}]
    ).execute(ctx())
    assert (done["id"], done["name"]) == (ada.id, "Ada Lovelace")
    created = DocsignAddFieldsOperator(
        task_id="af",
        envelope_id=envelope_id,
        fields=[_box(str(bob.id))],
    ).execute(ctx())
    [new_field] = created
    assert hook.get_field(new_field).recipient_id == bob.id
    [moved] = DocsignUpdateFieldsOperator(
        task_id="f", envelope_id=envelope_id, fields=[{"id": str(new_field), "width": 12}]
    ).execute(ctx())
    assert (moved["previous_id"], moved["width"]) == (new_field, 12.0)
    gone = DocsignDeleteFieldOperator(task_id="df", envelope_id=envelope_id, field_id=str(new_field))
    assert gone.execute(ctx())["deleted"] is True
    bob_gone = DocsignDeleteRecipientOperator(task_id="dr", envelope_id=envelope_id, recipient_id=str(bob.id))
    assert bob_gone.execute(ctx())["deleted"] is True
    assert [r.id for r in hook.get_envelope(envelope_id).recipients] == [ada.id]


def test_a_rejection_and_a_reminder_take_the_id_as_a_string(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = _envelope(hook, make_pdf, sent=True)
    ada, bob = sorted(hook.get_envelope(envelope_id).recipients, key=lambda r: r.id)
    reminded = DocsignRemindRecipientsOperator(
        task_id="remind", envelope_id=envelope_id, recipients=[str(bob.id)]
    ).execute(ctx())
    assert reminded["reminded"] == [bob.id]
    counts = {row["recipientId"]: row["count"] for row in sandbox.reminders(envelope_id)["data"]}
    assert counts == {bob.id: 1}
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=r"neither a recipient id \(an integer, or its digits"):
        DocsignRemindRecipientsOperator(
            task_id="remind2", envelope_id=envelope_id, recipients=[f" {bob.id}"]
        ).execute(ctx())
    assert _writes(sandbox) == []
    rejected = DocsignRejectRecipientOperator(
        task_id="rj", envelope_id=envelope_id, recipient_id=str(ada.id), reason="said no by phone"
    ).execute(ctx())
    assert (rejected["recipient_id"], rejected["signing_status"]) == (ada.id, "REJECTED")


def test_a_template_use_takes_recipient_and_field_ids_as_strings_and_returns_the_new_ids(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    template_id = hook.create_template(
        title=f"Jinja ids {uuid.uuid4().hex[:6]}",
        files=[make_pdf(pages=2)],
        recipients=onboarding_recipients(),
    )
    template = hook.get_template(template_id)
    customer, provider = (r for r in sorted(template.recipients, key=lambda r: r.id) if r.role == "SIGNER")
    company = next(f for f in template.fields if (f.field_meta or {}).get("label") == "company")
    recipients = [
        {"id": str(customer.id), "email": "buyer@example.test", "name": "Buyer"},
        {"id": str(provider.id), "email": "sales@example.test", "name": "Sales"},
    ]
    sandbox.clear_requests()
    for bad in ("\u0661", f" {customer.id}", f"{customer.id}.0"):
        with pytest.raises(AirflowFailException, match="is not a recipient id"):
            DocsignCreateEnvelopeFromTemplateOperator(
                task_id="bad",
                template_id=template_id,
                recipients=[{**recipients[0], "id": bad}, recipients[1]],
            ).execute(ctx())
    assert _writes(sandbox) == []
    result = DocsignCreateEnvelopeFromTemplateOperator(
        task_id="use",
        template_id=template_id,
        recipients=recipients,
        prefill_fields=[{"id": str(company.id), "value": "ACME"}],
        distribute=False,
    ).execute(ctx())
    envelope = hook.get_envelope(result["envelope_id"])
    assert {"buyer@example.test", "sales@example.test"} <= {r["email"] for r in result["recipients"]}
    assert [r["id"] for r in result["recipients"]] == sorted(r.id for r in envelope.recipients)
    by_id = {f.id: f for f in envelope.fields}
    assert {f["id"] for f in result["fields"]} == set(by_id)
    for entry in result["fields"]:
        assert entry["recipient_id"] == by_id[entry["id"]].recipient_id
        assert entry["page"] == by_id[entry["id"]].page
    # A draft keeps the prefilled value in the field's fieldMeta (the real service does the same).
    assert "ACME" in {(f.field_meta or {}).get("text") for f in envelope.fields}


def test_the_hook_turns_a_digit_string_into_the_integer_the_service_wants(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = _envelope(hook, make_pdf)
    ada = min(hook.get_envelope(envelope_id).recipients, key=lambda r: r.id)
    [updated] = hook.update_recipients(envelope_id, [{"id": str(ada.id), "name": "Ada B."}])
    assert (updated.id, updated.name) == (ada.id, "Ada B.")
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError, match=r"'id' \(the recipient id"):
        hook.update_recipients(envelope_id, [{"id": "\uff11", "name": "Ada C."}])
    assert sandbox.requests() == []


# -- a real DAG: ids pulled with Jinja -------------------------------------------------------------


@pytest.fixture
def dag_env(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch, airflow_db: str) -> SandboxServer:
    """``docsign_default`` for ``dag.test()`` (the session sandbox; nobody signs by themselves)."""
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", sandbox_conn_json(sandbox))
    if not AIRFLOW_V_3_0_PLUS:
        monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "SequentialExecutor")
        from airflow.executors import executor_loader

        monkeypatch.setattr(executor_loader, "_executor_names", [])
    return sandbox


def _state(value: Any) -> str:
    return str(getattr(value, "value", value))


def test_a_dag_pulls_recipient_and_field_ids_with_jinja_and_succeeds(
    dag_env: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf("jinja.pdf")
    ext = f"jinja-{uuid.uuid4().hex[:8]}"
    created = "ti.xcom_pull(task_ids='create')"
    dag = build_dag("docsign_ids_from_jinja")
    with dag:
        create = DocsignCreateEnvelopeOperator(
            task_id="create",
            title="Ids from Jinja",
            files=[str(pdf)],
            external_id=ext,
            recipients=[
                signer(sig(positionY=10), email="ada@example.test", name="Ada"),
                signer(sig(positionY=30), email="bob@example.test", name="Bob"),
            ],
        )
        envelope_id = "{{ " + created + "['envelope_id'] }}"
        fix = DocsignUpdateRecipientsOperator(
            task_id="fix_name",
            envelope_id=envelope_id,
            recipients=[{"id": "{{ " + created + "['recipients'][0]['id'] }}", "name": "Ada Corrected"}],
        )
        widen = DocsignUpdateFieldsOperator(
            task_id="widen",
            envelope_id=envelope_id,
            fields=[{"id": "{{ " + created + "['fields'][0]['id'] }}", "width": 25}],
        )
        send = DocsignDistributeEnvelopeOperator(task_id="send", envelope_id=envelope_id)
        remind = DocsignRemindRecipientsOperator(
            task_id="remind",
            envelope_id=envelope_id,
            recipients=["{{ " + created + "['recipients'][1]['id'] }}"],
        )
        create >> fix >> widen >> send >> remind
    dag_run, tis = run_dag(dag)
    assert {k: _state(ti.state) for k, ti in tis.items()} == dict.fromkeys(tis, "success")
    assert _state(dag_run.state) == "success"

    xcom = tis["create"].xcom_pull(task_ids="create")
    assert set(xcom) >= {"envelope_id", "item_ids", "external_id", "status", "recipients", "fields"}
    json.dumps(xcom)  # what a DAG pulls is plain JSON
    envelope = hook.get_envelope(xcom["envelope_id"])
    ada, bob = sorted(envelope.recipients, key=lambda r: r.id)
    assert [(r["id"], r["email"], r["role"]) for r in xcom["recipients"]] == [
        (ada.id, "ada@example.test", "SIGNER"),
        (bob.id, "bob@example.test", "SIGNER"),
    ]
    assert [f["recipient_id"] for f in xcom["fields"]] == [ada.id, bob.id]
    assert ada.name == "Ada Corrected"
    first_field = next(f for f in envelope.fields if f.id == xcom["fields"][0]["id"])
    assert first_field.width == 25.0
    counts = {row["recipientId"]: row["count"] for row in dag_env.reminders(envelope.id)["data"]}
    assert counts == {bob.id: 1}
