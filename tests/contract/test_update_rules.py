"""The real service's update rules, pinned against the sandbox.

``POST /envelope/field/update-many`` on Documenso v2.17 resets a ``fieldMeta`` that the request leaves
out to the type's defaults (documenso#3286). Recorded on a real v2.17.0 instance
(``recorded/fieldmeta/50``-``52``, see its README): a TEXT field with a label, a placeholder and
``required: true`` was resized with a request naming only ``id``, ``type``, ``width`` and ``height``; the
answer was 200 and the field's label, placeholder and ``required`` were gone. The sandbox must do the
same, byte for byte in the fieldMeta, so that a client which forgets to send the current fieldMeta fails
its tests here, as it would fail its users there.

``meta.emailSettings`` on ``/envelope/update`` (and ``/envelope/distribute``) is parsed with a default of
``true`` for each flag left out and then replaces the stored object (v2.17 ``ZDocumentEmailSettingsSchema``
and ``update-envelope.ts``, read in the source; not recorded).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from contract_shapes import shape_diff, validate_response
from helpers import SPEC_DIR, sig, signer

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

RECORDED = SPEC_DIR / "recorded" / "fieldmeta"


@pytest.fixture
def hook(docsign_conn: str) -> Iterator[DocsignHook]:
    with DocsignHook(docsign_conn) as h:
        yield h


def _recorded(name: str) -> Any:
    return json.loads((RECORDED / f"{name}.json").read_text())


def _post(sandbox: SandboxServer, path: str, body: Any) -> requests.Response:
    auth = {"Authorization": f"Bearer {sandbox.api_key}"}
    return requests.post(sandbox.base_url + path, json=body, headers=auth, timeout=30)


def _get(sandbox: SandboxServer, path: str) -> Any:
    auth = {"Authorization": f"Bearer {sandbox.api_key}"}
    answer = requests.get(sandbox.base_url + path, headers=auth, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _labelled_text_field(hook: DocsignHook, make_pdf: Callable[..., Path]) -> tuple[str, int]:
    """The recording's field: a TEXT field created with 50_field_before's fieldMeta and width."""
    before = _recorded("50_field_before")
    text = sig(type="TEXT", positionX=10, positionY=40, width=float(before["width"]), height=6)
    text["fieldMeta"] = before["fieldMeta"]
    envelope_id = hook.create_envelope(
        title="fieldMeta reset", files=[make_pdf()], recipients=[signer(sig(), text)]
    )
    field = next(f for f in hook.get_envelope(envelope_id).fields if f.type == "TEXT")
    return envelope_id, field.id


def test_a_created_field_stores_its_fieldmeta_as_given(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    _, field_id = _labelled_text_field(hook, make_pdf)
    field = _get(sandbox, f"/envelope/field/{field_id}")
    before = _recorded("50_field_before")
    assert field["fieldMeta"] == before["fieldMeta"]
    assert field["width"] == before["width"]


def test_update_many_without_fieldmeta_resets_it_as_recorded(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id, field_id = _labelled_text_field(hook, make_pdf)
    request = copy.deepcopy(_recorded("51_update_many_request"))
    request["envelopeId"] = envelope_id
    request["data"][0]["id"] = field_id
    assert "fieldMeta" not in request["data"][0]

    answer = _post(sandbox, "/envelope/field/update-many", request)
    recorded = _recorded("51_update_many_response")
    assert answer.status_code == recorded["status"] == 200
    body = answer.json()
    assert shape_diff(recorded["body"], body) == []
    assert validate_response(SPEC_DIR, "post", "/envelope/field/update-many", 200, body) == []
    assert body["data"][0]["fieldMeta"] == recorded["body"]["data"][0]["fieldMeta"]
    assert body["data"][0]["width"] == recorded["body"]["data"][0]["width"] == "40"

    after = _recorded("52_field_after")
    field = _get(sandbox, f"/envelope/field/{field_id}")
    assert field["fieldMeta"] == after["fieldMeta"]
    assert field["width"] == after["width"]


def test_update_many_with_fieldmeta_replaces_it_whole(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id, field_id = _labelled_text_field(hook, make_pdf)
    change = {"id": field_id, "type": "TEXT", "fieldMeta": {"type": "text", "label": "Renamed"}}
    answer = _post(sandbox, "/envelope/field/update-many", {"envelopeId": envelope_id, "data": [change]})
    assert answer.status_code == 200
    # Not merged: the placeholder and required flag the request did not repeat are gone.
    assert answer.json()["data"][0]["fieldMeta"] == {"type": "text", "label": "Renamed"}


def test_a_type_change_without_fieldmeta_gets_the_new_types_defaults(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id, field_id = _labelled_text_field(hook, make_pdf)
    change = {"id": field_id, "type": "NUMBER"}
    answer = _post(sandbox, "/envelope/field/update-many", {"envelopeId": envelope_id, "data": [change]})
    assert answer.status_code == 200
    # The NUMBER defaults as recorded for a NUMBER field created without fieldMeta (templates/21).
    template = json.loads((SPEC_DIR / "recorded" / "templates" / "21_template_get.json").read_text())
    number = next(f["fieldMeta"] for f in template["fields"] if f["type"] == "NUMBER")
    assert answer.json()["data"][0]["fieldMeta"] == number


def test_a_partial_email_settings_resets_the_flags_it_leaves_out(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    every_flag_off = dict.fromkeys(_flags(), False)
    envelope_id = hook.create_envelope(
        title="emailSettings", files=[make_pdf()], meta={"emailSettings": every_flag_off}
    )
    assert hook.get_envelope(envelope_id).meta["emailSettings"] == every_flag_off  # type: ignore[index]
    answer = _post(
        sandbox,
        "/envelope/update",
        {"envelopeId": envelope_id, "meta": {"emailSettings": {"documentCompleted": False, "x": 1}}},
    )
    assert answer.status_code == 200
    settings = _get(sandbox, f"/envelope/{envelope_id}")["documentMeta"]["emailSettings"]
    assert settings == {**dict.fromkeys(_flags(), True), "documentCompleted": False}


def _flags() -> list[str]:
    recorded = json.loads((SPEC_DIR / "recorded" / "02_get_envelope.json").read_text())
    return list(recorded["documentMeta"]["emailSettings"])
