"""Time limits of the benchmarks that stretch with the machine's load (no side effects on import).

A limit is written for a quiet machine. On a busy one (``make bench`` beside a test suite, other
builds, other agents on the same 2 cores) every step takes longer, and a fixed limit would stop a
benchmark that is merely slow and turn ``make bench`` red for a reason that says nothing about the
code. So a :class:`Deadline` of ``seconds`` expires after ``seconds`` times the *load factor*: the
1-minute load average per core (at least 1), the largest seen since the deadline was set, read at most
once a second, and at most :data:`MAX_STRETCH`. A benchmark that hangs is still stopped: after
``seconds`` on a quiet machine, after at most ``MAX_STRETCH`` times that on a busy one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

#: The most a limit is stretched, however high the load: a hang is still stopped. A 2-core machine
#: shared with a test suite and a few builds reaches a load average of 12 (factor 6).
MAX_STRETCH = 6.0
#: Seconds between two readings of the load average (it changes slowly: a 1-minute average).
RECHECK = 1.0


def load_factor(load: Callable[[], float] | None = None, cores: int | None = None) -> float:
    """How many times longer work may take now than on a quiet machine: load average per core, >= 1.

    :param load: Returns the 1-minute load average (default: :func:`os.getloadavg`).
    :param cores: The number of cores (default: :func:`os.cpu_count`).
    """
    try:
        average = load() if load is not None else os.getloadavg()[0]
    except OSError:  # no load average on this platform: the limits stay as written
        return 1.0
    return min(MAX_STRETCH, max(1.0, average / max(1, cores or os.cpu_count() or 1)))


def budget(seconds: float) -> float:
    """``seconds`` stretched by the load factor of this moment (for APIs that take one timeout)."""
    return seconds * load_factor()


class Deadline:
    """A time limit of ``seconds`` on a quiet machine, stretched by the largest load factor seen.

    :param seconds: The limit on a quiet machine.
    :param load: Returns the 1-minute load average (default: :func:`os.getloadavg`).
    :param cores: The number of cores (default: :func:`os.cpu_count`).
    :param clock: A monotonic clock (default: :func:`time.monotonic`).
    """

    def __init__(
        self,
        seconds: float,
        *,
        load: Callable[[], float] | None = None,
        cores: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.seconds = float(seconds)
        self._load, self._cores, self._clock = load, cores, clock
        self.start = clock()
        self._checked = self.start
        self.factor = load_factor(load, cores)

    def __repr__(self) -> str:
        return f"Deadline({self.seconds:g} s x {self.factor:.2f} = {self.limit:.0f} s)"

    @property
    def limit(self) -> float:
        """The limit in force: ``seconds`` times the largest load factor seen so far."""
        return self.seconds * self.factor

    def elapsed(self) -> float:
        """Seconds since the deadline was set."""
        return self._clock() - self.start

    def remaining(self) -> float:
        """Seconds left (negative once expired); reads the load again if a second has passed."""
        now = self._clock()
        if now - self._checked >= RECHECK:
            self._checked = now
            self.factor = max(self.factor, load_factor(self._load, self._cores))
        return self.start + self.limit - now

    def expired(self) -> bool:
        """Whether the (stretched) limit has passed."""
        return self.remaining() <= 0

    def describe(self) -> str:
        """``"90 s (x2.6 for the load: 234 s)"``, or ``"90 s"`` on a quiet machine."""
        if self.factor <= 1.0:
            return f"{self.seconds:g} s"
        return f"{self.seconds:g} s (x{self.factor:.1f} for the load: {self.limit:.0f} s)"
