"""A small time-bounded cache with one loader per key at a time (single flight).

Every viewer of a page reads the same entry: ten browsers on the Contracts page within the cache time
cost the service one refresh. While one request loads a key, the others wait for its result instead of
loading it again. A failed load is remembered for a shorter time, so a service that is down is not
asked again by every page load.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: A failed load is kept this long at most (or the cache time, if shorter).
ERROR_SECONDS = 10.0


@dataclass
class _Entry:
    at: float
    value: Any = None
    error: BaseException | None = None


class TtlCache(Generic[T]):
    """Values by key for ``ttl`` seconds, loaded once per key at a time.

    :param ttl: How long a loaded value is served, in seconds (``0``: never cached).
    :param max_entries: At most this many keys are kept (the oldest is dropped first).
    :param clock: The monotonic clock (a test's fake clock, else ``time.monotonic``).
    """

    def __init__(
        self, ttl: float, max_entries: int = 256, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if ttl < 0:
            raise ValueError(f"the cache time must be >= 0 seconds, not {ttl!r}")
        self.ttl = float(ttl)
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()

    def _fresh(self, key: Hashable) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        limit = min(self.ttl, ERROR_SECONDS) if entry.error is not None else self.ttl
        return entry if self._clock() - entry.at < limit else None

    def get(self, key: Hashable, load: Callable[[], T]) -> tuple[T, float]:
        """The value of ``key`` and its age in seconds; ``load()`` runs when there is no fresh one.

        :param key: The cache key.
        :param load: Loads the value (its exception is raised to every caller while remembered).
        """
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._guard:
                entry = self._fresh(key)
            if entry is None:
                at = self._clock()
                try:
                    entry = _Entry(at, value=load())
                except Exception as error:
                    entry = _Entry(at, error=error)
                with self._guard:
                    if self.ttl > 0:
                        self._entries[key] = entry
                        self._entries.move_to_end(key)
                        while len(self._entries) > self.max_entries:
                            dropped, _ = self._entries.popitem(last=False)
                            self._locks.pop(dropped, None)
        if entry.error is not None:
            raise entry.error
        return entry.value, self._clock() - entry.at

    def clear(self) -> None:
        """Forget every value."""
        with self._guard:
            self._entries.clear()
