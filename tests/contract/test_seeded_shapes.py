"""Envelopes stored through the test-only ``/_sandbox/seed`` route answer find, get, get-many and the
audit log with exactly the shapes the real OpenAPI document declares (seeded data adds no new keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from contract_shapes import validate_response

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sandbox.synthetic import synthetic_envelopes

pytestmark = pytest.mark.integration


def test_seeded_envelopes_validate_against_the_openapi_document(
    sandbox: SandboxServer, spec_dir: Path, api_key: str
) -> None:
    hook = DocsignHook(base_url=sandbox.base_url, api_key=api_key)
    folder = hook.create_folder("Seeded shapes").id
    specs = synthetic_envelopes(8, days=2, folder_ids=(folder,))
    ids = sandbox.seed(specs)
    sandbox.set_times(ids[0], updatedAt="2026-11-05T10:00:00.000Z", sentAt="2026-11-01T00:10:00.000Z")
    session = hook.session
    base = sandbox.base_url

    def check(method: str, template: str, url: str, **kwargs: Any) -> Any:
        response = session.request(method, base + url, timeout=10, **kwargs)
        assert response.status_code == 200, response.text[:300]
        body = response.json()
        assert validate_response(spec_dir, method, template, 200, body) == []
        return body

    found = check(
        "GET",
        "/envelope",
        "/envelope",
        params={"folderId": folder, "perPage": 100, "orderByColumn": "createdAt", "orderByDirection": "desc"},
    )
    assert {e["id"] for e in found["data"]} == set(ids)
    created = [e["createdAt"] for e in found["data"]]
    assert created == sorted(created, reverse=True)
    got = check("GET", "/envelope/{envelopeId}", f"/envelope/{ids[0]}")
    assert got["updatedAt"] == "2026-11-05T10:00:00.000Z"
    check(
        "POST", "/envelope/get-many", "/envelope/get-many", json={"ids": {"type": "envelopeId", "ids": ids}}
    )
    log = check("GET", "/envelope/{envelopeId}/audit-log", f"/envelope/{ids[0]}/audit-log")
    assert "2026-11-01T00:10:00.000Z" in [e["createdAt"] for e in log["data"] if e["type"] == "DOCUMENT_SENT"]
