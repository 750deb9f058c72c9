"""The one outgoing check (service/outgoing.py): text, lengths, e-mails and URLs (pure).

Each character class is tested with several code points in test_text_policy.py, and each link rule in
test_link_safety.py; here: that the check applies them to every string, key and query value.
"""

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
    "ALM": ("\u061c", "the bidirectional control U+061C"),
    "LRM": ("\u200e", "the bidirectional control U+200E"),
    "RLM": ("\u200f", "the bidirectional control U+200F"),
    "ZWSP": ("\u200b", "the invisible character U+200B"),
    "ZWNJ": ("\u200c", "the invisible character U+200C"),
    "ZWJ": ("\u200d", "the invisible character U+200D"),
    "WJ": ("\u2060", "the invisible character U+2060"),
    "BOM": ("\ufeff", "the invisible character U+FEFF"),
    "SHY": ("\u00ad", "the invisible character U+00AD"),
    "CGJ": ("\u034f", "the invisible character U+034F"),
    "Hangul filler": ("\u3164", "the invisible character U+3164"),
    "halfwidth Hangul filler": ("\uffa0", "the invisible character U+FFA0"),
    "VS16 after a letter": ("\ufe0f", "the invisible character U+FE0F"),
    "annotation": ("\ufffa", "the format character U+FFFA"),
    "tag": ("\U000e0041", "the tag character U+E0041"),
    "cancel tag": ("\U000e007f", "the tag character U+E007F"),
    "noncharacter": ("\uffff", "the noncharacter U+FFFF"),
    "unassigned": ("\u2065", "the unassigned code point U+2065"),
    "surrogate": ("\ud800", "a lone surrogate U+D800"),
}


def update(**meta: Any) -> dict[str, Any]:
    return {"envelopeId": "envelope_x", "data": {"title": "Contract"}, "meta": meta}


@pytest.mark.parametrize("name", HOSTILE)
def test_every_class_is_refused_naming_the_path_and_the_code_point(name: str) -> None:
    char, words = HOSTILE[name]
    problems = check_request("POST", "/envelope/update", json=update(subject=f"Please{char} sign"))
    assert len(problems) == 1
    assert problems[0].startswith(f"meta.subject contains {words} at position 6; remove it (")
    assert all(p.isprintable() for p in problems), "a problem must never carry the raw character"
    # every key of an object, and a query value given as bytes, are checked alike
    (key,) = check_request("POST", "/envelope/create", payload={"formValues": {f"Name{char}": "x"}})
    assert key.startswith("the key 'Name")
    assert f"' of formValues contains {words} at position 4" in key
    if name != "surrogate":
        (query,) = check_request("GET", "/envelope", params={"query": f"ab{char}".encode()})
        assert query.startswith(f"?query contains {words} at position 2; remove it (")


def test_well_formed_emoji_and_scripts_pass_in_every_field() -> None:
    fine = [
        "Team \U0001f469\u200d\U0001f4bb",  # ZWJ in an emoji sequence
        "\u2764\ufe0f thanks",  # VS16 after an emoji
        "\U0001f3f3\ufe0f\u200d\U0001f308 \U0001f469\U0001f3fd\u200d\U0001f4bb",
        "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f England",
        "\u0639\u0644\u06cc\u200c\u0631\u0636\u0627",  # a Persian name with its non-joiner
    ]
    for text in fine:
        assert check_request("POST", "/envelope/update", json=update(subject=text)) == [], text
        assert check_request("POST", "/envelope/create", payload={"formValues": {text: text}}) == []
        assert check_request("GET", "/envelope", params={"query": text.encode()}) == []


