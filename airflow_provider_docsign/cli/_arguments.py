"""The argument types of every ``docsign`` subcommand: a wrong value is refused in words, at parse time.

Each factory returns a function for ``add_argument(type=...)`` that raises
:class:`argparse.ArgumentTypeError` with what is wrong and what to give instead; the parser then prints
one line, ``docsign COMMAND: error: argument --port: ...``, and exits 2 (``cli._Parser``). Nothing here
lets a Python exception's name or text reach the user: ``int("x")``'s "invalid literal", a port's
``OverflowError`` and ``fromisoformat``'s "Invalid isoformat string" are all said in words.

Values checked here never reach a file, a socket or the service: an empty path (which would mean the
current folder), a number that is not finite, a port out of range.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "choice",
    "fingerprint",
    "identifier",
    "number",
    "path",
    "port",
    "text",
    "url",
    "validation_time",
    "whole",
]

#: The largest number of seconds any option takes (ten years): beyond it a timer cannot be set.
MAX_SECONDS = 10 * 365 * 24 * 3600.0


def _shown(value: str) -> str:
    """The value as quoted in a message: at most 40 characters of it."""
    return repr(value if len(value) <= 40 else value[:40] + "...")


def _named(function: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    function.__name__ = name  # argparse names the type in messages it makes itself
    return function


def text(what: str) -> Callable[[str], str]:
    """A non-empty text (an id, a connection id, a host).

    :param what: What the value is, for the message (``"a connection id"``).
    """

    def parse(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"an empty value: give {what}")
        return value

    return _named(parse, what)


def identifier(what: str, noun: str = "id") -> Callable[[str], str]:
    """An id (or a host name): non-empty, one word, text (no bytes that are not UTF-8), no ``/``.

    :param what: What the id names, with an example (``"a template's id, e.g. envelope_abc123"``).
    :param noun: What the value is called in the message (``"id"``, ``"host name or address"``).
    """

    def parse(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"an empty {noun}: give {what}")
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
            raise argparse.ArgumentTypeError(
                f"{_shown(value)} holds bytes that are not text (UTF-8): give {what}"
            )
        if any(ch.isspace() or ch == "/" or not ch.isprintable() for ch in value):
            raise argparse.ArgumentTypeError(
                f"{_shown(value)} is not an {noun} (it holds a space, a '/' or a control character): "
                f"give {what}"
            )
        return value

    return _named(parse, what)


def path(what: str) -> Callable[[str], str]:
    """A non-empty path (an empty one would mean the current folder).

    :param what: What the path names, for the message (``"a PDF file"``).
    """

    def parse(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"an empty path: give {what}")
        return value

    return _named(parse, what)


def _number_text(value: float) -> str:
    return f"{int(value):,}" if value == int(value) else f"{value:g}"


def whole(low: int, high: int, what: str, note: str = "") -> Callable[[str], int]:
    """A whole number from ``low`` to ``high``.

    :param low: The smallest accepted.
    :param high: The largest accepted.
    :param what: What the number means, for the message (``"a port"``).
    :param note: Said after the bounds (``" (0 picks a free one)"``).
    """

    def parse(value: str) -> int:
        bounds = f"give {what} from {low:,} to {high:,}{note}"
        digits = value.strip()
        if not re.fullmatch(r"[+-]?[0-9]+", digits):
            raise argparse.ArgumentTypeError(f"{_shown(value)} is not a whole number: {bounds}")
        if len(digits.lstrip("+-").lstrip("0")) > 18 or not low <= int(digits) <= high:
            raise argparse.ArgumentTypeError(f"{_shown(digits)} is out of range: {bounds}")
        return int(digits)

    return _named(parse, what)


def port() -> Callable[[str], int]:
    """A TCP port, 0 to 65535 (0 picks a free one)."""
    return whole(0, 65535, "a port", " (0 picks a free one)")


def number(low: float, high: float, what: str, *, above: bool = False) -> Callable[[str], float]:
    """A finite number from ``low`` (or above it, with ``above``) to ``high``.

    :param low: The smallest accepted (excluded with ``above``).
    :param high: The largest accepted.
    :param what: What the number means, for the message (``"seconds"``).
    :param above: ``low`` itself is refused.
    """
    low_text, high_text = _number_text(low), _number_text(high)
    bounds = f"more than {low_text} and at most {high_text}" if above else f"from {low_text} to {high_text}"

    def parse(value: str) -> float:
        try:
            result = float(value.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{_shown(value)} is not a number: give {what}, {bounds}"
            ) from None
        if not math.isfinite(result):
            raise argparse.ArgumentTypeError(f"{_shown(value)} is not a finite number: give {what}, {bounds}")
        if result < low or (above and result == low) or result > high:
            raise argparse.ArgumentTypeError(f"{_shown(value)} is out of range: give {what}, {bounds}")
        return result

    return _named(parse, what)


def url(what: str) -> Callable[[str], str]:
    """An ``http://`` or ``https://`` URL with a host.

    :param what: What the URL is for, for the message.
    """

    def parse(value: str) -> str:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(value.strip())
            host = parts.hostname
        except ValueError:
            host = None
            parts = None
        if parts is None or parts.scheme.lower() not in {"http", "https"} or not host:
            raise argparse.ArgumentTypeError(
                f"{_shown(value)} is not an http(s) URL with a host: give {what}, e.g. http://127.0.0.1:8790/hook"
            )
        return value.strip()

    return _named(parse, what)


def choice(options: tuple[str, ...], what: str) -> Callable[[str], str]:
    """One of ``options``, case-insensitive (returned in lower case).

    :param options: The accepted values, in lower case.
    :param what: What the value is, for the message.
    """

    def parse(value: str) -> str:
        if value.strip().lower() not in options:
            raise argparse.ArgumentTypeError(
                f"{_shown(value)} is not {what}: give one of {', '.join(options)}"
            )
        return value.strip().lower()

    return _named(parse, what)


def fingerprint(value: str) -> str:
    """A SHA-256 certificate fingerprint (64 hex digits, ``:`` separators allowed), as given."""
    from airflow_provider_docsign.evidence.certificate_trust import normalize_fingerprint

    try:
        normalize_fingerprint(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{_shown(value)} is not a SHA-256 fingerprint: give 64 hex digits (':' separators allowed), as "
            "`openssl x509 -noout -fingerprint -sha256 -in cert.pem` prints them"
        ) from None
    return value


def validation_time(value: str) -> Any:
    """``--validation-time``: an ISO 8601 date and time with a zone, as a ``datetime`` in UTC."""
    from airflow_provider_docsign.archive.audit_evidence import parse_validation_time

    try:
        return parse_validation_time(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def describe(err: BaseException) -> str:
    """Why a file given as an argument could not be used, in words (never an exception's name)."""
    from airflow_provider_docsign.archive.audit_pdfs import why_unreadable

    return why_unreadable(err)
