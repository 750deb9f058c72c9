"""DocsignEnvelopeTrigger: waits in the triggerer until envelopes are signed, rejected or out of time."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from airflow_provider_docsign._compat import BaseTrigger, TriggerEvent
from airflow_provider_docsign.sensors._batch import parse_grace, settle_many
from airflow_provider_docsign.sensors._evaluate import (
    ON_EXPIRED,
    classify_error,
    describe_error,
    evaluate,
    normalize_envelope_ids,
    normalize_statuses,
    read_error_message,
    snapshot,
)
from airflow_provider_docsign.triggers._poller import Read, apoller_for

__all__ = ["DocsignEnvelopeTrigger"]

#: The shortest pause between two polls, whatever ``poll_interval`` says.
MIN_POLL_INTERVAL = 0.1
#: At the deadline, how long to wait for the last read before yielding the timeout event anyway (the
#: shared poller may be pausing for the service's rate limit).
LAST_READ_WAIT = 30.0
#: How many still-open envelope ids a batch wait's timeout event names.
OPEN_LISTED = 20


class DocsignEnvelopeTrigger(BaseTrigger):
    """Wait in the triggerer until envelopes all reach ``target_status``, polling through a shared poller.

    Every trigger of one connection in a triggerer process shares one poller
    (:mod:`airflow_provider_docsign.triggers._poller`), which reads the waiting envelopes of all of them
    20 at a time with ``POST /envelope/get-many``: 1,000 waits cost 50 requests per poll interval. Each
    envelope is still read at least every ``poll_interval`` seconds (plus up to 10 % jitter).

    Yields exactly one event, whose ``status`` is:

    - ``"success"``: every envelope reached ``target_status``; ``envelopes`` holds their states;
    - ``"failure"``: at least one envelope was deleted, or reached a failure or other terminal
      status; ``message`` names each, with the rejecting recipient and ``rejectionReason``;
    - ``"timeout"``: ``deadline`` passed first; ``envelopes`` holds the last states seen;
    - ``"error"``: the service refused the read itself (wrong API key: ``error_type`` ``"auth"``,
      wrong base URL, bad request); polling again could not help.

    Transient errors (429, 5xx, timeouts, dropped connections) are logged and the next poll happens as
    usual; after a 429 the shared poller pauses every read of the connection for ``Retry-After``.
    Being cancelled (the task was killed, or the triggerer is shutting down) only stops polling: it
    never cancels or changes the envelopes.

    Every constructor argument is JSON-safe and the deadline is absolute (epoch seconds), so a
    restarted triggerer re-creates the trigger from :meth:`serialize` and resumes with the time left.

    **A batch wait** (``batch=True``, what the sensor defers with for a result table or
    ``max_unsigned``) fails at no single envelope: it waits until every envelope is settled (reached the
    target, rejected, cancelled, deleted, or an expired link past ``expired_grace``; see
    :mod:`airflow_provider_docsign.sensors._batch`) and drops each settled one from its reads, so a poll
    costs ⌈still open / 20⌉ requests. Its events are small (no list of every id, no states):
    ``"settled"`` with ``envelopes`` (the count), ``by_status`` and ``deadline`` (the sensor then reads
    every envelope once more and decides); ``"timeout"`` with the counts and the first
    :data:`OPEN_LISTED` ids still open in ``open``; ``"error"`` as above.

    :param envelope_ids: The envelope ids to wait for.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    :param target_status: The status every envelope must reach (default ``COMPLETED``).
    :param failure_statuses: Statuses that end the wait with a failure at once.
    :param on_expired: ``"fail"`` (default): a PENDING envelope whose unsigned, non-CC recipient's
        signing link has expired ends the wait with a ``"failure"`` event whose ``expired`` lists each
        such recipient (no extra request: ``expiresAt`` comes with every read). ``"wait"``: keep waiting.
    :param poll_interval: Seconds between two polls.
    :param deadline: Absolute time (seconds since the epoch, UTC) after which a ``"timeout"`` event is
        yielded; ``None`` waits without limit.
    :param batch: Wait until every envelope is settled instead of failing at the first that cannot
        reach ``target_status`` (``failure_statuses`` then end nothing early).
    :param expired_grace: In a batch wait, seconds after a signing link expired before its PENDING
        envelope counts as settled (``EXPIRED``); with ``on_expired="wait"`` it never does.
    """

    def __init__(
        self,
        envelope_ids: Sequence[str],
        *,
        docsign_conn_id: str = "docsign_default",
        target_status: str = "COMPLETED",
        failure_statuses: Sequence[str] = ("REJECTED", "CANCELLED"),
        on_expired: str = "fail",
        poll_interval: float = 60.0,
        deadline: float | None = None,
        batch: bool = False,
        expired_grace: float = 0.0,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.envelope_ids = normalize_envelope_ids(envelope_ids=envelope_ids)
        self.docsign_conn_id = str(docsign_conn_id)
        self.target_status, self.failure_statuses = normalize_statuses(target_status, failure_statuses)
        if on_expired not in ON_EXPIRED:
            raise ValueError(f"on_expired must be one of {list(ON_EXPIRED)}, got {on_expired!r}")
        self.on_expired = str(on_expired)
        self.poll_interval = max(float(poll_interval), MIN_POLL_INTERVAL)
        self.deadline = None if deadline is None else float(deadline)
        self.batch = bool(batch)
        self.expired_grace = parse_grace(expired_grace)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Return the import path and the JSON-safe keyword arguments that re-create this trigger."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "envelope_ids": list(self.envelope_ids),
                "docsign_conn_id": self.docsign_conn_id,
                "target_status": self.target_status,
                "failure_statuses": list(self.failure_statuses),
                "on_expired": self.on_expired,
                "poll_interval": self.poll_interval,
                "deadline": self.deadline,
                **({"batch": True, "expired_grace": self.expired_grace} if self.batch else {}),
            },
        )

    def _event(self, status: str, message: str, **extra: Any) -> TriggerEvent:
        payload: dict[str, Any] = {"status": status, "message": message}
        if self.batch:  # small: the count, never every id again
            payload.update(batch=True, envelopes=len(self.envelope_ids), deadline=self.deadline)
        else:
            payload["envelope_ids"] = list(self.envelope_ids)
        payload.update(extra)
        return TriggerEvent(payload)  # type: ignore[no-untyped-call]

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll until success, failure, a permanent error or the deadline; yield exactly one event."""
        # Everything is released before the event is yielded: the triggerer may never resume this
        # generator.
        yield await self._wait()

    async def _wait(self) -> TriggerEvent:
        count = len(self.envelope_ids)
        self._polls = 0
        self._last_states: list[dict[str, Any]] = []
        self._last_message = ""
        self._open = list(self.envelope_ids)  # a batch wait's envelopes not settled yet
        self._by_status: dict[str, int] = {}
        try:
            # The connection, with aget_connection (one look-up per connection id for all the triggers
            # of the loop): on Airflow 3 the triggerer cannot read the metadata database itself.
            poller = await apoller_for(self.docsign_conn_id)
        except Exception as error:  # the connection cannot be read: the same verdict a failed read gets
            return self._read_failed(error, count) or self._event("error", describe_error(error))
        subscription = poller.subscribe(self.envelope_ids, self.poll_interval)
        try:
            while True:
                timeout = None if self.deadline is None else max(self.deadline - time.time(), 0.0)
                read = await subscription.next(timeout)
                if read is None:
                    # The deadline came: one last read (in the poller's next cycle), then give up.
                    subscription.poll_soon()
                    read = await subscription.next(LAST_READ_WAIT)
                if read is not None:
                    event = self._judge_batch(read, count) if self.batch else self._judge(read, count)
                    if event is not None:
                        return event
                    if self.batch and len(self._open) < len(subscription.envelope_ids):
                        subscription.narrow(self._open)  # settled envelopes are not read again
                if self.deadline is not None and time.time() >= self.deadline:
                    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.deadline))
                    if self.batch:
                        return self._event(
                            "timeout",
                            f"{len(self._open)} of {count} envelope(s) were not settled before the "
                            f"sensor's timeout (deadline {when})",
                            open=self._open[:OPEN_LISTED],
                            by_status=dict(self._by_status),
                        )
                    return self._event(
                        "timeout",
                        f"the envelope(s) did not all reach {self.target_status} before the sensor's "
                        f"timeout (deadline {when})",
                        envelopes=self._last_states,
                    )
        except asyncio.CancelledError:
            # The task was killed or the triggerer is stopping: stop polling, and leave the envelopes
            # exactly as they are (cancelling them would be a business decision, not a cleanup).
            self.log.info("Stopped waiting for %d envelope(s); the envelopes were not changed", count)
            raise
        finally:
            subscription.close()

    def _read_failed(self, error: BaseException, count: int) -> TriggerEvent | None:
        """The error event for a read error polling again cannot fix; ``None`` (logged) for "not yet"."""
        kind = classify_error(error)
        if kind != "transient":
            self.log.error("Docsign read failed permanently (%s): %s", kind, describe_error(error))
            message = read_error_message(error, count=count, conn_id=self.docsign_conn_id)
            return self._event("error", message, error_type=kind)
        self.log.warning(
            "Poll %d of %d envelope(s) failed with a transient error, trying again later: %s",
            self._polls,
            count,
            describe_error(error),
        )
        return None

    def _judge(self, read: Read, count: int) -> TriggerEvent | None:
        """Apply the waiting rules to one read from the shared poller; the event when waiting is over."""
        self._polls += 1
        if read.error is not None:
            return self._read_failed(read.error, count)
        states = snapshot(read.envelopes, self.envelope_ids)
        verdict = evaluate(states, self.target_status, self.failure_statuses, self.on_expired)
        self._last_states = [state.to_dict() for state in verdict.states]
        if verdict.done:
            self.log.info("Poll %d: %s", self._polls, verdict.message.splitlines()[0])
            return TriggerEvent(verdict.to_event())  # type: ignore[no-untyped-call]
        # Waits last days: log at INFO only when the picture changes, to keep task logs short.
        level = logging.INFO if verdict.message != self._last_message else logging.DEBUG
        self.log.log(level, "Poll %d: %s", self._polls, verdict.message)
        self._last_message = verdict.message
        return None

    def _judge_batch(self, read: Read, count: int) -> TriggerEvent | None:
        """A batch wait's read: note the newly settled envelopes; the event once none is open."""
        self._polls += 1
        if read.error is not None:
            return self._read_failed(read.error, count)
        settled, self._open = settle_many(
            read.envelopes,
            self._open,
            target_status=self.target_status,
            expired_grace=self.expired_grace,
            on_expired=self.on_expired,
        )
        for outcome in settled.values():
            self._by_status[outcome.status] = self._by_status.get(outcome.status, 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in sorted(self._by_status.items()))
        if not self._open:
            message = f"all {count} envelope(s) settled ({summary})"
            self.log.info("Poll %d: %s", self._polls, message)
            return self._event("settled", message, by_status=dict(self._by_status))
        message = f"{count - len(self._open)} of {count} envelope(s) settled ({summary or 'none yet'})"
        level = logging.INFO if message != self._last_message else logging.DEBUG
        self.log.log(level, "Poll %d: %s; %d still open", self._polls, message, len(self._open))
        self._last_message = message
        return None
