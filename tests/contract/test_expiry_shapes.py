"""Expiry and reminders against the contract: the sandbox's expiry routes answer with the shapes of the
real recordings (``recorded/expiry/40`` to ``45``) and the OpenAPI extract, and the hook's creation payload
carries ``envelopeExpirationPeriod``/``reminderSettings`` exactly as the OpenAPI schema declares them.

``expiry/create_meta_request_payload.json`` was built from the OpenAPI schema, not recorded live.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import requests
from contract_shapes import _nullable_to_jsonschema, _openapi, shape_diff, validate_response
from helpers import SPEC_DIR, ctx, numbered_signers

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignCreateEnvelopeOperator
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

RECORDED = SPEC_DIR / "recorded" / "expiry"


def _recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDED / f"{name}.json").read_text())
    return data


def _without_patterns(schema: Any) -> Any:
    """The schema without ``pattern`` keywords: they are JavaScript regexes (``\\u`` escapes) that
    Python's ``re`` cannot compile; they only concern e-mail strings, not the expiry fields."""
    if isinstance(schema, list):
        return [_without_patterns(s) for s in schema]
    if isinstance(schema, dict):
        return {k: _without_patterns(v) for k, v in schema.items() if k != "pattern"}
    return schema


def _payload_schema(path: str) -> dict[str, Any]:
    doc = _openapi(str(SPEC_DIR / "openapi-facts.json"))
    form = doc["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    schema: dict[str, Any] = _without_patterns(
        _nullable_to_jsonschema(copy.deepcopy(form["properties"]["payload"]))
    )
    return schema


def _errors(schema: dict[str, Any], value: Any) -> list[str]:
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(value)]


# ----------------------------------------------------------------------------------- request shape
def test_fixture_payload_is_valid_for_the_openapi_schema() -> None:
    fixture = json.loads((RECORDED / "create_meta_request_payload.json").read_text())
    assert _errors(_payload_schema("/envelope/create"), fixture) == []
    # The schema refuses what the local parser refuses (so the parser is not stricter by accident).
    for bad in ({"unit": "day", "amount": 0}, {"unit": "days", "amount": 14}, {"disabled": False}):
        broken = copy.deepcopy(fixture)
        broken["meta"]["envelopeExpirationPeriod"] = bad
        assert _errors(_payload_schema("/envelope/create"), broken)


