"""The recorded template story (``recorded/templates/``) replayed against the sandbox: same status, key
set and JSON types as the real service, and every answer valid against the OpenAPI document."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from contract_shapes import shape_diff, validate_response
from helpers import SPEC_DIR

from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

RECORDED = SPEC_DIR / "recorded" / "templates"
OPERATIONS = {
    "20": ("POST", "/envelope/create"),
    "21": ("GET", "/envelope/{envelopeId}"),
    "22": ("GET", "/envelope"),
    "23": ("POST", "/envelope/use"),
    "24": ("GET", "/envelope/{envelopeId}"),
    "25": ("POST", "/envelope/use"),
    "26": ("GET", "/envelope/{envelopeId}"),
    "27": ("POST", "/envelope/duplicate"),
    "28": ("GET", "/envelope/{envelopeId}"),
    "err": ("POST", "/envelope/use"),
}


@dataclass
class TemplateStory:
    server: SandboxServer
    full: Path
    short: Path
    responses: dict[str, requests.Response] = field(default_factory=dict)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.server.api_key}"}

    def get(self, path: str, **params: Any) -> requests.Response:
        return requests.get(self.server.base_url + path, headers=self.auth, params=params, timeout=30)

    def use(self, payload: dict[str, Any], files: list[Path] = ()) -> requests.Response:  # type: ignore[assignment]
        parts: list[tuple[str, Any]] = [("payload", (None, json.dumps(payload)))]
        parts += [("files", (p.name, p.read_bytes(), "application/pdf")) for p in files]
        return requests.post(
            self.server.base_url + "/envelope/use", headers=self.auth, files=parts, timeout=30
        )


def _load(name: str) -> Any:
    return json.loads((RECORDED / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def story(sandbox_session: SandboxServer, tmp_path_factory: pytest.TempPathFactory) -> TemplateStory:
    tmp = tmp_path_factory.mktemp("templates")
    st = TemplateStory(
        server=sandbox_session,
        full=write_sample_pdf(tmp / "nda.pdf", pages=2, title="nda"),
        short=write_sample_pdf(tmp / "short.pdf", pages=1, title="short"),
    )
    r, base = st.responses, sandbox_session.base_url
    create = _load("20_template_create_request_payload")
    create["title"] = f"Onboarding NDA {uuid.uuid4().hex[:6]}"
    parts = [
        ("payload", (None, json.dumps(create))),
        ("files", ("nda.pdf", st.full.read_bytes(), "application/pdf")),
    ]
    r["20_template_create"] = requests.post(
        base + "/envelope/create", headers=st.auth, files=parts, timeout=30
    )
    tid = r["20_template_create"].json()["id"]
    r["21_template_get"] = st.get(f"/envelope/{tid}")
    template = r["21_template_get"].json()
    r["22_template_find"] = st.get("/envelope", type="TEMPLATE")
    # The recorded use payload, with the recorded ids replaced by this template's ids (in order).
    recorded = _load("23_template_use_request_payload")
    ids = {old: new["id"] for old, new in zip((2265, 2266), template["recipients"], strict=True)}
    ids |= {old: new["id"] for old, new in zip((903, 904), template["fields"], strict=False)}
    use = json.loads(json.dumps(recorded))
    use["envelopeId"] = tid
    for entry in use["recipients"] + use["prefillFields"]:
        entry["id"] = ids[entry["id"]]
    r["23_template_use"] = st.use(use)
    used = r["23_template_use"].json()["id"]
    r["24_get_from_template"] = st.get(f"/envelope/{used}")
    short = {**use, "externalId": "rec-short", "distributeDocument": False}
    short["customDocumentData"] = [{"identifier": 0, "envelopeItemId": template["envelopeItems"][0]["id"]}]
    r["25_template_use_short_replacement"] = st.use(short, [st.short])
    r["26_get_short_replacement"] = st.get(f"/envelope/{r['25_template_use_short_replacement'].json()['id']}")
    r["27_template_duplicate"] = requests.post(
        base + "/envelope/duplicate", json={"envelopeId": tid}, headers=st.auth, timeout=30
    )
    sandbox_session.complete(used)
    sandbox_session.wait_status(used, "COMPLETED")
    r["28_get_completed_from_template"] = st.get(f"/envelope/{used}")
    bad = json.loads(json.dumps(use))
    bad["prefillFields"][1]["value"] = "not a number"
    r["err_template_use_bad_number"] = st.use(bad)
    unknown = json.loads(json.dumps(use))
    unknown["recipients"][0]["id"] = 999999
    r["err_template_use_unknown_recipient"] = st.use(unknown)
    return st


NAMES = sorted(p.stem for p in RECORDED.glob("*.json") if not p.stem.endswith("_request_payload"))


def test_every_template_recording_is_replayed(story: TemplateStory) -> None:
    assert NAMES
    assert sorted(story.responses) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_template_answer_has_the_recorded_shape(name: str, story: TemplateStory, spec_dir: Path) -> None:
    response = story.responses[name]
    recorded = _load(name)
    status = int((RECORDED / f"{name}.headers").read_text().split()[1])
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert shape_diff(recorded, response.json()) == []
    method, template = OPERATIONS[name.split("_")[0]]
    assert validate_response(spec_dir, method, template, status, recorded) == [], "recording vs OpenAPI"
    assert validate_response(spec_dir, method, template, response.status_code, response.json()) == []


def test_quirks_are_reproduced(story: TemplateStory) -> None:
    # A 1-page replacement is accepted though the template's fields need page 2 (templates/25, 26).
    short = story.responses["26_get_short_replacement"].json()
    assert {f["page"] for f in short["fields"]} == {1, 2}
    assert short["status"] == "DRAFT"
    # Prefill lands in fieldMeta (not inserted) until the envelope is sent, then it is inserted.
    text = next(f for f in short["fields"] if f["type"] == "TEXT")
    assert (text["inserted"], text["fieldMeta"]["text"]) == (False, "ACME Corp")
    sent = story.responses["24_get_from_template"].json()
    assert [f["customText"] for f in sent["fields"] if f["inserted"]] == ["ACME Corp", "1250.50"]
    # The number prefill is not checked by the service.
    assert story.responses["err_template_use_bad_number"].status_code == 200
    err = story.responses["err_template_use_unknown_recipient"].json()
    assert err["data"]["code"] == "INVALID_BODY"
    assert err["message"] == "Recipient with ID 999999 not found in the template."
