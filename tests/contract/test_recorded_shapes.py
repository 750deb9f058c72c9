"""For each real response recorded in ``data/documenso-2.17/recorded/``, the sandbox's answer to the same
request has the same status, content type, key set and JSON types at every level."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
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


@dataclass
class Story:
    """The recorded happy path replayed against the sandbox, plus handles for the error cases."""

    server: SandboxServer
    pdf: Path
    annex: Path
    payload: dict[str, Any]
    responses: dict[str, requests.Response] = field(default_factory=dict)
    envelope_id: str = ""
    completed_id: str = ""
    completed_item: str = ""
    page99_id: str = ""
    subject_only_id: str = ""

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.server.api_key}"}

    def url(self, path: str) -> str:
        return self.server.base_url + path

    def create(
        self, payload: Any, files: list[tuple[str, Any]] | None = None, **kw: Any
    ) -> requests.Response:
        parts: list[tuple[str, Any]] = [
            ("payload", (None, json.dumps(payload) if not isinstance(payload, str) else payload))
        ]
        if files is None:
            files = [("files", ("contract.pdf", self.pdf.read_bytes(), "application/pdf"))]
        headers = kw.pop("headers", self.auth)
        return requests.post(
            self.url("/envelope/create"), headers=headers, files=parts + files, timeout=30, **kw
        )


def _status_line(headers_file: Path) -> tuple[int, dict[str, str]]:
    lines = headers_file.read_text().splitlines()
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    return status, headers


@pytest.fixture(scope="module")
def story(sandbox_session: SandboxServer, spec_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Story:
    tmp = tmp_path_factory.mktemp("contract")
    payload = json.loads((spec_dir / "recorded" / "01_create_request_payload.json").read_text())
    payload["externalId"] = f"contract-{uuid.uuid4().hex[:12]}"
    st = Story(
        server=sandbox_session,
        pdf=write_sample_pdf(tmp / "contract.pdf", title="contract"),
        annex=write_sample_pdf(tmp / "annex.pdf", title="annex"),
        payload=payload,
    )
    sb, r = sandbox_session, st.responses
    r["01_create"] = st.create(payload)
    st.envelope_id = r["01_create"].json()["id"]
    r["02_get_envelope"] = requests.get(st.url(f"/envelope/{st.envelope_id}"), headers=st.auth, timeout=30)
    item = r["02_get_envelope"].json()["envelopeItems"][0]["id"]
    r["03_download_original"] = requests.get(
        st.url(f"/envelope/item/{item}/download"), params={"version": "original"}, headers=st.auth, timeout=30
    )
    r["03b_download_signed_draft"] = requests.get(
        st.url(f"/envelope/item/{item}/download"), headers=st.auth, timeout=30
    )
    r["04_create_many"] = requests.post(
        st.url("/envelope/item/create-many"),
        headers=st.auth,
        files=[
            ("payload", (None, json.dumps({"envelopeId": st.envelope_id}))),
            ("files", ("annex.pdf", st.annex.read_bytes(), "application/pdf")),
        ],
        timeout=30,
    )
    r["05_find"] = requests.get(
        st.url("/envelope"), params={"query": payload["externalId"]}, headers=st.auth, timeout=30
    )
    dist = json.loads((spec_dir / "recorded" / "06_distribute_request.json").read_text())
    dist["envelopeId"] = st.envelope_id
    r["06_distribute"] = requests.post(st.url("/envelope/distribute"), json=dist, headers=st.auth, timeout=30)
    r["07_get_after_distribute"] = requests.get(
        st.url(f"/envelope/{st.envelope_id}"), headers=st.auth, timeout=30
    )
    sb.complete(st.envelope_id)
    sb.wait_status(st.envelope_id, "COMPLETED")
    r["10_get_completed"] = requests.get(st.url(f"/envelope/{st.envelope_id}"), headers=st.auth, timeout=30)
    st.completed_id = st.envelope_id
    st.completed_item = item

    # A second completed envelope distributed with a subject only (as in the raw-key recording).
    second = st.create(payload).json()["id"]
    requests.post(
        st.url("/envelope/distribute"),
        json={"envelopeId": second, "meta": {"subject": "Please sign"}},
        headers=st.auth,
        timeout=30,
    ).raise_for_status()
    sb.complete(second)
    sb.wait_status(second, "COMPLETED")
    st.subject_only_id = second

    bad = json.loads(json.dumps(payload))
    bad["recipients"][0]["fields"][0]["page"] = 99
    r["err_create_field_page99"] = st.create(bad)
    st.page99_id = r["err_create_field_page99"].json()["id"]
    r["err_page99_get"] = requests.get(st.url(f"/envelope/{st.page99_id}"), headers=st.auth, timeout=30)
    r["err_page99_distribute"] = requests.post(
        st.url("/envelope/distribute"), json={"envelopeId": st.page99_id}, headers=st.auth, timeout=30
    )
    sb.complete(st.page99_id)
    r["err_page99_after_complete"] = requests.get(
        st.url(f"/envelope/{st.page99_id}"), headers=st.auth, timeout=30
    )
    return st


def _with(payload: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(payload))
    node = out
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


_DELETE = object()
Case = Callable[[Story], requests.Response]


def _get(st: Story, path: str, headers: dict[str, str] | None = None, **params: Any) -> requests.Response:
    return requests.get(
        st.url(path), headers=st.auth if headers is None else headers, params=params, timeout=30
    )


def _post(st: Story, path: str, body: Any, headers: dict[str, str] | None = None) -> requests.Response:
    return requests.post(st.url(path), json=body, headers=st.auth if headers is None else headers, timeout=30)


ERROR_CASES: dict[str, Case] = {
    "err_bad_version_download": lambda st: _get(
        st, f"/envelope/item/{st.completed_item}/download", version="final"
    ),
    "err_badformat_envelope_get": lambda st: _get(st, "/envelope/not-an-envelope-id"),
    "err_create_field_page0": lambda st: st.create(
        _with(st.payload, ["recipients", 0, "fields", 0, "page"], 0)
    ),
    "err_create_field_posx150": lambda st: st.create(
        _with(st.payload, ["recipients", 0, "fields", 0, "positionX"], 150)
    ),
    "err_create_json_body": lambda st: _post(st, "/envelope/create", st.payload),
    "err_create_json_body_wrapped": lambda st: _post(st, "/envelope/create", {"payload": st.payload}),
    "err_create_many_completed": lambda st: requests.post(
        st.url("/envelope/item/create-many"),
        headers=st.auth,
        files=[
            ("payload", (None, json.dumps({"envelopeId": st.completed_id}))),
            ("files", ("annex.pdf", st.annex.read_bytes(), "application/pdf")),
        ],
        timeout=30,
    ),
    "err_create_missing_title": lambda st: st.create(_with(st.payload, ["title"], _DELETE)),
    "err_create_no_files": lambda st: st.create(st.payload, files=[]),
    "err_create_nonpdf_labelled_pdf": lambda st: st.create(
        st.payload, files=[("files", ("contract.pdf", b"this is not a pdf at all", "application/pdf"))]
    ),
    "err_create_nonpdf_textplain": lambda st: st.create(
        st.payload, files=[("files", ("contract.txt", b"plain text", "text/plain"))]
    ),
    "err_create_payload_not_json": lambda st: st.create("this is {not json"),
    "err_distribute_completed": lambda st: _post(st, "/envelope/distribute", {"envelopeId": st.completed_id}),
    "err_distribute_missing_body": lambda st: _post(st, "/envelope/distribute", {}),
    "err_download_pending_on_completed": lambda st: _get(
        st, f"/envelope/item/{st.completed_item}/download", version="pending"
    ),
    "err_find_bad_status": lambda st: _get(st, "/envelope", status="DONE"),
    "err_find_status_completed": lambda st: _get(st, "/envelope", status="COMPLETED", perPage=1),
    "err_get_raw_key_no_bearer": lambda st: _get(
        st, f"/envelope/{st.subject_only_id}", headers={"Authorization": st.server.api_key}
    ),
    "err_nokey_download": lambda st: _get(st, f"/envelope/item/{st.completed_item}/download", headers={}),
    "err_nokey_get": lambda st: _get(st, f"/envelope/{st.completed_id}", headers={}),
    "err_unknown_envelope_create_many": lambda st: requests.post(
        st.url("/envelope/item/create-many"),
        headers=st.auth,
        files=[
            ("payload", (None, json.dumps({"envelopeId": "envelope_doesnotexistatall"}))),
            ("files", ("annex.pdf", st.annex.read_bytes(), "application/pdf")),
        ],
        timeout=30,
    ),
    "err_unknown_envelope_distribute": lambda st: _post(
        st, "/envelope/distribute", {"envelopeId": "envelope_doesnotexistatall"}
    ),
    "err_unknown_envelope_get": lambda st: _get(st, "/envelope/envelope_doesnotexistatall"),
    "err_unknown_item_download": lambda st: _get(
        st, "/envelope/item/envelope_item_doesnotexistatal/download"
    ),
    "err_unknown_route": lambda st: _get(st, "/no/such/route"),
    "err_wrongkey_create": lambda st: st.create(
        st.payload, headers={"Authorization": "api_wrongwrongwrong00"}
    ),
    "err_wrongkey_download": lambda st: _get(
        st,
        f"/envelope/item/{st.completed_item}/download",
        headers={"Authorization": "Bearer api_wrongwrongwrong00"},
    ),
    "err_wrongkey_find": lambda st: _get(
        st, "/envelope", headers={"Authorization": "Bearer api_wrongwrongwrong00"}
    ),
    "err_wrongkey_get": lambda st: _get(
        st, f"/envelope/{st.completed_id}", headers={"Authorization": "Bearer api_wrongwrongwrong00"}
    ),
}

JSON_RECORDINGS = sorted(
    p.stem
    for p in (SPEC_DIR / "recorded").glob("*.json")
    if not p.stem.endswith("_request_payload") and not p.stem.endswith("_request")
)


def _operation(name: str) -> tuple[str, str] | None:
    """The OpenAPI operation a recording belongs to (None for download routes and the unknown route)."""
    if "download" in name or name == "err_unknown_route":
        return None
    if "create_many" in name:
        return ("POST", "/envelope/item/create-many")
    if "distribute" in name and not name.startswith("07_"):
        return ("POST", "/envelope/distribute")
    if "find" in name:
        return ("GET", "/envelope")
    if "create" in name:
        return ("POST", "/envelope/create")
    return ("GET", "/envelope/{envelopeId}")


def test_every_recording_has_a_case() -> None:
    story_names = {
        "01_create",
        "02_get_envelope",
        "04_create_many",
        "05_find",
        "06_distribute",
        "07_get_after_distribute",
        "10_get_completed",
        "err_create_field_page99",
        "err_page99_get",
        "err_page99_distribute",
        "err_page99_after_complete",
    }
    assert JSON_RECORDINGS, "no recorded responses found"
    uncovered = [n for n in JSON_RECORDINGS if n not in story_names and n not in ERROR_CASES]
    assert uncovered == []


@pytest.mark.parametrize("name", JSON_RECORDINGS)
def test_same_shape_as_recorded(name: str, story: Story, spec_dir: Path) -> None:
    response = story.responses[name] if name in story.responses else ERROR_CASES[name](story)
    recorded = json.loads((spec_dir / "recorded" / f"{name}.json").read_text())
    headers_file = spec_dir / "recorded" / f"{name}.headers"
    status, headers = _status_line(headers_file) if headers_file.exists() else (200, {})
    assert response.status_code == status, response.text
    if headers:
        assert response.headers["content-type"].split(";")[0] == headers["content-type"]
        for key in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-request-id"):
            assert key in response.headers
    assert shape_diff(recorded, response.json()) == []
    operation = _operation(name)
    if operation is not None:
        method, template = operation
        assert validate_response(spec_dir, method, template, status, recorded) == [], "recording vs OpenAPI"
        assert validate_response(spec_dir, method, template, response.status_code, response.json()) == []


@pytest.mark.parametrize("name", ["03_download_original", "03b_download_signed_draft"])
def test_download_headers_as_recorded(name: str, story: Story, spec_dir: Path) -> None:
    response = story.responses[name]
    status, headers = _status_line(spec_dir / "recorded" / f"{name}.headers")
    assert response.status_code == status
    for key in ("content-type", "cache-control", "pragma", "expires"):
        assert response.headers[key] == headers[key]
    assert response.headers["content-disposition"] == headers["content-disposition"]
    assert response.headers["etag"] != ""
    assert response.content.startswith(b"%PDF-")
    assert int(response.headers["content-length"]) == len(response.content)


def test_page99_envelope_never_completes(story: Story) -> None:
    # Real service: every recipient signed, but the field is on a missing page, so sealing fails.
    body = story.responses["err_page99_after_complete"].json()
    assert [r["signingStatus"] for r in body["recipients"]] == ["SIGNED"]
    with pytest.raises(TimeoutError):
        story.server.wait_status(story.page99_id, "COMPLETED", timeout=2)
