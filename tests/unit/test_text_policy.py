"""The text policy (service/text_policy.py): each refused class with several code points, and what
well-formed text needs (pure)."""

from __future__ import annotations

import unicodedata

import pytest

from airflow_provider_docsign.service import _unicode
from airflow_provider_docsign.service.text_policy import (
    BIDI_CONTROL,
    DEFAULT_IGNORABLE,
    FREE,
    MULTILINE,
    STRICT,
    find_refused,
    script_extensions,
    script_name,
    suspect,
    text_problem,
)

#: Each class, several of its code points, and the word a problem uses for it.
CLASSES: dict[str, tuple[list[int], str]] = {
    "Bidi_Control": (
        [0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069],
        "the bidirectional control",
    ),
    "TAG": ([0xE0001, 0xE0020, 0xE0041, 0xE0067, 0xE007E, 0xE007F, 0xE0000, 0xE0010], "the tag character"),
    "noncharacter": (
        [0xFDD0, 0xFDE7, 0xFDEF, 0xFFFE, 0xFFFF, 0x1FFFE, 0x2FFFF, 0x10FFFF],
        "the noncharacter",
    ),
    "unassigned": ([0x0378, 0x03A2, 0x2065, 0x1FFFD, 0xE0080, 0xE01F0], "the unassigned code point"),
    "Default_Ignorable": (
        [
            *(0x00AD, 0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x200B, 0x200C, 0x200D, 0x2060),
            *(0x2064, 0x206A, 0x206F, 0x3164, 0xFEFF, 0xFFA0, 0xFE00, 0xFE0F, 0x180B, 0x1D173, 0x1BCA0),
            0xE0100,
        ],
        "the invisible character",
    ),
    "interlinear annotation": ([0xFFF9, 0xFFFA, 0xFFFB], "the format character"),
    "blank": ([0x2800, 0xFFFC], "the blank character"),
    "control": ([0x00, 0x07, 0x0A, 0x0D, 0x1B, 0x1F, 0x7F, 0x85, 0x9B, 0x9F], "the control character"),
}

#: Well-formed text that holds a default ignorable character where it belongs.
WELL_FORMED = {
    "ZWJ in an emoji sequence": "Team \U0001f469\u200d\U0001f4bb",
    "a family": "\U0001f468\u200d\U0001f469\u200d\U0001f467",
    "VS16 then ZWJ": "\U0001f3f3\ufe0f\u200d\U0001f308",
    "a skin tone then ZWJ": "\U0001f469\U0001f3fd\u200d\U0001f4bb",
    "ZWJ then VS16": "\U0001f3f4\u200d\u2620\ufe0f",
    "red hair": "\U0001f468\u200d\U0001f9b0",
    "VS16 after an emoji": "I \u2764\ufe0f it",
    "VS15 after an emoji": "\u2764\ufe0e",
    "a keycap": "1\ufe0f\u20e3",
    "the flag of England": "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
    "the flag of Wales": "\U0001f3f4\U000e0067\U000e0062\U000e0077\U000e006c\U000e0073\U000e007f",
    "a Persian name with ZWNJ": "\u0639\u0644\u06cc\u200c\u0631\u0636\u0627",
    "a Persian word with ZWNJ": "\u0645\u06cc\u200c\u0634\u0648\u062f",
    "ZWNJ after a virama (Devanagari)": "\u0915\u094d\u200c\u0937",
    "ZWJ after a virama (Sinhala Sri)": "\u0dc1\u0dca\u200d\u0dbb\u0dd3",
    "an ideographic variation sequence": "\u845b\U000e0100\u98fe",
    "a CJK compatibility variant": "\u8c48\ufe00",
    "a Mongolian free variation selector": "\u1820\u180b",
    "an emoji of Unicode 14": "\U0001fae0",
}


@pytest.mark.parametrize("name", CLASSES)
def test_every_code_point_of_every_class_is_refused_and_named(name: str) -> None:
    points, words = CLASSES[name]
    for code in points:
        char = chr(code)
        problem = text_problem(f"ab{char}cd", "title")
        assert problem is not None, f"U+{code:04X}"
        assert problem.startswith(f"title contains {words} U+{code:04X} at position 2; remove it ("), problem
        assert problem.isprintable()
        assert suspect(f"ab{char}cd")
        assert find_refused(f"{char}", STRICT) == (0, code)


