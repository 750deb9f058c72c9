"""One shared envelope poller per connection and event loop: coalesced ``get-many`` reads for every trigger.

Every :class:`~airflow_provider_docsign.triggers.DocsignEnvelopeTrigger` running in a triggerer process
subscribes its envelope ids here instead of polling on its own. The poller of its connection (same base
URL and API key) reads every due envelope 20 at a time with ``POST /envelope/get-many`` and hands each
subscription the envelopes it asked for; the trigger then applies the usual rules
(:mod:`airflow_provider_docsign.sensors._evaluate`). So 1,000 waiting triggers cost 50 requests per poll
interval instead of 1,000.

- **Ownership:** pollers live in a registry per event loop (and per thread), so they are only ever touched
  from their own loop's thread and need no lock. The registry key holds the base URL and a SHA-256 digest
  of the key, never the key itself.
- **Intervals:** subscriptions are grouped by ``poll_interval``; each group has its own timer (stretched by
  up to 10 % at random, as before), so every envelope is read at least as often as its trigger asked and
  a slow group is not forced onto a fast one's schedule. A new subscription is read at once, together
  with every other one that arrives within :data:`GATHER_WINDOW`.
- **Errors, per batch:** a batch's error goes to the subscriptions whose ids were in that batch only. The
  trigger classifies it exactly as before (auth fails at once; 429, 5xx and connection errors are "not
  yet"). The poller's own hook does not retry: the poller is the retry loop.
- **Rate limits:** ``X-RateLimit-Remaining`` / ``-Reset`` spread requests out before the window runs dry
  and ``Retry-After`` (or a backoff) pauses the whole poller after a 429; the batches not sent are read
  as soon as the pause ends (see :mod:`airflow_provider_docsign.hooks._pacing`).
- **Shrinking:** a batch wait narrows its subscription to the envelopes not yet settled
  (:meth:`Subscription.narrow`), so a poll costs ⌈still open / 20⌉ requests, not ⌈all / 20⌉.
- **Lifetime:** a subscription is closed when its trigger ends (event, cancellation, timeout); when none
  is left the poller's task ends, closes its HTTP client and leaves the registry.
- **The connection:** looked up with ``aget_connection`` (on Airflow 3 the triggerer has no database
  access: the sync look-up cannot find a connection stored in the metadata database), once per
  connection id for every trigger that starts on the loop while its poller runs (refreshed after
  :data:`SETTINGS_TTL`, so a rotated key reaches the triggers that start later). Triggers starting
  together wait for the same look-up. The poller reads with the hook of that look-up.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import logging
import random
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_provider_docsign import metrics
from airflow_provider_docsign.exceptions import DocsignRateLimitError
from airflow_provider_docsign.hooks._pacing import Pacer
from airflow_provider_docsign.sensors._evaluate import classify_error

if TYPE_CHECKING:
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.service.models import Envelope

__all__ = ["EnvelopePoller", "Read", "Subscription", "active_pollers", "apoller_for"]

log = logging.getLogger(__name__)

#: ``POST /envelope/get-many`` takes at most 20 ids.
BATCH_SIZE = 20
#: Batches sent at the same time within one cycle.
CONCURRENCY = 4
#: New subscriptions arriving within this many seconds are read in the same first cycle.
GATHER_WINDOW = 0.05
#: Each group's pause is stretched by up to this fraction at random (as the single trigger did).
POLL_JITTER = 0.1
#: Per-cycle figures kept for inspection (tests and the benchmark).
HISTORY = 1000
#: Seconds a connection look-up serves the triggers of its connection id that start on the same loop.
SETTINGS_TTL = 300.0


@dataclass(frozen=True)
class Read:
    """One answer for a subscription: the envelopes found for its ids, or the error of a batch.

    :param envelopes: The envelopes read (ids the service left out are simply absent).
    :param error: The error of one of the batches holding the subscription's ids.
    """

    envelopes: tuple[Envelope, ...] = ()
    error: BaseException | None = None


@dataclass
class PollerStats:
    """What the poller did: cycles, requests, the 429s it got and the seconds it paused for them."""

    cycles: int = 0
    requests: int = 0
    #: Connection look-ups that led triggers to this poller (one per connection id, not per trigger).
    lookups: int = 0
    throttled: int = 0
    paused_seconds: float = 0.0
    #: The pause each 429 asked for (``Retry-After``, or the backoff), most recent last.
    throttle_pauses: collections.deque[float] = field(
        default_factory=lambda: collections.deque(maxlen=HISTORY)
    )
    #: ``(envelopes read, requests sent)`` for each recent cycle.
    history: collections.deque[tuple[int, int]] = field(
        default_factory=lambda: collections.deque(maxlen=HISTORY)
    )


class Subscription:
    """One trigger's registration with a poller. Created by :meth:`EnvelopePoller.subscribe`.

    :param poller: The poller.
    :param envelope_ids: The ids to read.
    :param interval: Seconds between two reads at most (before jitter).
    """

    def __init__(self, poller: EnvelopePoller, envelope_ids: Sequence[str], interval: float) -> None:
        self.poller = poller
        self.envelope_ids = tuple(envelope_ids)
        self.interval = float(interval)
        self.urgent = True
        self.closed = False
        self._ready = asyncio.Event()
        self._read: Read | None = None

    def __repr__(self) -> str:
        return f"Subscription({len(self.envelope_ids)} envelope(s), every {self.interval:g}s)"

    @property
    def unread(self) -> bool:
        """Whether a read was delivered that the trigger has not taken yet."""
        return self._read is not None

    def deliver(self, read: Read) -> None:
        """Hand over the latest read (an older one not yet taken is replaced)."""
        self._read = read
        self._ready.set()

    async def next(self, timeout: float | None) -> Read | None:
        """The next read, or ``None`` if none came within ``timeout`` seconds (``None``: no limit)."""
        if self._read is None:
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except asyncio.TimeoutError:
                return None
        read, self._read = self._read, None
        self._ready.clear()
        return read

    def narrow(self, envelope_ids: Sequence[str]) -> None:
        """Read only ``envelope_ids`` (a subset) from the next cycle on: a batch wait drops the settled ones.

        A read already delivered and not yet taken still holds the old ids; the trigger judges only the
        ids it still waits for.
        """
        kept = set(envelope_ids)
        self.envelope_ids = tuple(i for i in self.envelope_ids if i in kept)

    def poll_soon(self) -> None:
        """Ask for a read in the next cycle, whatever the group's timer says (the deadline's last poll)."""
        self.urgent = True
        self.poller.wake()

    def close(self) -> None:
        """Unregister (idempotent); the poller stops when its last subscription closes."""
        if not self.closed:
            self.closed = True
            self.poller.unsubscribe(self)


class EnvelopePoller:
    """Reads the envelopes of every subscription in batches of 20, on one event loop.

    :param hook: The hook the poller reads with (its settings already looked up; no retries of its own).
    :param key: The registry key (base URL, key digest); the API key itself is never stored here.
    """

    def __init__(self, hook: DocsignHook, key: tuple[str, str]) -> None:
        self.key = key
        self._hook = hook
        self._subs: dict[Subscription, None] = {}
        self._groups: dict[float, float] = {}  # interval -> next fire (monotonic)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.pacer = Pacer()
        self.stats = PollerStats()

    def __repr__(self) -> str:
        return f"EnvelopePoller(base_url={self.key[0]!r}, subscriptions={len(self._subs)})"

    @property
    def subscriptions(self) -> int:
        """How many subscriptions are registered."""
        return len(self._subs)

    def subscribe(self, envelope_ids: Sequence[str], interval: float) -> Subscription:
        """Register ``envelope_ids``, read first in the next cycle, then every ``interval`` seconds."""
        sub = Subscription(self, envelope_ids, interval)
        self._subs[sub] = None
        group = round(sub.interval, 3)
        if group not in self._groups:
            self._groups[group] = time.monotonic() + _stretch(group)
        if self._task is None or self._task.done():
            loop = asyncio.get_running_loop()
            _loop_registry().pollers.setdefault(self.key, self)  # back in the registry after a restart
            self._task = loop.create_task(self._run(), name=f"docsign-poller {self.key[0]}")
        self.wake()
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        """Remove ``sub``; the groups no subscription uses any more are dropped."""
        self._subs.pop(sub, None)
        group = round(sub.interval, 3)
        if not any(round(s.interval, 3) == group for s in self._subs):
            self._groups.pop(group, None)
        if not self._subs:
            self.wake()

    def wake(self) -> None:
        """Make the poller look at its schedule again now."""
        self._wake.set()

    async def _sleep(self, seconds: float) -> None:
        """Sleep up to ``seconds``; returns early when woken."""
        if seconds <= 0:
            await asyncio.sleep(0)  # always let the triggers run: never a busy loop
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def _run(self) -> None:
        try:
            while self._subs:
                self._wake.clear()
                now = time.monotonic()
                if any(s.urgent for s in self._subs):
                    # Let the other triggers that are starting right now join this cycle.
                    await asyncio.sleep(GATHER_WINDOW)
                    now = time.monotonic()
                fired = {g for g, at in self._groups.items() if at <= now + 0.01}
                # A subscription whose last read its trigger has not taken yet (a slow cycle, a busy
                # loop) is read again all the same: the newer read replaces the older one, and every
                # cycle of a group reads the whole group.
                due = [s for s in self._subs if s.urgent or round(s.interval, 3) in fired]
                for group in fired:
                    self._groups[group] = now + _stretch(group)
                if not due:
                    wake_at = min(self._groups.values(), default=now + 1.0)
                    await self._sleep(wake_at - now)
                    continue
                for sub in due:
                    sub.urgent = False
                await self._cycle(due)
                # Let the triggers act on what they were handed (and unsubscribe) before the next look.
                for _ in range(3):
                    await asyncio.sleep(0)
        finally:
            _forget(self)
            # The HTTP client is closed; the hook (and its settings) stay, should a subscription that
            # raced the end restart the poller (the hook then opens a new client).
            with contextlib.suppress(Exception):
                await self._hook.aclose()

    async def _cycle(self, due: list[Subscription]) -> None:
        """Read every id of ``due`` in batches of 20 and deliver each subscription its read."""
        ids = list(dict.fromkeys(i for sub in due for i in sub.envelope_ids))
        batches = [ids[i : i + BATCH_SIZE] for i in range(0, len(ids), BATCH_SIZE)]
        found: dict[str, Envelope] = {}
        answered: set[str] = set()
        errors: dict[str, BaseException] = {}
        deferred: set[str] = set()
        pending = list(due)
        sent = 0
        for start in range(0, len(batches), CONCURRENCY):
            if not self._subs:
                return
            pause = self.pacer.delay(time.time())
            if pause > 0:
                log.info("Docsign poller: pacing for %.1fs to stay under the service's rate limit", pause)
                self.stats.paused_seconds += pause
                metrics.rate_window_wait(self._hook.docsign_conn_id, pause, "poller")
                await asyncio.sleep(pause)
                if not self._subs:
                    return
            wave = batches[start : start + CONCURRENCY]
            if self.pacer.throttled:
                wave = wave[:1]  # after a 429, probe with one batch before sending more
                deferred_now = batches[start + 1 : start + CONCURRENCY]
                for batch in deferred_now:
                    deferred.update(batch)
            outcomes = await asyncio.gather(*(self._read(batch) for batch in wave), return_exceptions=True)
            sent += len(wave)
            throttled = False
            for batch, outcome in zip(wave, outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    if isinstance(outcome, asyncio.CancelledError):
                        raise outcome
                    errors.update(dict.fromkeys(batch, outcome))
                    if isinstance(outcome, DocsignRateLimitError):
                        throttled = True
                        pause = self.pacer.on_throttled(time.time(), outcome.retry_after)
                        self.stats.throttled += 1
                        self.stats.throttle_pauses.append(pause)
                        log.warning(
                            "Docsign poller: the service answered 429; pausing every read of this "
                            "connection for %.1fs",
                            pause,
                        )
                else:
                    answered.update(batch)
                    found.update((envelope.id, envelope) for envelope in outcome)
            if not throttled:
                self.pacer.on_success()
            if throttled:
                for batch in batches[start + len(wave) :]:
                    deferred.update(batch)
            pending = self._deliver(pending, found, answered, errors, deferred)
            if throttled:
                break
        self.stats.cycles += 1
        self.stats.requests += sent
        self.stats.history.append((len(ids), sent))

    def _deliver(
        self,
        pending: list[Subscription],
        found: dict[str, Envelope],
        answered: set[str],
        errors: dict[str, BaseException],
        deferred: set[str],
    ) -> list[Subscription]:
        """Deliver to every pending subscription whose ids are all settled; return the others."""
        left: list[Subscription] = []
        for sub in pending:
            if sub.closed:
                continue
            ids = sub.envelope_ids
            failed = [errors[i] for i in ids if i in errors]
            if failed:
                # The worst error decides: one that polling again cannot fix beats a transient one.
                failed.sort(key=lambda e: classify_error(e) == "transient")
                sub.deliver(Read(error=failed[0]))
                if any(i in deferred for i in ids) or isinstance(failed[0], DocsignRateLimitError):
                    sub.urgent = True
            elif any(i in deferred for i in ids):
                sub.urgent = True  # not sent because of a 429: read as soon as the pause ends
            elif all(i in answered for i in ids):
                # An id of an answered batch that the service left out (deleted, or not visible to
                # the key) is simply absent: the trigger's snapshot() makes it a "deleted" state.
                sub.deliver(Read(envelopes=tuple(found[i] for i in ids if i in found)))
            else:
                left.append(sub)
        return left

    async def _read(self, batch: list[str]) -> list[Envelope]:
        self.pacer.spend()
        try:
            return await self._hook.async_get_envelopes(batch)
        finally:
            self.pacer.observe(self._hook.last_rate_limit)


def _stretch(interval: float) -> float:
    return interval * (1 + POLL_JITTER * random.random())


# ------------------------------------------------------------------------------------------- registry
_local = threading.local()


@dataclass
class _LoopRegistry:
    """One event loop's pollers, the connection ids that led to them, and the look-ups under way."""

    pollers: dict[tuple[str, str], EnvelopePoller] = field(default_factory=dict)
    #: connection id -> (its poller, when the connection was looked up; monotonic)
    by_conn: dict[str, tuple[EnvelopePoller, float]] = field(default_factory=dict)
    lookups: dict[str, asyncio.Future[EnvelopePoller]] = field(default_factory=dict)


