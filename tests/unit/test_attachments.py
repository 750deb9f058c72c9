"""Local checks of attachments (pure): a label and an https link, or nothing is sent.

The link rules themselves are tested in test_link_safety.py; here, that attachments apply them.
"""

from __future__ import annotations

import pytest

from airflow_provider_docsign.service.attachments import (
    Attachment,
    attachment_problems,
    normalize_attachments,
)


def test_a_label_and_an_https_link_pass() -> None:
    assert attachment_problems("Terms and conditions", "https://example.com/terms?v=2#top") == []
    assert attachment_problems("Prices", "https://files.example.com:8443/p.pdf") == []
    assert (
        attachment_problems(
            "\u0423\u0441\u043b\u043e\u0432\u0438\u044f",
            "https://\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444/",
        )
        == []
    )
    assert attachment_problems("B\u00fccher \u2764\ufe0f", "https://b\u00fccher.example/agb") == []


@pytest.mark.parametrize(
    ("label", "url", "expected"),
    [
        ("", "https://example.com", "label must be a non-empty string"),
        ("   ", "https://example.com", "label must be a non-empty string"),
        (None, "https://example.com", "label must be a non-empty string"),
        ("T", "http://example.com/terms", "url must use https (got 'http')"),
        ("T", "ftp://example.com/terms", "only http and https links are allowed, not a 'ftp' URL"),
        ("T", "javascript:alert(1)", "not a 'javascript' URL"),
        ("T", "example.com/terms", "it is not a URL"),
        ("T", "https:///nohost", "Python reads its host as missing"),
        ("T", "https://example.com/a b", "white space"),
        ("T", " https://example.com", "white space"),
        ("T", "https://example.com:99999/", "it is not a URL"),
        ("T", "https://www.yourbank.example@evil.example/login", "carries a user name or password"),
        ("T", "https://good.example\\@evil.example/", "Python reads its host as 'evil.example'"),
        ("T", "https://xn--pple-43d.com/", "mixes scripts: Cyrillic"),
        ("T", "https://example.com/\u202etxt", "contains the bidirectional control U+202E"),
        ("T", "", "url must be an https:// URL"),
        ("T", 42, "url must be an https:// URL"),
        ("Terms\u200b", "https://example.com", "label contains the invisible character U+200B"),
        ("Terms\U000e0041", "https://example.com", "label contains the tag character U+E0041"),
    ],
)
def test_bad_labels_and_links_are_named(label: object, url: object, expected: str) -> None:
    problems = attachment_problems(label, url, "attachments[3]", text=True)
    assert problems, (label, url)
    assert all(p.startswith("attachments[3]: ") for p in problems)
    assert any(expected in p for p in problems), problems


def test_without_text_the_characters_are_left_to_the_outgoing_check() -> None:
    # The hook checks the shape of a link, and the outgoing check names a refused character by its
    # JSON path in the request (data.data); an operator asks for both before it reads anything.
    assert attachment_problems("Terms\u200b", "https://example.com/\u202etxt") == []
    assert attachment_problems("Terms", "http://example.com/x\u202e") == []
    assert len(attachment_problems("Terms\u200b", "https://example.com/\u202etxt", text=True)) == 2
    assert attachment_problems("Terms", "http://example.com/") != []


def test_normalize_accepts_url_or_the_services_data_key_and_names_every_problem() -> None:
    ok, problems = normalize_attachments(
        [
            {"label": "A", "url": "https://a.test/x"},
            {"label": "B", "data": "https://b.test/y", "type": "link"},
        ]
    )
    assert problems == []
    assert ok == [{"label": "A", "url": "https://a.test/x"}, {"label": "B", "url": "https://b.test/y"}]
    ok, problems = normalize_attachments(
        [{"label": "A", "url": "http://a.test"}, "nope", {"label": "C", "url": "https://c.test", "colour": 1}]
    )
    assert ok == []
    assert [p.split(":")[0] for p in problems] == ["attachments[0]", "attachments[1]", "attachments[2]"]
    assert normalize_attachments([])[1] == ["attachments: must not be empty"]
    assert normalize_attachments({"label": "A"})[1][0].startswith("attachments: must be a list")


def test_the_record_parses_the_services_shape() -> None:
    parsed = Attachment.from_json({"id": "c1", "type": "link", "label": "T&C", "data": "https://x.test"})
    assert parsed.to_dict() == {"id": "c1", "label": "T&C", "url": "https://x.test", "type": "link"}
