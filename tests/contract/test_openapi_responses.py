"""Every sandbox ``/api/v2`` JSON response validates against the response schema that the real server's
OpenAPI document declares for that operation and status."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
from contract_shapes import validate_response

from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

# The real server sends PDFs from these routes although the document declares JSON (see spec README).
BINARY_ROUTES = {
    "/envelope/item/{envelopeItemId}/download",
    "/envelope/{envelopeId}/audit-log/download",
    "/envelope/{envelopeId}/certificate/download",
}

SANDBOX_ROUTES = {
    ("POST", "/envelope/create"),
    ("GET", "/envelope/{envelopeId}"),
    ("GET", "/envelope"),
    ("POST", "/envelope/get-many"),
    ("POST", "/envelope/update"),
    ("POST", "/envelope/delete"),
    ("POST", "/envelope/distribute"),
    ("POST", "/envelope/redistribute"),
    ("POST", "/envelope/cancel"),
    ("GET", "/envelope/{envelopeId}/audit-log"),
    ("GET", "/envelope/{envelopeId}/audit-log/download"),
    ("GET", "/envelope/{envelopeId}/certificate/download"),
    ("POST", "/envelope/item/create-many"),
    ("POST", "/envelope/item/update-many"),
    ("POST", "/envelope/item/delete"),
    ("GET", "/envelope/item/{envelopeItemId}/download"),
    ("GET", "/envelope/recipient/{recipientId}"),
    ("POST", "/envelope/recipient/create-many"),
    ("POST", "/envelope/recipient/update-many"),
    ("POST", "/envelope/recipient/delete"),
    ("POST", "/envelope/recipient/{recipientId}/reject"),
    ("GET", "/envelope/field/{fieldId}"),
    ("POST", "/envelope/field/create-many"),
    ("POST", "/envelope/field/update-many"),
    ("POST", "/envelope/field/delete"),
    ("GET", "/folder"),
    ("POST", "/folder/create"),
    ("POST", "/folder/update"),
    ("POST", "/folder/delete"),
}


class Recorder:
    """Calls the sandbox and validates each JSON answer against the OpenAPI response schema."""

    def __init__(self, server: SandboxServer, spec_dir: Path) -> None:
        self.server = server
        self.spec_dir = spec_dir
        self.errors: list[str] = []
        self.seen: set[tuple[str, str, int]] = set()
        self.auth = {"Authorization": f"Bearer {server.api_key}"}

    def call(
        self, method: str, template: str, params: dict[str, Any] | None = None, **kw: Any
    ) -> requests.Response:
        url = self.server.base_url + template.format(**(params or {}))
        kw.setdefault("headers", self.auth)
        resp = requests.request(method, url, timeout=30, **kw)
        template = template.split("?")[0]
        self.seen.add((method, template, resp.status_code))
        is_pdf = resp.headers.get("content-type", "").startswith("application/pdf")
        if template in BINARY_ROUTES and is_pdf:
            assert resp.content.startswith(b"%PDF-")
        elif template in BINARY_ROUTES:
            # The real download router answers errors as {"error", "code"?} (recorded err_*_download),
            # not with the tRPC error shape the document declares; the sandbox follows the real server.
            body = resp.json()
            if not isinstance(body.get("error"), (str, list)):
                self.errors.append(f"{method} {template} -> {resp.status_code}: not a download error body")
        else:
            body = resp.json()
            for err in validate_response(self.spec_dir, method, template, resp.status_code, body):
                self.errors.append(f"{method} {template} -> {resp.status_code}: {err}")
        return resp


@pytest.fixture
def rec(sandbox: SandboxServer, spec_dir: Path) -> Recorder:
    return Recorder(sandbox, spec_dir)


def _create(rec: Recorder, pdf: Path, payload: dict[str, Any]) -> str:
    files = [
        ("payload", (None, json.dumps(payload))),
        ("files", ("contract.pdf", pdf.read_bytes(), "application/pdf")),
    ]
    resp = rec.call("POST", "/envelope/create", files=files)
    assert resp.status_code == 200, resp.text
    return str(resp.json()["id"])


def test_every_route_validates_against_openapi(rec: Recorder, sandbox: SandboxServer, tmp_path: Path) -> None:
    pdf = write_sample_pdf(tmp_path / "contract.pdf", pages=2)
    ext = f"openapi-{uuid.uuid4().hex[:10]}"
    folder = rec.call("POST", "/folder/create", json={"name": "Contracts " + ext}).json()
    sub = rec.call("POST", "/folder/create", json={"name": "Sub " + ext, "parentId": folder["id"]}).json()
    rec.call("GET", "/folder")
    rec.call("GET", "/folder", params=None, headers=rec.auth)
    rec.call(
        "POST",
        "/folder/update",
        json={"folderId": sub["id"], "data": {"name": "Renamed " + ext, "pinned": True}},
    )
    payload = {
        "type": "DOCUMENT",
        "title": "OpenAPI check",
        "externalId": ext,
        "folderId": folder["id"],
        "recipients": [
            {
                "email": "signer@example.com",
                "name": "Sam Signer",
                "role": "SIGNER",
                "fields": [
                    {
                        "identifier": 0,
                        "type": "SIGNATURE",
                        "page": 1,
                        "positionX": 10,
                        "positionY": 10,
                        "width": 20,
                        "height": 5,
                    },
                    {
                        "identifier": 0,
                        "type": "NAME",
                        "page": 2,
                        "positionX": 12.5,
                        "positionY": 50,
                        "width": 20,
                        "height": 5,
                    },
                ],
            },
            {"email": "cc@example.com", "name": "Carl Copy", "role": "CC"},
        ],
        "meta": {"language": "en", "timezone": "Europe/Berlin", "subject": "Please sign"},
    }
    env_id = _create(rec, pdf, payload)
    env = rec.call("GET", "/envelope/{envelopeId}", {"envelopeId": env_id}).json()
    rec.call("GET", "/envelope", headers=rec.auth)
    rec.call("GET", "/envelope?folderId={f}&query={q}", {"f": folder["id"], "q": ext[:12]})
    rec.call("POST", "/envelope/get-many", json={"ids": {"type": "envelopeId", "ids": [env_id]}})
    rec.call(
        "POST",
        "/envelope/update",
        json={"envelopeId": env_id, "data": {"title": "Renamed"}, "meta": {"message": "Hi"}},
    )
    items = rec.call(
        "POST",
        "/envelope/item/create-many",
        files=[
            ("payload", (None, json.dumps({"envelopeId": env_id}))),
            ("files", ("annex.pdf", pdf.read_bytes(), "application/pdf")),
        ],
    ).json()["data"]
    rec.call(
        "POST",
        "/envelope/item/update-many",
        json={
            "envelopeId": env_id,
            "data": [{"envelopeItemId": items[0]["id"], "title": "Annex", "order": 1}],
        },
    )
    signer_id = env["recipients"][0]["id"]
    rid = rec.call(
        "POST",
        "/envelope/recipient/create-many",
        json={
            "envelopeId": env_id,
            "data": [{"email": "extra@example.com", "name": "Extra", "role": "SIGNER"}],
        },
    ).json()["data"][0]["id"]
    rec.call("GET", "/envelope/recipient/{recipientId}", {"recipientId": signer_id})
    rec.call(
        "POST",
        "/envelope/recipient/update-many",
        json={"envelopeId": env_id, "data": [{"id": rid, "name": "Extra Person"}]},
    )
    fields = rec.call(
        "POST",
        "/envelope/field/create-many",
        json={
            "envelopeId": env_id,
            "data": [
                {
                    "recipientId": rid,
                    "type": "SIGNATURE",
                    "page": 1,
                    "positionX": 50,
                    "positionY": 70,
                    "width": 20,
                    "height": 5,
                },
                {
                    "recipientId": rid,
                    "type": "TEXT",
                    "page": 1,
                    "positionX": 50,
                    "positionY": 80,
                    "width": 20,
                    "height": 5,
                },
            ],
        },
    ).json()["data"]
    rec.call("GET", "/envelope/field/{fieldId}", {"fieldId": fields[0]["id"]})
    rec.call(
        "POST",
        "/envelope/field/update-many",
        json={"envelopeId": env_id, "data": [{"id": fields[0]["id"], "type": "SIGNATURE", "width": 25}]},
    )
    rec.call("POST", "/envelope/field/delete", json={"fieldId": fields[1]["id"]})
    spare = rec.call(
        "POST",
        "/envelope/recipient/create-many",
        json={
            "envelopeId": env_id,
            "data": [{"email": "spare@example.com", "name": "Spare", "role": "VIEWER"}],
        },
    ).json()["data"][0]["id"]
    rec.call("POST", "/envelope/recipient/delete", json={"recipientId": spare})
    rec.call("POST", "/envelope/item/delete", json={"envelopeId": env_id, "envelopeItemId": items[0]["id"]})
    rec.call("GET", "/envelope/{envelopeId}/audit-log", {"envelopeId": env_id})
    rec.call("GET", "/envelope/{envelopeId}/audit-log/download", {"envelopeId": env_id})
    rec.call("GET", "/envelope/{envelopeId}/certificate/download", {"envelopeId": env_id})
    rec.call("POST", "/envelope/distribute", json={"envelopeId": env_id})
    rec.call("POST", "/envelope/redistribute", json={"envelopeId": env_id, "recipients": [signer_id]})
    item_id = env["envelopeItems"][0]["id"]
    rec.call("GET", "/envelope/item/{envelopeItemId}/download?version=pending", {"envelopeItemId": item_id})
    sandbox.complete(env_id)
    sandbox.wait_status(env_id, "COMPLETED")
    rec.call("GET", "/envelope/{envelopeId}", {"envelopeId": env_id})
    rec.call("GET", "/envelope/item/{envelopeItemId}/download", {"envelopeItemId": item_id})
    rec.call("GET", "/envelope/{envelopeId}/certificate/download", {"envelopeId": env_id})
    rec.call("POST", "/envelope/delete", json={"envelopeId": env_id})

    # Rejection and cancellation.
    other = _create(
        rec, pdf, {**payload, "folderId": None, "externalId": ext + "-b"} | {"folderId": sub["id"]}
    )
    other_env = rec.call("GET", "/envelope/{envelopeId}", {"envelopeId": other}).json()
    rec.call("POST", "/envelope/distribute", json={"envelopeId": other})
    rec.call(
        "POST",
        "/envelope/recipient/{recipientId}/reject",
        {"recipientId": other_env["recipients"][0]["id"]},
        json={"envelopeId": other, "reason": "Wrong amount"},
    )
    third = _create(rec, pdf, {**payload, "externalId": ext + "-c"})
    rec.call("POST", "/envelope/distribute", json={"envelopeId": third})
    rec.call("POST", "/envelope/cancel", json={"envelopeId": third, "reason": "No longer needed"})
    rec.call("POST", "/folder/delete", json={"folderId": folder["id"]})

    # Error answers.
    rec.call("GET", "/envelope/{envelopeId}", {"envelopeId": "envelope_doesnotexistatall"})
    rec.call("GET", "/envelope/{envelopeId}", {"envelopeId": "bad"})
    rec.call("GET", "/envelope/{envelopeId}", {"envelopeId": env_id}, headers={"Authorization": "api_wrong"})
    rec.call("GET", "/envelope/{envelopeId}", {"envelopeId": env_id}, headers={})
    rec.call("GET", "/envelope?status={s}", {"s": "DONE"})
    rec.call("POST", "/envelope/distribute", json={})
    rec.call("POST", "/envelope/distribute", json={"envelopeId": "envelope_doesnotexistatall"})
    rec.call("POST", "/envelope/create", json=payload)
    rec.call("GET", "/envelope/recipient/{recipientId}", {"recipientId": 999999})
    rec.call("GET", "/envelope/field/{fieldId}", {"fieldId": 999999})
    rec.call("POST", "/folder/delete", json={"folderId": "nope"})
    rec.call("GET", "/envelope/item/{envelopeItemId}/download", {"envelopeItemId": "envelope_item_nope"})

    assert rec.errors == [], "\n".join(rec.errors)
    assert {(m, t) for m, t, _ in rec.seen} >= SANDBOX_ROUTES


def test_undeclared_status_is_reported(spec_dir: Path) -> None:
    # The checker itself must be able to fail: a wrong body or an undeclared status gives errors.
    assert validate_response(spec_dir, "GET", "/envelope/{envelopeId}", 200, {"id": 1}) != []
    assert validate_response(spec_dir, "GET", "/envelope/{envelopeId}", 302, {}) != []
    assert validate_response(spec_dir, "GET", "/envelope/{envelopeId}", 404, {"message": "x"}) != []