def _loop_registry() -> _LoopRegistry:
    registries = getattr(_local, "registries", None)
    if registries is None:
        registries = _local.registries = weakref.WeakKeyDictionary()
    loop = asyncio.get_running_loop()
    registry = registries.get(loop)
    if registry is None:
        registry = registries[loop] = _LoopRegistry()
    return registry  # type: ignore[no-any-return]


def _forget(poller: EnvelopePoller) -> None:
    with contextlib.suppress(RuntimeError):
        registry = _loop_registry()
        if registry.pollers.get(poller.key) is poller:
            del registry.pollers[poller.key]
        for conn_id in [c for c, (p, _) in registry.by_conn.items() if p is poller]:
            del registry.by_conn[conn_id]


async def apoller_for(conn_id: str) -> EnvelopePoller:
    """The running loop's poller for connection ``conn_id``, looked up with ``aget_connection``.

    Triggers of one connection id share one look-up: while its poller runs (and for at most
    :data:`SETTINGS_TTL` seconds) a starting trigger gets the poller with no look-up at all, and triggers
    starting while a look-up is under way wait for that one. Connections with the same base URL and key
    share a poller. A failed look-up (no such connection, a malformed one) raises to every trigger that
    waited for it, and the next trigger tries again.

    :param conn_id: The trigger's ``docsign`` connection id.
    """
    registry = _loop_registry()
    known = registry.by_conn.get(conn_id)
    if known is not None:
        poller, looked_up = known
        if registry.pollers.get(poller.key) is poller and time.monotonic() - looked_up < SETTINGS_TTL:
            return poller
    pending = registry.lookups.get(conn_id)
    if pending is None:
        pending = registry.lookups[conn_id] = asyncio.ensure_future(_look_up(registry, conn_id))
        # Its error is re-raised to every waiter; retrieved here too, should all of them be cancelled.
        pending.add_done_callback(lambda done: done.cancelled() or done.exception())
    # Shielded: a trigger cancelled while waiting does not cancel the look-up the others wait for.
    return await asyncio.shield(pending)


async def _look_up(registry: _LoopRegistry, conn_id: str) -> EnvelopePoller:
    try:
        hook = _poller_hook(conn_id)
        settings = await hook.asettings()
        key = (settings.base_url, hashlib.sha256(settings.api_key.encode("utf-8")).hexdigest())
        poller = registry.pollers.get(key)
        if poller is None:
            poller = registry.pollers[key] = EnvelopePoller(hook, key)
        poller.stats.lookups += 1
        registry.by_conn[conn_id] = (poller, time.monotonic())
        return poller
    finally:
        registry.lookups.pop(conn_id, None)


def _poller_hook(conn_id: str) -> DocsignHook:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    # No retries inside the hook: the poller is the retry loop (a failed batch is read again in the
    # next cycle, a 429 pauses every read of the connection).
    return DocsignHook(docsign_conn_id=conn_id, max_retries=0)


def active_pollers() -> list[EnvelopePoller]:
    """The running loop's pollers (for tests and the benchmark)."""
    return list(_loop_registry().pollers.values())
