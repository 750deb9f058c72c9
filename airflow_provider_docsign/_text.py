"""Text safe for one line of a log or a terminal (pure: no Airflow, no network)."""

from __future__ import annotations


def printable(value: object, limit: int | None = None) -> str:
    r"""``value`` as text with its control characters escaped (``\x0a``, ``\u2028``).

    A value that came from outside (a request, a file name, a service message) can then not forge or
    break a log line or a terminal line.

    :param value: Anything; it is converted with ``str()``.
    :param limit: Keep at most this many characters of the text (before escaping); ``None``: all.
    """
    text = str(value) if limit is None else str(value)[:limit]
    return "".join(
        ch if ch.isprintable() else (f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}")
        for ch in text
    )
