"""Operator edge cases, calling ``execute`` directly against the sandbox over HTTP (no DAG run needed).

The task instance is a minimal stand-in that records XCom pushes and carries the try number; every
request goes to the sandbox for real.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import requests
from helpers import ctx

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS, AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignAddEnvelopeItemsOperator,
    DocsignAddFieldsOperator,
    DocsignAddRecipientsOperator,
    DocsignCancelEnvelopeOperator,
    DocsignCreateEnvelopeOperator,
    DocsignDeleteEnvelopeItemOperator,
    DocsignDistributeEnvelopeOperator,
    DocsignRejectRecipientOperator,
)
from airflow_provider_docsign.operators.links import ENVELOPE_LINK_XCOM_KEY
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


def paths(sb: SandboxServer, method: str, prefix: str) -> list[str]:
    return [r["path"] for r in sb.requests() if r["method"] == method and r["path"].startswith(prefix)]


def raw_post(sb: SandboxServer, path: str, body: dict[str, Any]) -> Any:
    """Test setup straight through the API (what another client could do), bypassing our checks."""
    response = requests.post(
        f"{sb.base_url}{path}", json=body, headers={"Authorization": sb.api_key}, timeout=10
    )
    response.raise_for_status()
    return response.json()


# -- create --------------------------------------------------------------------------------------


def test_create_pushes_envelope_id_and_link_and_returns_item_ids_in_file_order(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path], api_key: str
) -> None:
    files = [make_pdf(f"f{n}.pdf") for n in range(3)]
    context = ctx()
    ext = f"order-{uuid.uuid4().hex}"
    op = DocsignCreateEnvelopeOperator(
        task_id="create", title="Three files", files=[str(f) for f in files], external_id=ext
    )
    result = op.execute(context)
    envelope = hook.get_envelope(result["envelope_id"])
    assert result == {
        "envelope_id": envelope.id,
        "item_ids": envelope.item_ids,
        "external_id": ext,
        "status": "DRAFT",
        "recipients": [],  # none given; tests/hostile/test_ids_from_jinja.py checks them when given
        "fields": [],
    }
    assert [i.title for i in envelope.items] == [f.name for f in files]
    pushed = context["ti"].pushed
    assert pushed["envelope_id"] == envelope.id
    assert pushed[ENVELOPE_LINK_XCOM_KEY]["team_url"] == envelope.raw["team"]["url"]
    assert api_key not in json.dumps([result, pushed])


def test_create_retry_reuses_fails_or_creates_by_if_exists(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf("c.pdf")
    ext = f"modes-{uuid.uuid4().hex}"
    first = DocsignCreateEnvelopeOperator(task_id="c", title="Modes", files=[str(pdf)], external_id=ext)
    envelope_id = first.execute(ctx())["envelope_id"]

    # Try 2, reuse: adopts the envelope, no second create.
    sandbox.clear_requests()
    again = DocsignCreateEnvelopeOperator(task_id="c", title="Modes", files=[str(pdf)], external_id=ext)
    assert again.execute(ctx(try_number=2))["envelope_id"] == envelope_id
    assert paths(sandbox, "POST", "/envelope/create") == []

    # Try 2, fail: refuses.
    failing = DocsignCreateEnvelopeOperator(
        task_id="c", title="Modes", files=[str(pdf)], external_id=ext, if_exists="fail"
    )
    with pytest.raises(AirflowFailException, match=envelope_id):
        failing.execute(ctx(try_number=2))

    # Try 2, reuse, but the title differs: the externalId is not unique per logical envelope.
    other = DocsignCreateEnvelopeOperator(task_id="c", title="Other title", files=[str(pdf)], external_id=ext)
    with pytest.raises(AirflowFailException, match="does not match"):
        other.execute(ctx(try_number=2))

    # create: always creates, so now two envelopes share the externalId ...
    creating = DocsignCreateEnvelopeOperator(
        task_id="c", title="Modes", files=[str(pdf)], external_id=ext, if_exists="create"
    )
    second_id = creating.execute(ctx(try_number=2))["envelope_id"]
    assert second_id != envelope_id
    assert sorted(e.id for e in hook.find_envelopes_by_external_id(ext)) == sorted([envelope_id, second_id])
    # ... and a retry with reuse refuses to guess, listing both ids.
    with pytest.raises(AirflowFailException) as err:
        again.execute(ctx(try_number=2))
    assert envelope_id in str(err.value)
    assert second_id in str(err.value)


def test_ambiguous_create_in_same_try_is_found_by_external_id(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf("amb.pdf")
    ext = f"amb-{uuid.uuid4().hex}"
    sandbox.inject_fault(method="POST", path="/envelope/create", action="drop_after_commit", count=1)
    result = DocsignCreateEnvelopeOperator(
        task_id="c", title="Ambiguous", files=[str(pdf)], external_id=ext
    ).execute(ctx())
    assert [e.id for e in hook.find_envelopes_by_external_id(ext)] == [result["envelope_id"]]
    assert len(paths(sandbox, "POST", "/envelope/create")) == 1


def test_ambiguous_create_without_external_id_is_not_repeated(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf("noext.pdf")
    sandbox.inject_fault(method="POST", path="/envelope/create", action="drop_after_commit", count=1)
    # AirflowFailException: the task fails without retrying (a retry would create blindly).
    with pytest.raises(AirflowFailException, match="no external_id"):
        DocsignCreateEnvelopeOperator(task_id="c", title="No ext", files=[str(pdf)]).execute(ctx())
    assert len(paths(sandbox, "POST", "/envelope/create")) == 1


def test_create_with_missing_file_fails_before_any_request(
    sandbox: SandboxServer, docsign_conn: str, tmp_path: Path
) -> None:
    op = DocsignCreateEnvelopeOperator(
        task_id="c", title="Missing", files=[str(tmp_path / "nope.pdf")], external_id="missing-file"
    )
    with pytest.raises(AirflowFailException, match=r"nope\.pdf"):
        op.execute(ctx())
    assert sandbox.requests() == []


# -- distribute ----------------------------------------------------------------------------------


def test_distribute_refuses_signer_without_signature_and_field_beyond_last_page(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf("two.pdf", pages=2)
    envelope_id = hook.create_envelope(title="Not ready", files=[pdf], recipients=[signer()])
    envelope = hook.get_envelope(envelope_id)
    (second,) = hook.create_recipients(
        envelope_id, [{"email": "nosig@example.test", "name": "No Sig", "role": "SIGNER"}]
    )
    # The real service accepts a field on a page the PDF lacks; set one up through the API directly.
    raw_post(
        sandbox,
        "/envelope/field/create-many",
        {
            "envelopeId": envelope_id,
            "data": [
                {
                    "recipientId": envelope.recipients[0].id,
                    "envelopeItemId": envelope.item_ids[0],
                    "type": "TEXT",
                    "page": 5,
                    "positionX": 10,
                    "positionY": 10,
                    "width": 10,
                    "height": 5,
                }
            ],
        },
    )
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException) as err:
        DocsignDistributeEnvelopeOperator(task_id="d", envelope_id=envelope_id).execute(ctx())
    message = str(err.value)
    assert f"recipient {second.id}" in message
    assert "nosig@example.test" in message
    assert "page 5" in message
    assert "2 pages" in message
    assert paths(sandbox, "POST", "/envelope/distribute") == []
    assert hook.get_envelope(envelope_id).status == "DRAFT"


def test_distribute_already_pending_is_a_noop_and_urls_are_masked(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path], api_key: str
) -> None:
    pdf = make_pdf("p.pdf")
    envelope_id = hook.create_envelope(title="Pending", files=[pdf], recipients=[signer()])
    first = DocsignDistributeEnvelopeOperator(task_id="d", envelope_id=envelope_id).execute(ctx())
    assert first["status"] == "PENDING"
    assert "signing_url" not in first["recipients"][0]
    assert hook.get_envelope(envelope_id).status == "PENDING"

    sandbox.clear_requests()
    op = DocsignDistributeEnvelopeOperator(task_id="d", envelope_id=envelope_id, return_signing_urls=True)
    again = op.execute(ctx(try_number=2))
    assert paths(sandbox, "POST", "/envelope/distribute") == []
    (recipient,) = again["recipients"]
    assert recipient["email"] == "signer@example.test"
    assert recipient["role"] == "SIGNER"
    url = recipient["signing_url"]
    token = hook.get_envelope(envelope_id).recipients[0].raw["token"]
    assert url.endswith(f"/sign/{token}")
    assert api_key not in json.dumps(again)
    # The signing URL was registered with Airflow's secrets masker: logs show it redacted.
    if AIRFLOW_V_3_0_PLUS:
        from airflow.sdk.log import redact
    else:
        from airflow.utils.log.secrets_masker import redact  # type: ignore[no-redef]
    assert url not in str(redact(f"see {url}"))


def test_cancel_and_reject_refuse_wrong_status(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf("draft.pdf")
    envelope_id = hook.create_envelope(title="Draft", files=[pdf], recipients=[signer()])
    recipient_id = hook.get_envelope(envelope_id).recipients[0].id
    with pytest.raises(AirflowFailException, match="only a PENDING envelope can be cancelled"):
        DocsignCancelEnvelopeOperator(task_id="c", envelope_id=envelope_id).execute(ctx())
    with pytest.raises(AirflowFailException, match="PENDING"):
        DocsignRejectRecipientOperator(
            task_id="r", envelope_id=envelope_id, recipient_id=recipient_id, reason="no"
        ).execute(ctx())
    with pytest.raises(AirflowFailException, match="reason"):
        DocsignRejectRecipientOperator(
            task_id="r", envelope_id=envelope_id, recipient_id=recipient_id, reason="  "
        ).execute(ctx())
    assert hook.get_envelope(envelope_id).status == "DRAFT"
    # Cancelling twice: the second run is a no-op success.
    hook.distribute_envelope(envelope_id)
    op = DocsignCancelEnvelopeOperator(task_id="c", envelope_id=envelope_id, reason="stop")
    assert op.execute(ctx())["status"] == "CANCELLED"
    sandbox.clear_requests()
    assert op.execute(ctx(try_number=2))["status"] == "CANCELLED"
    assert paths(sandbox, "POST", "/envelope/cancel") == []


# -- items, recipients, fields -------------------------------------------------------------------


def test_add_items_then_fields_checked_against_page_counts(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = hook.create_envelope(title="Fields", files=[make_pdf("one.pdf")], recipients=[signer()])
    added = DocsignAddEnvelopeItemsOperator(
        task_id="a", envelope_id=envelope_id, files=[str(make_pdf("three.pdf", pages=3))]
    ).execute(ctx())
    envelope = hook.get_envelope(envelope_id)
    assert envelope.item_ids[-1:] == added
    rid = envelope.recipients[0].id
    stranger = rid + 1  # not this envelope's (a fixed id is some envelope's once the sandbox counted there)
    box = {"type": "SIGNATURE", "positionX": 50, "positionY": 50, "width": 10, "height": 5}

    sandbox.clear_requests()
    with pytest.raises(AirflowFailException) as err:
        DocsignAddFieldsOperator(
            task_id="f",
            envelope_id=envelope_id,
            fields=[
                {**box, "recipientId": rid, "envelopeItemId": added[0], "page": 4},
                {**box, "recipientId": stranger, "envelopeItemId": added[0], "page": 1},
            ],
        ).execute(ctx())
    assert "fields[0]: page 4" in str(err.value)
    assert f"fields[1]: recipientId {stranger}" in str(err.value)
    assert paths(sandbox, "POST", "/envelope/field/create-many") == []

    ids = DocsignAddFieldsOperator(
        task_id="f",
        envelope_id=envelope_id,
        fields=[{**box, "recipientId": rid, "envelopeItemId": added[0], "page": 3}],
    ).execute(ctx())
    stored = {f.id: f for f in hook.get_envelope(envelope_id).fields}
    (new_id,) = ids
    assert stored[new_id].page == 3
    assert stored[new_id].envelope_item_id == added[0]

    # A retry of the task adopts the field the first try created instead of creating it twice.
    sandbox.clear_requests()
    retry = DocsignAddFieldsOperator(
        task_id="f",
        envelope_id=envelope_id,
        fields=[{**box, "recipientId": rid, "envelopeItemId": added[0], "page": 3}],
    )
    assert retry.execute(ctx(try_number=2)) == ids
    assert paths(sandbox, "POST", "/envelope/field/create-many") == []
    assert len(hook.get_envelope(envelope_id).fields) == len(stored)


def test_add_recipients_skips_ones_added_by_a_failed_try(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = hook.create_envelope(title="People", files=[make_pdf("p.pdf")], recipients=[signer()])
    people = [
        {"email": "cc@example.test", "name": "Cee", "role": "CC"},
        {"email": "viewer@example.test", "name": "Vee", "role": "VIEWER"},
    ]
    first = DocsignAddRecipientsOperator(task_id="r", envelope_id=envelope_id, recipients=people[:1])
    (cc_id,) = first.execute(ctx())
    both = DocsignAddRecipientsOperator(task_id="r", envelope_id=envelope_id, recipients=people)
    ids = both.execute(ctx(try_number=2))
    assert ids[0] == cc_id
    roles = {r.id: (r.email, r.role) for r in hook.get_envelope(envelope_id).recipients}
    assert roles[ids[1]] == ("viewer@example.test", "VIEWER")
    assert len(roles) == 3

    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=r"recipients\[0\].*role 'BOSS'"):
        DocsignAddRecipientsOperator(
            task_id="r", envelope_id=envelope_id, recipients=[{"email": "b@example.test", "role": "BOSS"}]
        ).execute(ctx())
    assert sandbox.requests() == []


def test_delete_item_retry_after_it_is_gone_succeeds(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = hook.create_envelope(
        title="Delete", files=[make_pdf("a.pdf"), make_pdf("b.pdf")], recipients=[signer()]
    )
    keep, drop = hook.get_envelope(envelope_id).item_ids
    op = DocsignDeleteEnvelopeItemOperator(task_id="x", envelope_id=envelope_id, envelope_item_id=drop)
    assert op.execute(ctx())["deleted_field_ids"] == []
    assert hook.get_envelope(envelope_id).item_ids == [keep]
    assert op.execute(ctx(try_number=2))["envelope_item_id"] == drop
    with pytest.raises(AirflowFailException, match="not an item"):
        op.execute(ctx(try_number=1))


def test_create_from_object_storage_path_and_file_uri(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    """ObjectStoragePath objects and ``file://`` URIs are uploaded byte for byte, in order."""
    import hashlib

    from airflow_provider_docsign._compat import ObjectStoragePath

    first_pdf = make_pdf("stored.pdf", pages=2)
    second_pdf = make_pdf("uri.pdf")
    result = DocsignCreateEnvelopeOperator(
        task_id="c",
        title="From object storage",
        files=[ObjectStoragePath(f"file://{first_pdf}"), f"file://{second_pdf}"],
        recipients=[signer(fields=[signature(0, 2)])],
        external_id=f"uri-{uuid.uuid4().hex}",
    ).execute(ctx())
    first, second = result["item_ids"]

    def sha(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    assert sha(sandbox.item_bytes(first, version="original")) == sha(first_pdf.read_bytes())
    assert sha(sandbox.item_bytes(second, version="original")) == sha(second_pdf.read_bytes())
    assert [i.title for i in hook.get_envelope(result["envelope_id"]).items] == ["stored.pdf", "uri.pdf"]


def test_parsing_a_dag_of_every_operator_sends_nothing_to_the_service(
    sandbox: SandboxServer, docsign_conn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a working connection configured, parsing still makes no connection look-up and no request."""
    import importlib.util

    # The DAG file and the look-up spy of the parse-time unit test, loaded by path.
    spec = importlib.util.spec_from_file_location(
        "_docsign_operators_parse", Path(__file__).parents[1] / "unit" / "test_operators_parse.py"
    )
    assert spec is not None
    assert spec.loader is not None
    parse_tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(parse_tests)

    lookups = parse_tests._spy_connection_lookups(monkeypatch)
    (tmp_path / "every_operator.py").write_text(parse_tests.DAG_FILE)
    sandbox.clear_requests()
    try:
        from airflow.dag_processing.dagbag import DagBag  # Airflow 3

        bag = DagBag(dag_folder=str(tmp_path))
    except ImportError:  # Airflow 2.11
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]

        bag = DagBag(dag_folder=str(tmp_path), include_examples=False)
    assert bag.import_errors == {}
    assert len(bag.dags["docsign_every_operator"].tasks) == len(parse_tests.MINE)
    assert lookups == []
    assert sandbox.requests() == []


def test_add_items_retry_and_lost_answer_adopt_instead_of_duplicating(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = hook.create_envelope(title="Add twice", files=[make_pdf("base.pdf")], recipients=[signer()])
    annex = make_pdf("annex.pdf")
    op = DocsignAddEnvelopeItemsOperator(task_id="a", envelope_id=envelope_id, files=[str(annex)])
    # The DAG run started a minute ago (Airflow's clock): the retry places that on the service's clock.
    run = SimpleNamespace(start_date=datetime.now(timezone.utc) - timedelta(seconds=60))
    added = op.execute({**ctx(), "dag_run": run})
    # A retry of the task finds the file already added by the first try (the audit log dates its
    # upload after the run's start): nothing is uploaded again.
    sandbox.clear_requests()
    assert op.execute({**ctx(try_number=2), "dag_run": run}) == added
    assert paths(sandbox, "POST", "/envelope/item/create-many") == []
    # The upload commits but the answer is lost: the same try finds the new item instead of failing.
    prices = make_pdf("prices.pdf")
    sandbox.inject_fault(
        method="POST", path="/envelope/item/create-many", action="drop_after_commit", count=1
    )
    lost = DocsignAddEnvelopeItemsOperator(task_id="b", envelope_id=envelope_id, files=[str(prices)]).execute(
        ctx()
    )
    envelope = hook.get_envelope(envelope_id)
    assert [i.title for i in envelope.items] == ["base.pdf", "annex.pdf", "prices.pdf"]
    assert envelope.item_ids[1:] == [*added, *lost]
