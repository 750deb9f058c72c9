"""System tests: the provider's own code paths against a real Documenso instance (opt-in).

Signing cannot be done through the public API, so nothing here goes beyond PENDING; the distributed
envelope is cancelled. Signers use ``example.com`` addresses and ``distributionMethod: NONE`` so that no
e-mail is sent.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import sig, signer

from airflow_provider_docsign.exceptions import (
    DocsignAuthError,
    DocsignNotFoundError,
    DocsignValidationError,
)
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignCreateFolderOperator
from airflow_provider_docsign.service.models import EnvelopeStatus

NO_EMAIL = {"distributionMethod": "NONE"}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_create_with_two_pdfs_get_and_find(
    system_hook: DocsignHook, system_run: Any, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    files = [pdf("agreement.pdf", pages=2), pdf("annex.pdf")]
    external_id = system_run.external_id("create")
    envelope_id = new_envelope(
        "create",
        files,
        [signer(sig(page=2), sig(identifier=1, positionY=40), email="system-signer@example.com")],
        external_id=external_id,
    )

    envelope = system_hook.get_envelope(envelope_id)
    assert envelope.status == EnvelopeStatus.DRAFT
    assert [i.title for i in envelope.items] == ["agreement.pdf", "annex.pdf"]
    assert [r.email for r in envelope.recipients] == ["system-signer@example.com"]
    by_item = {f.envelope_item_id: f for f in envelope.fields}
    assert by_item[envelope.items[0].id].page == 2
    assert by_item[envelope.items[1].id].position_y == 40.0

    found = system_hook.find_envelopes_by_external_id(external_id, folder_id=system_run.folder_id)
    assert [e.id for e in found] == [envelope_id]


def test_items_add_rename_reorder_delete(
    system_hook: DocsignHook, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    envelope_id = new_envelope("items", [pdf("first.pdf")], [signer()])
    (added,) = system_hook.add_envelope_items(envelope_id, [pdf("second.pdf")])
    first = system_hook.get_envelope(envelope_id).items[0]

    items = system_hook.update_envelope_items(
        envelope_id,
        [
            {"envelopeItemId": added.id, "title": "Now first", "order": 1},
            {"envelopeItemId": first.id, "title": "Now second", "order": 2},
        ],
    )
    assert [(i.id, i.title) for i in items] == [(added.id, "Now first"), (first.id, "Now second")]

    system_hook.delete_envelope_item(envelope_id, added.id)
    assert [i.id for i in system_hook.get_envelope(envelope_id).items] == [first.id]


def test_recipients_and_fields_crud_with_a_move(
    system_hook: DocsignHook, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    envelope_id = new_envelope("people", [pdf("two-pages.pdf", pages=2)], [signer()])
    (viewer,) = system_hook.create_recipients(
        envelope_id, [{"email": "system-cc@example.com", "name": "Carbon Copy", "role": "CC"}]
    )
    (renamed,) = system_hook.update_recipients(envelope_id, [{"id": viewer.id, "name": "Copy Holder"}])
    assert renamed.name == "Copy Holder"
    assert system_hook.get_recipient(viewer.id).name == "Copy Holder"

    envelope = system_hook.get_envelope(envelope_id)
    signer_id = next(r.id for r in envelope.recipients if r.role == "SIGNER")
    (date_field,) = system_hook.create_fields(
        envelope_id,
        [
            {
                "recipientId": signer_id,
                "type": "DATE",
                "page": 1,
                "positionX": 60,
                "positionY": 85,
                "width": 20,
                "height": 4,
            }
        ],
    )
    (moved,) = system_hook.update_fields(envelope_id, [{"id": date_field.id, "page": 2, "positionX": 30}])
    current = system_hook.get_field(moved.id)
    assert (current.page, current.position_x, current.position_y) == (2, 30.0, 85.0)
    if moved.id != date_field.id:  # moved by recreating it: the old field must be gone
        with pytest.raises(DocsignNotFoundError):
            system_hook.get_field(date_field.id)

    system_hook.delete_field(moved.id)
    system_hook.delete_recipient(viewer.id)
    envelope = system_hook.get_envelope(envelope_id)
    assert moved.id not in {f.id for f in envelope.fields}
    assert viewer.id not in {r.id for r in envelope.recipients}


def test_folders_idempotent_create_and_delete(
    system_hook: DocsignHook, system_run: Any, system_conn: str
) -> None:
    operator = DocsignCreateFolderOperator(
        task_id="folder",
        name=f"{system_run.prefix} sub",
        parent_id=system_run.folder_id,
        docsign_conn_id=system_conn,
    )
    first = operator.execute({})
    system_run.folder_ids.append(first)
    assert operator.execute({}) == first  # a second run finds the same folder
    inside = [f.id for f in system_hook.list_folders(parent_id=system_run.folder_id)]
    assert inside.count(first) == 1

    system_hook.delete_folder(first)
    assert first not in [f.id for f in system_hook.list_folders(parent_id=system_run.folder_id)]


def test_distribute_then_cancel(
    system_hook: DocsignHook, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    envelope_id = new_envelope("send", [pdf("send.pdf")], [signer(email="system-send@example.com")])
    answer = system_hook.distribute_envelope(envelope_id, meta=NO_EMAIL)
    assert answer.get("success") is True or "recipients" in answer
    assert system_hook.get_envelope(envelope_id).status == EnvelopeStatus.PENDING

    system_hook.cancel_envelope(envelope_id, reason="system test")
    assert system_hook.get_envelope(envelope_id).status == EnvelopeStatus.CANCELLED


def test_download_original_equals_the_upload(
    system_hook: DocsignHook, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    source = pdf("original.pdf", pages=3)
    envelope_id = new_envelope("download", [source], [signer()])
    item = system_hook.get_envelope(envelope_id).items[0]
    sink = io.BytesIO()
    result = system_hook.download_envelope_item(item.id, sink, version="original")
    assert _sha256(sink.getvalue()) == _sha256(source.read_bytes()) == result.sha256


def test_page_99_is_refused_locally_and_nothing_is_created(
    system_hook: DocsignHook, system_run: Any, pdf: Callable[..., Path]
) -> None:
    external_id = system_run.external_id("page99")
    with pytest.raises(DocsignValidationError, match="page 99"):
        system_hook.create_envelope(
            title=f"{system_run.prefix} page99",
            files=[pdf("short.pdf")],
            recipients=[signer(sig(page=99))],
            external_id=external_id,
            folder_id=system_run.folder_id,
        )
    assert system_hook.find_envelopes_by_external_id(external_id, folder_id=system_run.folder_id) == []


def test_wrong_key_and_unknown_envelope(system_hook: DocsignHook) -> None:
    settings = system_hook.settings
    with (
        DocsignHook(base_url=settings.base_url, api_key="api_wrong_system_test_key") as wrong,
        pytest.raises(DocsignAuthError) as refused,
    ):
        wrong.get_envelope("envelope_doesnotexist")
    assert refused.value.status_code == 401
    assert "api_wrong_system_test_key" not in str(refused.value)

    with pytest.raises(DocsignNotFoundError) as missing:
        system_hook.get_envelope("envelope_doesnotexistatall")
    assert missing.value.status_code == 404


def test_connection_both_ways(system_hook: DocsignHook) -> None:
    ok, message = system_hook.test_connection()
    assert ok, message
    with DocsignHook(base_url=system_hook.settings.base_url, api_key="api_wrong_system_test_key") as wrong:
        ok, message = wrong.test_connection()
    assert not ok
    assert "refused the API key" in message
