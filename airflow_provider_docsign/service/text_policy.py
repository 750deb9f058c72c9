r"""Which characters outgoing text may hold: the outgoing check's text policy (pure: no Airflow, no network).

:mod:`.outgoing` applies it to every string and every key of every request. The character classes are
Unicode's own, read from :mod:`._unicode` (generated from the Unicode Character Database by
``scripts/extract_unicode.py``; never a hand list) and from the running Python's :mod:`unicodedata`.

**Refused**, with the word a problem uses for it:

* *the control character*: C0 but the tab (U+0000-U+001F), DEL and C1 (U+007F-U+009F). CR and LF are
  allowed in the e-mail message only (the ``multiline`` policy);
* *the line separator* U+2028 and *the paragraph separator* U+2029; *a lone surrogate*;
* *the bidirectional control*: the whole Bidi_Control set (U+061C ALM, U+200E LRM, U+200F RLM,
  U+202A-U+202E, U+2066-U+2069);
* *the tag character*: U+E0000-U+E007F (they spell hidden ASCII text that nothing shows), but inside
  the three tag sequences Unicode recommends for general use (:data:`TAG_FLAGS`: the flags of England,
  Scotland and Wales, ``🏴`` + tags + CANCEL TAG). Any other tag text after a black flag is hidden
  text, so it is refused too;
* *the noncharacter*: U+FDD0-U+FDEF and every U+xxFFFE and U+xxFFFF;
* *the unassigned code point*: general category Cn in the running Python's :mod:`unicodedata`
  (13.0 on Python 3.10, 14.0 on 3.11, 15.0 on 3.12): a character newer than that Python knows, a
  recent emoji say, is refused too, since nothing here can tell what it is;
* *the invisible character*: every other Default_Ignorable_Code_Point: the soft hyphen U+00AD, the
  combining grapheme joiner U+034F, the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0, the
  zero-width space, non-joiner and joiner (U+200B-U+200D), the word joiner and invisible operators
  (U+2060-U+2064), the variation selectors, the Mongolian vowel separator U+180E, the BOM U+FEFF...;
* *the format character*: the format characters (Cf) of no script that Unicode does not count as
  default ignorable (the interlinear annotation characters U+FFF9-U+FFFB);
* *the blank character*: a graphic character that renders as nothing although Unicode counts it
  neither as white space nor as default ignorable (:data:`BLANK`: U+2800 BRAILLE PATTERN BLANK, the
  object replacement character U+FFFC; derived from fonts by ``scripts/extract_unicode.py``). A title or
  a name of them looks empty, or like another one with a space in it. The service refuses U+2800 in
  folder names for that reason (:mod:`.names`);
* *too many combining marks on one letter*: more than :data:`MAX_COMBINING_MARKS` marks (general
  category M) in a row. Stacked marks ("Zalgo" text) spill over the lines above and below in e-mails,
  the service's pages and the PDF's signing certificate.

**Allowed where well-formed text needs them** (:data:`ALLOWED_IN_CONTEXT`), in every policy:

* the zero-width joiner U+200D inside an emoji sequence (between two pictographs, the first one
  optionally followed by VS16 or a skin tone: woman ZWJ laptop, white flag VS16 ZWJ rainbow; UTS #51),
  or right after a virama (Sinhala "Sri", Malayalam chillus; RFC 5892, appendix A.2);
* the zero-width non-joiner U+200C right after a virama, or between two letters that join, the way
  RFC 5892 (appendix A.1) allows it in domain names: Persian names and words such as ``علی`` ZWNJ
  ``رضا`` need it, and there it changes which letter forms are drawn, not which letters are read.
  Anywhere else (between Latin letters, at an end) it is invisible and refused;
* a variation selector, once, right after the character it applies to: VS15 or VS16 (U+FE0E, U+FE0F)
  after an emoji (a red heart, a keycap); VS1-VS14 (U+FE00-U+FE0D) and the ideographic selectors
  U+E0100-U+E01EF after a Han ideograph (the CJK compatibility variants, and the Ideographic Variation
  Database spellings of Japanese names); the Mongolian free variation selectors after a Mongolian
  letter. Two selectors in a row, or one after a space, a Latin letter or nothing, are refused: a run
  of selectors after one emoji can spell a hidden message;
* the three :data:`TAG_FLAGS`.

The ``free`` policy (the document's own content: prefill and form values) also allows the
bidirectional controls and the invisible characters that right-to-left and Indic text may carry; every
other class (controls, line breaks, separators, surrogates, tags, noncharacters, unassigned code points,
format characters, stacked marks) stays refused there, but for :data:`BLANK`: braille text, which a
document may hold, writes its space as U+2800.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable

from airflow_provider_docsign.service import _unicode as ucd

__all__ = [
    "ALLOWED_IN_CONTEXT",
    "BLANK",
    "FREE",
    "MAX_COMBINING_MARKS",
    "MULTILINE",
    "STRICT",
    "TAG_FLAGS",
    "UNICODE_VERSION",
    "CodeSet",
    "find_refused",
    "script_extensions",
    "script_name",
    "stacked_marks",
    "suspect",
    "text_problem",
]

#: The policies: one-line text; the e-mail message (CR and LF allowed); the document's own content.
STRICT, MULTILINE, FREE = "strict", "multiline", "free"
#: The Unicode version of the generated tables (unassigned code points follow the running Python's).
UNICODE_VERSION = ucd.UNICODE_VERSION

#: What the text rules allow in context, as the docs list it.
ALLOWED_IN_CONTEXT: dict[str, str] = {
    "U+200D zero-width joiner": "inside an emoji sequence, or right after a virama",
    "U+200C zero-width non-joiner": "right after a virama, or between two letters that join (Persian)",
    "U+FE0E, U+FE0F (VS15, VS16)": "once, right after an emoji",
    "U+FE00-U+FE0D, U+E0100-U+E01EF": "once, right after a Han ideograph",
    "U+180B-U+180D, U+180F": "once, right after a Mongolian letter",
    "U+E0020-U+E007F tags": "in the flags of England, Scotland and Wales only",
}

#: The most combining marks (general category M) allowed in a row on one base character. What real
#: writing puts on one letter: Vietnamese 2 (a vowel mark and a tone: "ệ" decomposed is e + U+0323 +
#: U+0302), Thai 2 (an upper vowel and a tone mark: "ที่"), Devanagari 3 (nukta, vowel sign, candrabindu:
#: "ज़ँ" with a vowel sign; Vedic accents add one or two), Hebrew with points and cantillation 4 (dagesh,
#: vowel, accent, meteg), Myanmar medials with a vowel 4 ("ကြွေး"), Tibetan stacks in Sanskrit words up to
#: 6. Eight lets all of them through with room to spare, and stops what overflows a line: "Zalgo" text
#: stacks 10 to hundreds of marks on a letter. (Unicode's own ceiling, the Stream-Safe Text Format of
#: UAX #15, is 30 non-starters: a bound for buffers, not for what is readable.)
MAX_COMBINING_MARKS = 8

#: The emoji tag sequences Unicode recommends for general use (RGI_Emoji_Tag_Sequence of UTS #51's
#: emoji-sequences.txt), by the subdivision code their tags spell.
TAG_FLAGS = {"gbeng": "England", "gbsct": "Scotland", "gbwls": "Wales"}


class CodeSet:
    """A set of code points held as sorted ranges (membership by bisection).

    :param ranges: Inclusive ``(start, end)`` pairs.
    """

    def __init__(self, ranges: Iterable[tuple[int, int]]) -> None:
        self.ranges = tuple(sorted(ranges))
        self._starts = [start for start, _ in self.ranges]

    @classmethod
    def parse(cls, table: str) -> CodeSet:
        """A set from a generated table: hex code points and ranges separated by spaces (``0041-005A``)."""
        pairs = []
        for token in table.split():
            start, _, end = token.partition("-")
            pairs.append((int(start, 16), int(end or start, 16)))
        return cls(pairs)

    def __contains__(self, code: object) -> bool:
        if not isinstance(code, int):
            return False
        index = bisect.bisect_right(self._starts, code) - 1
        return index >= 0 and code <= self.ranges[index][1]


BIDI_CONTROL = CodeSet.parse(ucd.BIDI_CONTROL)
DEFAULT_IGNORABLE = CodeSet.parse(ucd.DEFAULT_IGNORABLE)
FORMAT = CodeSet.parse(ucd.FORMAT_WITHOUT_SCRIPT)
VARIATION_SELECTOR = CodeSet.parse(ucd.VARIATION_SELECTOR)
EMOJI = CodeSet.parse(ucd.EMOJI)
PICTOGRAPHIC = CodeSet.parse(ucd.EXTENDED_PICTOGRAPHIC)
EMOJI_MODIFIER = CodeSet.parse(ucd.EMOJI_MODIFIER)
JOINS_AFTER = CodeSet.parse(ucd.JOINS_AFTER)
JOINS_BEFORE = CodeSet.parse(ucd.JOINS_BEFORE)
JOIN_TRANSPARENT = CodeSet.parse(ucd.JOIN_TRANSPARENT)
#: Graphic characters that render blank (not white space, not default ignorable): see the module's rules.
BLANK = CodeSet.parse(ucd.BLANK)
COMBINING_MARK = CodeSet.parse(ucd.COMBINING_MARK)


def _scripts() -> tuple[list[int], list[tuple[int, frozenset[str]]]]:
    starts: list[int] = []
    rows: list[tuple[int, frozenset[str]]] = []
    for token in ucd.SCRIPTS.split():
        span, _, codes = token.partition(":")
        start, _, end = span.partition("-")
        starts.append(int(start, 16))
        rows.append((int(end or start, 16), frozenset(codes.split("+"))))
    return starts, rows


_SCRIPT_STARTS, _SCRIPT_ROWS = _scripts()
_SCRIPT_NAMES = dict(token.split(":", 1) for token in ucd.SCRIPT_NAMES.split())


def script_extensions(code: int) -> frozenset[str]:
    """The scripts (ISO 15924 codes, ``Latn``) a code point is used with; empty for Common and Inherited."""
    index = bisect.bisect_right(_SCRIPT_STARTS, code) - 1
    if index < 0 or code > _SCRIPT_ROWS[index][0]:
        return frozenset()
    return _SCRIPT_ROWS[index][1]


def script_name(code: str) -> str:
    """The English name of a script code (``Cyrl`` -> ``Cyrillic``)."""
    return _SCRIPT_NAMES.get(code, code).replace("_", " ")


# -- finding the first refused character --------------------------------------------------------------

_TAGS = (0xE0000, 0xE007F)
_BREAKS = [(0x0A, 0x0A), (0x0D, 0x0D)]
_ALWAYS = [
    (0x00, 0x08),
    (0x0B, 0x0C),
    (0x0E, 0x1F),
    (0x7F, 0x9F),
    (0x2028, 0x2029),
    (0xD800, 0xDFFF),
    (0xFDD0, 0xFDEF),
    *((plane + 0xFFFE, plane + 0xFFFF) for plane in range(0, 0x110000, 0x10000)),
    _TAGS,
    *FORMAT.ranges,
]


def _class(ranges: Iterable[tuple[int, int]]) -> re.Pattern[str]:
    return re.compile("[" + "".join(rf"\U{a:08x}-\U{b:08x}" for a, b in sorted(ranges)) + "]")


#: Per policy: what is refused outright or allowed only in context (unassigned code points aside).
_PATTERNS = {
    STRICT: _class([*_ALWAYS, *_BREAKS, *BIDI_CONTROL.ranges, *DEFAULT_IGNORABLE.ranges, *BLANK.ranges]),
    MULTILINE: _class([*_ALWAYS, *BIDI_CONTROL.ranges, *DEFAULT_IGNORABLE.ranges, *BLANK.ranges]),
    FREE: _class([*_ALWAYS, *_BREAKS]),
}
#: More than MAX_COMBINING_MARKS marks in a row (any policy).
_STACKED = re.compile(_class(COMBINING_MARK.ranges).pattern + f"{{{MAX_COMBINING_MARKS + 1},}}")
_ASCII = {
    STRICT: re.compile("[\x00-\x08\x0a-\x1f\x7f]"),
    MULTILINE: re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"),
    FREE: re.compile("[\x00-\x08\x0a-\x1f\x7f]"),
}
_FLAGS = re.compile(
    "\U0001f3f4(?:"
    + "|".join("".join(chr(0xE0000 + ord(c)) for c in code) for code in TAG_FLAGS)
    + ")\U000e007f"
)


def suspect(value: str) -> bool:
    """Whether ``value`` holds a character the strict policy refuses or allows only in context (quick)."""
    if value.isascii():
        return _ASCII[STRICT].search(value) is not None
    return (
        _PATTERNS[STRICT].search(value) is not None
        or _unassigned_at(value) is not None
        or _STACKED.search(value) is not None
    )


def stacked_marks(value: str) -> tuple[int, int] | None:
    """Where the first run of more than :data:`MAX_COMBINING_MARKS` combining marks starts, and its length.

    :param value: The text.
    """
    if value.isascii():
        return None
    found = _STACKED.search(value)
    return None if found is None else (found.start(), found.end() - found.start())


def _unassigned_at(value: str) -> int | None:
    """Where the first unassigned code point (Cn in this Python) of a non-ASCII ``value`` is, or None."""
    found = [ch for ch in set(value) if ch > "\x7f" and unicodedata.category(ch) == "Cn"]
    return min(value.index(ch) for ch in found) if found else None


def find_refused(value: str, policy: str = STRICT) -> tuple[int, int] | None:
    """The position and code point of the first character ``value`` may not hold, or None.

    :param value: The text.
    :param policy: :data:`STRICT`, :data:`MULTILINE` or :data:`FREE`.
    """
    if value.isascii():
        found = _ASCII[policy].search(value)
        return None if found is None else (found.start(), ord(found.group()))
    flags: set[int] | None = None
    unassigned = _unassigned_at(value)
    for match in _PATTERNS[policy].finditer(value):
        index = match.start()
        if unassigned is not None and unassigned < index:
            break
        code = ord(match.group())
        if _TAGS[0] <= code <= _TAGS[1]:
            if flags is None:
                flags = {i for m in _FLAGS.finditer(value) for i in range(m.start() + 1, m.end())}
            if index in flags:
                continue
        elif _allowed(value, index, code):
            continue
        return index, code
    return None if unassigned is None else (unassigned, ord(value[unassigned]))


def _allowed(value: str, index: int, code: int) -> bool:
    """Whether the (default ignorable) ``code`` at ``index`` is where well-formed text needs it."""
    before = ord(value[index - 1]) if index else -1
    if code == 0x200D:
        return _in_emoji_sequence(value, index) or _after_virama(before)
    if code == 0x200C:
        return _after_virama(before) or _between_joining_letters(value, index)
    if code in (0xFE0E, 0xFE0F):
        return before in EMOJI
    if 0xFE00 <= code <= 0xFE0D or 0xE0100 <= code <= 0xE01EF:
        return "Hani" in script_extensions(before)
    if 0x180B <= code <= 0x180F and code != 0x180E:
        return "Mong" in script_extensions(before)
    return False


def _pictograph(code: int) -> bool:
    return code in PICTOGRAPHIC or (code > 0x7F and code in EMOJI)


def _in_emoji_sequence(value: str, index: int) -> bool:
    """A ZWJ between two pictographs (the first one may carry VS16 or a skin tone)."""
    if index == 0 or index + 1 >= len(value):
        return False
    before = index - 1
    if ord(value[before]) == 0xFE0F or ord(value[before]) in EMOJI_MODIFIER:
        before -= 1
    return before >= 0 and _pictograph(ord(value[before])) and _pictograph(ord(value[index + 1]))


def _after_virama(code: int) -> bool:
    return code >= 0 and unicodedata.combining(chr(code)) == 9


def _between_joining_letters(value: str, index: int) -> bool:
    """RFC 5892 A.1: (L or D) T* ZWNJ T* (R or D), by Joining_Type."""
    before = index - 1
    while before >= 0 and ord(value[before]) in JOIN_TRANSPARENT:
        before -= 1
    after = index + 1
    while after < len(value) and ord(value[after]) in JOIN_TRANSPARENT:
        after += 1
    return (
        before >= 0
        and ord(value[before]) in JOINS_AFTER
        and after < len(value)
        and ord(value[after]) in JOINS_BEFORE
    )


# -- what a problem says -----------------------------------------------------------------------------

_CONTEXT_HINTS = {
    0x200D: "a zero-width joiner is allowed only inside an emoji sequence or right after a virama",
    0x200C: "a zero-width non-joiner is allowed only between letters that join or right after a virama",
}
_SHOWN = "it can make the text read as something else, or break lines in logs and e-mails"


def _kind(code: int) -> str:
    if 0xD800 <= code <= 0xDFFF:
        return "a lone surrogate"
    if code == 0x2028:
        return "the line separator"
    if code == 0x2029:
        return "the paragraph separator"
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return "the control character"
    if code in BIDI_CONTROL:
        return "the bidirectional control"
    if _TAGS[0] <= code <= _TAGS[1]:
        return "the tag character"
    if 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE:
        return "the noncharacter"
    if unicodedata.category(chr(code)) == "Cn":
        return "the unassigned code point"
    if code in FORMAT:
        return "the format character"
    if code in BLANK:
        return "the blank character"
    return "the invisible character"


def _hint(code: int, kind: str, multiline: bool) -> str:
    if kind == "the control character":
        return "only tabs are allowed" + (", and line breaks in the e-mail message" if multiline else "")
    if kind == "a lone surrogate":
        return "it is not text; the service cannot store it"
    if kind == "the tag character":
        return "it spells text that is not shown; only the flags of England, Scotland and Wales hold tags"
    if kind == "the noncharacter":
        return "it is not a character and is not for interchange"
    if kind == "the unassigned code point":
        version = unicodedata.unidata_version
        return f"no character is assigned to it in Unicode {version}, the version this Python knows"
    if kind == "the blank character":
        return "it renders as nothing, so the text looks empty or like other text with a space in it"
    if code in _CONTEXT_HINTS:
        return f"{_SHOWN}; {_CONTEXT_HINTS[code]}"
    if code in VARIATION_SELECTOR:
        return f"{_SHOWN}; a variation selector is allowed only once, right after the character it applies to"
    return _SHOWN


def text_problem(value: str, where: str, *, multiline: bool = False, free: bool = False) -> str | None:
    """The problem with the first refused character of ``value`` (see the module's rules), or None.

    :param value: The string.
    :param where: Its name in the message (a JSON path such as ``recipients[0].name``).
    :param multiline: Whether CR and LF are allowed (the e-mail message).
    :param free: Whether bidirectional and invisible characters are allowed (the document's content).
    """
    found = find_refused(value, FREE if free else MULTILINE if multiline else STRICT)
    if found is None:
        stacked = stacked_marks(value)
        if stacked is None:
            return None
        index, count = stacked
        return (
            f"{where} has {count} combining marks in a row at position {index}; at most "
            f"{MAX_COMBINING_MARKS} may sit on one letter (stacked marks spill over the lines around them "
            "in e-mails and PDFs; no writing system needs more)"
        )
    index, code = found
    kind = _kind(code)
    return (
        f"{where} contains {kind} U+{code:04X} at position {index}; remove it "
        f"({_hint(code, kind, multiline)})"
    )
