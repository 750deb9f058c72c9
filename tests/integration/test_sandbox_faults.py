"""Fault injection through the control API, observed by a plain ``requests`` client."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
from test_sandbox_helpers import auth, create, create_id, envelope, get, post

from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sandbox.server import SandboxError

pytestmark = pytest.mark.integration


def _find(sandbox: SandboxServer, query: str) -> int:
    return int(get(sandbox, "/envelope", params={"query": query}).json()["count"])


def test_status_fault_with_retry_after_then_normal(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    env_id = create_id(sandbox, [make_pdf("f429.pdf")])
    sandbox.inject_fault("GET", "/envelope/*", "status", count=2, status=429, retry_after=3)
    for _ in range(2):
        resp = get(sandbox, f"/envelope/{env_id}")
        assert resp.status_code == 429
        assert resp.headers["retry-after"] == "3"
        assert resp.json() == {"error": "Too many requests, please try again later."}
    assert get(sandbox, f"/envelope/{env_id}").status_code == 200
    statuses = [r["status"] for r in sandbox.requests() if r["method"] == "GET"]
    assert statuses == [429, 429, 200]


def test_status_fault_on_create_does_not_create(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    sandbox.inject_fault("POST", "/envelope/create", "status", status=503)
    resp = create(sandbox, [make_pdf("f503.pdf")], external_id="fault-503-create")
    assert resp.status_code == 503
    assert resp.json()["data"]["httpStatus"] == 503
    assert _find(sandbox, "fault-503-create") == 0


def test_fault_only_matches_method_and_path(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("fmatch.pdf")])
    sandbox.inject_fault("POST", "/envelope/*", "status", status=500)
    assert get(sandbox, f"/envelope/{env_id}").status_code == 200  # GET does not match
    assert get(sandbox, "/envelope").status_code == 200
    assert post(sandbox, "/envelope/item/update-many", {}).status_code == 400  # two segments: no match
    assert (
        post(sandbox, "/envelope/get-many", {"ids": {"type": "envelopeId", "ids": [env_id]}}).status_code
        == 500
    )
    assert (
        post(sandbox, "/envelope/get-many", {"ids": {"type": "envelopeId", "ids": [env_id]}}).status_code
        == 200
    )


def test_drop_after_commit_creates_but_never_answers(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    sandbox.inject_fault("POST", "/envelope/create", "drop_after_commit")
    with pytest.raises(requests.ConnectionError):
        create(sandbox, [make_pdf("fdrop.pdf")], external_id="fault-drop-after-commit")
    found = get(sandbox, "/envelope", params={"query": "fault-drop-after-commit"}).json()
    assert found["count"] == 1
    assert found["data"][0]["externalId"] == "fault-drop-after-commit"
    assert sandbox.requests()[0] == {"method": "POST", "path": "/envelope/create", "status": 200}


def test_drop_before_processing_creates_nothing(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    sandbox.inject_fault("POST", "/envelope/create", "drop_before")
    with pytest.raises(requests.ConnectionError):
        create(sandbox, [make_pdf("fdropb.pdf")], external_id="fault-drop-before")
    assert _find(sandbox, "fault-drop-before") == 0
    assert sandbox.requests()[0] == {"method": "POST", "path": "/envelope/create", "status": 0}


def test_delay_then_normal_answer(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("fdelay.pdf")])
    sandbox.inject_fault("GET", "/envelope/*", "delay", delay=2)
    with pytest.raises(requests.Timeout):
        requests.get(f"{sandbox.base_url}/envelope/{env_id}", headers=auth(sandbox), timeout=0.5)
    assert get(sandbox, f"/envelope/{env_id}").status_code == 200


def test_delay_reply_processes_at_once_and_answers_late(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    """A client that gives up before the answer never learns that its create took effect."""
    import json

    pdf = make_pdf("fdelayreply.pdf")
    sandbox.inject_fault("POST", "/envelope/create", "delay_reply", delay=3)
    payload = {"type": "DOCUMENT", "title": "Late answer", "externalId": "fault-delay-reply"}
    with pdf.open("rb") as fh, pytest.raises(requests.Timeout):
        requests.post(
            f"{sandbox.base_url}/envelope/create",
            headers=auth(sandbox),
            data={"payload": json.dumps(payload)},
            files=[("files", (pdf.name, fh, "application/pdf"))],
            timeout=(5, 1),
        )
    assert _find(sandbox, "fault-delay-reply") == 1  # created, though the client heard nothing


def test_wrong_content_type_on_download(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("fctype.pdf")])
    item = envelope(sandbox, env_id)["envelopeItems"][0]["id"]
    sandbox.inject_fault("GET", "/envelope/item/*/download", "wrong_content_type", content_type="text/html")
    resp = get(sandbox, f"/envelope/item/{item}/download")
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "text/html"
    assert get(sandbox, f"/envelope/item/{item}/download").headers["content-type"] == "application/pdf"


def test_truncated_download(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    pdf = make_pdf("ftrunc.pdf")
    env_id = create_id(sandbox, [pdf])
    item = envelope(sandbox, env_id)["envelopeItems"][0]["id"]
    sandbox.inject_fault("GET", "/envelope/item/*/download", "truncate", truncate_at=200)
    with requests.get(
        f"{sandbox.base_url}/envelope/item/{item}/download", headers=auth(sandbox), stream=True, timeout=30
    ) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-length"] == str(pdf.stat().st_size)
        received = b""
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            for chunk in resp.iter_content(64):
                received += chunk
    # The client sees at most the 200 bytes sent (its last partial chunk is lost with the error).
    assert 0 < len(received) <= 200
    assert pdf.read_bytes().startswith(received)


def test_ignore_order_applies_titles_only(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("a.pdf"), make_pdf("b.pdf")])
    first, second = envelope(sandbox, env_id)["envelopeItems"]
    sandbox.inject_fault("POST", "/envelope/item/update-many", "ignore_order")
    body = {
        "envelopeId": env_id,
        "data": [
            {"envelopeItemId": first["id"], "order": 2, "title": "First renamed"},
            {"envelopeItemId": second["id"], "order": 1},
        ],
    }
    resp = post(sandbox, "/envelope/item/update-many", body)
    assert resp.status_code == 200
    items = envelope(sandbox, env_id)["envelopeItems"]
    assert [(i["id"], i["title"], i["order"]) for i in items] == [
        (first["id"], "First renamed", 1),
        (second["id"], "b.pdf", 2),
    ]


def test_clear_faults_and_bad_fault_specs(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("fclear.pdf")])
    sandbox.inject_fault("GET", "/envelope/*", "status", status=500, count=5)
    sandbox.clear_faults()
    assert get(sandbox, f"/envelope/{env_id}").status_code == 200
    with pytest.raises(SandboxError, match="unknown action"):
        sandbox.inject_fault("GET", "/envelope", "explode")
    with pytest.raises(SandboxError, match="needs a status"):
        sandbox.inject_fault("GET", "/envelope", "status")


def test_request_log_is_relative_and_ordered(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("flog.pdf")])
    get(sandbox, f"/envelope/{env_id}")
    get(sandbox, "/envelope/unknown/route/here")
    sandbox.wait_status(env_id, "DRAFT")  # control calls are not logged
    assert sandbox.requests() == [
        {"method": "POST", "path": "/envelope/create", "status": 200},
        {"method": "GET", "path": f"/envelope/{env_id}", "status": 200},
        {"method": "GET", "path": "/envelope/unknown/route/here", "status": 404},
    ]
    sandbox.clear_requests()
    assert sandbox.requests() == []


def test_a_request_answered_after_a_clear_stays_out_of_the_new_log(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    """A late answer to an earlier test's request must not land at the top of the next test's log."""
    env_id = create_id(sandbox, [make_pdf("flate.pdf")])
    sandbox.inject_fault("GET", "/envelope/*", "delay", delay=1.5)
    with pytest.raises(requests.Timeout):
        requests.get(f"{sandbox.base_url}/envelope/{env_id}", headers=auth(sandbox), timeout=0.3)
    sandbox.clear_requests()
    time.sleep(2.5)  # the delayed request is answered (and would be logged) meanwhile
    get(sandbox, "/envelope/unknown/route/here")
    assert sandbox.requests() == [{"method": "GET", "path": "/envelope/unknown/route/here", "status": 404}]