def test_the_classes_come_from_unicode_not_a_hand_list() -> None:
    # Bidi_Control is exactly these twelve since Unicode 6.3; the generated table says so.
    assert {c for c in range(0x110000) if c in BIDI_CONTROL} == set(CLASSES["Bidi_Control"][0])
    # Every format character (Cf) this Python knows is refused in a title but the few that are
    # visible marks (prepended concatenation marks, the Egyptian hieroglyph format controls).
    visible = {*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD}
    visible |= set(range(0x13430, 0x13440))
    for code in range(0x110000):
        if unicodedata.category(chr(code)) == "Cf" and code not in visible:
            assert text_problem(f"a{chr(code)}b", "t") is not None, f"U+{code:04X}"
    # Every Cn code point of this Python is refused, whatever the generated tables' version.
    unassigned = [c for c in range(0x110000) if unicodedata.category(chr(c)) == "Cn"]
    assert len(unassigned) > 100_000
    for code in unassigned[:: len(unassigned) // 997]:
        assert find_refused(f"x{chr(code)}", STRICT) == (1, code)
    assert 0x3164 in DEFAULT_IGNORABLE
    assert 0xFFF9 not in DEFAULT_IGNORABLE  # Unicode leaves them out; the policy refuses them on its own


@pytest.mark.parametrize("name", WELL_FORMED)
def test_well_formed_text_passes_in_every_policy(name: str) -> None:
    text = WELL_FORMED[name]
    for policy in (STRICT, MULTILINE, FREE):
        assert find_refused(text, policy) is None, (name, policy, find_refused(text, policy))


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("ab\u200dcd", 0x200D),  # ZWJ between letters
        ("\U0001f469\u200d", 0x200D),  # at the end
        ("\u200d\U0001f4bb", 0x200D),  # at the start
        ("ab\u200ccd", 0x200C),  # ZWNJ between Latin letters
        ("\u0627\u200c\u0628", 0x200C),  # after ALEF, which joins nothing after it
        ("ab\ufe0fcd", 0xFE0F),  # VS16 after a Latin letter
        ("\u2764\ufe0f\ufe0f", 0xFE0F),  # two selectors in a row: a hidden payload
        ("\u2764\ufe0f" + "\U000e0101" * 3, 0xE0101),  # selectors after an emoji spelling bytes
        (" \ufe0f", 0xFE0F),  # after a space
        ("\ufe0f", 0xFE0F),  # alone
        ("a\ufe00", 0xFE00),  # VS1 after a Latin letter
        ("a\u180b", 0x180B),  # a Mongolian selector after a Latin letter
        ("\U0001f3f4\U000e0068\U000e0069\U000e007f", 0xE0068),  # a black flag hiding "hi"
        ("\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067", 0xE0067),  # no CANCEL TAG
        ("a\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", 0xE0067),  # no black flag
    ],
)
def test_the_allowed_characters_out_of_place_are_refused(text: str, code: int) -> None:
    found = find_refused(text, STRICT)
    assert found is not None
    assert found[1] == code
    problem = text_problem(text, "name")
    assert problem is not None
    assert problem.startswith("name contains the ")


def test_the_policies_differ_only_where_they_say() -> None:
    # the e-mail message takes line breaks; nothing else changes
    assert find_refused("Hi,\r\nsign", MULTILINE) is None
    assert find_refused("Hi,\r\nsign", STRICT) == (3, 0x0D)
    assert find_refused("a\u2028b", MULTILINE) == (1, 0x2028)
    # the document's content takes bidirectional controls and invisible characters of scripts...
    for char in ("\u200e", "\u202b", "\u061c", "\u200c", "\u200b", "\u00ad", "\ufeff"):
        assert find_refused(f"a{char}b", FREE) is None
    # ...but never a tag, a noncharacter, an unassigned code point, an annotation or a line break
    for char, code in (("\U000e0041", 0xE0041), ("\uffff", 0xFFFF), ("\u2065", 0x2065), ("\ufffa", 0xFFFA)):
        assert find_refused(f"a{char}b", FREE) == (1, code)
    assert find_refused("a\nb", FREE) == (1, 0x0A)
    assert text_problem("a\x00b", "m", multiline=True) == (
        "m contains the control character U+0000 at position 1; remove it "
        "(only tabs are allowed, and line breaks in the e-mail message)"
    )


def test_the_first_refused_character_is_named_whatever_its_class() -> None:
    assert find_refused("ok \u2065 then \u200e", STRICT) == (3, 0x2065)  # unassigned before a bidi control
    assert find_refused("ok \u200e then \u2065", STRICT) == (3, 0x200E)
    assert find_refused("\u00e9t\u00e9 \U0001f469\u200d\U0001f4bb \u200b", STRICT) == (8, 0x200B)


def test_scripts_for_the_link_rules() -> None:
    assert script_extensions(ord("a")) == {"Latn"}
    assert script_extensions(0x0430) == {"Cyrl"}
    assert script_extensions(0x03B1) == {"Grek"}
    assert script_extensions(ord("1")) == frozenset()  # Common
    assert script_extensions(ord("-")) == frozenset()
    assert "Latn" in script_extensions(0x0301)  # Inherited, with the scripts it extends
    assert {"Hira", "Kana"} <= script_extensions(0x30FC)
    assert script_name("Cyrl") == "Cyrillic"
    assert _unicode.UNICODE_VERSION.count(".") == 2
