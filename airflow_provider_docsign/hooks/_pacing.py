"""How long a client of the service waits before its next request (pure code: no network, no Airflow).

Used by the coalesced poller (triggers) and the export operator. Two signals slow them down:

- the service's ``X-RateLimit-Remaining`` / ``X-RateLimit-Reset`` headers: when the requests left in the
  window run low, the remaining ones are spread over the time left, and when only a small reserve is
  left (kept for the operators that share the key) the poller waits for the window to reset, so it
  slows down *before* it gets a 429;
- a 429 itself: the poller waits ``Retry-After`` when the service sends one, else an exponential
  backoff, and the waits grow while the 429s continue.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_docsign.hooks._http import RateLimit

__all__ = ["Pacer"]

#: Never wait longer than this in one pause, whatever the service says (a wait must always end).
MAX_PAUSE = 900.0
#: The backoff after a 429 without ``Retry-After``: BASE * 2**(n-1), capped at MAX_BACKOFF.
BACKOFF_BASE = 1.0
MAX_BACKOFF = 120.0


@dataclass
class Pacer:
    """The poller's pacing state for one connection.

    :param reserve_fraction: The share of the window's limit left for other users of the key (the
        operators of the same team); the poller never spends it.
    :param low_water_fraction: Below this share of the limit left, requests are spread evenly over
        the time until the window resets.
    """

    reserve_fraction: float = 0.1
    low_water_fraction: float = 0.3
    rate_limit: RateLimit | None = None
    resume_at: float = 0.0
    throttled: int = 0

    def observe(self, rate_limit: RateLimit | None) -> None:
        """Remember the rate-limit headers of the latest answer."""
        if rate_limit is not None:
            self.rate_limit = rate_limit

    def on_success(self) -> None:
        """An answer that was not a 429: the backoff starts again from its base."""
        self.throttled = 0

    def on_throttled(self, now: float, retry_after: float | None) -> float:
        """A 429: pause until ``Retry-After`` (or a growing backoff); return the pause in seconds."""
        self.throttled += 1
        if retry_after is not None:
            pause = retry_after
        else:
            pause = min(BACKOFF_BASE * 2 ** (self.throttled - 1), MAX_BACKOFF)
        pause = min(max(pause, 0.0), MAX_PAUSE)
        self.resume_at = max(self.resume_at, now + pause)
        # The window the headers described is over or no longer reliable.
        self.rate_limit = None
        return pause

    def delay(self, now: float) -> float:
        """Seconds to wait before the next request (0 when the budget is comfortable)."""
        wait = max(0.0, self.resume_at - now)
        limit = self.rate_limit
        if limit is None or limit.reset <= now:
            return min(wait, MAX_PAUSE)
        size = limit.limit or max(limit.remaining, 1)
        reserve = int(size * self.reserve_fraction)
        left = limit.remaining - reserve
        until_reset = limit.reset - now
        if left <= 0:
            wait = max(wait, until_reset)
        elif limit.remaining < size * self.low_water_fraction:
            wait = max(wait, until_reset / left)
        return min(wait, MAX_PAUSE)

    def spend(self) -> None:
        """Count one request against the remembered window (the next answer corrects it)."""
        limit = self.rate_limit
        if limit is not None and limit.remaining > 0:
            self.rate_limit = RateLimit(limit=limit.limit, remaining=limit.remaining - 1, reset=limit.reset)