def test_bytes_are_text_only_in_the_query() -> None:
    assert check_request("GET", "/envelope", params={"query": b"\xff\xfe"}) == [
        "?query is bytes that are not UTF-8 text (invalid start byte)"
    ]
    assert check_request("POST", "/folder/create", json={"name": b"Q3"}) == [
        "name is bytes, which JSON cannot carry: give text"
    ]
    assert check_request("GET", "/envelope", params={"q\u202ey": "x"})[0].startswith(
        "the name of query parameter ?q\\u202ey contains the bidirectional control U+202E"
    )


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
    assert (
        check_request("POST", "/envelope/create", payload={"formValues": {"Name": "x\u202bA\u200cb"}}) == []
    )
    assert check_request("POST", "/envelope/create", payload={"formValues": {"n": "\x00"}}) != []
    # but a key is a name, not content: no exception there
    (problem,) = check_request("POST", "/envelope/create", payload={"formValues": {"Name\u200c": "x"}})
    assert problem.startswith("the key 'Name\\u200c' of formValues contains the invisible character U+200C")
    # and the classes no script needs stay refused in content too
    for char in ("\U000e0041", "\uffff", "\u2065", "\ufff9", "\n"):
        assert check_request("POST", "/envelope/create", payload={"formValues": {"n": f"a{char}"}}) != []


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
    assert problems[0].startswith("meta.redirectUrl: the link ")
    assert " is refused: " in problems[0]
    use = {"envelopeId": "e", "override": {"redirectUrl": url}}
    assert check_request("POST", "/envelope/use", payload=use) != []


def test_good_urls_and_the_empty_redirect_pass() -> None:
    for url in (
        "https://example.com/done?x=1",
        "HTTP://example.com",
        "",
        "https://\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444/",
    ):
        assert check_request("POST", "/envelope/update", json=update(redirectUrl=url)) == []
    # Attachment links (format: uri in the schema) follow the same rule, and may not be empty.
    attachment = {"attachments": [{"label": "Terms", "data": "javascript:alert(1)"}]}
    assert check_request("POST", "/envelope/create", payload=attachment) != []
    assert (
        check_request("POST", "/envelope/create", payload={"attachments": [{"label": "T", "data": ""}]}) != []
    )
    assert url_problem("https://example.com/terms.pdf") is None
    assert url_problem("http://example.com/terms.pdf") is None
    assert url_problem("http://example.com/terms.pdf", https_only=True) is not None
    # a redirect is opened by the signer's browser too: no credentials, no mixed-script host
    (problem,) = check_request("POST", "/envelope/update", json=update(redirectUrl="https://a@b.example/"))
    assert "carries a user name or password" in problem


def _listed(url: str) -> dict[str, Any]:
    return {"attachments": [{"label": "T", "data": url}]}


def _one(url: str) -> dict[str, Any]:
    return {"id": "a", "envelopeId": "e", "data": {"label": "T", "data": url}}


#: Every request the schema lets carry an attachment link (``format: uri``), and where in its body.
ATTACHMENT_ROUTES = [
    ("/envelope/create", "payload", _listed, "attachments[0].data"),
    ("/envelope/use", "payload", _listed, "attachments[0].data"),
    ("/template/use", "json", _listed, "attachments[0].data"),
    ("/document/create/beta", "json", _listed, "attachments[0].data"),
    ("/envelope/attachment/create", "json", _one, "data.data"),
    ("/envelope/attachment/update", "json", _one, "data.data"),
    ("/document/attachment/create", "json", _one, "data.data"),
]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.com/terms", "only https links are allowed"),
        ("https://www.yourbank.example@evil.example/login", "carries a user name or password"),
        ("https://good.example\\@evil.example/", "Python reads its host as 'evil.example'"),
        ("https://\u0430pple.com/", "mixes scripts: Cyrillic ('\u0430') with Latin ('ple')"),
        ("https://xn--pple-43d.com/", "mixes scripts: Cyrillic"),
    ],
)
def test_every_route_that_carries_an_attachment_link_refuses_a_bad_one(url: str, reason: str) -> None:
    for path, part, body, where in ATTACHMENT_ROUTES:
        problems = check_request("POST", path, **{part: body(url)})
        assert len(problems) == 1, (path, problems)
        assert problems[0].startswith(f"{where}: the link "), problems
        assert reason in problems[0], problems
        assert check_request("POST", path, **{part: body("https://b\u00fccher.example/terms")}) == [], path


def test_the_attachment_routes_are_every_uri_field_of_the_schema() -> None:
    from airflow_provider_docsign.service import _rules

    routes = {f"POST {path}" for path, *_ in ATTACHMENT_ROUTES}
    assert routes <= set(_rules.URL)
    # every format: uri field of v2.17 is an attachment link (so the https-only rule fits all of them)
    assert {field for fields in _rules.URL.values() for field in fields} == {
        "attachments[].data",
        "data.data",
    }


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
