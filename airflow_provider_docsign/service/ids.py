"""Integer ids given by users: an ``int``, or the same number written in ASCII digits (pure code).

Recipient and field ids are integers on the service. A DAG often gets them through Jinja
(``"{{ ti.xcom_pull(task_ids='create')['recipients'][0]['id'] }}"``), and a rendered template is a
string unless the DAG renders native objects: ``"100"`` means recipient 100. Every place that takes an
integer id takes its digit string too, and nothing looser: no sign, no white space, no exponent
(``"1e3"``), no underscore (``"1_000"``), no other script's digits (``"١٢"``, which Python's ``int``
reads as 12), no float (``100.0``), no ``bool`` (``True`` is an ``int`` to Python).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ID_FORM", "as_id", "with_int_ids"]

#: How the messages describe what an id may be.
ID_FORM = 'an integer, or its digits as a string ("100")'

# At most 18 digits: any id the service can hold (a 32-bit integer), and never a string long enough
# for ``int()`` to refuse (Python caps the digits it converts).
_DIGITS = re.compile(r"[0-9]{1,18}")


def as_id(value: Any) -> int | None:
    """``value`` as an integer id if it is one: an ``int`` (not a ``bool``) or a string of ASCII digits.

    Anything else gives ``None``, for the caller to report. The sign is not checked here (an ``int``
    below 1 is returned as it is); a digit string is never negative.

    :param value: What the user gave (after Airflow rendered it).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    return None


def with_int_ids(entries: Any, keys: Iterable[str]) -> Any:
    """A copy of a list of objects with each of ``keys`` that holds a digit string made an ``int``.

    Anything that is not a list of mappings, and every value that is not an id's digit string, is
    left as it is for the validators to report. The caller's objects are not changed.

    :param entries: The list (``recipients``, ``fields``...) as the user gave it.
    :param keys: The keys that hold integer ids (``"id"``, ``"recipientId"``).
    """
    if not isinstance(entries, list | tuple):
        return entries
    names = tuple(keys)
    out: list[Any] = []
    for entry in entries:
        if isinstance(entry, Mapping):
            entry = dict(entry)
            for key in names:
                value = entry.get(key)
                if isinstance(value, str) and as_id(value) is not None:
                    entry[key] = as_id(value)
        out.append(entry)
    return out
