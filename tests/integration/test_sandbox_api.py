"""Real-service semantics of the sandbox JSON routes: find, get-many, folders, recipients, fields, etc."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from test_sandbox_helpers import create, create_id, envelope, get, post

from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


def _tag() -> str:
    return uuid.uuid4().hex[:10]


def test_find_is_a_case_insensitive_substring_search(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    tag = _tag()
    pdf = make_pdf("find.pdf")
    by_ext = create_id(sandbox, [pdf], external_id=f"ext-{tag}-abc-123", title="Plain title")
    by_title = create_id(sandbox, [pdf], title=f"Contract {tag.upper()} final")
    recipients = [{"email": f"{tag}@example.com", "name": "Someone", "role": "SIGNER"}]
    by_recipient = create_id(sandbox, [pdf], recipients=recipients)
    found = get(sandbox, "/envelope", params={"query": tag}).json()
    assert {e["id"] for e in found["data"]} == {by_ext, by_title, by_recipient}
    assert found["count"] == 3
    exact = get(sandbox, "/envelope", params={"query": f"{tag}-ABC-123"}).json()
    assert [e["id"] for e in exact["data"]] == [by_ext]
    # Newest first; no documentMeta, fields or items in the list shape.
    assert [e["id"] for e in found["data"]] == [by_recipient, by_title, by_ext]
    assert not {"documentMeta", "fields", "envelopeItems"} & set(found["data"][0])


def test_find_without_folder_sees_only_the_root(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    tag = _tag()
    folder = post(sandbox, "/folder/create", {"name": f"Folder {tag}"}).json()
    pdf = make_pdf("root.pdf")
    at_root = create_id(sandbox, [pdf], external_id=f"root-{tag}")
    in_folder = create_id(sandbox, [pdf], external_id=f"folder-{tag}", folder_id=folder["id"])
    root_view = get(sandbox, "/envelope", params={"query": tag}).json()
    assert [e["id"] for e in root_view["data"]] == [at_root]
    folder_view = get(sandbox, "/envelope", params={"query": tag, "folderId": folder["id"]}).json()
    assert [e["id"] for e in folder_view["data"]] == [in_folder]
    assert folder_view["data"][0]["folderId"] == folder["id"]
    # Deleting the folder moves its envelopes to the root.
    assert post(sandbox, "/folder/delete", {"folderId": folder["id"]}).json() == {"success": True}
    assert envelope(sandbox, in_folder)["folderId"] is None
    assert get(sandbox, "/envelope", params={"query": tag}).json()["count"] == 2


def test_find_pagination_and_filters(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    tag = _tag()
    pdf = make_pdf("page.pdf")
    ids = [create_id(sandbox, [pdf], external_id=f"page-{tag}-{i}") for i in range(5)]
    first = get(sandbox, "/envelope", params={"query": tag, "perPage": 2}).json()
    assert (first["count"], first["perPage"], first["currentPage"], first["totalPages"]) == (5, 2, 1, 3)
    pages = [
        e["id"]
        for p in (1, 2, 3)
        for e in get(sandbox, "/envelope", params={"query": tag, "perPage": 2, "page": p}).json()["data"]
    ]
    assert pages == ids[::-1]
    asc = get(
        sandbox, "/envelope", params={"query": tag, "orderByColumn": "createdAt", "orderByDirection": "asc"}
    ).json()
    assert [e["id"] for e in asc["data"]] == ids
    assert get(sandbox, "/envelope", params={"query": tag, "status": "PENDING"}).json()["count"] == 0
    assert get(sandbox, "/envelope", params={"query": tag, "status": "DRAFT"}).json()["count"] == 5
    assert (
        get(sandbox, "/envelope", params={"query": tag, "hasExpiredRecipients": "false"}).json()["count"] == 5
    )
    assert (
        get(sandbox, "/envelope", params={"query": tag, "hasExpiredRecipients": "true"}).json()["count"] == 0
    )
    too_many = get(sandbox, "/envelope", params={"perPage": 101})
    assert too_many.status_code == 400
    assert too_many.json()["issues"][0]["path"] == ["perPage"]


def test_get_many(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    pdf = make_pdf("many.pdf")
    ids = [create_id(sandbox, [pdf]) for _ in range(3)]
    resp = post(
        sandbox,
        "/envelope/get-many",
        {"ids": {"type": "envelopeId", "ids": [*ids, "envelope_missingmissingmi"]}},
    )
    assert resp.status_code == 200
    assert sorted(e["id"] for e in resp.json()["data"]) == sorted(ids)
    assert "documentMeta" in resp.json()["data"][0]
    over = post(
        sandbox,
        "/envelope/get-many",
        {"ids": {"type": "envelopeId", "ids": [f"envelope_{i:02d}x" for i in range(21)]}},
    )
    assert over.status_code == 400
    assert over.json()["issues"][0]["code"] == "too_big"


def test_folders_list_every_level_without_parent(sandbox: SandboxServer) -> None:
    tag = _tag()
    top = post(sandbox, "/folder/create", {"name": f"Top {tag}"}).json()
    child = post(sandbox, "/folder/create", {"name": f"Child {tag}", "parentId": top["id"]}).json()
    assert child["parentId"] == top["id"]
    listed = get(sandbox, "/folder", params={"perPage": 100}).json()["data"]
    ids = [f["id"] for f in listed]
    assert top["id"] in ids
    assert child["id"] in ids  # real quirk: no parentId means every level
    children = get(sandbox, "/folder", params={"parentId": top["id"]}).json()["data"]
    assert [f["id"] for f in children] == [child["id"]]
    moved = post(sandbox, "/folder/update", {"folderId": top["id"], "data": {"parentId": child["id"]}})
    assert moved.status_code == 400
    renamed = post(
        sandbox, "/folder/update", {"folderId": child["id"], "data": {"name": "Renamed", "parentId": None}}
    )
    assert (renamed.json()["name"], renamed.json()["parentId"]) == ("Renamed", None)
    missing = post(sandbox, "/folder/create", {"name": "Orphan", "parentId": "cnotafolder"})
    assert (missing.status_code, missing.json()["message"]) == (404, "Parent folder not found")
    short = post(sandbox, "/folder/create", {"name": "x"})
    assert short.status_code == 400
    assert post(sandbox, "/folder/delete", {"folderId": top["id"]}).status_code == 200
    assert get(sandbox, "/folder", params={"parentId": top["id"]}).json()["count"] == 0


def test_field_update_ignores_page_and_position(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    env_id = create_id(sandbox, [make_pdf("fields.pdf", pages=2)])
    field = envelope(sandbox, env_id)["fields"][0]
    body = {
        "envelopeId": env_id,
        "data": [
            {
                "id": field["id"],
                "type": "SIGNATURE",
                "page": 2,
                "positionX": 55.5,
                "positionY": 60,
                "width": 12.5,
                "height": 7,
            }
        ],
    }
    resp = post(sandbox, "/envelope/field/update-many", body)
    assert resp.status_code == 200
    updated = resp.json()["data"][0]
    # v2.17.0 bug reproduced: page/positionX/positionY ignored, width/height applied.
    assert (updated["page"], updated["positionX"], updated["positionY"]) == (1, "10", "20")
    assert (updated["width"], updated["height"]) == ("12.5", "7")
    assert get(sandbox, f"/envelope/field/{field['id']}").json()["width"] == "12.5"
    # The workaround (delete and create) works.
    assert post(sandbox, "/envelope/field/delete", {"fieldId": field["id"]}).json() == {"success": True}
    assert get(sandbox, f"/envelope/field/{field['id']}").status_code == 404
    created = post(
        sandbox,
        "/envelope/field/create-many",
        {
            "envelopeId": env_id,
            "data": [
                {
                    "recipientId": field["recipientId"],
                    "type": "SIGNATURE",
                    "page": 2,
                    "positionX": 55.5,
                    "positionY": 60,
                    "width": 12.5,
                    "height": 7,
                }
            ],
        },
    ).json()["data"][0]
    assert created["id"] > field["id"]
    assert (created["page"], created["positionX"], created["envelopeItemId"]) == (
        2,
        "55.5",
        field["envelopeItemId"],
    )
    assert isinstance(created["documentId"], int)
    assert created["templateId"] is None


def test_field_create_validation(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("fieldval.pdf")])
    rid = envelope(sandbox, env_id)["recipients"][0]["id"]
    bad = post(
        sandbox,
        "/envelope/field/create-many",
        {
            "envelopeId": env_id,
            "data": [
                {
                    "recipientId": rid,
                    "type": "SIGNATURE",
                    "page": 1,
                    "positionX": 101,
                    "positionY": 0,
                    "width": 10,
                    "height": 10,
                }
            ],
        },
    )
    assert bad.status_code == 400
    assert bad.json()["issues"][0]["path"] == ["data", 0, "positionX"]
    unknown = post(
        sandbox,
        "/envelope/field/create-many",
        {
            "envelopeId": env_id,
            "data": [
                {
                    "recipientId": 999999,
                    "type": "SIGNATURE",
                    "page": 1,
                    "positionX": 1,
                    "positionY": 1,
                    "width": 10,
                    "height": 10,
                }
            ],
        },
    )
    assert unknown.status_code == 400
    assert unknown.json()["message"] == "Recipient 999999 not found"
    assert len(envelope(sandbox, env_id)["fields"]) == 1


def test_recipients(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("recips.pdf")])
    created = post(
        sandbox,
        "/envelope/recipient/create-many",
        {
            "envelopeId": env_id,
            "data": [
                {"email": "New.Person@Example.com", "name": "New", "role": "APPROVER"},
                {"email": "copy@example.com", "name": "Copy", "role": "CC"},
            ],
        },
    ).json()["data"]
    assert [r["email"] for r in created] == ["new.person@example.com", "copy@example.com"]
    assert (created[1]["sendStatus"], created[1]["signingStatus"]) == ("SENT", "SIGNED")
    full = get(sandbox, f"/envelope/recipient/{created[0]['id']}").json()
    assert full["fields"] == []
    updated = post(
        sandbox,
        "/envelope/recipient/update-many",
        {"envelopeId": env_id, "data": [{"id": created[0]["id"], "name": "Renamed", "role": "SIGNER"}]},
    ).json()["data"][0]
    assert (updated["name"], updated["role"]) == ("Renamed", "SIGNER")
    assert isinstance(updated["documentId"], int)
    assert post(sandbox, "/envelope/recipient/delete", {"recipientId": created[1]["id"]}).json() == {
        "success": True
    }
    assert get(sandbox, f"/envelope/recipient/{created[1]['id']}").status_code == 404
    assert get(sandbox, "/envelope/recipient/not-a-number").status_code == 400
    # The new SIGNER has no signature field, so distribution is refused.
    assert (
        post(sandbox, "/envelope/distribute", {"envelopeId": env_id}).json()["data"]["code"]
        == "MISSING_SIGNATURE_FIELD"
    )


def test_update_and_delete_envelope(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    pdf = make_pdf("upd.pdf")
    env_id = create_id(sandbox, [pdf], external_id="before")
    resp = post(
        sandbox,
        "/envelope/update",
        {
            "envelopeId": env_id,
            "data": {"title": "After", "externalId": None},
            "meta": {"subject": "Sign me"},
        },
    )
    assert resp.status_code == 200
    assert (resp.json()["title"], resp.json()["externalId"]) == ("After", None)
    assert "recipients" not in resp.json()
    assert envelope(sandbox, env_id)["documentMeta"]["subject"] == "Sign me"
    # Draft: hard delete.
    assert post(sandbox, "/envelope/delete", {"envelopeId": env_id}).json() == {"success": True}
    assert get(sandbox, f"/envelope/{env_id}").status_code == 404
    # Completed: soft delete, still readable by id with deletedAt, hidden from find.
    done_id = create_id(sandbox, [pdf], external_id=f"soft-{_tag()}")
    assert post(sandbox, "/envelope/distribute", {"envelopeId": done_id}).status_code == 200
    sandbox.complete(done_id)
    sandbox.wait_status(done_id, "COMPLETED")
    assert post(sandbox, "/envelope/delete", {"envelopeId": done_id}).status_code == 200
    assert envelope(sandbox, done_id)["deletedAt"] is not None
    assert (
        get(sandbox, "/envelope", params={"query": envelope(sandbox, done_id)["externalId"]}).json()["count"]
        == 0
    )
    # Deleting it again is a no-op that answers success on the real service (delete-document.ts returns
    # early on deletedAt; nothing filters soft-deleted envelopes out of the delete's look-ups).
    assert post(sandbox, "/envelope/delete", {"envelopeId": done_id}).json() == {"success": True}
    assert envelope(sandbox, done_id)["deletedAt"] is not None


def test_items_are_frozen_once_pending(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("a.pdf"), make_pdf("b.pdf")])
    first, second = envelope(sandbox, env_id)["envelopeItems"]
    assert (
        post(
            sandbox, "/envelope/item/delete", {"envelopeId": env_id, "envelopeItemId": second["id"]}
        ).status_code
        == 200
    )
    assert [i["id"] for i in envelope(sandbox, env_id)["envelopeItems"]] == [first["id"]]
    assert post(sandbox, "/envelope/distribute", {"envelopeId": env_id}).status_code == 200
    refused = post(sandbox, "/envelope/item/delete", {"envelopeId": env_id, "envelopeItemId": first["id"]})
    assert (refused.status_code, refused.json()["message"]) == (400, "Envelope item is not editable")
    renamed = post(
        sandbox,
        "/envelope/item/update-many",
        {"envelopeId": env_id, "data": [{"envelopeItemId": first["id"], "title": "T"}]},
    )
    assert renamed.status_code == 200  # titles may change while PENDING
    reorder = post(
        sandbox,
        "/envelope/item/update-many",
        {"envelopeId": env_id, "data": [{"envelopeItemId": first["id"], "order": 5}]},
    )
    assert reorder.status_code == 400  # order may not, once a signer was sent the document


def test_create_identifier_rules(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    a, b = make_pdf("first.pdf"), make_pdf("second.pdf")
    recipients = [
        {
            "email": "s@example.com",
            "name": "S",
            "role": "SIGNER",
            "fields": [
                {
                    "identifier": -1,
                    "type": "SIGNATURE",
                    "page": 1,
                    "positionX": 1,
                    "positionY": 1,
                    "width": 5,
                    "height": 5,
                },
                {
                    "identifier": "first.pdf",
                    "type": "SIGNATURE",
                    "page": 1,
                    "positionX": 1,
                    "positionY": 1,
                    "width": 5,
                    "height": 5,
                },
                {"type": "NAME", "page": 1, "positionX": 1, "positionY": 1, "width": 5, "height": 5},
            ],
        }
    ]
    env = envelope(sandbox, create_id(sandbox, [a, b], recipients=recipients))
    items = {i["title"]: i["id"] for i in env["envelopeItems"]}
    assert [f["envelopeItemId"] for f in env["fields"]] == [
        items["second.pdf"],
        items["first.pdf"],
        items["first.pdf"],
    ]
    assert env["fields"][2]["fieldMeta"] == {"type": "name", "fontSize": 12, "textAlign": "left"}
    recipients[0]["fields"] = [
        {
            "identifier": 2,
            "type": "SIGNATURE",
            "page": 1,
            "positionX": 1,
            "positionY": 1,
            "width": 5,
            "height": 5,
        }
    ]
    resp = create(sandbox, [a, b], recipients=recipients)
    assert (resp.status_code, resp.json()["message"]) == (404, "Document data not found")


def test_payload_part_sent_as_a_file_is_read_as_text(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    import json

    import requests

    pdf = make_pdf("asfile.pdf")
    payload = json.dumps({"type": "DOCUMENT", "title": "Payload as file"})
    resp = requests.post(
        sandbox.base_url + "/envelope/create",
        headers={"Authorization": sandbox.api_key},
        files=[
            ("payload", ("payload.json", payload.encode(), "application/json")),
            ("files[]", ("asfile.pdf", pdf.read_bytes(), "application/pdf")),
        ],
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    env = envelope(sandbox, resp.json()["id"])
    assert env["title"] == "Payload as file"
    assert [i["title"] for i in env["envelopeItems"]] == ["asfile.pdf"]


def test_redistribute_and_audit_downloads(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    import io

    from pypdf import PdfReader

    env_id = create_id(sandbox, [make_pdf("audit.pdf")], title="Audit me.pdf")
    rid = envelope(sandbox, env_id)["recipients"][0]["id"]
    draft = post(sandbox, "/envelope/redistribute", {"envelopeId": env_id, "recipients": [rid]})
    assert (draft.status_code, draft.json()["message"]) == (500, "Can not send draft document")
    assert post(sandbox, "/envelope/distribute", {"envelopeId": env_id}).status_code == 200
    resent = post(sandbox, "/envelope/redistribute", {"envelopeId": env_id, "recipients": [rid]})
    assert resent.status_code == 200
    assert [r["id"] for r in resent.json()["recipients"]] == [rid]
    log = get(sandbox, f"/envelope/{env_id}/audit-log", params={"perPage": 100}).json()
    types = [a["type"] for a in log["data"]]
    assert types[-1] == "DOCUMENT_CREATED"  # newest first
    assert "DOCUMENT_SENT" in types
    assert [a["data"]["isResending"] for a in log["data"] if a["type"] == "EMAIL_SENT"] == [True, False]
    pdf = get(sandbox, f"/envelope/{env_id}/audit-log/download")
    assert pdf.status_code == 200
    assert pdf.headers["content-disposition"] == 'attachment; filename="Audit me_audit-log.pdf"'
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf.content)).pages)
    assert env_id in text
    assert "DOCUMENT_SENT" in text
    early = get(sandbox, f"/envelope/{env_id}/certificate/download")
    assert (early.status_code, early.json()["code"]) == (500, "DOCUMENT_NOT_COMPLETE")
    sandbox.complete(env_id)
    sandbox.wait_status(env_id, "COMPLETED")
    cert = get(sandbox, f"/envelope/{env_id}/certificate/download")
    assert cert.headers["content-disposition"] == 'attachment; filename="Audit me_certificate.pdf"'
    assert "signer@example.com" in PdfReader(io.BytesIO(cert.content)).pages[0].extract_text()
    missing = get(sandbox, "/envelope/envelope_nosuchenvelopexx/audit-log/download")
    assert (missing.status_code, missing.json()) == (404, {"error": "Document not found"})


def test_a_lone_surrogate_is_a_500_that_stores_nothing(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    # The real service's database layer cannot store a lone surrogate: the query fails (prisma/orm#24989)
    # and tRPC answers the unknown error as 500 INTERNAL_SERVER_ERROR, with nothing written. The sandbox
    # used to store it, answer 500 as plain text, and then fail every later folder listing.
    tag = _tag()
    answer = post(sandbox, "/folder/create", {"name": f"Folder {tag} \ud800"})
    assert answer.status_code == 500
    assert answer.json() == {
        "message": answer.json()["message"],
        "code": "INTERNAL_SERVER_ERROR",
        "data": {"code": "INTERNAL_SERVER_ERROR", "httpStatus": 500, "path": "folder.createFolder"},
    }
    listing = get(sandbox, "/folder")
    assert listing.status_code == 200
    assert not [f for f in listing.json()["data"] if tag in f["name"]]
    # The same for a multipart payload part.
    created = create(sandbox, [make_pdf("surrogate.pdf")], title=f"Title {tag} \udc00")
    assert created.status_code == 500
    assert created.json()["data"] == {
        "code": "INTERNAL_SERVER_ERROR",
        "httpStatus": 500,
        "path": "envelope.create",
    }
    assert get(sandbox, "/envelope", params={"query": tag}).json()["count"] == 0


def test_the_audit_log_is_by_time_and_its_direction_counts_only_with_its_column(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    """As the real service: newest first unless orderByColumn=createdAt comes with asc."""
    env_id = create_id(sandbox, [make_pdf("audit.pdf")])
    # An entry planted with an older time than the creation's: listed by its time, not when written.
    sandbox.set_times(env_id, audit=[{"type": "DOCUMENT_OPENED", "createdAt": "2020-01-01T00:00:00.000Z"}])

    def types(**params: str) -> list[str]:
        data = get(sandbox, f"/envelope/{env_id}/audit-log", params=params).json()["data"]
        return [e["type"] for e in data]

    newest_first = types(orderByColumn="createdAt")
    assert newest_first[-1] == "DOCUMENT_OPENED"
    assert types(orderByColumn="createdAt", orderByDirection="asc") == newest_first[::-1]
    # Without the column the direction is ignored: newest written first either way.
    assert types(orderByDirection="asc") == types()
    assert types()[0] == "DOCUMENT_OPENED"
