"""The "Docsign envelope" extra link leads to a page against the sandbox too (it has no web app).

The operator stores the link's parts in XCom; the URL is built from them exactly as the link does
(:func:`build_envelope_url`), and opened with no API key, as a browser would: the sandbox answers with a
read-only page of the envelope (HTML-escaped; no e-mail, token or PDF), and 404 for what it does not
hold.
"""

from __future__ import annotations

import html
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignCreateEnvelopeOperator
from airflow_provider_docsign.operators.links import ENVELOPE_LINK_XCOM_KEY, build_envelope_url
from airflow_provider_docsign.sandbox import SandboxServer


class _TI:
    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def _link(payload: dict[str, Any]) -> str:
    return build_envelope_url(
        payload["web_url"], payload["team_url"], payload["envelope_id"], payload["envelope_type"]
    )


def test_the_extra_link_of_a_created_envelope_opens_its_page_in_the_sandbox(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path], api_key: str
) -> None:
    title = f"Contract <b>{uuid.uuid4().hex[:6]}</b> & annex"
    signature = {"identifier": 0, "type": "SIGNATURE", "page": 1, "positionX": 10, "positionY": 80}
    signer = {
        "email": "signer@page.example",
        "name": "Ada <Signer>",
        "role": "SIGNER",
        "fields": [signature | {"width": 20, "height": 5}],
    }
    ti = _TI()
    result = DocsignCreateEnvelopeOperator(
        task_id="create",
        title=title,
        files=[str(make_pdf("main.pdf")), str(make_pdf("annex.pdf"))],
        recipients=[signer],
        external_id=f"page-{uuid.uuid4().hex}",
    ).execute({"ti": ti, "run_id": "r", "try_number": 1})  # type: ignore[arg-type]
    url = _link(ti.pushed[ENVELOPE_LINK_XCOM_KEY])
    assert url.startswith(sandbox.base_url.removesuffix("/api/v2") + "/t/")

    page = requests.get(url, timeout=10)  # no Authorization header: a browser following the link
    assert page.status_code == 200
    assert page.headers["Content-Type"].startswith("text/html")
    text = page.text
    assert f"<h1>{html.escape(title)}</h1>" in text  # escaped: the title's markup is text
    assert "<b>" not in text
    assert result["envelope_id"] in text
    assert "DRAFT" in text
    assert "main.pdf" in text
    assert "annex.pdf" in text
    assert html.escape("Ada <Signer>") in text
    # What the page leaves out: the signer's e-mail, any signing token, the API key.
    envelope = hook.get_envelope(result["envelope_id"])
    assert signer["email"] not in text
    assert all(r.raw["token"] not in text for r in envelope.recipients)
    assert api_key not in text


def test_the_sandbox_page_is_404_for_an_unknown_envelope_or_team_or_the_wrong_kind(
    sandbox: SandboxServer, hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = hook.create_envelope(title="Known", files=[make_pdf("k.pdf")])
    root = sandbox.base_url.removesuffix("/api/v2")
    team = hook.get_envelope(envelope_id).raw["team"]["url"]
    assert requests.get(f"{root}/t/{team}/documents/{envelope_id}", timeout=10).status_code == 200
    for path in (
        f"/t/{team}/documents/envelope_doesnotexist",
        f"/t/another_team/documents/{envelope_id}",
        f"/t/{team}/templates/{envelope_id}",  # a document is not a template
    ):
        missing = requests.get(root + path, timeout=10)
        assert missing.status_code == 404, path
        assert missing.headers["Content-Type"].startswith("text/html")
    hook.delete_envelope(envelope_id)
    assert requests.get(f"{root}/t/{team}/documents/{envelope_id}", timeout=10).status_code == 404
