"""DocsignEnvelopeTrigger: waits in the triggerer until envelopes are signed, rejected or out of time."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import BaseTrigger, TriggerEvent
from airflow_provider_docsign.sensors._evaluate import (
    classify_error,
    describe_error,
    evaluate,
    normalize_envelope_ids,
    normalize_statuses,
    read_error_message,
    snapshot,
)

if TYPE_CHECKING:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

__all__ = ["DocsignEnvelopeTrigger"]

#: The shortest pause between two polls, whatever ``poll_interval`` says.
MIN_POLL_INTERVAL = 0.1
#: Each pause is stretched by up to this fraction at random, so that many triggers started together
#: (a mapped DAG sending hundreds of envelopes) do not all poll the service in the same instant.
POLL_JITTER = 0.1


class DocsignEnvelopeTrigger(BaseTrigger):
    """Poll envelopes with the hook's async path until they all reach ``target_status``.

    Yields exactly one event, whose ``status`` is:

    - ``"success"``: every envelope reached ``target_status``; ``envelopes`` holds their states;
    - ``"failure"``: at least one envelope was deleted, or reached a failure or other terminal
      status; ``message`` names each, with the rejecting recipient and ``rejectionReason``;
    - ``"timeout"``: ``deadline`` passed first; ``envelopes`` holds the last states seen;
    - ``"error"``: the service refused the read itself (wrong API key: ``error_type`` ``"auth"``,
      wrong base URL, bad request); polling again could not help.

    Transient errors (429, 5xx, timeouts, dropped connections) left over after the hook's own retries
    are logged and the next poll happens as usual. Being cancelled (the task was killed, or the
    triggerer is shutting down) only stops polling: it never cancels or changes the envelopes.

    Every constructor argument is JSON-safe and the deadline is absolute (epoch seconds), so a
    restarted triggerer re-creates the trigger from :meth:`serialize` and resumes with the time left.

    :param envelope_ids: The envelope ids to wait for.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    :param target_status: The status every envelope must reach (default ``COMPLETED``).
    :param failure_statuses: Statuses that end the wait with a failure at once.
    :param poll_interval: Seconds between two polls.
    :param deadline: Absolute time (seconds since the epoch, UTC) after which a ``"timeout"`` event is
        yielded; ``None`` waits without limit.
    """

    def __init__(
        self,
        envelope_ids: Sequence[str],
        *,
        docsign_conn_id: str = "docsign_default",
        target_status: str = "COMPLETED",
        failure_statuses: Sequence[str] = ("REJECTED", "CANCELLED"),
        poll_interval: float = 60.0,
        deadline: float | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.envelope_ids = normalize_envelope_ids(envelope_ids=envelope_ids)
        self.docsign_conn_id = str(docsign_conn_id)
        self.target_status, self.failure_statuses = normalize_statuses(target_status, failure_statuses)
        self.poll_interval = max(float(poll_interval), MIN_POLL_INTERVAL)
        self.deadline = None if deadline is None else float(deadline)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Return the import path and the JSON-safe keyword arguments that re-create this trigger."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "envelope_ids": list(self.envelope_ids),
                "docsign_conn_id": self.docsign_conn_id,
                "target_status": self.target_status,
                "failure_statuses": list(self.failure_statuses),
                "poll_interval": self.poll_interval,
                "deadline": self.deadline,
            },
        )

    def _hook(self) -> DocsignHook:
        from airflow_provider_docsign.hooks.docsign import DocsignHook

        return DocsignHook(docsign_conn_id=self.docsign_conn_id)

    def _event(self, status: str, message: str, **extra: Any) -> TriggerEvent:
        payload: dict[str, Any] = {
            "status": status,
            "envelope_ids": list(self.envelope_ids),
            "message": message,
        }
        payload.update(extra)
        return TriggerEvent(payload)  # type: ignore[no-untyped-call]

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll until success, failure, a permanent error or the deadline; yield exactly one event."""
        hook = self._hook()
        try:
            event = await self._wait(hook)
        finally:
            # Released before the event is yielded: the triggerer may never resume this generator.
            await _close(hook)
        yield event

    async def _wait(self, hook: DocsignHook) -> TriggerEvent:
        count = len(self.envelope_ids)
        polls = 0
        last_states: list[dict[str, Any]] = []
        last_message = ""
        try:
            while True:
                polls += 1
                try:
                    envelopes = await hook.async_get_envelopes(self.envelope_ids)
                except Exception as error:
                    kind = classify_error(error)
                    if kind != "transient":
                        self.log.error(
                            "Docsign read failed permanently (%s): %s", kind, describe_error(error)
                        )
                        message = read_error_message(error, count=count, conn_id=self.docsign_conn_id)
                        return self._event("error", message, error_type=kind)
                    self.log.warning(
                        "Poll %d of %d envelope(s) failed with a transient error, trying again later: %s",
                        polls,
                        count,
                        describe_error(error),
                    )
                else:
                    states = snapshot(envelopes, self.envelope_ids)
                    verdict = evaluate(states, self.target_status, self.failure_statuses)
                    last_states = [state.to_dict() for state in verdict.states]
                    if verdict.done:
                        self.log.info("Poll %d: %s", polls, verdict.message.splitlines()[0])
                        return TriggerEvent(verdict.to_event())  # type: ignore[no-untyped-call]
                    # Waits last days: log at INFO only when the picture changes, to keep task logs short.
                    level = logging.INFO if verdict.message != last_message else logging.DEBUG
                    self.log.log(level, "Poll %d: %s", polls, verdict.message)
                    last_message = verdict.message

                now = time.time()
                if self.deadline is not None and now >= self.deadline:
                    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.deadline))
                    return self._event(
                        "timeout",
                        f"the envelope(s) did not all reach {self.target_status} before the sensor's "
                        f"timeout (deadline {when})",
                        envelopes=last_states,
                    )
                pause = self.poll_interval * (1 + POLL_JITTER * random.random())
                if self.deadline is not None:
                    # Wake up at the deadline for one last poll, then give up.
                    pause = min(pause, max(self.deadline - now, 0.0))
                await asyncio.sleep(pause)
        except asyncio.CancelledError:
            # The task was killed or the triggerer is stopping: stop polling, and leave the envelopes
            # exactly as they are (cancelling them would be a business decision, not a cleanup).
            self.log.info("Stopped waiting for %d envelope(s); the envelopes were not changed", count)
            raise


async def _close(hook: Any) -> None:
    """Release the hook's async HTTP client, if it keeps one."""
    close = getattr(hook, "aclose", None) or getattr(hook, "async_close", None)
    if close is None:
        return
    try:
        result = close()
        if asyncio.iscoroutine(result):
            await result
    except Exception:  # noqa: S110 - closing a client must never turn an event into an error
        pass
