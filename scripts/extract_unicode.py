r"""Write the Unicode tables of the outgoing text and link rules: ``service/_unicode.py`` of the package.

Usage::

    python scripts/extract_unicode.py [MODULE.py]    # default: airflow_provider_docsign/service/_unicode.py

Python's :mod:`unicodedata` knows each code point's general category, bidirectional class and
combining class, but none of the binary properties the text rules are stated in (Bidi_Control,
Default_Ignorable_Code_Point, Variation_Selector, the emoji properties), nor Joining_Type or
Script_Extensions. They come from the Unicode Character Database, read here from two copies of it that
the development environment holds offline:

* the ``regex`` package, which compiles the UCD into its ``\p{...}`` properties (named as the UCD names
  them: ``\p{Default_Ignorable_Code_Point}``, ``\p{scx=Latn}``, ``\p{jt=D}``...): every table;
* fontTools' copy of ``Scripts.txt`` (``fontTools.unicodedata.Scripts``): the Unicode version (its
  header) and the list of script codes and names.

The script refuses to write unless the two agree on the script of every code point, so that every table
is of the one version it names. The package never imports either: it reads only the module written
here, and derives what :mod:`unicodedata` does give (unassigned code points, noncharacters, viramas)
at run time. ``tests/unit/test_unicode_tables.py`` checks that the committed module is what this
script makes.

The tables (code points and ranges in hex, ``0041-005A``):

* ``BIDI_CONTROL``: Bidi_Control (PropList.txt);
* ``DEFAULT_IGNORABLE``: Default_Ignorable_Code_Point (DerivedCoreProperties.txt: Other_Default_Ignorable
  plus Cf plus Variation_Selector, minus White_Space, U+FFF9-U+FFFB, the Egyptian hieroglyph format
  controls and Prepended_Concatenation_Mark);
* ``FORMAT_WITHOUT_SCRIPT``: the format characters (Cf) that are neither default ignorable nor a
  prepended concatenation mark nor part of a script (Script=Common): the interlinear annotation
  characters, which render as nothing or as stray boxes;
* ``VARIATION_SELECTOR``, ``EMOJI``, ``EXTENDED_PICTOGRAPHIC``, ``EMOJI_MODIFIER`` (emoji-data.txt);
* ``JOINS_AFTER`` (Joining_Type L or D: joins the letter that follows), ``JOINS_BEFORE`` (R or D) and
  ``JOIN_TRANSPARENT`` (T), for the zero-width non-joiner's context (RFC 5892, appendix A.1);
* ``COMBINING_MARK``: general category M (Mn, Mc, Me), the marks that sit on the letter before them;
* ``BLANK``: the characters that render blank although Unicode counts them neither as white space nor
  as default ignorable (U+2800 BRAILLE PATTERN BLANK). The UCD has no property for this, so the set is
  read from the fonts the development environment carries (matplotlib's DejaVu and STIX, ``mpl-data``,
  read with fontTools): a graphic character (not White_Space, not Default_Ignorable_Code_Point, not of
  category C or Z) that at least one of those fonts maps, whose glyph is empty (no contours) in every
  font that maps it. A glyph that one font draws is not blank (DejaVu Sans Mono Oblique leaves U+1D3D
  empty, its other faces draw it). Last Resort, the fallback font that draws a sign of each block
  rather than the character, is left out. The Hangul fillers, which also render blank, are default ignorable;
* ``SCRIPTS``: Script_Extensions of every code point that has a script of its own, as
  ``start-end:Code+Code`` runs (Common and Inherited left out; runs are joined across unassigned code
  points, which no rule lets through anyway), and ``SCRIPT_NAMES``.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "airflow_provider_docsign" / "service" / "_unicode.py"
_WIDTH = 100  # characters of table text on one line of the module


def _sources() -> tuple[object, object]:
    try:
        import regex
        from fontTools.unicodedata import Scripts
    except ImportError as error:  # pragma: no cover - the development environment has both
        raise SystemExit(
            f"scripts/extract_unicode.py needs the regex and fontTools packages ({error}); "
            "they are in the development environment (make install)"
        ) from None
    return regex, Scripts


def _font_files() -> list[Path]:
    """The TrueType fonts matplotlib ships (DejaVu and STIX): the fonts every development venv holds."""
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - in the dev environment
        raise SystemExit("scripts/extract_unicode.py needs matplotlib's fonts (make install)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "mpl-data" / "fonts" / "ttf"
    # Last Resort draws, for every code point, a sign of its block, not the character: it says nothing.
    return sorted(path for path in folder.glob("*.ttf") if not path.name.startswith("LastResort"))


def blank_glyphs(text: str) -> list[int]:
    """The graphic characters every font of :func:`_font_files` that maps them draws as an empty glyph."""
    from fontTools.ttLib import TTFont

    blank: set[int] = set()
    inked: set[int] = set()
    logging.getLogger("fontTools").setLevel(logging.ERROR)  # old fonts' header dates are not our concern
    for path in _font_files():
        with TTFont(str(path), lazy=True) as font:
            if "glyf" not in font:  # pragma: no cover - matplotlib's fonts are all TrueType outlines
                continue
            glyphs = font["glyf"]
            for code, name in font.getBestCmap().items():
                (blank if glyphs[name].numberOfContours == 0 else inked).add(code)
    not_graphic = set(code_points("White_Space", text)) | set(
        code_points("Default_Ignorable_Code_Point", text)
    )
    not_graphic |= set(code_points("gc=C", text)) | set(code_points("gc=Z", text))
    return sorted(blank - inked - not_graphic)


def _all_text() -> str:
    """Every code point but the surrogates, in order (a string the UCD properties are searched in)."""
    return "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


def code_points(prop: str, text: str | None = None) -> list[int]:
    r"""The code points with a UCD property as the ``regex`` package knows it (``Bidi_Control``, ``jt=T``)."""
    regex, _ = _sources()
    found = regex.findall(rf"\p{{{prop}}}", _all_text() if text is None else text)  # type: ignore[attr-defined]
    return sorted(ord(ch) for ch in found)


def ranges(points: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted code points as inclusive ``(start, end)`` runs."""
    runs: list[tuple[int, int]] = []
    for code in sorted(set(points)):
        if runs and runs[-1][1] == code - 1:
            runs[-1] = (runs[-1][0], code)
        else:
            runs.append((code, code))
    return runs


