r"""The real service's rule for folder names, checked before anything is sent (pure: no Airflow, no network).

Documenso (v2.17.0) validates ``POST /folder/create`` ``name`` and ``POST /folder/update``
``data.name`` with one shared name schema (``ZNameSchema`` in ``packages/lib/types/name.ts``), stricter
than the OpenAPI document says (which gives only ``maxLength`` 100, so :mod:`._rules` cannot know it):

- the name is trimmed (JavaScript's ``String.prototype.trim``), then must be 2-100 UTF-16 units long;
- it must not hold ``http://``, ``https://`` or ``www.`` anywhere, in any letter case ("Name cannot
  contain URLs": names are shown in e-mails, and a link there is a phishing vector);
- it must not hold a character of general category C (control, format, surrogate, private use,
  unassigned), a line or paragraph separator, the combining grapheme joiner U+034F, or a letter that
  renders blank (U+115F, U+1160, U+2800, U+3164, U+FFA0). This is stricter than the outgoing text
  policy (:mod:`.text_policy`): a zero-width joiner inside an emoji sequence is a format character, so
  a folder name cannot hold one;
- nor a literal escape sequence (the six characters ``\u200b``, or ``\u{200b}``) that stands for
  such a character.

:func:`name_problem` says why a name breaks the rule, in words; the hook, the folder operator and the
sandbox use it, so a name the service would refuse never reaches it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from airflow_provider_docsign.service.outgoing import js_length
from airflow_provider_docsign.service.text_policy import text_problem

__all__ = ["MAX_NAME", "MIN_NAME", "js_trim", "name_issue", "name_problem"]

MIN_NAME = 2
MAX_NAME = 100

#: What JavaScript's ``trim`` removes: WhiteSpace (tab, VT, FF, space, NBSP, BOM and every Zs) and
#: LineTerminator (LF, CR, U+2028, U+2029).
_JS_SPACE = "\t\n\x0b\x0c\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
_JS_SPACE += "\u2028\u2029\u202f\u205f\u3000\ufeff"

_LINK = re.compile(r"https?://|www\.", re.IGNORECASE)
_ESCAPE = re.compile(r"\\u(?:([0-9a-fA-F]{4})|\{([0-9a-fA-F]+)\})")
#: Letters (and one mark) the service refuses besides categories C, Zl and Zp: they render blank.
_BLANK = frozenset({0x034F, 0x115F, 0x1160, 0x2800, 0x3164, 0xFFA0})


def js_trim(value: str) -> str:
    """``value`` trimmed as JavaScript's ``String.prototype.trim`` does."""
    return value.strip(_JS_SPACE)


def _refused(char: str) -> bool:
    category = unicodedata.category(char)
    return ord(char) in _BLANK or category[0] == "C" or category in ("Zl", "Zp")


def _describe(char: str) -> str:
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" {name}" if name else "") + f" (category {unicodedata.category(char)})"


def name_problem(value: Any, *, text_policy: bool = True) -> str | None:
    """Why the service would refuse ``value`` as a folder name, or None when it takes it.

    :param value: The name as given (it is trimmed here as the service trims it).
    :param text_policy: Also apply the outgoing text policy. With False, a name that policy refuses
        gives None here: the hook leaves it to the outgoing check, which refuses it next, in the
        words it uses for every request.
    """
    issue = name_issue(value, text_policy=text_policy)
    return issue[1] if issue else None


def name_issue(value: Any, *, text_policy: bool = True) -> tuple[str, str] | None:
    """``(kind, words)`` of the service's objection to ``value`` as a name, or None.

    ``kind`` is ``"length"``, ``"link"`` or ``"character"`` (the service's three messages: "Please
    enter a valid name." or "Name cannot be more than 100 characters.", "Name cannot contain URLs.",
    "Name contains invalid characters."); ``words`` say what is wrong and where.

    :param value: The name as given.
    :param text_policy: As for :func:`name_problem`.
    """
    if not isinstance(value, str):
        return "length", f"must be {MIN_NAME}-{MAX_NAME} characters, not {value!r}"
    name = js_trim(value)
    if not MIN_NAME <= js_length(name) <= MAX_NAME:
        shown = value if len(value) <= 40 else value[:40] + "..."
        return (
            "length",
            f"must be {MIN_NAME}-{MAX_NAME} characters, not {shown!r} (spaces at either end do not count)",
        )
    link = _LINK.search(name)
    if link:
        return "link", (
            f"must not hold a link: {link.group(0)!r} at character {link.start() + 1} (the service refuses "
            "http://, https:// and www. in names, in any letter case)"
        )
    general = text_problem(name, "name")
    if general:  # what every outgoing string is held to, in the words the outgoing check uses
        return ("character", general.removeprefix("name ")) if text_policy else None
    for index, char in enumerate(name):
        if _refused(char):
            return "character", (
                f"holds {_describe(char)} at character {index + 1}, which the service refuses in names "
                "(control, format, private-use, unassigned and blank-rendering characters)"
            )
    for match in _ESCAPE.finditer(name):
        code = int(match.group(1) or match.group(2), 16)
        if code <= 0x10FFFF and _refused(chr(code)):
            return "character", (
                f"holds the escape sequence {match.group(0)!r} at character {match.start() + 1}, which "
                f"stands for {_describe(chr(code))}; the service refuses it in names"
            )
    return None
