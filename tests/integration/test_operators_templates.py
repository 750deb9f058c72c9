"""Template operators, calling ``execute`` directly against the sandbox over real HTTP."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx
from template_helpers import mapped, onboarding_recipients

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignCreateEnvelopeFromTemplateOperator,
    DocsignCreateTemplateOperator,
    DocsignDuplicateTemplateOperator,
)
from airflow_provider_docsign.operators.links import ENVELOPE_LINK_XCOM_KEY
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


def uses(sandbox: SandboxServer) -> int:
    return sum(1 for r in sandbox.requests() if r["method"] == "POST" and r["path"] == "/envelope/use")


@pytest.fixture
def template_id(docsign_conn: str, make_pdf: Callable[..., Path]) -> str:
    op = DocsignCreateTemplateOperator(
        task_id="t",
        title=f"Onboarding {uuid.uuid4().hex[:8]}",
        files=[str(make_pdf("nda.pdf", pages=2))],
        recipients=onboarding_recipients(),
    )
    return str(op.execute(ctx())["template_id"])


def use_op(template_id: str, **kwargs: Any) -> DocsignCreateEnvelopeFromTemplateOperator:
    kwargs.setdefault("recipients", mapped())
    kwargs.setdefault("prefill_fields", {"company": "ACME Corp", "amount": "1250.50"})
    return DocsignCreateEnvelopeFromTemplateOperator(task_id="use", template_id=template_id, **kwargs)


def test_use_returns_the_create_operators_xcom_and_link(
    sandbox: SandboxServer, template_id: str, hook: DocsignHook, tmp_path: Path, make_pdf: Callable[..., Path]
) -> None:
    ext = f"onb-{uuid.uuid4().hex[:8]}"
    replacement = make_pdf("acme.pdf", pages=2, title="ACME contract")
    context = ctx()
    result = use_op(
        template_id, external_id=ext, files=[f"file://{replacement}"], override={"title": "NDA ACME"}
    ).execute(context)
    assert set(result) == {"envelope_id", "item_ids", "external_id", "status", "recipients", "fields"}
    assert result["status"] == "PENDING"
    assert result["external_id"] == ext
    envelope = hook.get_envelope(result["envelope_id"])
    assert result["item_ids"] == envelope.item_ids
    assert [r["id"] for r in result["recipients"]] == sorted(r.id for r in envelope.recipients)
    assert {f["id"] for f in result["fields"]} == {f.id for f in envelope.fields}
    assert sandbox.item_bytes(envelope.item_ids[0], version="original") == replacement.read_bytes()
    pushed = context["ti"].pushed
    assert pushed["envelope_id"] == result["envelope_id"]
    assert pushed[ENVELOPE_LINK_XCOM_KEY]["envelope_id"] == result["envelope_id"]


def test_ambiguous_use_is_retried_to_exactly_one_envelope(
    sandbox: SandboxServer, template_id: str, hook: DocsignHook
) -> None:
    ext = f"amb-{uuid.uuid4().hex[:8]}"
    sandbox.inject_fault(method="POST", path="/envelope/use", action="drop_after_commit", count=1)
    first = use_op(template_id, external_id=ext, retries=2).execute(ctx())
    # A retry of the task (try 2) finds the same envelope and sends nothing.
    second = use_op(template_id, external_id=ext, retries=2).execute(ctx(try_number=2))
    assert first["envelope_id"] == second["envelope_id"]
    assert [e.id for e in hook.find_envelopes_by_external_id(ext)] == [first["envelope_id"]]
    assert uses(sandbox) == 1
    assert first["status"] == "PENDING"


def test_ambiguous_use_without_external_id_is_not_repeated(sandbox: SandboxServer, template_id: str) -> None:
    sandbox.inject_fault(method="POST", path="/envelope/use", action="drop_after_commit", count=1)
    with pytest.raises(AirflowFailException, match="no external_id"):
        use_op(template_id).execute(ctx())
    assert uses(sandbox) == 1


def test_bad_calls_fail_before_any_use(
    sandbox: SandboxServer, template_id: str, make_pdf: Callable[..., Path]
) -> None:
    short = make_pdf("short.pdf", pages=1)
    with pytest.raises(AirflowFailException) as err:
        use_op(
            template_id,
            recipients=mapped()[:1],
            prefill_fields={"amount": "not a number"},
            files=[str(short)],
            external_id="bad",
        ).execute(ctx())
    text = str(err.value)
    assert "(Provider) is a SIGNER who must act but is not mapped" in text
    assert "'not a number' is not a number" in text
    assert "has 1 page(s)" in text
    assert uses(sandbox) == 0


def test_create_template_is_found_by_title_on_the_next_run(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    title = f"Setup {uuid.uuid4().hex[:8]}"
    kwargs: dict[str, Any] = {
        "task_id": "t",
        "title": title,
        "files": [str(make_pdf("nda.pdf", pages=2))],
        "recipients": onboarding_recipients(),
    }
    first = DocsignCreateTemplateOperator(**kwargs).execute(ctx())
    again = DocsignCreateTemplateOperator(**kwargs).execute(ctx())
    assert first["template_id"] == again["template_id"]
    creates = [r for r in sandbox.requests() if r["path"] == "/envelope/create"]
    assert len(creates) == 1


def test_create_template_is_validated_like_create(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    recipients = onboarding_recipients()
    recipients[0]["fields"][-1]["page"] = 3
    op = DocsignCreateTemplateOperator(
        task_id="t",
        title=f"Bad {uuid.uuid4().hex[:6]}",
        files=[str(make_pdf(pages=2))],
        recipients=recipients,
    )
    with pytest.raises(AirflowFailException, match="page 3 does not exist"):
        op.execute(ctx())
    assert [r for r in sandbox.requests() if r["path"] == "/envelope/create"] == []


def test_duplicate_template_with_a_new_title(template_id: str, hook: DocsignHook) -> None:
    result = DocsignDuplicateTemplateOperator(task_id="d", template_id=template_id, title="NDA v2").execute(
        ctx()
    )
    copy = hook.get_template(result["template_id"])
    assert copy.title == "NDA v2"
    assert result["source_template_id"] == template_id
    assert len(copy.fields) == len(hook.get_template(template_id).fields)
