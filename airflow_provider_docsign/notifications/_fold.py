"""Rendered text made fit to send: one line, no refused characters, within the service's lengths.

A notifier renders its templates with the callback's context, and ``{{ exception }}`` is whatever the
failing task raised: many lines (our own ``DocsignValidationError`` lists its problems one a line),
a NUL, thousands of characters. The hook's outgoing check refuses such text, as it must, and then no
alert leaves at all. The notifier therefore folds what it rendered before it sends (the boundary
itself stays strict, for every other caller):

* every line or paragraph break (CR, LF, VT, FF, the C1 NEL, U+2028, U+2029, the information
  separators U+001C-U+001F) and the tab become one space, and runs of white space one space;
* every other character the outgoing check refuses in that field is removed (NUL and the other
  control characters, and, outside the document's own content, the bidirectional and invisible
  characters): the boundary's own rule decides, so the text always passes it;
* the text is cut to the field's length, counted as the service counts it (UTF-16 units), and ends
  with :data:`CUT_MARK` when it was cut, so a reader sees that something is missing.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from airflow_provider_docsign.service import _rules as rules
from airflow_provider_docsign.service.ids import as_id
from airflow_provider_docsign.service.models import Envelope, Field
from airflow_provider_docsign.service.outgoing import DEFAULT_MAX_LENGTH, js_length, text_problem
from airflow_provider_docsign.service.template_prefill import field_label

__all__ = ["CUT_MARK", "fold", "fold_prefill", "fold_recipients"]

#: The longest recipient name the service takes on a template use.
NAME_MAX = rules.MAX_LENGTH["POST /envelope/use"]["recipients[].name"]

#: What ends a cut text: the horizontal ellipsis U+2026 (one UTF-16 unit).
CUT_MARK = "\u2026"

_BREAKS = re.compile("[\t\n\x0b\x0c\r\x1c-\x1f\x85\u2028\u2029]+")
_SPACES = re.compile(" {2,}")


@functools.lru_cache(maxsize=4096)
def _refused(ch: str, free: bool) -> bool:
    """Whether the boundary refuses ``ch`` on its own in a field (``free``: the document's content)."""
    return text_problem(ch, "text", free=free) is not None


def fold(text: str, limit: int, *, free: bool = False) -> str:
    """``text`` on one line, without the characters the outgoing check refuses, at most ``limit`` long.

    :param text: What the notifier rendered.
    :param limit: The field's maximum length in UTF-16 units (as the service counts it).
    :param free: Whether the field is the document's content (a prefilled value), where the
        bidirectional and zero-width characters of right-to-left and Indic scripts are allowed.
    """
    one_line = _BREAKS.sub(" ", text)
    kept = "".join(ch for ch in one_line if (ch.isascii() and ch.isprintable()) or not _refused(ch, free))
    if text_problem(kept, "text", free=free) is not None:
        # A rule about characters in sequence refused what each one alone passes: keep only letters,
        # digits, punctuation, symbols and spaces, which no rule of the boundary refuses.
        kept = "".join(ch for ch in kept if unicodedata.category(ch)[0] in "LNPS" or ch == " ")
    kept = _SPACES.sub(" ", kept).strip()
    if js_length(kept) <= limit:
        return kept
    return _cut(kept, limit)


def _cut(text: str, limit: int) -> str:
    """``text`` cut so that it and :data:`CUT_MARK` fit in ``limit`` UTF-16 units."""
    room = max(0, limit - js_length(CUT_MARK))
    units = 0
    end = 0
    while end < len(text):
        width = 2 if ord(text[end]) > 0xFFFF else 1
        if units + width > room:
            break
        units += width
        end += 1
    # Do not leave a base character without the marks that follow it (an accent, a vowel sign).
    while 0 < end < len(text) and unicodedata.combining(text[end]):
        end -= 1
    return text[:end].rstrip() + CUT_MARK


def fold_recipients(recipients: Any) -> Any:
    """The rendered recipients with each ``name`` folded to one line and cut to the service's length.

    E-mail addresses are left as they are: one that is wrong is refused, and the failure logged.

    :param recipients: ``[{"id" or "placeholder", "email", "name"?}]`` as rendered.
    """
    if not isinstance(recipients, list | tuple):
        return recipients
    out: list[Any] = []
    for entry in recipients:
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            entry = {**entry, "name": fold(entry["name"], NAME_MAX)}
        out.append(entry)
    return out


def _field_of(template: Envelope, key: Any) -> Field | None:
    """The template field a prefill names, by id or by label (as the use resolves it), or None."""
    number = as_id(key)
    if number is not None:
        return next((f for f in template.fields if f.id == number), None)
    if isinstance(key, str):
        hits = [f for f in template.fields if field_label(f).strip().lower() == key.strip().lower()]
        return hits[0] if len(hits) == 1 else None
    return None


def _limit(f: Field | None) -> int:
    """How long a prefilled value of ``f`` may be: a TEXT field's ``characterLimit``, else the default."""
    if f is None or (f.type or "").upper() != "TEXT":
        return DEFAULT_MAX_LENGTH
    limit = (f.field_meta or {}).get("characterLimit")
    if isinstance(limit, int) and not isinstance(limit, bool) and 0 < limit < DEFAULT_MAX_LENGTH:
        return limit
    return DEFAULT_MAX_LENGTH


def _fold_value(value: Any, f: Field | None) -> Any:
    """One prefilled value folded: a TEXT value cut to its field's limit; an option only folded."""
    if isinstance(value, str):
        return fold(value, _limit(f), free=True)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return [fold(v, DEFAULT_MAX_LENGTH, free=True) for v in value]  # a CHECKBOX's chosen options
    return value


def fold_prefill(prefill: Any, template: Envelope) -> Any:
    """The rendered prefill values folded to one line and cut to their fields' lengths.

    A value the use cannot match to a field is folded to the default length; the use's own check then
    reports what is wrong with it.

    :param prefill: ``{label or id: value}`` or ``[{"id" or "label", "value"}]`` as rendered.
    :param template: The template (its fields' types and ``characterLimit``).
    """
    if isinstance(prefill, Mapping):
        return {key: _fold_value(value, _field_of(template, key)) for key, value in prefill.items()}
    if isinstance(prefill, list | tuple):
        out: list[Any] = []
        for spec in prefill:
            if isinstance(spec, Mapping) and "value" in spec:
                key = spec.get("id") if spec.get("id") is not None else spec.get("label")
                spec = {**spec, "value": _fold_value(spec["value"], _field_of(template, key))}
            out.append(spec)
        return out
    return prefill
