"""Text that renders blank or overflows (service/text_policy.py): the blank characters Unicode counts as
graphic, and letters with more combining marks than any writing system puts on one (pure)."""

from __future__ import annotations

import unicodedata

import pytest

from airflow_provider_docsign.service import _unicode
from airflow_provider_docsign.service.names import _BLANK as SERVICE_BLANK_IN_NAMES
from airflow_provider_docsign.service.names import name_problem
from airflow_provider_docsign.service.text_policy import (
    BLANK,
    COMBINING_MARK,
    DEFAULT_IGNORABLE,
    FREE,
    MAX_COMBINING_MARKS,
    MULTILINE,
    STRICT,
    find_refused,
    stacked_marks,
    suspect,
    text_problem,
)

#: Names with the marks their writing puts on letters, as typed (NFC) and decomposed (NFD).
NAMES = {
    "Vietnamese": "Nguyễn Thị Ngọc Ánh, Trần Văn Đức, Phạm Thị Ệ, Lê Hoàng Ợ",
    "Devanagari": "श्रीमती दीपिका पादुकोण, ज़ँ, क़ॅं, हिन्दी",
    "Thai": "ภูมิพลอดุลยเดช, นี้ที่, ปั้น, สมเด็จพระเจ้าอยู่หัว",
    "Hebrew with points and cantillation": "בְּרֵאשִׁ֖ית בָּרָ֣א",
    "Myanmar": "ကြွေး ကျွန်ုပ် အောင်ဆန်းစုကြည်",
    "Tibetan": "བསྟན་འཛིན་རྒྱ་མཚོ་ སྒྲུབ",
    "Arabic with harakat": "مُحَمَّدٌ",
}


def test_the_blank_set_is_derived_and_holds_the_braille_blank() -> None:
    points = {c for start, end in BLANK.ranges for c in range(start, end + 1)}
    assert 0x2800 in points
    assert points == {0x2800, 0xFFFC}, "a font of the development environment changed: review the set"
    for code in points:
        char = chr(code)
        assert not char.isspace()
        assert code not in DEFAULT_IGNORABLE
        assert unicodedata.category(char)[0] not in "CZ"
    assert _unicode.BLANK == "2800 FFFC"


def test_every_letter_the_service_calls_blank_in_a_name_is_refused_in_any_title() -> None:
    # Documenso's name rule lists the characters it found blank: the text policy refuses each of them
    # everywhere (the Hangul fillers and U+034F as invisible, U+2800 as blank).
    for code in SERVICE_BLANK_IN_NAMES:
        problem = text_problem(f"Con{chr(code)}tract", "title")
        assert problem is not None, f"U+{code:04X}"
        assert f"U+{code:04X} at position 3" in problem


@pytest.mark.parametrize("text", ["\u2800", "\u2800\u2800\u2800", "Ann\u2800ex", "\ufffc"])
def test_a_blank_character_is_refused_with_its_reason(text: str) -> None:
    for kwargs in ({}, {"multiline": True}):
        problem = text_problem(text, "title", **kwargs)
        assert problem is not None
        assert "the blank character U+" in problem
        assert "renders as nothing" in problem
    assert suspect(text)
    assert name_problem(f"ab{text}") is not None


def test_braille_text_keeps_its_blank_in_the_document_content() -> None:
    braille = "\u2811\u2807\u2807\u2800\u281e\u2811\u282d\u281e"  # two braille words, U+2800 between
    assert find_refused(braille, FREE) is None
    assert text_problem(braille, "prefill", free=True) is None
    assert find_refused(braille, STRICT) == (3, 0x2800)


@pytest.mark.parametrize("script", NAMES)
@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_names_with_the_marks_their_writing_needs_pass(script: str, form: str) -> None:
    text = unicodedata.normalize(form, NAMES[script])
    for kwargs in ({}, {"multiline": True}, {"free": True}):
        assert text_problem(text, "recipients[0].name", **kwargs) is None, (script, form)
    assert stacked_marks(text) is None


def test_the_mark_limit_is_above_what_the_names_use() -> None:
    longest = 0
    for text in NAMES.values():
        run = 0
        for char in unicodedata.normalize("NFD", text):
            run = run + 1 if ord(char) in COMBINING_MARK else 0
            longest = max(longest, run)
    assert 2 <= longest < MAX_COMBINING_MARKS


def test_two_hundred_stacked_marks_are_refused_in_every_policy() -> None:
    zalgo = "Dr. Z" + "\u0301\u0316\u0337\u0489" * 50 + "orro"
    for kwargs in ({}, {"multiline": True}, {"free": True}):
        problem = text_problem(zalgo, "recipients[0].name", **kwargs)
        assert problem == (
            "recipients[0].name has 200 combining marks in a row at position 5; at most "
            f"{MAX_COMBINING_MARKS} may sit on one letter (stacked marks spill over the lines around them "
            "in e-mails and PDFs; no writing system needs more)"
        )
    assert suspect(zalgo)
    assert find_refused(zalgo, STRICT) is None  # not a refused character: a refused shape
    assert stacked_marks(zalgo) == (5, 200)


def test_the_limit_is_exact() -> None:
    assert text_problem("e" + "\u0301" * MAX_COMBINING_MARKS, "t") is None
    assert not suspect("e" + "\u0301" * MAX_COMBINING_MARKS)
    assert stacked_marks("e" + "\u0301" * (MAX_COMBINING_MARKS + 1)) == (1, MAX_COMBINING_MARKS + 1)
    # runs are counted per letter: many letters with a few marks each pass
    assert text_problem(("e" + "\u0301\u0302") * 100, "t") is None
    # a refused character comes first when both are present
    problem = text_problem("\u2800" + "e" + "\u0301" * 20, "t")
    assert problem is not None
    assert "blank character U+2800" in problem
    assert MULTILINE != STRICT
