"""How long a client of the service waits before its next request (pure code: no network, no Airflow).

Used by the coalesced poller (triggers), the export operator and, through :class:`SharedPacer`, the
bulk-send operator's pool of threads. Two signals slow them down:

- the service's ``X-RateLimit-Remaining`` / ``X-RateLimit-Reset`` headers: when the requests left in the
  window run low, the remaining ones are spread over the time left, and when only a small reserve is
  left (kept for the operators that share the key) the poller waits for the window to reset, so it
  slows down *before* it gets a 429;
- a 429 itself: the poller waits ``Retry-After`` when the service sends one, else an exponential
  backoff, and the waits grow while the 429s continue.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from airflow_provider_docsign.hooks._http import RateLimit

__all__ = ["Pacer", "SharedPacer"]

#: Never wait longer than this in one pause, whatever the service says (a wait must always end).
MAX_PAUSE = 900.0
#: The backoff after a 429 without ``Retry-After``: BASE * 2**(n-1), capped at MAX_BACKOFF.
BACKOFF_BASE = 1.0
MAX_BACKOFF = 120.0


def _reserve(size: int, fraction: float) -> int:
    """Requests of the window never spent: the reserve, and at least one.

    The real limiter refuses the request that brings its count *to* the limit, so its last
    ``X-RateLimit-Remaining: 1`` is already the end of the window.
    """
    return max(1, int(size * fraction))


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

    def hard_delay(self, now: float) -> float:
        """The part of :meth:`delay` that must be waited out: a 429's pause, or the reserve reached."""
        wait = max(0.0, self.resume_at - now)
        limit = self.rate_limit
        if limit is not None and limit.reset > now:
            size = limit.limit or max(limit.remaining, 1)
            if limit.remaining - _reserve(size, self.reserve_fraction) <= 0:
                wait = max(wait, limit.reset - now)
        return min(wait, MAX_PAUSE)

    def delay(self, now: float) -> float:
        """Seconds to wait before the next request (0 when the budget is comfortable)."""
        wait = max(0.0, self.resume_at - now)
        limit = self.rate_limit
        if limit is None or limit.reset <= now:
            return min(wait, MAX_PAUSE)
        size = limit.limit or max(limit.remaining, 1)
        left = limit.remaining - _reserve(size, self.reserve_fraction)
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


#: A waiting thread looks again at least this often (a 429 or a new window may change its wait).
RECHECK = 1.0


class SharedPacer:
    """One :class:`Pacer` for many threads that share a connection's rate-limit window (thread-safe).

    Every thread calls :meth:`acquire` before each request (the hook's ``before_request``) and
    :meth:`observe` with each answer's rate-limit headers. Requests are let out one at a time through
    a gate, so the pool as a whole keeps to the pacing a single client would: full speed while the
    window is comfortable, evenly spread once it runs low, a stop at the reserve until the window
    resets. A 429 (:meth:`on_throttled`) pauses every thread, not just the one that got it.

    Answers of concurrent requests arrive out of order, so within one window the smallest
    ``remaining`` seen (or counted down locally) wins, and an answer from a window that is already
    over is ignored.

    :param reserve_fraction: The share of the window's limit left for other users of the key.
    :param low_water_fraction: Below this share left, requests are spread over the time to the reset.
    :param clock: Seconds since the epoch (``time.time``; tests pass their own).
    :param sleep: How to wait (``time.sleep``; tests pass their own).
    """

    def __init__(
        self,
        *,
        reserve_fraction: float = 0.1,
        low_water_fraction: float = 0.3,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not 0.0 <= reserve_fraction < 1.0:
            raise ValueError(f"reserve_fraction must be in [0, 1), not {reserve_fraction!r}")
        self._pacer = Pacer(reserve_fraction=reserve_fraction, low_water_fraction=low_water_fraction)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._gate = threading.Lock()
        #: Requests let out, seconds spent waiting at the gate, and 429s reported.
        self.requests = 0
        self.waited = 0.0
        self.throttled = 0

    @property
    def reserve_fraction(self) -> float:
        """The share of the window kept for other users of the key."""
        return self._pacer.reserve_fraction

    @property
    def rate_limit(self) -> RateLimit | None:
        """The window as last known (headers merged with the requests counted since)."""
        with self._lock:
            return self._pacer.rate_limit

    def observe(self, rate_limit: RateLimit | None) -> None:
        """Merge one answer's rate-limit headers into the shared window."""
        if rate_limit is None:
            return
        with self._lock:
            known = self._pacer.rate_limit
            if known is None or rate_limit.reset > known.reset + 0.5:
                self._pacer.observe(rate_limit)  # a new window
            elif abs(rate_limit.reset - known.reset) <= 0.5 and rate_limit.remaining < known.remaining:
                self._pacer.observe(
                    RateLimit(
                        limit=rate_limit.limit or known.limit,
                        remaining=rate_limit.remaining,
                        reset=known.reset,
                    )
                )
            # else: an answer from a window that is over, or one that knows less than the count here

    def on_throttled(self, retry_after: float | None) -> float:
        """A 429: pause every thread for ``Retry-After`` (or a growing backoff); return the pause."""
        with self._lock:
            self.throttled += 1
            return self._pacer.on_throttled(self._clock(), retry_after)

    def on_success(self) -> None:
        """An answer that was not a 429."""
        with self._lock:
            self._pacer.on_success()

    def acquire(self) -> float:
        """Block until this thread may send one request; count it; return the seconds waited."""
        waited = 0.0
        with self._gate:
            with self._lock:
                start = self._clock()
                target = start + self._pacer.delay(start)
            while True:
                now = self._clock()
                if now >= target:
                    with self._lock:
                        # The spreading wait is done; only a 429 or an exhausted window still hold it.
                        hard = self._pacer.hard_delay(now)
                        if hard <= 0:
                            self._pacer.spend()
                            self.requests += 1
                            self.waited += waited
                            return waited
                    target = now + hard
                step = min(target - now, RECHECK)
                self._sleep(step)
                waited += step
