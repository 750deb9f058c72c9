"""DocsignEnvelopeSensor: wait until envelopes are signed (poke, reschedule or deferrable)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import (
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
    BaseSensorOperator,
    Context,
    PokeReturnValue,
    conf,
)
from airflow_provider_docsign.exceptions import DocsignRecipientExpiredError
from airflow_provider_docsign.sensors._evaluate import (
    EVENT_STATUSES,
    ON_EXPIRED,
    EnvelopeState,
    Verdict,
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

__all__ = ["DocsignEnvelopeSensor"]

#: Extra time Airflow allows the deferred task beyond the sensor's own deadline. The trigger yields a
#: ``timeout`` event at the deadline itself; Airflow's own deferral timeout is only a safety net (for a
#: triggerer that was down at the deadline).
_DEFERRAL_GRACE = 60.0


class RecipientExpiredFailure(DocsignRecipientExpiredError, AirflowFailException):
    """:class:`DocsignRecipientExpiredError` that also tells Airflow not to retry the task.

    A retry would find the same expired link; renewing it is a decision (remind, or cancel).
    """


class DocsignEnvelopeSensor(BaseSensorOperator):
    """Wait until one or many envelopes reach ``target_status`` (by default ``COMPLETED``).

    Each poll reads all the envelopes in batches of 20 (``POST /envelope/get-many``), so waiting on N
    envelopes costs ceil(N / 20) requests per poll.

    - **Success** when every envelope has reached ``target_status``. The XCom return value is a list,
      in the order given, of ``{"envelope_id", "status", "completed_at", "item_ids"}`` (item ids in
      the envelope's ``order``), ready for the archive operator.
    - **Failure at once** (``AirflowFailException``: retries would not help) when any envelope is
      deleted (404), reaches one of ``failure_statuses``, or reaches another terminal status that is not
      the target. The message names each envelope and its status and, for REJECTED, the rejecting
      recipient and their ``rejectionReason``. A refused API key (401/403) also fails at once.
    - **Not yet** on transient errors (429, 5xx, timeouts, dropped connections) that remain after the
      hook's own retries with backoff: the next poke tries again.
    - **Expired signing links fail at once** (``on_expired="fail"``, the default): on the real service
      an envelope whose signer's link expired stays PENDING forever, so the sensor checks each
      unsigned, non-CC recipient's ``expiresAt`` at every poll (no extra request) and raises
      :class:`~airflow_provider_docsign.exceptions.DocsignRecipientExpiredError` naming each such
      envelope and recipient (id, role, masked e-mail, when it expired) and how to renew the link
      (:class:`~airflow_provider_docsign.operators.DocsignRemindRecipientsOperator`).
      ``on_expired="wait"`` keeps waiting, for teams whose escalation DAG renews links.
    - ``soft_fail=True`` turns those failures and the timeout into a skip; ``mode="reschedule"`` frees
      the worker slot between pokes.
    - ``deferrable=True`` pokes once, then hands the wait to
      :class:`~airflow_provider_docsign.triggers.DocsignEnvelopeTrigger` in the triggerer (no worker
      slot while people sign). The trigger carries an absolute deadline, so a triggerer restart
      resumes with the time that is left. The task's result and errors are the same as in poke mode.
      Killing the task stops the wait; it never cancels the envelopes.

    :param envelope_id: The envelope to wait for (templated). A dict with ``envelope_id`` (as returned
        by ``DocsignCreateEnvelopeOperator``) is accepted too.
    :param envelope_ids: Many envelopes (templated): a list of ids or of such dicts, for example the
        XCom of a mapped create task (``create.output``).
    :param result_table: A bulk campaign's result table (templated): the URI, path or
        ``ObjectStoragePath`` that :class:`~airflow_provider_docsign.operators.DocsignBulkSendOperator`
        wrote (its XCom's ``result_table``). The sensor waits for the envelopes of its ``sent`` rows,
        and its XCom is then a summary, ``{"result_table", "envelopes", "status"}``, not one entry per
        envelope. A table without sent rows succeeds at once. Pass exactly one of ``envelope_id``,
        ``envelope_ids`` and ``result_table``.
    :param target_status: The status every envelope must reach.
    :param failure_statuses: Statuses that fail the task at once.
    :param on_expired: ``"fail"`` (default) or ``"wait"``: what to do when a recipient's signing link
        has expired while the envelope is PENDING.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    :param deferrable: Wait in the triggerer instead of a worker (default: the
        ``[operators] default_deferrable`` setting).
    :param poke_interval: Seconds (or a ``timedelta``) between two polls.
    :param timeout: How long to wait in total before failing with ``AirflowSensorTimeout``: seconds, a
        ``timedelta`` or a pendulum ``Duration`` (default: the ``[sensors] default_timeout`` setting).
    :param kwargs: Passed to ``BaseSensorOperator`` (``mode``, ``soft_fail``, ``exponential_backoff``...).
    """

    template_fields: Sequence[str] = ("envelope_id", "envelope_ids", "result_table")
    ui_color = "#e8f4f8"

    def __init__(
        self,
        *,
        envelope_id: Any = None,
        envelope_ids: Any = None,
        result_table: Any = None,
        target_status: str = "COMPLETED",
        failure_statuses: Sequence[str] = ("REJECTED", "CANCELLED"),
        on_expired: str = "fail",
        docsign_conn_id: str = "docsign_default",
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poke_interval: float | timedelta = 60,
        timeout: float | timedelta | None = None,
        **kwargs: Any,
    ) -> None:
        given = [
            n for n, v in (("envelope_id", envelope_id), ("envelope_ids", envelope_ids)) if v is not None
        ]
        if result_table is not None:
            given.append("result_table")
        if len(given) > 1:
            raise ValueError(
                f"DocsignEnvelopeSensor: pass one of envelope_id, envelope_ids and result_table, not {given}"
            )
        if not given:
            raise ValueError("DocsignEnvelopeSensor: pass envelope_id, envelope_ids or result_table")
        if timeout is not None:
            kwargs["timeout"] = timeout
        super().__init__(poke_interval=poke_interval, **kwargs)
        self.envelope_id = envelope_id
        self.envelope_ids = envelope_ids
        self.result_table = result_table
        # Checked now, so a typo fails when the DAG is parsed rather than days later.
        self.target_status, self.failure_statuses = normalize_statuses(target_status, failure_statuses)
        if on_expired not in ON_EXPIRED:
            raise ValueError(f"DocsignEnvelopeSensor: on_expired must be one of {list(ON_EXPIRED)}")
        self.on_expired = on_expired
        self.docsign_conn_id = docsign_conn_id
        self.deferrable = deferrable

    # ------------------------------------------------------------------------------------------ hook
    @cached_property
    def hook(self) -> DocsignHook:
        """The hook, created on first use (never while the DAG file is parsed)."""
        from airflow_provider_docsign.hooks.docsign import DocsignHook

        return DocsignHook(docsign_conn_id=self.docsign_conn_id)

    # ----------------------------------------------------------------------------------------- rules
    def _ids(self) -> list[str]:
        try:
            if self.result_table is not None:
                return self._table_ids()
            return normalize_envelope_ids(self.envelope_id, self.envelope_ids)
        except ValueError as error:
            raise AirflowFailException(f"{self.task_id}: {error}") from error

    def _table_ids(self) -> list[str]:
        """The sent envelopes of the bulk result table (read once per task run)."""
        cached: list[str] | None = getattr(self, "_table_cache", None)
        if cached is not None:
            return cached
        from airflow_provider_docsign.bulk.plan import OUTPUT_FORMATS, format_of, sent_envelope_ids
        from airflow_provider_docsign.bulk.store import resolve_path

        try:
            path = resolve_path(self.result_table, "result_table")
            ids = sent_envelope_ids(path, format_of(path, None, OUTPUT_FORMATS, "result_table"))
        except (OSError, TypeError) as error:
            raise ValueError(f"the result table {self.result_table!r} cannot be read: {error}") from error
        self._table_cache = ids
        self.log.info("Waiting for the %d sent envelope(s) of %s", len(ids), self.result_table)
        return ids

    def _table_summary(self, count: int) -> dict[str, Any]:
        return {"result_table": str(self.result_table), "envelopes": count, "status": self.target_status}

    def _apply(self, verdict: Verdict) -> Any:
        """Raise on failure, return the XCom value on success, ``None`` while waiting."""
        if verdict.outcome == "failure":
            if verdict.expired:
                raise RecipientExpiredFailure(verdict.message, [dict(e) for e in verdict.expired])
            raise AirflowFailException(verdict.message)
        if verdict.outcome == "success":
            self.log.info("%s", verdict.message)
            if self.result_table is not None:  # a campaign: counts, not one entry per envelope
                return self._table_summary(len(verdict.states))
            return verdict.xcom_value()
        self.log.info("Waiting: %s", verdict.message)
        return None

    # ------------------------------------------------------------------------------------ poke mode
    def poke(self, context: Context) -> bool | PokeReturnValue:
        """Read every envelope once (ceil(N / 20) requests) and decide: done, failed or not yet."""
        ids = self._ids()
        if not ids:  # a campaign table without a sent row: nothing to wait for
            self.log.info("The result table %s has no sent envelope: nothing to wait for", self.result_table)
            return PokeReturnValue(is_done=True, xcom_value=self._table_summary(0))
        target, failures = self.target_status, self.failure_statuses
        try:
            envelopes = self.hook.get_envelopes(ids)
        except Exception as error:
            if classify_error(error) != "transient":
                message = read_error_message(error, count=len(ids), conn_id=self.docsign_conn_id)
                raise AirflowFailException(message) from error
            self.log.warning(
                "Reading %d envelope(s) failed with a transient error; trying again at the next poke: %s",
                len(ids),
                describe_error(error),
            )
            return False
        result = self._apply(evaluate(snapshot(envelopes, ids), target, failures, self.on_expired))
        if result is None:
            return False
        return PokeReturnValue(is_done=True, xcom_value=result)

    # ------------------------------------------------------------------------------- deferrable mode
    def execute(self, context: Context) -> Any:
        """Poke (or reschedule) as any sensor, or poke once and defer to the trigger."""
        if not self.deferrable:
            return super().execute(context)
        started = time.time()
        try:
            first = self.poke(context)
        except AirflowFailException as error:
            if self.soft_fail or getattr(self, "never_fail", False):
                raise AirflowSkipException(f"Skipping because soft_fail is set: {error}") from error
            raise
        if isinstance(first, PokeReturnValue) and first.is_done:
            return first.xcom_value

        from airflow_provider_docsign.triggers.envelope import DocsignEnvelopeTrigger

        target, failures = self.target_status, self.failure_statuses
        self.log.info("Deferring: waiting in the triggerer for up to %.0f seconds", self.timeout)
        self.defer(
            trigger=DocsignEnvelopeTrigger(
                self._ids(),
                docsign_conn_id=self.docsign_conn_id,
                target_status=target,
                failure_statuses=failures,
                on_expired=self.on_expired,
                poll_interval=float(self.poke_interval),
                deadline=started + float(self.timeout),
            ),
            method_name="execute_complete",
            timeout=timedelta(
                seconds=float(self.timeout) + max(_DEFERRAL_GRACE, 2 * float(self.poke_interval))
            ),
        )

    def execute_complete(self, context: Context, event: Any = None) -> Any:
        """Check the trigger's event and finish exactly as poke mode would (same result, same errors)."""
        ids = self._ids()
        target, failures = self.target_status, self.failure_statuses
        if not isinstance(event, Mapping) or event.get("status") not in EVENT_STATUSES:
            raise AirflowFailException(
                f"{self.task_id}: the trigger sent an event this sensor does not understand: "
                f"{type(event).__name__} with status {getattr(event, 'get', lambda _k: None)('status')!r}"
            )
        if list(event.get("envelope_ids") or []) != ids:
            raise AirflowFailException(
                f"{self.task_id}: the trigger's event is about other envelopes than this task waits for"
            )
        status = event["status"]
        message = str(event.get("message") or "")
        if status == "timeout":
            raise AirflowSensorTimeout(f"Sensor has timed out: {message}")
        if status == "error":
            raise AirflowFailException(message or "the trigger failed to read the envelopes")
        try:
            states = [EnvelopeState.from_dict(item) for item in event.get("envelopes") or []]
        except ValueError as error:
            raise AirflowFailException(f"{self.task_id}: malformed trigger event: {error}") from error
        if [s.envelope_id for s in states] != ids:
            raise AirflowFailException(f"{self.task_id}: the trigger's event does not cover every envelope")
        verdict = evaluate(states, target, failures, self.on_expired)
        if verdict.outcome != status:
            raise AirflowFailException(
                f"{self.task_id}: the trigger reported {status!r} but its envelope states say "
                f"{verdict.outcome!r}: {verdict.message}"
            )
        result = self._apply(verdict)
        if result is None:  # pragma: no cover - "waiting" is not an event status
            raise AirflowFailException(f"{self.task_id}: the trigger ended while still waiting")
        return result
