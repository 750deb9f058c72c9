"""What a careless or hostile user types into a title, a name or an id, shared by the hostile modules.

``ODD_TEXT``: one character of each class the outgoing check refuses, with the words its refusal holds
(the class and the code point). ``TEMPLATE_DATA``: data that looks like a template and must reach the
service literally (or be refused), never be rendered. ``JINJA_IDS``: what a string id becomes when a
DAG renders it carelessly.
"""

from __future__ import annotations

#: name -> (the character, words the refusal must hold)
ODD_TEXT: dict[str, tuple[str, str]] = {
    "NUL": ("\x00", "control character U+0000"),
    "newline": ("\nINFO forged log line", "control character U+000A"),
    "RLO": ("\u202e", "bidirectional control U+202E"),
    "LRM": ("\u200e", "bidirectional control U+200E"),
    "ALM": ("\u061c", "bidirectional control U+061C"),
    "TAG": ("\U000e0069\U000e0067", "tag character U+E0069"),
    "lone surrogate": ("\ud800", "lone surrogate U+D800"),
    "Hangul filler": ("\u3164", "invisible character U+3164"),
    "soft hyphen": ("\u00ad", "invisible character U+00AD"),
    "noncharacter": ("\uffff", "noncharacter U+FFFF"),
}

#: Text that renders blank or overflows: name -> (the text, words the refusal must hold). Not in
#: ``ODD_TEXT``: the document's own content (prefill) may hold braille, whose space is U+2800.
BLANK_OR_STACKED: dict[str, tuple[str, str]] = {
    "braille blank": ("\u2800", "blank character U+2800"),
    "braille blank only": ("\u2800\u2800\u2800", "blank character U+2800"),
    "object replacement": ("\ufffc", "blank character U+FFFC"),
    "200 stacked marks": ("Z" + "\u0301\u0316\u0337\u0489" * 50, "has 200 combining marks in a row"),
}

#: Names whose writing puts marks on letters, which must reach the service as typed.
MARKED_NAMES = {
    "Vietnamese": "Nguy\u1ec5n Th\u1ecb Ng\u1ecdc \u00c1nh",
    "Vietnamese, decomposed": "Nguye\u0302\u0303n Thi\u0323 Ngo\u0323c A\u0301nh",
    "Devanagari": "\u0936\u094d\u0930\u0940\u092e\u0924\u0940 \u0926\u0940\u092a\u093f\u0915\u093e",
    "Thai": "\u0e20\u0e39\u0e21\u0e34\u0e1e\u0e25 \u0e19\u0e35\u0e49\u0e17\u0e35\u0e48",
}

#: A connection's secret as a template: rendered, it would be the API key.
TEMPLATE_DATA = "{{ conn.docsign_default.password }}"


def odd(name: str, text: str = "Annex") -> str:
    """``text`` with the character of ``ODD_TEXT[name]`` inside it."""
    return text[:2] + ODD_TEXT[name][0] + text[2:]


def jinja_ids(real: str) -> dict[str, str]:
    """A string id as a careless template renders it: padded, quoted, cut, unrendered, None, a number."""
    return {
        "leading space": f" {real}",
        "trailing newline": f"{real}\n",
        "quoted": f"'{real}'",
        "cut": real[:-1],
        "upper": real.upper(),
        "path": f"../{real}",
        "unrendered": "{{ ti.xcom_pull(task_ids='create')['item_ids'][0] }}",
        "None": "None",
        "a number": "100",
        "negative": "-1",
        "hex": "0x10",
    }