def _hex(start: int, end: int) -> str:
    return f"{start:04X}" if start == end else f"{start:04X}-{end:04X}"


def unicode_version() -> str:
    """The version of fontTools' Scripts.txt (its header names the file: ``Scripts-18.0.0.txt``)."""
    _, scripts = _sources()
    header = Path(scripts.__file__).read_text(encoding="utf-8")[:2000]  # type: ignore[attr-defined]
    found = re.search(r"Scripts-(\d+\.\d+\.\d+)\.txt", header)
    if found is None:  # pragma: no cover
        raise SystemExit("fontTools' Scripts.txt copy names no Unicode version")
    return found.group(1)


def script_table(text: str) -> tuple[list[tuple[int, int, str]], dict[str, str]]:
    """Script_Extensions runs (Common/Inherited left out) and the names of the scripts in them.

    Also checks, for every script, that ``regex`` and fontTools' Scripts.txt give it the same code points:
    the two copies of the UCD are then of one version.
    """
    _, scripts = _sources()
    names: dict[str, str] = dict(scripts.NAMES)  # type: ignore[attr-defined]
    by_fonttools: dict[str, set[int]] = {}
    starts, values = scripts.RANGES, scripts.VALUES  # type: ignore[attr-defined]
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else 0x110000
        by_fonttools.setdefault(values[index], set()).update(range(start, end))
    extensions: dict[int, set[str]] = {}
    every = {ord(c) for c in text}
    for code in names:
        if code in ("Zyyy", "Zinh", "Zzzz"):
            continue
        own = set(code_points(f"sc={code}", text))
        if own != by_fonttools.get(code, set()) & every:
            raise SystemExit(
                f"regex and fontTools disagree on the script {code}: they hold different Unicode versions; "
                "install versions of the same Unicode release"
            )
        for point in code_points(f"scx={code}", text):
            extensions.setdefault(point, set()).add(code)
    assigned = set(code_points("Assigned", text))
    runs: list[tuple[int, int, str]] = []
    for point in sorted(extensions):
        value = "+".join(sorted(extensions[point]))
        if (
            runs
            and runs[-1][2] == value
            and _only_unassigned_between(runs[-1][1], point, assigned, extensions)
        ):
            runs[-1] = (runs[-1][0], point, value)
        else:
            runs.append((point, point, value))
    used = sorted({code for _, _, value in runs for code in value.split("+")})
    return runs, {code: names[code] for code in used}


def _only_unassigned_between(last: int, point: int, assigned: set[int], scripts: dict[int, set[str]]) -> bool:
    """Whether every code point strictly between ``last`` and ``point`` is unassigned (no script, no text)."""
    return all(c not in assigned and c not in scripts for c in range(last + 1, point))


