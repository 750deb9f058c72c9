"""The service's folder-name rule (Documenso's shared name schema), as :mod:`service.names` states it."""

from __future__ import annotations

import pytest

from airflow_provider_docsign.service.names import js_trim, name_issue, name_problem


@pytest.mark.parametrize(
    "name",
    [
        "Legal",
        "  Legal hold  ",  # trimmed, as the service trims
        "\u3000Verträge 2026\u00a0",  # JavaScript's trim also removes ideographic and no-break spaces
        "Contrats été",
        "日本語フォルダ",
        "📁 Signed",
        "Invoices \\u0041",  # a literal escape of a visible letter is only text
        "Legal \\u{110000}",  # beyond Unicode: not a character, so not refused
        "wwwx.example",  # no dot right after www
        "L" * 100,
        "ab",
    ],
)
def test_names_the_service_takes(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("a", "length", "must be 2-100 characters, not 'a'"),
        ("   a   ", "length", "spaces at either end do not count"),
        ("L" * 101, "length", "must be 2-100 characters"),
        ("😀" * 51, "length", "must be 2-100 characters"),  # 102 UTF-16 units, as the service counts
        (None, "length", "not None"),
        (42, "length", "not 42"),
        ("https://evil.example/login", "link", "'https://' at character 1"),
        ("Legal HTTP://evil.example", "link", "'HTTP://' at character 7"),
        ("see www.evil.example", "link", "'www.' at character 5"),
        ("WWW.EVIL", "link", "in any letter case"),
        ("Leg\u200bal", "character", "the invisible character U+200B at position 3"),
        (
            "👩\u200d💻 Team",
            "character",
            "U+200D ZERO WIDTH JOINER (category Cf) at character 2",
        ),  # stricter than the outgoing policy: no ZWJ
        ("Legal \ue000", "character", "(category Co)"),
        ("Legal\u2028hold", "character", "the line separator U+2028"),
        ("Legal \u200f", "character", "the bidirectional control U+200F"),
        ("Legal \u2800", "character", "the blank character U+2800"),
        ("Le\u034fgal", "character", "U+034F"),
        ("Le\u3164gal", "character", "U+3164"),
        ("Legal \\u200b", "character", "escape sequence '\\\\u200b' at character 7"),
        ("Legal \\u{202E}", "character", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ],
)
def test_names_the_service_refuses_are_named_with_the_reason(name: object, kind: str, words: str) -> None:
    issue = name_issue(name)
    assert issue is not None
    assert issue[0] == kind
    assert words in issue[1], issue[1]
    assert name_problem(name) == issue[1]


def test_js_trim_keeps_what_javascript_keeps() -> None:
    assert js_trim("\ufeff\t Legal \u2029") == "Legal"
    assert js_trim("\u200bLegal") == "\u200bLegal"  # not white space in JavaScript: refused later instead
    assert js_trim("\x1cLegal") == "\x1cLegal"  # Python's str.strip() would remove it; JavaScript does not
