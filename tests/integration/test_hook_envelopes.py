"""DocsignHook envelope, item, recipient, field and folder methods against the sandbox over HTTP."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import helpers
import pytest
from helpers import sig

from airflow_provider_docsign._compat import ObjectStoragePath
from airflow_provider_docsign.exceptions import DocsignNotFoundError, DocsignServerError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.models import EnvelopeStatus

pytestmark = pytest.mark.integration


def signer(email: str = "signer@example.com", *fields: dict[str, Any]) -> dict[str, Any]:
    return helpers.signer(*fields, email=email, name=email.split("@")[0])


def test_create_get_and_coordinates_parsed_from_strings(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    a, b = make_pdf("a.pdf", pages=2), make_pdf("b.pdf")
    envelope_id = hook.create_envelope(
        title="Two files",
        files=[a, b],
        recipients=[
            signer("one@example.com", sig(page=2, positionX=12.5), sig(identifier=1, positionY=33.25))
        ],
        external_id="ext-create-get",
        meta={"subject": "Please sign"},
    )
    assert envelope_id.startswith("envelope_")
    creates = [r for r in sandbox.requests() if r["path"] == "/envelope/create"]
    assert creates == [{"method": "POST", "path": "/envelope/create", "status": 200}]
    env = hook.get_envelope(envelope_id)
    assert env.status is EnvelopeStatus.DRAFT
    assert env.external_id == "ext-create-get"
    assert [i.title for i in env.items] == ["a.pdf", "b.pdf"]
    assert [i.order for i in env.items] == [1, 2]
    raw_field = next(f for f in env.raw["fields"] if f["page"] == 2)
    assert isinstance(raw_field["positionX"], str)  # the service sends strings ...
    field = next(f for f in env.fields if f.page == 2)
    assert field.position_x == 12.5  # ... the hook gives floats
    assert field.envelope_item_id == env.items[0].id
    other = next(f for f in env.fields if f.envelope_item_id == env.items[1].id)
    assert other.position_y == 33.25
    # each file part arrived intact and in order
    assert sandbox.item_bytes(env.items[0].id, version="original") == a.read_bytes()
    assert sandbox.item_bytes(env.items[1].id, version="original") == b.read_bytes()


def test_create_from_file_object_and_object_storage_path(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    a, b = make_pdf("obj.pdf"), make_pdf("stream.pdf", pages=3)
    with open(b, "rb") as stream:
        envelope_id = hook.create_envelope(
            title="Sources",
            files=[ObjectStoragePath(f"file://{a}"), stream],
            recipients=[signer("src@example.com", sig(identifier=1, page=3))],
        )
    env = hook.get_envelope(envelope_id)
    assert [i.title for i in env.items] == ["obj.pdf", "stream.pdf"]
    assert sandbox.item_bytes(env.items[1].id, version="original") == b.read_bytes()


def test_get_envelopes_batches_by_twenty(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf()
    folder = hook.create_folder("Batch folder")
    ids = [hook.create_envelope(title=f"batch {n}", files=[pdf], folder_id=folder.id) for n in range(23)]
    sandbox.clear_requests()
    wanted = [*reversed(ids), "envelope_doesnotexist1"]
    found = hook.get_envelopes(wanted)
    assert [e.id for e in found] == list(reversed(ids))  # requested order, unknown id left out
    calls = [r for r in sandbox.requests() if r["path"] == "/envelope/get-many"]
    assert len(calls) == 2


def test_find_envelopes_paginates_past_100(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf()
    folder = hook.create_folder("Many envelopes")
    created = {hook.create_envelope(title=f"many {n}", files=[pdf], folder_id=folder.id) for n in range(103)}
    sandbox.clear_requests()
    listed = list(hook.find_envelopes(folder_id=folder.id))
    assert {e.id for e in listed} == created
    assert len(listed) == 103
    pages = [r for r in sandbox.requests() if r["path"] == "/envelope"]
    assert len(pages) == 2
    # status filter is passed through
    assert list(hook.find_envelopes(folder_id=folder.id, status=EnvelopeStatus.COMPLETED)) == []


def test_find_by_external_id_is_exact(hook: DocsignHook, make_pdf: Callable[..., Path]) -> None:
    pdf = make_pdf()
    exact = hook.create_envelope(title="exact", files=[pdf], external_id="order-42")
    hook.create_envelope(title="longer", files=[pdf], external_id="order-421")
    hook.create_envelope(title="mentions order-42 in title", files=[pdf], external_id="other")
    found = hook.find_envelopes_by_external_id("order-42")
    assert [e.id for e in found] == [exact]
    folder = hook.create_folder("Ext folder")
    in_folder = hook.create_envelope(title="f", files=[pdf], external_id="order-77", folder_id=folder.id)
    assert hook.find_envelopes_by_external_id("order-77") == []  # root only, as on the real service
    assert [e.id for e in hook.find_envelopes_by_external_id("order-77", folder_id=folder.id)] == [in_folder]


def test_update_delete_envelope(hook: DocsignHook, make_pdf: Callable[..., Path]) -> None:
    envelope_id = hook.create_envelope(title="Before", files=[make_pdf()])
    folder = hook.create_folder("Moved here")
    summary = hook.update_envelope(envelope_id, title="After", external_id="ext-upd", folder_id=folder.id)
    assert (summary.title, summary.external_id, summary.folder_id) == ("After", "ext-upd", folder.id)
    assert hook.get_envelope(envelope_id).title == "After"
    hook.delete_envelope(envelope_id)
    with pytest.raises(DocsignNotFoundError) as info:
        hook.get_envelope(envelope_id)
    assert info.value.status_code == 404
    assert info.value.error_code == "NOT_FOUND"


def test_distribute_redistribute_cancel_audit(hook: DocsignHook, make_pdf: Callable[..., Path]) -> None:
    envelope_id = hook.create_envelope(
        title="Send", files=[make_pdf()], recipients=[signer("send@example.com")]
    )
    answer = hook.distribute_envelope(envelope_id, meta={"subject": "Sign please"})
    assert answer["success"] is True
    recipient_id = answer["recipients"][0]["id"]
    assert answer["recipients"][0]["signingUrl"]
    assert hook.get_envelope(envelope_id).status is EnvelopeStatus.PENDING
    again = hook.redistribute_envelope(envelope_id, [recipient_id])
    assert again["recipients"][0]["id"] == recipient_id
    hook.cancel_envelope(envelope_id, reason="changed our minds")
    assert hook.get_envelope(envelope_id).status is EnvelopeStatus.CANCELLED
    types = [entry["type"] for entry in hook.get_audit_log(envelope_id)]
    assert "DOCUMENT_SENT" in types
    assert "DOCUMENT_CANCELLED" in types
    # the real service answers 500 (not 404) when distributing a finished envelope
    with pytest.raises(DocsignServerError):
        hook.distribute_envelope(envelope_id)


def test_items_add_update_delete(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = hook.create_envelope(title="Items", files=[make_pdf("first.pdf")])
    annex = make_pdf("annex.pdf", pages=2)
    added = hook.add_envelope_items(envelope_id, [annex])
    assert [(i.title, i.order) for i in added] == [("annex.pdf", 2)]
    assert sandbox.item_bytes(added[0].id, version="original") == annex.read_bytes()
    env = hook.get_envelope(envelope_id)
    first, second = env.items
    items = hook.update_envelope_items(
        envelope_id,
        [
            {"envelopeItemId": first.id, "order": 2, "title": "Main"},
            {"envelopeItemId": second.id, "order": 1},
        ],
    )
    assert [(i.id, i.order) for i in items] == [(second.id, 1), (first.id, 2)]
    assert items[1].title == "Main"
    hook.delete_envelope_item(envelope_id, second.id)
    assert hook.get_envelope(envelope_id).item_ids == [first.id]


def test_downloads_to_path_dir_fileobj_and_object_path(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    pdf = make_pdf("dl.pdf", pages=2)
    envelope_id = hook.create_envelope(title="Download", files=[pdf], recipients=[signer("dl@example.com")])
    item_id = hook.get_envelope(envelope_id).items[0].id
    expected = sandbox.item_bytes(item_id, version="original")
    digest = hashlib.sha256(expected).hexdigest()

    result = hook.download_envelope_item(item_id, tmp_path / "out" / "file.pdf", version="original")
    assert result.sha256 == digest
    assert result.size == len(expected)
    assert result.content_type.startswith("application/pdf")
    assert Path(result.uri).read_bytes() == expected

    target_dir = tmp_path / "dir"
    target_dir.mkdir()
    in_dir = hook.download_envelope_item(item_id, target_dir, version="original")
    assert Path(in_dir.uri).parent == target_dir
    assert Path(in_dir.uri).name == "dl.pdf"  # the service's file name
    assert [p.name for p in target_dir.iterdir()] == ["dl.pdf"]  # no temp file left behind

    buffer = io.BytesIO()
    hook.download_envelope_item(item_id, buffer, version="original")
    assert buffer.getvalue() == expected

    obj = ObjectStoragePath(f"file://{tmp_path}/obj/signed.pdf")
    via_obj = hook.download_envelope_item(item_id, obj)
    assert via_obj.sha256 == hashlib.sha256(sandbox.item_bytes(item_id, version="signed")).hexdigest()
    assert (tmp_path / "obj" / "signed.pdf").exists()

    hook.distribute_envelope(envelope_id)
    sandbox.complete(envelope_id)
    sandbox.wait_status(envelope_id, "COMPLETED")
    audit = hook.download_audit_log(envelope_id, tmp_path / "audit.pdf")
    assert (tmp_path / "audit.pdf").read_bytes()[:5] == b"%PDF-"
    assert audit.size == (tmp_path / "audit.pdf").stat().st_size
    cert = hook.download_certificate(envelope_id, tmp_path / "cert.pdf")
    assert cert.size > 0
    signed = hook.download_envelope_item(item_id, tmp_path / "signed.pdf")
    assert signed.sha256 == hashlib.sha256(sandbox.item_bytes(item_id, version="signed")).hexdigest()


def test_recipients(hook: DocsignHook, make_pdf: Callable[..., Path]) -> None:
    envelope_id = hook.create_envelope(title="People", files=[make_pdf()])
    created = hook.create_recipients(
        envelope_id,
        [
            {"email": "Alice@Example.com", "name": "Alice", "role": "SIGNER"},
            {"email": "bob@example.com", "name": "Bob", "role": "CC"},
        ],
    )
    assert [(r.email, r.role) for r in created] == [
        ("alice@example.com", "SIGNER"),
        ("bob@example.com", "CC"),
    ]
    alice, bob = created
    updated = hook.update_recipients(envelope_id, [{"id": alice.id, "name": "Alice B."}])
    assert updated[0].name == "Alice B."
    got = hook.get_recipient(alice.id)
    assert (got.id, got.name, got.signing_status) == (alice.id, "Alice B.", "NOT_SIGNED")
    hook.delete_recipient(bob.id)
    assert [r.id for r in hook.get_envelope(envelope_id).recipients] == [alice.id]
    hook.create_fields(
        envelope_id,
        [
            {
                "recipientId": alice.id,
                "type": "SIGNATURE",
                "page": 1,
                "positionX": 5,
                "positionY": 5,
                "width": 10,
                "height": 5,
            }
        ],
    )
    hook.distribute_envelope(envelope_id)
    rejected = hook.reject_recipient(alice.id, envelope_id=envelope_id, reason="Wrong amount")
    assert rejected.signing_status == "REJECTED"
    assert rejected.rejection_reason == "Wrong amount"
    sandbox_status = hook.get_envelope(envelope_id).status
    assert sandbox_status in (EnvelopeStatus.PENDING, EnvelopeStatus.REJECTED)


def test_fields_create_update_move_delete(hook: DocsignHook, make_pdf: Callable[..., Path]) -> None:
    envelope_id = hook.create_envelope(
        title="Fields", files=[make_pdf("f.pdf", pages=3)], recipients=[signer("fields@example.com")]
    )
    env = hook.get_envelope(envelope_id)
    recipient_id = env.recipients[0].id
    fields = hook.create_fields(
        envelope_id,
        [
            {
                "recipientId": recipient_id,
                "type": "NAME",
                "page": 3,
                "positionX": 50,
                "positionY": 50,
                "width": 20,
                "height": 4,
            },
            {
                "recipientId": recipient_id,
                "type": "DATE",
                "page": 1,
                "positionX": 60,
                "positionY": 10,
                "width": 20,
                "height": 4,
            },
        ],
    )
    name_field, date_field = fields
    assert (name_field.type, name_field.page, name_field.position_x) == ("NAME", 3, 50.0)
    got = hook.get_field(name_field.id)
    assert got.width == 20.0
    # width/height update in place; a position change recreates the field (v2.17 ignores it on update)
    result = hook.update_fields(
        envelope_id,
        [{"id": date_field.id, "width": 25}, {"id": name_field.id, "page": 2, "positionX": 10}],
    )
    resized, moved = result
    assert resized.id == date_field.id
    assert resized.width == 25.0
    assert moved.id != name_field.id
    assert (moved.page, moved.position_x, moved.position_y) == (2, 10.0, 50.0)
    assert hook.get_field(moved.id).page == 2
    with pytest.raises(DocsignNotFoundError):
        hook.get_field(name_field.id)
    hook.delete_field(moved.id)
    assert moved.id not in {f.id for f in hook.get_envelope(envelope_id).fields}


def test_folders_and_folder_pagination(hook: DocsignHook, sandbox: SandboxServer) -> None:
    parent = hook.create_folder("Parent folder")
    assert (parent.name, parent.type, parent.parent_id) == ("Parent folder", "DOCUMENT", None)
    children = {hook.create_folder(f"Child {n}", parent_id=parent.id).id for n in range(101)}
    sandbox.clear_requests()
    listed = list(hook.list_folders(parent_id=parent.id))
    assert {f.id for f in listed} == children
    assert len([r for r in sandbox.requests() if r["path"] == "/folder"]) == 2
    renamed = hook.update_folder(parent.id, name="Renamed folder", pinned=True)
    assert (renamed.name, renamed.pinned) == ("Renamed folder", True)
    child = next(iter(children))
    moved = hook.update_folder(child, parent_id=None)
    assert moved.parent_id is None
    hook.delete_folder(parent.id)
    assert parent.id not in {f.id for f in hook.list_folders()}


def test_test_connection(hook: DocsignHook, sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    ok, message = hook.test_connection()
    assert ok, message
    wrong_key = DocsignHook(base_url=sandbox.base_url, api_key="api_wrongwrongwrong1", max_retries=0)
    ok, message = wrong_key.test_connection()
    assert not ok
    assert "API key" in message
    wrong_url = DocsignHook(base_url=sandbox.root_url + "/api/v9", api_key=sandbox.api_key, max_retries=0)
    ok, message = wrong_url.test_connection()
    assert not ok
    assert "URL" in message or "host" in message
