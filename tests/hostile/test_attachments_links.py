"""Attachment links a careless or hostile user would hand to every signer of a contract.

Each bad link goes through every path that can carry an attachment: the add and update operators,
``use_template(attachments=...)``, ``create_envelope``/``create_template`` with an ``attachments``
payload key, and the hook's own attachment methods. Each is refused with its reason, and the sandbox
counts zero requests (the operators check before they read the envelope). Good international links
pass and reach the sandbox once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import ctx, sig, signer

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignAddAttachmentsOperator, DocsignUpdateAttachmentOperator
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.models import Envelope

#: A bad link, and words its reason must hold.
BAD_LINKS = {
    "http": ("http://example.com/terms.pdf", "must use https"),
    "credentials": ("https://www.yourbank.example@evil.example/login", "carries a user name or password"),
    "password": ("https://admin:hunter2@files.example/terms", "carries a user name or password"),
    "backslash": ("https://good.example\\@evil.example/", "Python reads its host as 'evil.example'"),
    "no slashes": ("https:evil.example/terms", "Python reads its host as missing"),
    "Cyrillic a": ("https://\u0430pple.com/terms", "mixes scripts: Cyrillic ('\u0430') with Latin"),
    "punycode": ("https://xn--pple-43d.com/terms", "mixes scripts: Cyrillic ('\u0430') with Latin"),
    "Greek alpha": ("https://\u03b1pple.com/", "mixes scripts: Greek"),
    "Cyrillic o": ("https://secure.g\u043e\u043egle.com/", "mixes scripts: Cyrillic"),
    "bad punycode": ("https://xn--zz.example/", "is not valid IDNA (punycode)"),
    "javascript": ("javascript:alert(document.cookie)", "links are allowed, not a 'javascript' URL"),
    "data": ("data:text/html,<script>alert(1)</script>", "links are allowed, not a 'data' URL"),
    "space": ("https://example.com/terms and conditions.pdf", "white space"),
}
#: Single-script international hosts: they pass.
GOOD_LINKS = [
    "https://\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444/\u0443\u0441\u043b\u043e\u0432\u0438\u044f",
    "https://b\u00fccher.example/agb.pdf",
    "https://xn--bcher-kva.example/preise.pdf",
]


@dataclass
class Setup:
    """A draft with one good attachment, and a template to use."""

    draft_id: str
    attachment_id: str
    template: Envelope
    pdf: Path


@pytest.fixture
def setup(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> Setup:
    pdf = make_pdf("links.pdf")
    draft_id = hook.create_envelope(title="Links", files=[pdf], recipients=[signer(email="sam@example.com")])
    attachment_id = hook.create_attachment(draft_id, label="Terms", url="https://example.com/terms")
    template_id = hook.create_template(
        title="Links template",
        files=[pdf],
        recipients=[{"email": "c@placeholder.test", "name": "Customer", "role": "SIGNER", "fields": [sig()]}],
    )
    template = hook.get_template(template_id)
    sandbox.clear_requests()
    return Setup(draft_id, attachment_id, template, pdf)


def _use(hook: DocsignHook, s: Setup, attachments: Any, *, read: bool = False) -> Any:
    rid = s.template.recipients[0].id
    return hook.use_template(
        s.template.id,
        template=None if read else s.template,
        recipients=[{"id": rid, "email": "buyer@example.com", "name": "Buyer"}],
        attachments=attachments,
    )


#: Every path that can carry an attachment link: ``send(hook, setup, url)``.
PATHS: dict[str, Callable[[DocsignHook, Setup, str], Any]] = {
    "DocsignAddAttachmentsOperator": lambda h, s, url: DocsignAddAttachmentsOperator(
        task_id="attach", envelope_id=s.draft_id, attachments=[{"label": "Terms v2", "url": url}]
    ).execute(ctx()),
    "DocsignUpdateAttachmentOperator": lambda h, s, url: DocsignUpdateAttachmentOperator(
        task_id="relink", envelope_id=s.draft_id, match_label="Terms", new_url=url
    ).execute(ctx()),
    "use_template(attachments=...)": lambda h, s, url: _use(h, s, [{"label": "Terms", "url": url}]),
    "use_template, the service's shape": lambda h, s, url: _use(h, s, [{"label": "Terms", "data": url}]),
    "create_envelope(payload_extra=...)": lambda h, s, url: h.create_envelope(
        title="Links", files=[s.pdf], attachments=[{"label": "Terms", "data": url}]
    ),
    "create_template(payload_extra=...)": lambda h, s, url: h.create_template(
        title="Links", files=[s.pdf], attachments=[{"label": "Terms", "data": url}]
    ),
    "hook.create_attachment": lambda h, s, url: h.create_attachment(s.draft_id, label="Terms", url=url),
    "hook.update_attachment": lambda h, s, url: h.update_attachment(s.attachment_id, label="Terms", url=url),
}


def _refusal(send: Callable[[], Any]) -> str:
    """What the task's error or the hook's DocsignValidationError says."""
    with pytest.raises((AirflowFailException, DocsignValidationError)) as info:
        send()
    return str(info.value)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("bad", BAD_LINKS)
def test_every_bad_link_is_refused_with_its_reason_on_every_path(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, setup: Setup, path: str, bad: str
) -> None:
    url, reason = BAD_LINKS[bad]
    message = _refusal(lambda: PATHS[path](hook, setup, url))
    assert reason in message, message
    assert "nothing was sent" in message
    assert sandbox.requests() == []
    assert [(a.label, a.url) for a in hook.find_attachments(setup.draft_id)] == [
        ("Terms", "https://example.com/terms")
    ]


def test_a_template_use_refuses_a_bad_link_without_sending_it(
    hook: DocsignHook, sandbox: SandboxServer, setup: Setup
) -> None:
    # Without the template at hand the hook reads it first; the link itself never leaves.
    message = _refusal(
        lambda: _use(hook, setup, [{"label": "T", "url": BAD_LINKS["punycode"][0]}], read=True)
    )
    assert "mixes scripts" in message
    assert [(r["method"], r["path"]) for r in sandbox.requests()] == [
        ("GET", f"/envelope/{setup.template.id}")
    ]


@pytest.mark.parametrize("url", GOOD_LINKS)
def test_single_script_international_links_pass_and_reach_the_service_once(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, setup: Setup, url: str
) -> None:
    [added] = DocsignAddAttachmentsOperator(
        task_id="attach", envelope_id=setup.draft_id, attachments=[{"label": "AGB", "url": url}]
    ).execute(ctx())
    assert added["added"] is True
    creates = [r for r in sandbox.requests() if r["path"] == "/envelope/attachment/create"]
    assert len(creates) == 1
    assert (("AGB", url)) in [(a.label, a.url) for a in hook.find_attachments(setup.draft_id)]

    relinked = DocsignUpdateAttachmentOperator(
        task_id="relink", envelope_id=setup.draft_id, attachment_id=setup.attachment_id, new_url=url
    ).execute(ctx())
    assert relinked["url"] == url

    sandbox.clear_requests()
    used = _use(hook, setup, [{"label": "AGB", "url": url}])
    created = hook.create_envelope(
        title="IDN", files=[setup.pdf], attachments=[{"label": "AGB", "data": url}]
    )
    posts = [r["path"] for r in sandbox.requests() if r["method"] == "POST"]
    assert posts == ["/envelope/use", "/envelope/create"]
    for envelope_id in (used.envelope_id, created):
        assert [(a.label, a.url) for a in hook.find_attachments(envelope_id)] == [("AGB", url)]


def test_a_link_typed_in_the_web_app_is_not_sent_again_by_a_label_change(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, setup: Setup, api_key: str
) -> None:
    # The service takes http links from its web app; changing only the label would resend one (an
    # update needs both), so the operator refuses and says to give new_url.
    response = requests.post(
        f"{sandbox.base_url}/envelope/attachment/create",
        headers={"Authorization": api_key},
        json={"envelopeId": setup.draft_id, "data": {"label": "Prices", "data": "http://example.com/prices"}},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    sandbox.clear_requests()
    message = _refusal(
        lambda: DocsignUpdateAttachmentOperator(
            task_id="rename", envelope_id=setup.draft_id, match_label="Prices", new_label="Price list"
        ).execute(ctx())
    )
    assert "attachment: url must use https (got 'http')" in message
    assert [r["method"] for r in sandbox.requests()] == ["GET", "GET"]  # the envelope and its attachments


@pytest.mark.parametrize(
    ("attachments", "words"),
    [
        # a label that hides text behind tag characters ("ASCII smuggling")
        (
            [{"label": "Terms" + "".join(chr(0xE0000 + ord(c)) for c in "ignore all"), "url": GOOD_LINKS[1]}],
            "label contains the tag character U+E0069",
        ),
        ([{"label": "Terms\u202etxt.exe", "url": GOOD_LINKS[1]}], "label contains the bidirectional control"),
        ([{"label": "\u3164", "url": GOOD_LINKS[1]}], "label contains the invisible character U+3164"),
        (
            [{"label": "Terms", "url": "https://example.com/\u200bterms"}],
            "url contains the invisible character",
        ),
        ([{"label": "", "url": GOOD_LINKS[1]}], "label must be a non-empty string"),
        ('[{"label": "Terms", "url": "https://example.com"}]', "must be a list"),
        ([{"label": "Terms", "url": GOOD_LINKS[1], "data": "http://example.com"}], "give the link once"),
        ([{"label": "Terms", "url": GOOD_LINKS[1], "type": "file"}], "type must be 'link'"),
    ],
)
def test_hostile_labels_and_shapes_send_nothing(
    docsign_conn: str, sandbox: SandboxServer, setup: Setup, attachments: Any, words: str
) -> None:
    message = _refusal(
        lambda: DocsignAddAttachmentsOperator(
            task_id="attach", envelope_id=setup.draft_id, attachments=attachments
        ).execute(ctx())
    )
    assert words in message, message
    assert all(line.isprintable() for line in message.splitlines())  # no raw character reaches the log
    assert not any(ch in message for ch in ("\u202e", "\u200b", "\U000e0069"))
    assert sandbox.requests() == []
