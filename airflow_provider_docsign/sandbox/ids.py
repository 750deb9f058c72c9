"""Identifier, timestamp and number formats the real service uses, reproduced for the sandbox."""

from __future__ import annotations

import secrets
import string
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal

_LOWER = string.ascii_lowercase
_ALNUM_LOWER = string.ascii_lowercase + string.digits
_TOKEN_CHARS = string.ascii_letters + string.digits


def _pick(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def envelope_id() -> str:
    """``envelope_`` followed by 16 lowercase letters."""
    return "envelope_" + _pick(_LOWER, 16)


def envelope_item_id() -> str:
    """``envelope_item_`` followed by 16 lowercase letters."""
    return "envelope_item_" + _pick(_LOWER, 16)


def cuid() -> str:
    """A 25-character cuid-like id (``c`` + time part + counter-ish + random), as folder and data ids look."""
    ts = _base36(int(time.time() * 1000))[-8:]
    return "c" + ts + _pick(_ALNUM_LOWER, 16)


def recipient_token() -> str:
    """A 21-character signing token (nanoid alphabet without ``-``/``_``)."""
    return _pick(_TOKEN_CHARS, 21)


def request_id() -> str:
    """A random UUID4 string for the ``x-request-id`` header."""
    import uuid

    return str(uuid.uuid4())


def _base36(n: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = _ALNUM_LOWER[r] + out
    return out or "0"


#: How far the sandbox's clock is from the machine's (``POST /_sandbox/clock``): a service whose clock
#: is skewed against Airflow's, for tests of rules that must not compare the two clocks.
_CLOCK_OFFSET = timedelta(0)


def set_clock_offset(seconds: float) -> None:
    """Put the sandbox's clock ``seconds`` ahead of the machine's (behind when negative)."""
    global _CLOCK_OFFSET
    _CLOCK_OFFSET = timedelta(seconds=seconds)


def clock_offset() -> float:
    """The sandbox clock's offset from the machine's, in seconds."""
    return _CLOCK_OFFSET.total_seconds()


def utcnow() -> datetime:
    """The current time in UTC, on the sandbox's clock (the machine's, plus any test offset)."""
    return datetime.now(timezone.utc) + _CLOCK_OFFSET


def http_date() -> str:
    """The sandbox's clock as an HTTP ``Date`` header value (``Tue, 24 Nov 2026 10:00:00 GMT``)."""
    from email.utils import format_datetime

    return format_datetime(utcnow().replace(microsecond=0), usegmt=True)


def iso(dt: datetime | None = None) -> str:
    """ISO-8601 with milliseconds and ``Z``, as JavaScript's ``Date.toJSON`` prints it."""
    dt = dt or utcnow()
    return dt.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_in(days: float) -> str:
    """An ISO timestamp ``days`` from now."""
    return iso(utcnow() + timedelta(days=days))


def decimal_str(value: float | int | str) -> str:
    """Serialise a number like Prisma's Decimal ``toJSON``: ``10`` not ``10.0``, ``12.5`` stays ``12.5``."""
    d = Decimal(str(value)).normalize()
    text = format(d, "f")
    return "0" if text in ("-0", "") else text
