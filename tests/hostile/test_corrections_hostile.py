"""Corrections (update and delete recipients and fields) fed what a careless or hostile user could give.

A recipient who signs between the operator's read and its update, ids given as digit strings (what
Jinja renders) and as look-alikes of them, ids of another envelope's recipients and fields, the same
id twice in one call, and a field moved to a page its PDF does not have. Counted at the sandbox: the
write requests that reached it, and the recipients and fields as they are afterwards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, numbered_signers

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignDeleteFieldOperator,
    DocsignDeleteRecipientOperator,
    DocsignUpdateFieldsOperator,
    DocsignUpdateRecipientsOperator,
)
from airflow_provider_docsign.sandbox import SandboxServer

INTERACTED = "already interacted with the document"


def writes(sandbox: SandboxServer) -> list[str]:
    """The paths of the write requests (every POST is one, but get-many) since the log was cleared."""
    return [
        r["path"] for r in sandbox.requests() if r["method"] == "POST" and r["path"] != "/envelope/get-many"
    ]


@pytest.fixture
def draft(hook: DocsignHook, make_pdf: Callable[..., Path]) -> str:
    """A draft of one one-page PDF for two signers, each with a signature field."""
    return hook.create_envelope(
        title="Correct me", files=[make_pdf("one.pdf")], recipients=numbered_signers(2)
    )


def while_held(sandbox: SandboxServer, path: str, action: Callable[[], Any], run: Callable[[], Any]) -> Any:
    """Run ``run`` with the next POST to ``path`` held 3 s by the sandbox, and ``action`` meanwhile.

    ``action`` runs on another thread once the held request has reached the sandbox (bounded to 20 s);
    the outcome of ``run`` is returned, or its exception raised, after the thread has ended.
    """
    fault = sandbox.inject_fault("POST", path, action="delay", delay=3)
    acted: list[bool] = []

    def act() -> None:
        deadline = time.monotonic() + 20
        while fault in {f["id"] for f in sandbox.faults()} and time.monotonic() < deadline:
            time.sleep(0.05)
        if time.monotonic() < deadline:
            action()
            acted.append(True)

    thread = threading.Thread(target=act)
    thread.start()
    try:
        return run()
    finally:
        thread.join(timeout=30)
        sandbox.clear_faults()
        assert not thread.is_alive()
        assert acted, f"the operator never sent POST {path}"


def test_a_recipient_who_signs_between_the_read_and_the_update_keeps_their_signature(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    # Three signers: after two have signed, the envelope is still PENDING.
    draft = hook.create_envelope(title="Three", files=[make_pdf("three.pdf")], recipients=numbered_signers(3))
    hook.distribute_envelope(draft)
    first = hook.get_envelope(draft).recipients[0]
    field = next(f for f in hook.get_envelope(draft).fields if f.recipient_id == first.id)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=INTERACTED):
        while_held(
            sandbox,
            "/envelope/recipient/update-many",
            lambda: sandbox.sign(draft, first.id),
            lambda: DocsignUpdateRecipientsOperator(
                task_id="fix", envelope_id=draft, recipients=[{"id": first.id, "name": "Renamed"}]
            ).execute(ctx()),
        )
    assert writes(sandbox) == ["/envelope/recipient/update-many"]  # refused by the service, not retried
    now = next(r for r in hook.get_envelope(draft).recipients if r.id == first.id)
    assert (now.name, now.signing_status) == (first.name, "SIGNED")
    # The same for the signer's field, and for deleting the signer: the service's refusal stands.
    second = hook.get_envelope(draft).recipients[1]
    other_field = next(f for f in hook.get_envelope(draft).fields if f.recipient_id == second.id)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=INTERACTED):
        while_held(
            sandbox,
            "/envelope/field/update-many",
            lambda: sandbox.sign(draft, second.id),
            lambda: DocsignUpdateFieldsOperator(
                task_id="move", envelope_id=draft, fields=[{"id": other_field.id, "width": 30}]
            ).execute(ctx()),
        )
    assert writes(sandbox) == ["/envelope/field/update-many"]
    fields = {f.id: f for f in hook.get_envelope(draft).fields}
    assert fields[other_field.id].width == other_field.width
    assert fields[field.id].width == field.width


def test_deleting_a_recipient_who_signs_meanwhile_is_refused_by_the_service(
    hook: DocsignHook, sandbox: SandboxServer, draft: str
) -> None:
    hook.distribute_envelope(draft)
    first, _ = hook.get_envelope(draft).recipients
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=INTERACTED):
        while_held(
            sandbox,
            "/envelope/recipient/delete",
            lambda: sandbox.sign(draft, first.id),
            lambda: DocsignDeleteRecipientOperator(
                task_id="drop", envelope_id=draft, recipient_id=first.id
            ).execute(ctx()),
        )
    assert writes(sandbox) == ["/envelope/recipient/delete"]
    assert first.id in {r.id for r in hook.get_envelope(draft).recipients}


def test_ids_as_digit_strings_reach_the_right_recipient_or_nothing_is_sent(
    hook: DocsignHook, sandbox: SandboxServer, draft: str
) -> None:
    """``"17"`` is what Jinja renders for recipient 17: it means 17, or it is refused before sending.

    Never sent as a string, never taken for another recipient, never a crash after the change was made.
    """
    first, second = hook.get_envelope(draft).recipients
    sandbox.clear_requests()
    outcome: Any
    try:
        outcome = DocsignUpdateRecipientsOperator(
            task_id="fix", envelope_id=draft, recipients=[{"id": str(second.id), "name": "Renamed"}]
        ).execute(ctx())
    except AirflowFailException as err:
        outcome = err
    if isinstance(outcome, AirflowFailException):
        assert "'id'" in str(outcome)
        assert writes(sandbox) == []
    else:
        assert [r["id"] for r in outcome] == [second.id]
        assert writes(sandbox) == ["/envelope/recipient/update-many"]
    names = {r.id: r.name for r in hook.get_envelope(draft).recipients}
    assert names[first.id] == first.name
    assert names[second.id] in {second.name, "Renamed"}
    # A field: resized (its id kept), or refused before anything is sent; never a crash after the update.
    field, other = hook.get_envelope(draft).fields
    sandbox.clear_requests()
    try:
        outcome = DocsignUpdateFieldsOperator(
            task_id="resize", envelope_id=draft, fields=[{"id": str(field.id), "width": 25}]
        ).execute(ctx())
    except AirflowFailException as err:
        outcome = err
    fields = {f.id: f for f in hook.get_envelope(draft).fields}
    if isinstance(outcome, AirflowFailException):
        assert "id" in str(outcome)
        assert writes(sandbox) == []
        assert fields[field.id].width == field.width
    else:
        assert [(row["id"], row["previous_id"], row["width"]) for row in outcome] == [
            (field.id, field.id, 25)
        ]
        assert fields[field.id].width == 25
    assert fields[other.id].width == other.width
    deleted = DocsignDeleteRecipientOperator(
        task_id="drop", envelope_id=draft, recipient_id=str(second.id)
    ).execute(ctx())
    assert deleted == {"envelope_id": draft, "recipient_id": second.id, "deleted": True}
    assert [r.id for r in hook.get_envelope(draft).recipients] == [first.id]


@pytest.mark.parametrize(
    "bad",
    [" 17", "17.0", "1e3", "+17", "-17", "1_7", "\u0661\u0667", 17.0, True, None, "", [17]],
    ids=[
        "space",
        "float-text",
        "exponent",
        "plus",
        "minus",
        "underscore",
        "arabic-digits",
        "float",
        "bool",
        "none",
        "empty",
        "list",
    ],
)
def test_id_look_alikes_are_refused_before_anything_is_sent(
    hook: DocsignHook, sandbox: SandboxServer, draft: str, bad: Any
) -> None:
    first, _ = hook.get_envelope(draft).recipients
    field = hook.get_envelope(draft).fields[0]
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="id"):
        DocsignUpdateRecipientsOperator(
            task_id="fix", envelope_id=draft, recipients=[{"id": bad, "name": "X"}]
        ).execute(ctx())
    with pytest.raises(AirflowFailException, match="id"):
        DocsignUpdateFieldsOperator(
            task_id="move", envelope_id=draft, fields=[{"id": bad, "width": 9}]
        ).execute(ctx())
    for operator in (
        DocsignDeleteRecipientOperator(task_id="drop", envelope_id=draft, recipient_id=bad),
        DocsignDeleteFieldOperator(task_id="drop_field", envelope_id=draft, field_id=bad),
    ):
        if isinstance(bad, str) and bad.strip().isascii() and bad.strip().isdigit():
            continue  # " 17": one_id has always read a padded number (int() does); see below
        with pytest.raises(AirflowFailException, match="id"):
            operator.execute(ctx())
    assert writes(sandbox) == []
    envelope = hook.get_envelope(draft)
    assert first.name in {r.name for r in envelope.recipients}
    assert field.id in {f.id for f in envelope.fields}


def test_ids_of_another_envelopes_recipients_and_fields_touch_nothing(
    hook: DocsignHook, sandbox: SandboxServer, draft: str, make_pdf: Callable[..., Path]
) -> None:
    other = hook.create_envelope(title="Other", files=[make_pdf("other.pdf")], recipients=numbered_signers(1))
    [theirs] = hook.get_envelope(other).recipients
    [their_field] = hook.get_envelope(other).fields
    sandbox.clear_requests()
    with pytest.raises(
        AirflowFailException, match=f"recipient {theirs.id} is not a recipient of envelope {draft}"
    ):
        DocsignUpdateRecipientsOperator(
            task_id="fix", envelope_id=draft, recipients=[{"id": theirs.id, "email": "x@example.test"}]
        ).execute(ctx())
    with pytest.raises(
        AirflowFailException, match=f"field {their_field.id} is not a field of envelope {draft}"
    ):
        DocsignUpdateFieldsOperator(
            task_id="move", envelope_id=draft, fields=[{"id": their_field.id, "page": 1, "positionX": 50}]
        ).execute(ctx())
    # A delete of an id this envelope does not have is "already gone": nothing is sent for it.
    gone = DocsignDeleteRecipientOperator(task_id="drop", envelope_id=draft, recipient_id=theirs.id).execute(
        ctx()
    )
    assert gone["deleted"] is False
    gone = DocsignDeleteFieldOperator(
        task_id="drop_field", envelope_id=draft, field_id=their_field.id
    ).execute(ctx())
    assert gone["deleted"] is False
    assert writes(sandbox) == []
    after = hook.get_envelope(other)
    assert [(r.id, r.email) for r in after.recipients] == [(theirs.id, theirs.email)]
    assert [(f.id, f.position_x) for f in after.fields] == [(their_field.id, their_field.position_x)]


def test_the_same_id_twice_in_one_call_is_refused_before_anything_is_read(
    hook: DocsignHook, sandbox: SandboxServer, draft: str
) -> None:
    first, _ = hook.get_envelope(draft).recipients
    field = hook.get_envelope(draft).fields[0]
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="an id is given twice"):
        DocsignUpdateRecipientsOperator(
            task_id="fix",
            envelope_id=draft,
            recipients=[{"id": first.id, "name": "A"}, {"id": first.id, "email": "b@example.test"}],
        ).execute(ctx())
    with pytest.raises(AirflowFailException, match="an id is given twice"):
        DocsignUpdateFieldsOperator(
            task_id="move",
            envelope_id=draft,
            fields=[{"id": field.id, "page": 1, "positionX": 5}, {"id": field.id, "positionX": 60}],
        ).execute(ctx())
    assert sandbox.requests() == []


@pytest.mark.parametrize(
    "change",
    [
        {"page": 2},
        {"page": 0},
        {"page": -1},
        {"page": 1.5},
        {"page": "two"},
        {"positionX": 101},
        {"width": -5},
    ],
    ids=[
        "page-2-of-1",
        "page-0",
        "negative-page",
        "fractional-page",
        "text-page",
        "off-the-page",
        "negative-width",
    ],
)
def test_a_field_moved_where_its_pdf_has_no_room_is_refused_before_anything_is_sent(
    hook: DocsignHook, sandbox: SandboxServer, draft: str, change: dict[str, Any]
) -> None:
    field = hook.get_envelope(draft).fields[0]
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException):
        DocsignUpdateFieldsOperator(
            task_id="move", envelope_id=draft, fields=[{"id": field.id, **change}]
        ).execute(ctx())
    assert writes(sandbox) == []
    now = {f.id: f for f in hook.get_envelope(draft).fields}[field.id]
    assert (now.page, now.position_x, now.width) == (field.page, field.position_x, field.width)


def test_a_field_moved_to_a_page_that_exists_gets_a_new_id_and_a_retry_adopts_it(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = hook.create_envelope(
        title="Two pages", files=[make_pdf("two.pdf", pages=2)], recipients=numbered_signers(1)
    )
    [field] = hook.get_envelope(envelope_id).fields
    spec = [{"id": field.id, "page": 2, "positionX": 40, "positionY": 40}]
    moved = DocsignUpdateFieldsOperator(task_id="move", envelope_id=envelope_id, fields=spec).execute(ctx())
    [row] = moved
    assert (row["previous_id"], row["page"]) == (field.id, 2)
    assert row["id"] != field.id
    sandbox.clear_requests()
    retry = DocsignUpdateFieldsOperator(task_id="move", envelope_id=envelope_id, fields=spec).execute(ctx(2))
    assert retry == moved
    assert writes(sandbox) == []
    assert [f.id for f in hook.get_envelope(envelope_id).fields] == [row["id"]]
