"""Local checks of attachments (pure): a label and an https link, or nothing is sent."""

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


@pytest.mark.parametrize(
    ("label", "url", "expected"),
    [
        ("", "https://example.com", "label must be a non-empty string"),
        ("   ", "https://example.com", "label must be a non-empty string"),
        (None, "https://example.com", "label must be a non-empty string"),
        ("T", "http://example.com/terms", "url must use https"),
        ("T", "ftp://example.com/terms", "url must use https"),
        ("T", "javascript:alert(1)", "url must use https"),
        ("T", "example.com/terms", "url must use https"),
        ("T", "https:///nohost", "has no host"),
        ("T", "https://example.com/a b", "must not contain spaces"),
        ("T", " https://example.com", "must not contain spaces"),
        ("T", "https://example.com:99999/", "is not a valid URL"),
        ("T", "", "url must be an https:// URL"),
        ("T", 42, "url must be an https:// URL"),
    ],
)
def test_bad_labels_and_links_are_named(label: object, url: object, expected: str) -> None:
    problems = attachment_problems(label, url, "attachments[3]")
    assert problems, (label, url)
    assert all(p.startswith("attachments[3]: ") for p in problems)
    assert any(expected in p for p in problems), problems


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