def test_hook_payload_matches_the_fixture_and_the_schema(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    fixture = json.loads((RECORDED / "create_meta_request_payload.json").read_text())
    sandbox.clear_requests()
    DocsignCreateEnvelopeOperator(
        task_id="create",
        title=fixture["title"],
        files=[str(make_pdf())],
        recipients=numbered_signers(1),
        meta={"subject": "Please sign"},
        expiration_period="14d",
        reminders={"send_after": "3d", "repeat_every": "2d"},
    ).execute(ctx())
    [sent] = [r["body"]["meta"] for r in sandbox.requests(bodies=True) if r["path"] == "/envelope/create"]
    assert sent == fixture["meta"]
    meta_schema = _payload_schema("/envelope/create")["properties"]["meta"]
    assert _errors(meta_schema, sent) == []
    # Every form the parameters accept is valid for the schema, "never" included.
    hook = DocsignHook()
    for period, reminders in (("2w", None), ("1m", {"send_after": "1w"}), (None, None), ("1y", "default")):
        sandbox.clear_requests()
        hook.create_envelope(
            title="Shapes", files=[make_pdf()], expiration_period=period, reminders=reminders
        )
        [meta] = [r["body"]["meta"] for r in sandbox.requests(bodies=True) if r["path"] == "/envelope/create"]
        assert _errors(meta_schema, meta) == [], (period, reminders, meta)


def test_template_use_override_is_valid_for_the_schema() -> None:
    from airflow_provider_docsign.service.expiry import merge_meta

    override = merge_meta({"title": "NDA"}, "2w")
    schema = _payload_schema("/envelope/use")["properties"]["override"]
    assert _errors(schema, override) == []
    # The real /envelope/use has no reminderSettings: that is why the hook saves them with an update.
    assert "reminderSettings" not in schema["properties"]
    update = _openapi(str(SPEC_DIR / "openapi-facts.json"))["paths"]["/envelope/update"]["post"]
    body = update["requestBody"]["content"]["application/json"]["schema"]
    assert "reminderSettings" in body["properties"]["meta"]["properties"]


# --------------------------------------------------------------------------------- response shapes
def test_sandbox_expiry_routes_answer_in_the_recorded_shapes(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    auth = {"Authorization": f"Bearer {sandbox.api_key}"}
    envelope_id = hook.create_envelope(
        title="Expiry recording",
        files=[make_pdf("e.pdf")],
        recipients=numbered_signers(1),
        external_id="rec-expiry",
    )
    hook.distribute_envelope(envelope_id)
    recipient_id = hook.get_envelope(envelope_id).recipients[0].id
    sandbox.expire(envelope_id, recipient_id)

    def get(path: str, **params: Any) -> requests.Response:
        return requests.get(sandbox.base_url + path, headers=auth, params=params, timeout=30)

    def post(path: str, body: dict[str, Any]) -> requests.Response:
        return requests.post(sandbox.base_url + path, headers=auth, json=body, timeout=30)

    # 40: the envelope with an expired recipient (still PENDING). Recording 40 was taken before the
    # service's sweep had notified the expiry (expirationNotifiedAt null); the sandbox's control
    # endpoint expires *and* notifies, as recording 41's second envelope shows (a timestamp).
    got = get(f"/envelope/{envelope_id}")
    recorded_40 = _recorded("40_get_envelope_recipient_expired")
    notified = _recorded("41_find_has_expired_recipients")["body"]["data"][1]["recipients"][0]
    recorded_40["body"]["recipients"][0]["expirationNotifiedAt"] = notified["expirationNotifiedAt"]
    assert got.status_code == recorded_40["status"]
    assert shape_diff(recorded_40["body"], got.json()) == []
    assert validate_response(SPEC_DIR, "GET", "/envelope/{envelopeId}", 200, got.json()) == []
    assert got.json()["status"] == "PENDING"

    # 41: find with hasExpiredRecipients=true.
    found = get("/envelope", hasExpiredRecipients="true", perPage=5)
    assert found.status_code == 200
    recorded_41 = _recorded("41_find_has_expired_recipients")["body"]
    recorded_41["data"] = recorded_41["data"][1:]  # the notified one, as above
    # Other tests' envelopes of this session sandbox may match too: compare ours.
    ours = {**found.json(), "data": [e for e in found.json()["data"] if e["id"] == envelope_id]}
    assert shape_diff(recorded_41, ours) == []
    assert validate_response(SPEC_DIR, "GET", "/envelope", 200, found.json()) == []
    assert envelope_id in [e["id"] for e in found.json()["data"]]

    # 42: the signing refusal (the real one comes from the signing UI's tRPC route).
    refused = requests.post(
        sandbox.root_url + "/_sandbox/sign",
        headers=auth,
        json={"envelopeId": envelope_id, "recipientId": recipient_id},
        timeout=30,
    )
    recorded = _recorded("42_sign_expired_recipient_error")
    assert refused.status_code == recorded["status"] == 400
    assert shape_diff(recorded["body"], refused.json()) == []
    assert refused.json()["error"]["json"]["data"]["code"] == "RECIPIENT_EXPIRED"

    # 43 and 44: redistribute, and the renewed expiresAt.
    redistributed = post("/envelope/redistribute", {"envelopeId": envelope_id, "recipients": [recipient_id]})
    assert redistributed.status_code == _recorded("43_redistribute")["status"]
    assert shape_diff(_recorded("43_redistribute")["body"], redistributed.json()) == []
    assert validate_response(SPEC_DIR, "POST", "/envelope/redistribute", 200, redistributed.json()) == []
    after = get(f"/envelope/{envelope_id}").json()
    assert shape_diff(_recorded("44_get_envelope_after_redistribute")["body"], after) == []
    assert after["recipients"][0]["expiresAt"] > got.json()["recipients"][0]["expiresAt"]

    # 45: redistribute on a draft.
    draft = hook.create_envelope(title="Draft", files=[make_pdf("d.pdf")], recipients=numbered_signers(1))
    draft_recipient = hook.get_envelope(draft).recipients[0].id
    err = post("/envelope/redistribute", {"envelopeId": draft, "recipients": [draft_recipient]})
    recorded = _recorded("45_err_redistribute_draft")
    assert err.status_code == recorded["status"] == 500
    assert shape_diff(recorded["body"], err.json()) == []
    assert err.json()["message"] == recorded["body"]["message"] == "Can not send draft document"
    assert validate_response(SPEC_DIR, "POST", "/envelope/redistribute", 500, err.json()) == []
