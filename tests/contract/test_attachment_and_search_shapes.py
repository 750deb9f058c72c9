"""The routes added for issue 32 against the contract: the sandbox's attachment, duplicate and filtered
find answers validate against the OpenAPI extract's response schemas (successes and errors), and what
the hook sends (attachment bodies, duplicate body, find query parameters) validates against the
extract's request schemas and parameter enums. Recording ``expiry/41`` (a real
``GET /envelope?hasExpiredRecipients=true``) fixes the filtered find's shape."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import requests
from contract_shapes import _nullable_to_jsonschema, _openapi, shape_diff, validate_response
from helpers import SPEC_DIR, numbered_signers

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

OPENAPI = str(SPEC_DIR / "openapi-facts.json")


def request_schema(method: str, path: str) -> dict[str, Any]:
    operation = _openapi(OPENAPI)["paths"][path][method.lower()]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    out: dict[str, Any] = _nullable_to_jsonschema(copy.deepcopy(schema))
    return out


def query_parameters(path: str) -> dict[str, dict[str, Any]]:
    operation = _openapi(OPENAPI)["paths"][path]["get"]
    return {p["name"]: p["schema"] for p in operation["parameters"] if p["in"] == "query"}


def errors(schema: dict[str, Any], value: Any) -> list[str]:
    checker = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in checker.iter_errors(value)]


@pytest.fixture
def hook(docsign_conn: str) -> Iterator[DocsignHook]:
    with DocsignHook(docsign_conn) as h:
        yield h


@pytest.fixture
def envelope(hook: DocsignHook, make_pdf: Callable[..., Path]) -> str:
    return hook.create_envelope(
        title="Contract shapes", files=[make_pdf()], recipients=numbered_signers(1), external_id="shapes"
    )


def test_attachment_routes_answer_as_the_openapi_document_declares(
    sandbox: SandboxServer, envelope: str, spec_dir: Path
) -> None:
    auth = {"Authorization": f"Bearer {sandbox.api_key}"}
    problems: list[str] = []

    def call(method: str, template: str, status: int, **kwargs: Any) -> Any:
        response = requests.request(method, sandbox.base_url + template, headers=auth, timeout=30, **kwargs)
        assert response.status_code == status, (template, response.text[:300])
        body = response.json()
        problems.extend(
            f"{template} {status}: {e}" for e in validate_response(spec_dir, method, template, status, body)
        )
        return body

    link = {"label": "Terms", "data": "https://example.com/terms"}
    created = call("POST", "/envelope/attachment/create", 200, json={"envelopeId": envelope, "data": link})
    found = call("GET", "/envelope/attachment", 200, params={"envelopeId": envelope})
    assert found == {"data": [{"id": created["id"], "type": "link", **link}]}
    updated = {"label": "Terms v2", "data": "https://example.com/terms-2"}
    assert call("POST", "/envelope/attachment/update", 200, json={"id": created["id"], "data": updated}) == {
        "success": True
    }
    assert call("POST", "/envelope/attachment/delete", 200, json={"id": created["id"]}) == {"success": True}
    assert call("GET", "/envelope/attachment", 200, params={"envelopeId": envelope}) == {"data": []}
    # Errors: unknown ids, a missing envelopeId, a bad link.
    assert (
        call("POST", "/envelope/attachment/delete", 404, json={"id": created["id"]})["data"]["code"]
        == "NOT_FOUND"
    )
    call("GET", "/envelope/attachment", 404, params={"envelopeId": "envelope_doesnotexistatall"})
    call("GET", "/envelope/attachment", 400)
    bad = call(
        "POST", "/envelope/attachment/create", 400, json={"envelopeId": envelope, "data": {"label": "x"}}
    )
    assert bad["message"] == "Input validation failed"
    # Duplicate.
    duplicated = call(
        "POST", "/envelope/duplicate", 200, json={"envelopeId": envelope, "includeRecipients": True}
    )
    assert set(duplicated) == {"id"}
    call("POST", "/envelope/duplicate", 404, json={"envelopeId": "envelope_doesnotexistatall"})
    assert problems == []


def test_a_frozen_envelopes_attachment_change_is_the_services_refusal(
    hook: DocsignHook, sandbox: SandboxServer, envelope: str, spec_dir: Path
) -> None:
    attachment = hook.create_attachment(envelope, label="Terms", url="https://example.com/t")
    hook.distribute_envelope(envelope)
    sandbox.complete(envelope)
    sandbox.wait_status(envelope, "COMPLETED", timeout=20)
    response = hook.session.post(
        f"{sandbox.base_url}/envelope/attachment/delete", json={"id": attachment}, timeout=10
    )
    assert response.status_code == 400
    body = response.json()
    assert body["data"]["code"] == "INVALID_REQUEST"
    assert (
        body["message"] == "Attachments can not be modified after the document has been completed or rejected"
    )
    assert validate_response(spec_dir, "POST", "/envelope/attachment/delete", 400, body) == []


def test_what_the_hook_sends_fits_the_request_schemas(
    hook: DocsignHook, sandbox: SandboxServer, envelope: str
) -> None:
    sandbox.clear_requests()
    attachment = hook.create_attachment(envelope, label="Terms", url="https://example.com/t")
    hook.update_attachment(attachment, label="Prices", url="https://example.com/p")
    hook.delete_attachment(attachment)
    bodies = {r["path"]: r["body"] for r in sandbox.requests(bodies=True) if r["method"] == "POST"}
    for path in ("/envelope/attachment/create", "/envelope/attachment/update", "/envelope/attachment/delete"):
        assert errors(request_schema("POST", path), bodies[path]) == [], path
    assert bodies["/envelope/attachment/update"] == {
        "id": attachment,
        "data": {"label": "Prices", "data": "https://example.com/p"},
    }
    # An empty label fails the schema, so the checker can fail.
    assert errors(
        request_schema("POST", "/envelope/attachment/create"),
        {"envelopeId": envelope, "data": {"label": "", "data": "https://x.test"}},
    )


def test_find_filters_use_the_real_names_and_enums(
    hook: DocsignHook, sandbox: SandboxServer, envelope: str
) -> None:
    hook.distribute_envelope(envelope)
    sandbox.expire(envelope, hook.get_envelope(envelope).recipients[0].id)
    declared = query_parameters("/envelope")
    sandbox.clear_requests()
    found = list(
        hook.find_envelopes(
            status="PENDING",
            envelope_type="DOCUMENT",
            has_expired_recipients=True,
            template_id=14,
            source="TEMPLATE",
            order_by=("createdAt", "asc"),
        )
    )
    assert found == []  # nothing made from template 14 here; the filters are combined
    [params] = [r["body"]["params"] for r in sandbox.requests(bodies=True) if r["path"] == "/envelope"]
    assert set(params) <= set(declared)
    for name, value in params.items():
        schema = declared[name]
        if "enum" in schema:
            assert value in schema["enum"], (name, value)
        elif schema.get("type") == "number":
            assert float(value) == float(value)
    assert params["hasExpiredRecipients"] == "true"
    assert (params["orderByColumn"], params["orderByDirection"]) == ("createdAt", "asc")
    # The filtered find answers in the shape of the real recording (41) and the OpenAPI schema.
    response = hook.session.get(
        f"{sandbox.base_url}/envelope", params={"hasExpiredRecipients": "true", "perPage": 5}, timeout=10
    )
    recorded = json.loads(
        (SPEC_DIR / "recorded" / "expiry" / "41_find_has_expired_recipients.json").read_text()
    )
    ours = {**response.json(), "data": [e for e in response.json()["data"] if e["id"] == envelope]}
    assert len(ours["data"]) == 1
    expected = copy.deepcopy(recorded["body"])
    expected["data"] = expected["data"][1:]  # the notified recipient, as the sandbox's expire control does
    assert shape_diff(expected, ours) == []
    assert validate_response(SPEC_DIR, "GET", "/envelope", 200, response.json()) == []
