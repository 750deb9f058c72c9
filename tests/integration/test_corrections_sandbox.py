"""Corrections against the sandbox over HTTP: recipients, fields and attachments are corrected on a
draft; where the service refuses, the operators refuse first with the very error the service answers
(proved by sending the same request through the hook, which does not check), and send nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, sig, signer

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignInvalidRequestError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignAddAttachmentsOperator,
    DocsignDeleteAttachmentOperator,
    DocsignDeleteFieldOperator,
    DocsignDeleteRecipientOperator,
    DocsignUpdateAttachmentOperator,
    DocsignUpdateFieldsOperator,
    DocsignUpdateRecipientsOperator,
)
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

TERMS = {"label": "Terms and conditions", "url": "https://example.com/terms"}


def writes(sandbox: SandboxServer) -> list[str]:
    return [r["path"] for r in sandbox.requests() if r["method"] == "POST"]


def draft(hook: DocsignHook, make_pdf: Callable[..., Path], signers: int = 1) -> str:
    recipients = [
        signer(sig(positionY=10 + 10 * i), email=f"signer{i}@example.test", name=f"Signer {i}")
        for i in range(signers)
    ]
    return hook.create_envelope(title="Corrections", files=[make_pdf(pages=2)], recipients=recipients)


def service_answer(send: Callable[[], Any]) -> tuple[int | None, str | None, str]:
    with pytest.raises(DocsignInvalidRequestError) as info:
        send()
    return info.value.status_code, info.value.error_code, info.value.message


def test_a_draft_gets_a_corrected_email_a_moved_field_and_attachments(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = draft(hook, make_pdf)
    before = hook.get_envelope(envelope_id)
    rid, fid = before.recipients[0].id, before.fields[0].id

    [rec] = DocsignUpdateRecipientsOperator(
        task_id="fix", envelope_id=envelope_id, recipients=[{"id": rid, "email": "Right@Example.test"}]
    ).execute(ctx())
    assert rec == {
        "id": rid,
        "email": "right@example.test",
        "name": "Signer 0",
        "role": "SIGNER",
        "signing_order": None,
    }

    [moved] = DocsignUpdateFieldsOperator(
        task_id="move",
        envelope_id=envelope_id,
        fields=[{"id": fid, "page": 2, "positionX": 50, "positionY": 60}],
    ).execute(ctx())
    assert moved["previous_id"] == fid
    assert moved["id"] != fid
    after = hook.get_envelope(envelope_id)
    [field] = after.fields
    assert (field.id, field.page, field.position_x, field.position_y) == (moved["id"], 2, 50.0, 60.0)
    assert after.recipients[0].email == "right@example.test"

    added = DocsignAddAttachmentsOperator(
        task_id="attach", envelope_id=envelope_id, attachments=[TERMS]
    ).execute(ctx())
    assert [a["added"] for a in added] == [True]
    again = DocsignAddAttachmentsOperator(
        task_id="attach", envelope_id=envelope_id, attachments=[TERMS]
    ).execute(ctx(2))
    assert again == [{**added[0], "added": False}]  # a retry adds nothing
    updated = DocsignUpdateAttachmentOperator(
        task_id="relink",
        envelope_id=envelope_id,
        match_label=TERMS["label"],
        new_url="https://example.com/terms-v2",
    ).execute(ctx())
    assert updated["url"] == "https://example.com/terms-v2"
    assert [(a.label, a.url) for a in hook.find_attachments(envelope_id)] == [
        (TERMS["label"], "https://example.com/terms-v2")
    ]
    removed = DocsignDeleteAttachmentOperator(
        task_id="unlink", envelope_id=envelope_id, match_label=TERMS["label"]
    ).execute(ctx())
    assert removed["deleted"] is True
    assert hook.find_attachments(envelope_id) == []
    assert (
        DocsignDeleteAttachmentOperator(
            task_id="unlink", envelope_id=envelope_id, match_label=TERMS["label"]
        ).execute(ctx(2))["deleted"]
        is False
    )


def test_deletes_are_idempotent(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = draft(hook, make_pdf, signers=2)
    envelope = hook.get_envelope(envelope_id)
    second = envelope.recipients[1].id
    field = next(f.id for f in envelope.fields if f.recipient_id == envelope.recipients[0].id)
    op = DocsignDeleteFieldOperator(task_id="f", envelope_id=envelope_id, field_id=field)
    assert op.execute(ctx())["deleted"] is True
    assert op.execute(ctx(2))["deleted"] is False
    op2 = DocsignDeleteRecipientOperator(task_id="r", envelope_id=envelope_id, recipient_id=second)
    assert op2.execute(ctx())["deleted"] is True
    assert op2.execute(ctx(2))["deleted"] is False
    assert [r.id for r in hook.get_envelope(envelope_id).recipients] == [envelope.recipients[0].id]


def test_a_finished_envelope_is_refused_locally_with_the_services_own_error(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = draft(hook, make_pdf)
    hook.create_attachment(envelope_id, **TERMS)
    hook.distribute_envelope(envelope_id)
    sandbox.complete(envelope_id)
    sandbox.wait_status(envelope_id, "COMPLETED", timeout=20)
    envelope = hook.get_envelope(envelope_id)
    rid, fid = envelope.recipients[0].id, envelope.fields[0].id
    [attachment] = hook.find_attachments(envelope_id)
    cases = [
        (
            DocsignUpdateRecipientsOperator(
                task_id="a", envelope_id=envelope_id, recipients=[{"id": rid, "name": "X"}]
            ),
            lambda: hook.update_recipients(envelope_id, [{"id": rid, "name": "X"}]),
        ),
        (
            DocsignDeleteRecipientOperator(task_id="b", envelope_id=envelope_id, recipient_id=rid),
            lambda: hook.delete_recipient(rid),
        ),
        (
            DocsignUpdateFieldsOperator(
                task_id="c", envelope_id=envelope_id, fields=[{"id": fid, "width": 30}]
            ),
            None,  # the hook reads the envelope first, then the service refuses the update-many
        ),
        (
            DocsignDeleteFieldOperator(task_id="d", envelope_id=envelope_id, field_id=fid),
            lambda: hook.delete_field(fid),
        ),
        (
            DocsignAddAttachmentsOperator(
                task_id="e", envelope_id=envelope_id, attachments=[{"label": "More", "url": "https://x.test"}]
            ),
            lambda: hook.create_attachment(envelope_id, label="More", url="https://x.test"),
        ),
        (
            DocsignDeleteAttachmentOperator(
                task_id="f", envelope_id=envelope_id, attachment_id=attachment.id
            ),
            lambda: hook.delete_attachment(attachment.id),
        ),
    ]
    for operator, direct in cases:
        sandbox.clear_requests()
        with pytest.raises(AirflowFailException) as refused:
            operator.execute(ctx())
        assert "DocsignRefusedLocallyError" in str(refused.value)
        assert "nothing was sent" in str(refused.value)
        assert writes(sandbox) == [], operator.task_id  # refused before any write
        if direct is not None:
            status, code, message = service_answer(direct)
            assert f"HTTP {status} {code}: {message}" in str(refused.value), (operator.task_id, message)
    status, code, message = service_answer(
        lambda: hook.update_fields(envelope_id, [{"id": fid, "width": 30}])
    )
    assert (status, code, message) == (400, "INVALID_REQUEST", "Envelope already complete")


def test_pending_refuses_only_the_recipient_who_signed(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = draft(hook, make_pdf, signers=2)
    hook.distribute_envelope(envelope_id)
    first, second = (r.id for r in hook.get_envelope(envelope_id).recipients)
    sandbox.sign(envelope_id, first)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="Cannot modify a recipient who has already interacted"):
        DocsignUpdateRecipientsOperator(
            task_id="a", envelope_id=envelope_id, recipients=[{"id": first, "name": "New"}]
        ).execute(ctx())
    assert writes(sandbox) == []
    message = service_answer(lambda: hook.update_recipients(envelope_id, [{"id": first, "name": "New"}]))[2]
    assert message == "Cannot modify a recipient who has already interacted with the document"
    # The other signer can still be corrected while PENDING (the service allows it).
    [rec] = DocsignUpdateRecipientsOperator(
        task_id="b", envelope_id=envelope_id, recipients=[{"id": second, "name": "Corrected"}]
    ).execute(ctx())
    assert rec["name"] == "Corrected"


def test_bad_attachments_never_reach_the_service(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = draft(hook, make_pdf)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="url must use https"):
        DocsignAddAttachmentsOperator(
            task_id="a",
            envelope_id=envelope_id,
            attachments=[TERMS, {"label": "Prices", "url": "http://example.com/prices"}],
        ).execute(ctx())
    assert sandbox.requests() == []  # checked before the envelope is even read
    assert hook.find_attachments(envelope_id) == []
    # The service itself would take http (its rule), which is why the check is ours.
    raw = hook.session.post(
        f"{sandbox.base_url}/envelope/attachment/create",
        json={"envelopeId": envelope_id, "data": {"label": "Prices", "data": "http://example.com/p"}},
        timeout=10,
    )
    assert raw.status_code == 200
    bad = hook.session.post(
        f"{sandbox.base_url}/envelope/attachment/create",
        json={"envelopeId": envelope_id, "data": {"label": "", "data": "ftp://example.com/p"}},
        timeout=10,
    )
    assert bad.status_code == 400
    assert [i["message"] for i in bad.json()["issues"]] == [
        "Label is required",
        "URL must use the http or https protocol",
    ]
