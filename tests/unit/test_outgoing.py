"""The one outgoing check (service/outgoing.py): text, lengths, e-mails and URLs (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service.outgoing import (
    DEFAULT_MAX_LENGTH,
    check_request,
    email_problem,
    raise_for_request,
    url_problem,
)

#: One character of each refused class, with the words the problem uses for it.
HOSTILE = {
    "NUL": ("\x00", "the control character U+0000"),
    "ESC": ("\x1b", "the control character U+001B"),
    "LF": ("\n", "the control character U+000A"),
    "CR": ("\r", "the control character U+000D"),
    "DEL": ("\x7f", "the control character U+007F"),
    "NEL": ("\x85", "the control character U+0085"),
    "CSI": ("\x9b", "the control character U+009B"),
    "LS": ("\u2028", "the line separator U+2028"),
    "PS": ("\u2029", "the paragraph separator U+2029"),
    "RLO": ("\u202e", "the bidirectional control U+202E"),
    "LRI": ("\u2066", "the bidirectional control U+2066"),
    "PDI": ("\u2069", "the bidirectional control U+2069"),
    "ZWSP": ("\u200b", "the invisible character U+200B"),
    "ZWJ": ("\u200d", "the invisible character U+200D"),
    "WJ": ("\u2060", "the invisible character U+2060"),
    "BOM": ("\ufeff", "the invisible character U+FEFF"),
    "surrogate": ("\ud800", "a lone surrogate U+D800"),
}


def update(**meta: Any) -> dict[str, Any]:
    return {"envelopeId": "envelope_x", "data": {"title": "Contract"}, "meta": meta}


@pytest.mark.parametrize("name", HOSTILE)
def test_every_class_is_refused_naming_the_path_and_the_code_point(name: str) -> None:
    char, words = HOSTILE[name]
    problems = check_request("POST", "/envelope/update", json=update(subject=f"Please{char} sign"))
    assert problems == [
        f"meta.subject contains {words} at position 6; remove it ({_hint(words)})",
    ]
    assert all(p.isprintable() for p in problems), "a problem must never carry the raw character"


def _hint(words: str) -> str:
    if "control character" in words:
        return "only tabs are allowed"
    if "surrogate" in words:
        return "it is not text; the service cannot store it"
    return "it can make the text read as something else, or break lines in logs and e-mails"


def test_tab_is_allowed_everywhere_and_line_breaks_only_in_the_email_message() -> None:
    assert (
        check_request("POST", "/envelope/update", json=update(subject="a\tb", message="Hi,\r\nsign.\n")) == []
    )
    use = {"envelopeId": "e", "recipients": [], "override": {"message": "a\nb", "subject": "a\nb"}}
    assert [p.split(" contains")[0] for p in check_request("POST", "/envelope/use", payload=use)] == [
        "override.subject"
    ]
    # Only those two paths: a "message" key anywhere else is one-line text.
    assert check_request("POST", "/envelope/update", json={"data": {"message": "a\nb"}}) != []
    # and even the message refuses the other classes
    assert check_request("POST", "/envelope/distribute", json=update(message="a\u2028b")) != []


def test_free_text_keeps_script_characters_but_not_controls() -> None:
    use = {
        "envelopeId": "e",
        "prefillFields": [{"id": 1, "type": "text", "value": "\u0645\u06cc\u200c\u0634\u0648\u062f \u200f"}],
    }
    assert check_request("POST", "/envelope/use", payload=use) == []
    use["prefillFields"][0]["value"] = "x\u2028y"
    assert check_request("POST", "/envelope/use", payload=use)[0].startswith(
        "prefillFields[0].value contains the line separator U+2028"
    )
    assert check_request("POST", "/envelope/create", payload={"formValues": {"Name\u200c": "x\u202bA"}}) == []
    assert check_request("POST", "/envelope/create", payload={"formValues": {"n": "\x00"}}) != []


def test_keys_are_checked_too() -> None:
    problems = check_request("POST", "/envelope/create", payload={"meta": {"sub\u202eject": "x"}})
    assert problems == [
        "the key 'sub\\u202eject' of meta contains the bidirectional control U+202E at position 3; remove it "
        "(it can make the text read as something else, or break lines in logs and e-mails)"
    ]


def test_lengths_follow_the_service_schema_in_utf16_units() -> None:
    assert check_request("POST", "/envelope/update", json=update(subject="s" * 254)) == []
    # The real service answers 400 to a 255-character subject; this never leaves.
    assert check_request("POST", "/envelope/update", json=update(subject="s" * 255)) == [
        "meta.subject is 255 characters long; the maximum is 254"
    ]
    # 128 emoji are 256 characters for JavaScript (two UTF-16 units each).
    problems = check_request("POST", "/envelope/create", payload={"title": "\U0001f600" * 128})
    assert problems == ["title is 256 characters long; the maximum is 255"]
    assert check_request("POST", "/folder/update", json={"folderId": "f", "data": {"name": "n" * 101}}) == [
        "data.name is 101 characters long; the maximum is 100"
    ]


def test_a_string_the_schema_leaves_unbounded_is_held_to_the_default() -> None:
    label = "L" * 1_000_000  # a 1 MB label was accepted by the service
    body = {
        "envelopeId": "e",
        "data": [{"id": 1, "type": "TEXT", "fieldMeta": {"type": "text", "label": label}}],
    }
    assert check_request("POST", "/envelope/field/update-many", json=body) == [
        f"data[0].fieldMeta.label is 1000000 characters long; the maximum is {DEFAULT_MAX_LENGTH}"
    ]
    assert check_request("GET", "/envelope", params={"query": "q" * (DEFAULT_MAX_LENGTH + 1)}) != []


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "ftp://example.com/x",
        "//example.com/x",
        "https:///nohost",
        "https://exa mple.com/",
        "example.com",
    ],
)
def test_redirect_url_must_be_http_or_https(url: str) -> None:
    problems = check_request("POST", "/envelope/update", json=update(redirectUrl=url))
    assert len(problems) == 1
    assert problems[0].startswith("meta.redirectUrl must be an http or https URL (")
    use = {"envelopeId": "e", "override": {"redirectUrl": url}}
    assert check_request("POST", "/envelope/use", payload=use) != []


def test_good_urls_and_the_empty_redirect_pass() -> None:
    for url in ("https://example.com/done?x=1", "HTTP://example.com", ""):
        assert check_request("POST", "/envelope/update", json=update(redirectUrl=url)) == []
    # Attachment links (format: uri in the schema) follow the same rule, and may not be empty.
    attachment = {"attachments": [{"label": "Terms", "data": "javascript:alert(1)"}]}
    assert check_request("POST", "/envelope/create", payload=attachment) != []
    assert (
        check_request("POST", "/envelope/create", payload={"attachments": [{"label": "T", "data": ""}]}) != []
    )
    assert url_problem("https://example.com/terms.pdf") is None


@pytest.mark.parametrize(
    "email",
    [
        "adm\u0131n@example.com",  # dotless i: passed the old case-folding regex
        "\u212aim@example.com",  # Kelvin sign: lower-cased to "kim@" by the service
        "\u017fam@example.com",  # long s
        "s\u00f8ren@example.com",  # the service would take it; we send ASCII only
        "user@d\u00f6main.example",  # a Unicode domain: give it IDNA-encoded instead
        "user@xn--zz.example",  # not valid punycode
        "user@example",
        "user@example.c",
        ".user@example.com",
        "us..er@example.com",
        "user.@example.com",
        "user@-example.com",
        "@example.com",
        "user example@example.com",
        "a" * 65 + "@example.com",
    ],
)
def test_emails_must_be_ascii_or_idna_encoded(email: str) -> None:
    assert email_problem(email) is not None
    body = {"envelopeId": "e", "data": [{"id": 1, "email": email}]}
    (problem,) = check_request("POST", "/envelope/recipient/update-many", json=body)
    assert problem.startswith("data[0].email: ")
    assert "is not an e-mail address the service can take" in problem


@pytest.mark.parametrize(
    "email",
    ["a@example.com", "o'brien+tag@mail.example.co.uk", "x@xn--bcher-kva.example", "a!#$%&*/=?^_`{|}~-@b.io"],
)
def test_good_emails_pass(email: str) -> None:
    assert email_problem(email) is None


def test_every_email_field_of_the_schema_is_checked() -> None:
    bad = "\u212aim@example.com"
    cases: list[tuple[str, str, dict[str, Any], str]] = [
        ("POST", "/envelope/create", {"recipients": [{"email": bad}]}, "recipients[0].email"),
        ("POST", "/envelope/create", {"meta": {"emailReplyTo": bad}}, "meta.emailReplyTo"),
        ("POST", "/envelope/use", {"recipients": [{"id": 1, "email": bad}]}, "recipients[0].email"),
        ("POST", "/envelope/distribute", {"meta": {"emailReplyTo": bad}}, "meta.emailReplyTo"),
        ("POST", "/envelope/recipient/create-many", {"data": [{"email": bad}]}, "data[0].email"),
        ("POST", "/envelope/recipient/17/reject", {"actAsEmail": bad}, "actAsEmail"),
    ]
    for method, path, body, where in cases:
        multipart = path in ("/envelope/create", "/envelope/use")
        problems = (
            check_request(method, path, payload=body) if multipart else check_request(method, path, json=body)
        )
        assert [p.split(":")[0] for p in problems] == [where], (path, problems)
    # The empty e-mail of a recipient is the service's "no e-mail" (allowed there, not for a reply-to).
    assert check_request("POST", "/envelope/recipient/create-many", json={"data": [{"email": ""}]}) == []
    assert check_request("POST", "/envelope/update", json=update(emailReplyTo="")) != []


def test_query_parameters_and_nesting_are_checked() -> None:
    assert check_request("GET", "/envelope", params={"query": "a\x85b", "page": 1})[0].startswith(
        "?query contains the control character U+0085"
    )
    deep: Any = "x"
    for _ in range(40):
        deep = {"k": deep}
    assert check_request("POST", "/envelope/update", json=deep)[0].endswith(
        "is nested more than 32 levels deep"
    )


def test_raise_names_the_request_and_says_nothing_was_sent() -> None:
    with pytest.raises(DocsignValidationError) as info:
        raise_for_request("POST", "/folder/create", "create folder", json={"name": "Q3\u202e"})
    assert str(info.value).startswith(
        "create folder (POST /folder/create) is invalid (1 problem); nothing was sent"
    )
    raise_for_request("POST", "/folder/create", "create folder", json={"name": "Q3 contracts"})
