"""System tests: the rest of the API through the public operators, against a real Documenso (opt-in).

Attachments, duplicates, corrections (and the refusals the operators make locally, compared with what
the service itself answers when the same request reaches it), the clean-up operator with its archive
check, the search filters of ``find_envelopes``, and ``DocsignNotifier`` in a failed task's callback.
Signing goes through the service's own signing path (``peer.sign_as``); signers use ``example.com``
addresses and ``distributionMethod: NONE``. Every envelope, template and folder made here is deleted
at the end of the session (``system_run``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, sig, signer
from peer import api_answer, sign_as, wait_status
from template_helpers import field

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.notifications import DocsignNotifier
from airflow_provider_docsign.operators import (
    DocsignAddAttachmentsOperator,
    DocsignArchiveSignedDocumentsOperator,
    DocsignDeleteAttachmentOperator,
    DocsignDeleteEnvelopesOperator,
    DocsignDeleteFieldOperator,
    DocsignDeleteRecipientOperator,
    DocsignDuplicateEnvelopeOperator,
    DocsignUpdateAttachmentOperator,
    DocsignUpdateFieldsOperator,
    DocsignUpdateRecipientsOperator,
)

NO_EMAIL = {"distributionMethod": "NONE"}
TERMS = {"label": "Terms and conditions", "url": "https://example.com/terms"}
PRICES = {"label": "Price list", "url": "https://example.com/prices"}


# -- helpers ------------------------------------------------------------------------------------------


@pytest.fixture
def subfolder(system_hook: DocsignHook, system_run: Any, request: pytest.FixtureRequest) -> str:
    """A folder of its own inside the run's folder, so a listing sees only this test's envelopes."""
    folder = system_hook.create_folder(
        f"{system_run.prefix} {request.node.name[:40]}", parent_id=system_run.folder_id
    )
    system_run.folder_ids.append(folder.id)
    return folder.id


def ids(envelopes: Iterator[Any] | list[Any]) -> list[str]:
    return [e.id for e in envelopes]


def requests_of(operator: Any) -> list[tuple[str, str]]:
    """Record every request the operator's hook sends, as ``(method, path)``: the list it returns fills up."""
    sent: list[tuple[str, str]] = []
    session = operator.hook.session
    original = session.request

    def recording(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        sent.append((method.upper(), url.split("/api/v2", 1)[-1].split("?", 1)[0]))
        return original(method, url, *args, **kwargs)

    session.request = recording
    return sent


def writes(sent: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The requests that change something (everything but GET and the get-many read)."""
    return [(m, p) for m, p in sent if m != "GET" and p != "/envelope/get-many"]


def refused_locally(operator: Any) -> str:
    """Run the operator, expect the local refusal with nothing written; return the failure's text."""
    sent = requests_of(operator)
    with pytest.raises(AirflowFailException) as failure:
        operator.execute(ctx())
    text = str(failure.value)
    assert "DocsignRefusedLocallyError" in text, text
    assert "nothing was sent" in text
    assert writes(sent) == [], (operator.task_id, sent)
    return text


def assert_same_answer(local: str, method: str, path: str, body: dict[str, Any]) -> tuple[int, str, str]:
    """Send the refused request straight to the service: it must refuse it with our status, code and text."""
    status, code, message = api_answer(method, path, body)
    assert status == 400, (path, status, code, message)
    assert f"{method} {path} HTTP {status} {code}: {message}" in local, (local, status, code, message)
    return status, str(code), message


def distributed(hook: DocsignHook, envelope_id: str) -> str:
    hook.distribute_envelope(envelope_id, meta=NO_EMAIL)
    return envelope_id


# -- 1. attachments -----------------------------------------------------------------------------------


def test_attachments_added_listed_updated_and_deleted_safely_on_retry(
    system_hook: DocsignHook, system_conn: str, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    envelope_id = new_envelope("attachments", [pdf("attach.pdf")], [signer(email="attach@example.com")])
    add = DocsignAddAttachmentsOperator(
        task_id="add", envelope_id=envelope_id, attachments=[TERMS, PRICES], docsign_conn_id=system_conn
    )
    first = add.execute(ctx())
    assert [(a["label"], a["url"], a["added"]) for a in first] == [
        (TERMS["label"], TERMS["url"], True),
        (PRICES["label"], PRICES["url"], True),
    ]
    listed = system_hook.find_attachments(envelope_id)
    assert sorted((a.id, a.label, a.url, a.type) for a in listed) == sorted(
        (a["id"], a["label"], a["url"], "link") for a in first
    )

    # A retry adds nothing: the service still holds two.
    again = add.execute(ctx(try_number=2))
    assert [a["added"] for a in again] == [False, False]
    assert [a["id"] for a in again] == [a["id"] for a in first]
    assert len(system_hook.find_attachments(envelope_id)) == 2

    # A link the provider refuses (http) is refused before anything is sent.
    plain_http = DocsignAddAttachmentsOperator(
        task_id="http",
        envelope_id=envelope_id,
        attachments=[{"label": "Old", "url": "http://example.com/old"}],
        docsign_conn_id=system_conn,
    )
    with pytest.raises(AirflowFailException, match="https"):
        plain_http.execute(ctx())
    assert len(system_hook.find_attachments(envelope_id)) == 2

    updated = DocsignUpdateAttachmentOperator(
        task_id="update",
        envelope_id=envelope_id,
        match_label=TERMS["label"],
        new_label="Terms (2026)",
        new_url="https://example.com/terms-2026",
        docsign_conn_id=system_conn,
    ).execute(ctx())
    terms_id = first[0]["id"]
    assert updated == {
        "id": terms_id,
        "label": "Terms (2026)",
        "url": "https://example.com/terms-2026",
        "type": "link",
    }
    now = {a.id: (a.label, a.url) for a in system_hook.find_attachments(envelope_id)}
    assert now == {
        terms_id: ("Terms (2026)", "https://example.com/terms-2026"),
        first[1]["id"]: (PRICES["label"], PRICES["url"]),
    }

    delete = DocsignDeleteAttachmentOperator(
        task_id="delete", envelope_id=envelope_id, attachment_id=terms_id, docsign_conn_id=system_conn
    )
    assert delete.execute(ctx())["deleted"] is True
    assert delete.execute(ctx(try_number=2))["deleted"] is False  # already gone: a retry succeeds
    assert [a.id for a in system_hook.find_attachments(envelope_id)] == [first[1]["id"]]

    # A PENDING envelope's attachments may still change (only COMPLETED and REJECTED are frozen).
    distributed(system_hook, envelope_id)
    removed = DocsignDeleteAttachmentOperator(
        task_id="delete_pending",
        envelope_id=envelope_id,
        match_label=PRICES["label"],
        docsign_conn_id=system_conn,
    ).execute(ctx())
    assert removed["deleted"] is True
    assert system_hook.find_attachments(envelope_id) == []


# -- 2. duplicate -------------------------------------------------------------------------------------


def test_duplicate_sets_title_external_id_and_folder_and_a_retry_reuses_the_copy(
    system_hook: DocsignHook,
    system_run: Any,
    system_conn: str,
    subfolder: str,
    new_envelope: Callable[..., str],
    pdf: Callable[..., Path],
) -> None:
    source_id = new_envelope(
        "dup-source",
        [pdf("dup.pdf")],
        [signer(sig(), sig(type="DATE", positionY=30), email="dup@example.com", name="Dana")],
    )
    source = system_hook.get_envelope(source_id)
    external_id = system_run.external_id("dup-copy")
    title = f"{system_run.prefix} resend"

    def operator(**kwargs: Any) -> DocsignDuplicateEnvelopeOperator:
        kwargs.setdefault("external_id", external_id)
        return DocsignDuplicateEnvelopeOperator(
            task_id="dup",
            envelope_id=source_id,
            title=title,
            folder_id=subfolder,
            docsign_conn_id=system_conn,
            **kwargs,
        )

    made = operator().execute(ctx())
    system_run.envelope_ids.append(made["envelope_id"])
    assert made["reused"] is False
    assert made["envelope_id"] != source_id
    copy = system_hook.get_envelope(made["envelope_id"])
    assert (copy.title, copy.external_id, copy.folder_id, str(copy.status)) == (
        title,
        external_id,
        subfolder,
        "DRAFT",
    )
    assert [(r.email, r.name, r.role) for r in copy.recipients] == [
        (r.email, r.name, r.role) for r in source.recipients
    ]
    assert sorted(f.type or "" for f in copy.fields) == sorted(f.type or "" for f in source.fields)
    assert {r.id for r in copy.recipients}.isdisjoint({r.id for r in source.recipients})

    # A retry (and a re-run) finds the copy by its external id in the folder: still one copy.
    retry = operator().execute(ctx(try_number=2))
    assert (retry["envelope_id"], retry["reused"]) == (made["envelope_id"], True)
    assert ids(system_hook.find_envelopes_by_external_id(external_id, folder_id=subfolder)) == [
        made["envelope_id"]
    ]
    assert ids(system_hook.find_envelopes(folder_id=subfolder)) == [made["envelope_id"]]
    # The service makes its copy at the root as "<title> (copy)": nothing of ours is left there.
    at_root = list(system_hook.find_envelopes(query=system_run.prefix))
    assert [e.id for e in at_root if e.id == made["envelope_id"] or "(copy)" in (e.title or "")] == []

    with pytest.raises(AirflowFailException, match="if_exists='fail'"):
        operator(if_exists="fail").execute(ctx())

    # Without recipients, the copy has none (and so no fields).
    bare = operator(
        external_id=system_run.external_id("dup-bare"), include_recipients=False, include_fields=False
    ).execute(ctx())
    system_run.envelope_ids.append(bare["envelope_id"])
    bare_copy = system_hook.get_envelope(bare["envelope_id"])
    assert (bare_copy.recipients, bare_copy.fields) == ((), ())
    assert sorted(ids(system_hook.find_envelopes(folder_id=subfolder))) == sorted(
        [made["envelope_id"], bare["envelope_id"]]
    )


# -- 3. corrections -----------------------------------------------------------------------------------


def test_corrections_of_a_draft_recipients_and_fields(
    system_hook: DocsignHook, system_conn: str, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    envelope_id = new_envelope(
        "corrections",
        [pdf("fix.pdf", pages=2)],
        [
            signer(sig(), sig(type="DATE", positionY=40), email="typo@exmaple.com", name="Tpyo"),
            {"email": "copy@example.com", "name": "Copy", "role": "CC"},
        ],
    )
    envelope = system_hook.get_envelope(envelope_id)
    person = next(r for r in envelope.recipients if r.role == "SIGNER")
    cc = next(r for r in envelope.recipients if r.role == "CC")
    date = next(f for f in envelope.fields if f.type == "DATE")

    fixed = DocsignUpdateRecipientsOperator(
        task_id="fix_recipient",
        envelope_id=envelope_id,
        recipients=[{"id": person.id, "email": "fixed@example.com", "name": "Fixed Name"}],
        docsign_conn_id=system_conn,
    ).execute(ctx())
    assert [(r["id"], r["email"], r["name"]) for r in fixed] == [
        (person.id, "fixed@example.com", "Fixed Name")
    ]
    now = system_hook.get_recipient(person.id)
    assert (now.email, now.name) == ("fixed@example.com", "Fixed Name")

    [moved] = DocsignUpdateFieldsOperator(
        task_id="move_field",
        envelope_id=envelope_id,
        fields=[{"id": date.id, "page": 2, "positionX": 40, "positionY": 50, "width": 25}],
        docsign_conn_id=system_conn,
    ).execute(ctx())
    assert moved["previous_id"] == date.id
    assert (moved["page"], moved["position_x"], moved["position_y"], moved["width"]) == (2, 40.0, 50.0, 25.0)
    stored = system_hook.get_field(moved["id"])
    assert (stored.page, stored.position_x, stored.position_y, stored.width, stored.type) == (
        2,
        40.0,
        50.0,
        25.0,
        "DATE",
    )
    assert stored.recipient_id == person.id

    delete_field = DocsignDeleteFieldOperator(
        task_id="delete_field", envelope_id=envelope_id, field_id=moved["id"], docsign_conn_id=system_conn
    )
    assert delete_field.execute(ctx())["deleted"] is True
    assert delete_field.execute(ctx(try_number=2))["deleted"] is False

    delete_cc = DocsignDeleteRecipientOperator(
        task_id="delete_cc", envelope_id=envelope_id, recipient_id=cc.id, docsign_conn_id=system_conn
    )
    assert delete_cc.execute(ctx())["deleted"] is True
    assert delete_cc.execute(ctx(try_number=2))["deleted"] is False

    final = system_hook.get_envelope(envelope_id)
    assert [(r.id, r.email) for r in final.recipients] == [(person.id, "fixed@example.com")]
    assert [f.type for f in final.fields] == ["SIGNATURE"]
    assert {f.id for f in final.fields}.isdisjoint({date.id, moved["id"]})


def test_a_recipient_who_signed_is_refused_locally_as_the_service_refuses_it(
    system_hook: DocsignHook, system_conn: str, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    envelope_id = new_envelope(
        "signed-one",
        [pdf("half.pdf")],
        [
            signer(sig(), email="first@example.com", name="First"),
            signer(sig(positionY=50), email="second@example.com", name="Second"),
        ],
    )
    distributed(system_hook, envelope_id)
    assert sign_as(envelope_id, "first@example.com") == ["first@example.com"]
    envelope = system_hook.get_envelope(envelope_id)
    assert str(envelope.status) == "PENDING"
    first = next(r for r in envelope.recipients if r.email == "first@example.com")
    second = next(r for r in envelope.recipients if r.email == "second@example.com")
    assert first.signing_status == "SIGNED"
    first_field = next(f for f in envelope.fields if f.recipient_id == first.id)

    cases = [
        (
            DocsignUpdateRecipientsOperator(
                task_id="a",
                envelope_id=envelope_id,
                recipients=[{"id": first.id, "name": "Renamed"}],
                docsign_conn_id=system_conn,
            ),
            "/envelope/recipient/update-many",
            {"envelopeId": envelope_id, "data": [{"id": first.id, "name": "Renamed"}]},
        ),
        (
            DocsignDeleteRecipientOperator(
                task_id="b", envelope_id=envelope_id, recipient_id=first.id, docsign_conn_id=system_conn
            ),
            "/envelope/recipient/delete",
            {"recipientId": first.id},
        ),
        (
            DocsignUpdateFieldsOperator(
                task_id="c",
                envelope_id=envelope_id,
                fields=[{"id": first_field.id, "width": 30}],
                docsign_conn_id=system_conn,
            ),
            "/envelope/field/update-many",
            {"envelopeId": envelope_id, "data": [{"id": first_field.id, "type": "SIGNATURE", "width": 30}]},
        ),
        (
            DocsignDeleteFieldOperator(
                task_id="d", envelope_id=envelope_id, field_id=first_field.id, docsign_conn_id=system_conn
            ),
            "/envelope/field/delete",
            {"fieldId": first_field.id},
        ),
    ]
    answers = []
    for operator, path, body in cases:
        local = refused_locally(operator)
        answers.append(assert_same_answer(local, "POST", path, body))
    assert [a[1:] for a in answers] == [
        ("INVALID_REQUEST", "Cannot modify a recipient who has already interacted with the document"),
        ("INVALID_REQUEST", "Recipient has already interacted with the document."),
        (
            "INVALID_REQUEST",
            "Cannot modify a field where the recipient has already interacted with the document",
        ),
        ("INVALID_REQUEST", "Recipient has already interacted with the document."),
    ]
    after = system_hook.get_envelope(envelope_id)
    assert [(r.id, r.name, r.signing_status) for r in after.recipients if r.id == first.id] == [
        (first.id, "First", "SIGNED")
    ]
    assert first_field.id in {f.id for f in after.fields}

    # The one who has not signed can still be corrected.
    [renamed] = DocsignUpdateRecipientsOperator(
        task_id="e",
        envelope_id=envelope_id,
        recipients=[{"id": second.id, "name": "Second Person"}],
        docsign_conn_id=system_conn,
    ).execute(ctx())
    assert renamed["name"] == "Second Person"
    assert system_hook.get_recipient(second.id).name == "Second Person"


def test_a_completed_envelope_is_refused_locally_as_the_service_refuses_it(
    system_hook: DocsignHook, system_conn: str, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    envelope_id = new_envelope("completed", [pdf("done.pdf")], [signer(email="done@example.com")])
    attachment_id = system_hook.create_attachment(envelope_id, **TERMS)
    distributed(system_hook, envelope_id)
    sign_as(envelope_id)
    wait_status(envelope_id, "COMPLETED")
    envelope = system_hook.get_envelope(envelope_id)
    rid, fid = envelope.recipients[0].id, envelope.fields[0].id
    conn = {"docsign_conn_id": system_conn}

    cases = [
        (
            DocsignUpdateRecipientsOperator(
                task_id="a", **conn, envelope_id=envelope_id, recipients=[{"id": rid, "name": "X"}]
            ),
            "/envelope/recipient/update-many",
            {"envelopeId": envelope_id, "data": [{"id": rid, "name": "X"}]},
        ),
        (
            DocsignDeleteRecipientOperator(task_id="b", **conn, envelope_id=envelope_id, recipient_id=rid),
            "/envelope/recipient/delete",
            {"recipientId": rid},
        ),
        (
            DocsignUpdateFieldsOperator(
                task_id="c", **conn, envelope_id=envelope_id, fields=[{"id": fid, "width": 30}]
            ),
            "/envelope/field/update-many",
            {"envelopeId": envelope_id, "data": [{"id": fid, "type": "SIGNATURE", "width": 30}]},
        ),
        (
            DocsignDeleteFieldOperator(task_id="d", **conn, envelope_id=envelope_id, field_id=fid),
            "/envelope/field/delete",
            {"fieldId": fid},
        ),
        (
            DocsignAddAttachmentsOperator(task_id="e", **conn, envelope_id=envelope_id, attachments=[PRICES]),
            "/envelope/attachment/create",
            {"envelopeId": envelope_id, "data": {"label": PRICES["label"], "data": PRICES["url"]}},
        ),
        (
            DocsignUpdateAttachmentOperator(
                task_id="f", **conn, envelope_id=envelope_id, attachment_id=attachment_id, new_label="Changed"
            ),
            "/envelope/attachment/update",
            {"id": attachment_id, "data": {"label": "Changed", "data": TERMS["url"]}},
        ),
        (
            DocsignDeleteAttachmentOperator(
                task_id="g", **conn, envelope_id=envelope_id, attachment_id=attachment_id
            ),
            "/envelope/attachment/delete",
            {"id": attachment_id},
        ),
    ]
    answers = []
    for operator, path, body in cases:
        answers.append(assert_same_answer(refused_locally(operator), "POST", path, body)[2])
    frozen = "Attachments can not be modified after the document has been completed or rejected"
    assert answers == [
        "Envelope already complete",
        "Document already complete",
        "Envelope already complete",
        "Envelope already complete",
        frozen,
        frozen,
        frozen,
    ]
    after = system_hook.get_envelope(envelope_id)
    assert ([r.id for r in after.recipients], [f.id for f in after.fields]) == ([rid], [fid])
    assert [(a.id, a.label) for a in system_hook.find_attachments(envelope_id)] == [
        (attachment_id, TERMS["label"])
    ]


# -- 4. clean-up --------------------------------------------------------------------------------------


def _listed(hook: DocsignHook, folder: str) -> set[str]:
    return set(ids(hook.find_envelopes(folder_id=folder)))


def test_cleanup_by_query_dry_run_only_matches_and_completed_only_when_archived(
    system_hook: DocsignHook,
    system_run: Any,
    system_conn: str,
    subfolder: str,
    pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    def make(name: str, email: str) -> str:
        envelope_id = system_hook.create_envelope(
            title=f"{system_run.prefix} {name}",
            files=[pdf(f"{name}.pdf")],
            recipients=[signer(email=email)],
            external_id=system_run.external_id(name),
            folder_id=subfolder,
        )
        system_run.envelope_ids.append(envelope_id)
        return envelope_id

    drafts = {make("old-draft-1", "d1@example.com"), make("old-draft-2", "d2@example.com")}
    pending = distributed(system_hook, make("pending", "p@example.com"))
    completed = distributed(system_hook, make("completed", "c@example.com"))
    sign_as(completed)
    wait_status(completed, "COMPLETED")
    assert _listed(system_hook, subfolder) == {*drafts, pending, completed}

    def clean(**kwargs: Any) -> dict[str, Any]:
        return DocsignDeleteEnvelopesOperator(
            task_id="clean", folder_id=subfolder, docsign_conn_id=system_conn, **kwargs
        ).execute(ctx())

    listed = clean(status="DRAFT", dry_run=True)
    assert {r["id"] for r in listed["selected"]} == drafts
    assert (listed["dry_run"], listed["deleted"]) == (True, [])
    assert _listed(system_hook, subfolder) == {*drafts, pending, completed}

    real = clean(status="DRAFT")
    assert set(real["deleted"]) == drafts
    assert _listed(system_hook, subfolder) == {pending, completed}

    assert clean(older_than_days=1)["selected"] == []  # everything here is minutes old
    assert _listed(system_hook, subfolder) == {pending, completed}

    # Everything older than now: PENDING and COMPLETED; the COMPLETED one has no archive: nothing deleted.
    archive = tmp_path / "archive"
    with pytest.raises(AirflowFailException, match=f"{completed}: no archive manifest"):
        clean(older_than_days=0, archive_destination=str(archive))
    assert _listed(system_hook, subfolder) == {pending, completed}

    manifest = DocsignArchiveSignedDocumentsOperator(
        task_id="archive", envelope_id=completed, destination=str(archive), docsign_conn_id=system_conn
    ).execute(ctx())
    [archived] = [archive / f["name"] for f in manifest["files"]]
    assert archived.is_file()
    signed_bytes = archived.read_bytes()
    assert signed_bytes.startswith(b"%PDF-")

    # A changed archive is no archive: still nothing deleted.
    archived.write_bytes(signed_bytes + b"% changed\n")
    with pytest.raises(AirflowFailException, match=completed):
        clean(status="COMPLETED", archive_destination=str(archive))
    assert _listed(system_hook, subfolder) == {pending, completed}
    archived.write_bytes(signed_bytes)
    assert hashlib.sha256(archived.read_bytes()).hexdigest() == hashlib.sha256(signed_bytes).hexdigest()

    done = clean(status="COMPLETED", archive_destination=str(archive))
    assert (done["refused"], done["deleted"]) == ([], [completed])
    assert _listed(system_hook, subfolder) == {pending}
    assert system_hook.get_envelope(completed).deleted_at is not None  # COMPLETED: hidden, not removed

    last = clean(older_than_days=0, archive_destination=str(archive))
    assert last["deleted"] == [pending]
    assert _listed(system_hook, subfolder) == set()


# -- 5. search filters --------------------------------------------------------------------------------


@pytest.fixture
def template_id(system_hook: DocsignHook, system_run: Any, pdf: Callable[..., Path]) -> str:
    """A one-signer template (at the root) with ``dag``, ``run`` and ``error`` text fields."""
    template = system_hook.create_template(
        title=f"{system_run.prefix} template",
        files=[pdf("template.pdf")],
        recipients=[
            {
                "email": "oncall@placeholder.test",
                "name": "On call",
                "role": "SIGNER",
                "fields": [
                    field("TEXT", 1, 10, "dag"),
                    field("TEXT", 1, 20, "run"),
                    field("TEXT", 1, 30, "error"),
                    field("SIGNATURE", 1, 80),
                ],
            }
        ],
        meta=NO_EMAIL,
    )
    system_run.template_ids.append(template)
    return template


def test_find_envelopes_filters_each_against_the_service(
    system_hook: DocsignHook,
    system_run: Any,
    system_db: Callable[..., list[tuple[Any, ...]]],
    subfolder: str,
    template_id: str,
    pdf: Callable[..., Path],
) -> None:
    def make(name: str, email: str) -> str:
        envelope_id = system_hook.create_envelope(
            title=f"{system_run.prefix} {name}",
            files=[pdf(f"{name}.pdf")],
            recipients=[signer(email=email)],
            external_id=system_run.external_id(name),
            folder_id=subfolder,
        )
        system_run.envelope_ids.append(envelope_id)
        return envelope_id

    draft = make("search-draft", "search-draft@example.com")
    pending = distributed(system_hook, make("search-pending", "search-pending@example.com"))
    used = system_hook.use_template(
        template_id,
        recipients=[{"placeholder": "On call", "email": "search-used@example.com", "name": "Used"}],
        external_id=system_run.external_id("search-used"),
        folder_id=subfolder,
    )
    system_run.envelope_ids.append(used.envelope_id)
    made = used.envelope_id
    everything = {draft, pending, made}

    def found(**kwargs: Any) -> list[str]:
        kwargs.setdefault("folder_id", subfolder)
        return ids(system_hook.find_envelopes(**kwargs))

    assert set(found()) == everything
    assert set(found(status="DRAFT")) == {draft, made}
    assert found(status="PENDING") == [pending]
    assert found(status="COMPLETED") == []
    assert not everything & set(found(folder_id=None, query=system_run.prefix))  # the root sees none
    assert found(query="search-pending@example.com") == [pending]  # a recipient's e-mail
    assert found(query=system_hook.get_envelope(draft).external_id) == [draft]
    assert set(found(envelope_type="DOCUMENT")) == everything
    assert found(envelope_type="TEMPLATE") == []
    assert found(folder_id=None, envelope_type="TEMPLATE", query=f"{system_run.prefix} template") == [
        template_id
    ]
    assert found(template_id=template_id) == [made]
    number = str(system_hook.get_template(template_id).raw["secondaryId"]).removeprefix("template_")
    assert found(template_id=int(number)) == [made]
    assert found(source="TEMPLATE") == [made]
    assert set(found(source="DOCUMENT")) == {draft, pending}
    assert found(order_by=("createdAt", "asc")) == [draft, pending, made]
    assert found(order_by=("createdAt", "desc")) == [made, pending, draft]

    # An expired signing link: the service's own column, set in the past as its clock would.
    assert found(has_expired_recipients=True) == []
    recipient = system_hook.get_envelope(pending).recipients[0].id
    system_db(
        'UPDATE "Recipient" SET "expiresAt" = now() - interval \'1 hour\' '
        'WHERE id = %s AND "envelopeId" = %s',
        recipient,
        pending,
    )
    assert found(has_expired_recipients=True) == [pending]
    assert set(found(has_expired_recipients=False)) == everything  # no "none expired" filter


# -- 6. the notifier ----------------------------------------------------------------------------------


def _failed_task_context(dag: Any, run_id: str, error: BaseException) -> dict[str, Any]:
    """What Airflow hands ``on_failure_callback``: the DAG, the run and the task's exception."""
    return {"dag": dag, "run_id": run_id, "exception": error, "ds": "2026-01-01", "params": {}}


def test_the_notifier_sends_one_envelope_per_failure_and_never_renders_data_as_a_template(
    system_hook: DocsignHook, system_run: Any, system_conn: str, template_id: str
) -> None:
    from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS

    if AIRFLOW_V_3_0_PLUS:
        from airflow.sdk import DAG
    else:  # Airflow 2.11
        from airflow import DAG

    dag = DAG(dag_id="docsign_system_incident", schedule=None)
    notifier = DocsignNotifier(
        template_id=template_id,
        recipients=[{"placeholder": "On call", "email": "oncall@example.com", "name": "Olive"}],
        prefill_fields={"dag": "{{ dag.dag_id }}", "run": "{{ run_id }}", "error": "{{ exception }}"},
        title="Incident in {{ dag.dag_id }} ({{ run_id }})",
        external_id=f"{system_run.prefix}-incident-{{{{ run_id }}}}",
        folder_id=system_run.folder_id,
        docsign_conn_id=system_conn,
    )

    def sent(run_id: str) -> list[str]:
        found = system_hook.find_envelopes_by_external_id(
            f"{system_run.prefix}-incident-{run_id}", folder_id=system_run.folder_id
        )
        system_run.envelope_ids.extend(ids(found))
        return ids(found)

    notifier(_failed_task_context(dag, "night_1", RuntimeError("disk {{ 6 * 7 }} full")))
    [first] = sent("night_1")
    notifier(_failed_task_context(dag, "night_1", RuntimeError("disk {{ 6 * 7 }} full")))
    assert sent("night_1") == [first]  # the same failure called back twice: one envelope

    notifier(_failed_task_context(dag, "night_2", ValueError("{% raw %}no{% endraw %} rows")))
    [second] = sent("night_2")
    assert second != first

    def values(envelope_id: str) -> dict[float | None, str | None]:
        envelope = system_hook.get_envelope(envelope_id)
        assert str(envelope.status) == "PENDING"  # sent at once
        assert [r.email for r in envelope.recipients] == ["oncall@example.com"]
        return {f.position_y: f.custom_text for f in envelope.fields if f.type == "TEXT"}

    assert system_hook.get_envelope(first).title == "Incident in docsign_system_incident (night_1)"
    assert values(first) == {10.0: "docsign_system_incident", 20.0: "night_1", 30.0: "disk {{ 6 * 7 }} full"}
    assert system_hook.get_envelope(second).title == "Incident in docsign_system_incident (night_2)"
    assert values(second) == {
        10.0: "docsign_system_incident",
        20.0: "night_2",
        30.0: "{% raw %}no{% endraw %} rows",
    }
