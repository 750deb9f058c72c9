"""What the service's answers say about time and the rate limit: ``Retry-After``, ``Date``, ``X-RateLimit-*``.

Pure parsing (no HTTP client): the sync and the async request loops and the pacer read these.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

__all__ = ["RateLimit", "parse_http_date", "parse_rate_limit", "parse_retry_after"]


def parse_retry_after(value: str | None) -> float | None:
    """Parse ``Retry-After`` (delta seconds or an HTTP date) into seconds, or ``None``."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def parse_http_date(value: str | None) -> datetime | None:
    """The ``Date`` header of an answer as an aware UTC datetime (the service's clock), else ``None``."""
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": a date in UTC with no zone information (RFC 5322)
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc)


@dataclass(frozen=True)
class RateLimit:
    """The service's rate-limit headers on one answer.

    :param limit: ``X-RateLimit-Limit``: requests allowed in the window, if sent.
    :param remaining: ``X-RateLimit-Remaining``: requests left in the window.
    :param reset: ``X-RateLimit-Reset``: when the window resets, in seconds since the epoch.
    """

    limit: int | None
    remaining: int
    reset: float


def parse_rate_limit(headers: Mapping[str, str]) -> RateLimit | None:
    """Read ``X-RateLimit-Remaining`` / ``-Reset`` (and ``-Limit``), or ``None`` when absent or garbled.

    A reset smaller than 10**9 is taken as seconds from now (some gateways send a delta), else epoch.
    When the organisation's own window refuses a request, the real service (v2.17) sends each header
    twice, joined: ``X-RateLimit-Limit: 1000, 5``, ``-Remaining: 836, 0`` (the per-IP window, then the
    organisation's; recorded in ``tests/contract/data/documenso-2.17/recorded/ops/``). The tightest
    window is kept: the one with the fewest requests left.
    """
    try:
        remainings = [int(v) for v in _header_values(headers["x-ratelimit-remaining"])]
        resets = [float(v) for v in _header_values(headers["x-ratelimit-reset"])]
    except (KeyError, TypeError, ValueError):
        return None
    try:
        limits: list[int | None] = [int(v) for v in _header_values(headers.get("x-ratelimit-limit", ""))]
    except ValueError:
        limits = []
    if not remainings or len(resets) != len(remainings):
        return None
    windows = []
    for i, (remaining, reset) in enumerate(zip(remainings, resets, strict=True)):
        limit = limits[i] if len(limits) == len(remainings) else None
        windows.append(
            RateLimit(
                limit=limit, remaining=max(0, remaining), reset=reset if reset >= 1e9 else reset + time.time()
            )
        )
    return min(windows, key=lambda w: (w.remaining, -w.reset))


def _header_values(value: str) -> list[str]:
    """A header's comma-joined values (``"1000, 5"`` -> ``["1000", "5"]``)."""
    return [part.strip() for part in str(value).split(",") if part.strip()]
