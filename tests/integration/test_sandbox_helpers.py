"""Small ``requests`` helpers shared by the sandbox integration tests (collected, but holds no tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import requests

from airflow_provider_docsign.sandbox import SandboxServer


def auth(server: SandboxServer) -> dict[str, str]:
    """The Authorization header for ``server``."""
    return {"Authorization": f"Bearer {server.api_key}"}


def create(
    server: SandboxServer,
    pdfs: list[Path],
    *,
    title: str = "Sandbox test",
    external_id: str | None = None,
    recipients: list[dict[str, Any]] | None = None,
    folder_id: str | None = None,
) -> requests.Response:
    """Multipart ``POST /envelope/create``; one SIGNER with a signature field on page 1 by default."""
    if recipients is None:
        recipients = [
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
                        "positionY": 20,
                        "width": 30,
                        "height": 10,
                    }
                ],
            }
        ]
    payload: dict[str, Any] = {"type": "DOCUMENT", "title": title, "recipients": recipients}
    if external_id is not None:
        payload["externalId"] = external_id
    if folder_id is not None:
        payload["folderId"] = folder_id
    files = [("payload", (None, json.dumps(payload)))]
    files += [("files", (p.name, p.read_bytes(), "application/pdf")) for p in pdfs]
    return requests.post(server.base_url + "/envelope/create", headers=auth(server), files=files, timeout=30)


def create_id(server: SandboxServer, pdfs: list[Path], **kw: Any) -> str:
    """Create and return the envelope id (asserting success)."""
    resp = create(server, pdfs, **kw)
    assert resp.status_code == 200, resp.text
    return str(resp.json()["id"])


def get(server: SandboxServer, path: str, **kw: Any) -> requests.Response:
    """``GET {base_url}{path}`` with the key."""
    kw.setdefault("headers", auth(server))
    return requests.get(server.base_url + path, timeout=30, **kw)


def post(server: SandboxServer, path: str, body: Any, **kw: Any) -> requests.Response:
    """``POST {base_url}{path}`` with a JSON body and the key."""
    kw.setdefault("headers", auth(server))
    return requests.post(server.base_url + path, json=body, timeout=30, **kw)


def envelope(server: SandboxServer, envelope_id: str) -> dict[str, Any]:
    """``GET /envelope/{id}`` (asserting 200)."""
    resp = get(server, f"/envelope/{envelope_id}")
    assert resp.status_code == 200, resp.text
    data: dict[str, Any] = resp.json()
    return data