def _block(name: str, comment: str, tokens: list[str]) -> list[str]:
    """``NAME = ("..." "...")``: the tokens joined by spaces, wrapped at :data:`_WIDTH` characters.

    A line ends after a space or a ``+`` (the literals are joined back into one string).
    """
    rest = " ".join(tokens)
    lines: list[str] = []
    while len(rest) > _WIDTH:
        cut = max(rest.rfind(" ", 0, _WIDTH), rest.rfind("+", 0, _WIDTH)) + 1
        lines.append(rest[:cut])
        rest = rest[cut:]
    lines.append(rest)
    out = [f"#: {comment}"]
    if len(lines) == 1:
        out.append(f'{name} = "{lines[0]}"')
    else:
        out.append(f"{name} = (")
        out.extend(f'    "{line}"' for line in lines)
        out.append(")")
    return out


def module_text() -> str:
    """The text of ``airflow_provider_docsign/service/_unicode.py``."""
    text = _all_text()
    version = unicode_version()
    ignorable = code_points("Default_Ignorable_Code_Point", text)
    concatenation = set(code_points("Prepended_Concatenation_Mark", text))
    common = set(code_points("sc=Zyyy", text))
    no_script = [
        c
        for c in code_points("Cf", text)
        if c not in set(ignorable) and c not in concatenation and c in common
    ]
    runs, names = script_table(text)

    def table(name: str, comment: str, points: Iterable[int]) -> list[str]:
        return ["", *_block(name, comment, [_hex(a, b) for a, b in ranges(points)])]

    lines = [
        '"""The Unicode properties of the outgoing text and link rules (generated: do not edit by hand).',
        "",
        "Made by ``scripts/extract_unicode.py`` from the Unicode Character Database (the version below), as",
        "the ``regex`` package compiles it and checked against fontTools' copy of Scripts.txt; the script",
        "says which UCD property each table is. ``tests/unit/test_unicode_tables.py`` checks that this file",
        "is what the script makes. Tables are code points and ranges in hex (``0041-005A``), separated by",
        "spaces; ``SCRIPTS`` gives each run its Script_Extensions (``0041-005A:Latn``).",
        ":mod:`airflow_provider_docsign.service.text_policy` and :mod:`~.link_safety` apply them.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "#: The Unicode version of every table here (Python's own unicodedata may be older or newer).",
        f'UNICODE_VERSION = "{version}"',
        *table("BIDI_CONTROL", "Bidi_Control (PropList.txt).", code_points("Bidi_Control", text)),
        *table(
            "DEFAULT_IGNORABLE",
            "Default_Ignorable_Code_Point (DerivedCoreProperties.txt).",
            ignorable,
        ),
        *table(
            "FORMAT_WITHOUT_SCRIPT",
            "Format characters (Cf) of no script that are neither default ignorable nor concatenation marks.",
            no_script,
        ),
        *table(
            "VARIATION_SELECTOR",
            "Variation_Selector (PropList.txt).",
            code_points("Variation_Selector", text),
        ),
        *table("EMOJI", "Emoji (emoji-data.txt).", code_points("Emoji", text)),
        *table(
            "EXTENDED_PICTOGRAPHIC",
            "Extended_Pictographic (emoji-data.txt).",
            code_points("Extended_Pictographic", text),
        ),
        *table("EMOJI_MODIFIER", "Emoji_Modifier (emoji-data.txt).", code_points("Emoji_Modifier", text)),
        *table(
            "JOINS_AFTER",
            "Joining_Type L or D: joins the letter after it (DerivedJoiningType.txt).",
            [*code_points("jt=L", text), *code_points("jt=D", text)],
        ),
        *table(
            "JOINS_BEFORE",
            "Joining_Type R or D: joins the letter before it.",
            [*code_points("jt=R", text), *code_points("jt=D", text)],
        ),
        *table("JOIN_TRANSPARENT", "Joining_Type T (transparent).", code_points("jt=T", text)),
        *table(
            "COMBINING_MARK", "General category M (Mn, Mc, Me): combining marks.", code_points("gc=M", text)
        ),
        *table(
            "BLANK",
            "Graphic characters that render blank: an empty glyph in every development font that maps them.",
            blank_glyphs(text),
        ),
        "",
        *_block(
            "SCRIPTS",
            "Script_Extensions (ScriptExtensions.txt) of the code points with a script of their own.",
            [f"{_hex(a, b)}:{value}" for a, b, value in runs],
        ),
        "",
        *_block(
            "SCRIPT_NAMES", "The name of each script code above.", [f"{c}:{n}" for c, n in names.items()]
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the module (to the package, or to the path given)."""
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else DEFAULT_OUT
    out.write_text(module_text(), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
