"""The "Docsign envelope" extra link: URL building, the XCom payload, and reading it back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign import get_provider_info
from airflow_provider_docsign.operators.links import (
    ENVELOPE_LINK_XCOM_KEY,
    DocsignEnvelopeLink,
    build_envelope_url,
    envelope_link_payload,
)
from airflow_provider_docsign.service.models import Envelope


@pytest.mark.parametrize(
    ("web_url", "team", "envelope_id", "kind", "expected"),
    [
        (
            "https://app.documenso.com",
            "acme",
            "envelope_abc",
            "DOCUMENT",
            "https://app.documenso.com/t/acme/documents/envelope_abc",
        ),
        (
            "https://sign.example.com/",
            "personal_x",
            "envelope_abc",
            None,
            "https://sign.example.com/t/personal_x/documents/envelope_abc",
        ),
        (
            "http://127.0.0.1:3000/base",
            "team-1",
            "envelope_t",
            "TEMPLATE",
            "http://127.0.0.1:3000/base/t/team-1/templates/envelope_t",
        ),
        # Path separators in ids are escaped, never interpreted.
        (
            "https://a.example",
            "a/b",
            "envelope_1",
            "DOCUMENT",
            "https://a.example/t/a%2Fb/documents/envelope_1",
        ),
    ],
)
def test_build_envelope_url(
    web_url: str, team: str, envelope_id: str, kind: str | None, expected: str
) -> None:
    assert build_envelope_url(web_url, team, envelope_id, kind) == expected


@pytest.mark.parametrize(
    ("web_url", "team", "envelope_id"),
    [
        (None, "acme", "envelope_abc"),
        ("https://app.documenso.com", None, "envelope_abc"),
        ("https://app.documenso.com", "acme", None),
        ("javascript:alert(1)", "acme", "envelope_abc"),
        ("ftp://files.example", "acme", "envelope_abc"),
    ],
)
def test_build_envelope_url_gives_nothing_when_incomplete_or_unsafe(
    web_url: str | None, team: str | None, envelope_id: str | None
) -> None:
    assert build_envelope_url(web_url, team, envelope_id) == ""


def test_payload_from_a_recorded_envelope(spec_dir: Path) -> None:
    raw = json.loads((spec_dir / "recorded" / "02_get_envelope.json").read_text())
    envelope = Envelope.from_json(raw)
    payload = envelope_link_payload(
        web_url="http://localhost:3000", envelope_id=envelope.id, envelope=envelope
    )
    assert payload == {
        "web_url": "http://localhost:3000",
        "team_url": raw["team"]["url"],
        "envelope_id": raw["id"],
        "envelope_type": "DOCUMENT",
    }
    json.dumps(payload)  # JSON-safe
    assert (
        build_envelope_url(**payload) == f"http://localhost:3000/t/{raw['team']['url']}/documents/{raw['id']}"
    )


def test_payload_without_envelope_has_no_team() -> None:
    payload = envelope_link_payload(web_url="https://x.example", envelope_id="envelope_1")
    assert payload["team_url"] is None
    assert build_envelope_url(**payload) == ""


class _Key:
    dag_id = "d"
    task_id = "t"
    run_id = "r"
    map_index = -1
    try_number = 1


def test_get_link_reads_the_xcom(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_docsign.operators import links

    seen: list[tuple[Any, str]] = []
    stored = {
        "web_url": "https://app.documenso.com",
        "team_url": "acme",
        "envelope_id": "envelope_q",
        "envelope_type": "DOCUMENT",
    }

    def get_value(*, ti_key: Any, key: str) -> Any:
        seen.append((ti_key, key))
        return stored

    monkeypatch.setattr(links.XCom, "get_value", get_value)
    link = DocsignEnvelopeLink()
    key = _Key()
    assert link.name == "Docsign envelope"
    assert link.get_link(None, ti_key=key) == "https://app.documenso.com/t/acme/documents/envelope_q"  # type: ignore[arg-type]
    assert seen == [(key, ENVELOPE_LINK_XCOM_KEY)]

    monkeypatch.setattr(links.XCom, "get_value", lambda **_: None)
    assert link.get_link(None, ti_key=key) == ""  # type: ignore[arg-type]


def test_link_is_registered_in_provider_info() -> None:
    assert (
        "airflow_provider_docsign.operators.links.DocsignEnvelopeLink" in get_provider_info()["extra-links"]
    )
