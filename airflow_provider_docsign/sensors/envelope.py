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
from airflow_provider_docsign.sensors import _outcomes
from airflow_provider_docsign.sensors._batch import parse_grace, parse_max_unsigned
from airflow_provider_docsign.sensors._batch_wait import BatchWaitMixin
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


class DocsignEnvelopeSensor(BatchWaitMixin, BaseSensorOperator):
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
    - **A batch wait** (``result_table``, or ``envelope_ids`` with ``max_unsigned``) fails at no single
      envelope: it polls until every envelope is *settled* (reached ``target_status``, REJECTED,
      CANCELLED, DELETED, or EXPIRED: an expired link older than ``expired_grace``), reading only the
      ones still open when it can (see :mod:`airflow_provider_docsign.sensors._batch_wait`), then
      succeeds unless more than ``max_unsigned`` did not reach the target. Its XCom is
      ``{"result_table"?, "envelopes", "status", "completed", "unsigned", "max_unsigned" (the allowance
      as a count), "by_status", "not_completed": [{"envelope_id", "row_key"?, "status", "reason"}],
      "report"}``; for a result table, ``report`` is the URI of ``<result table>.outcome.jsonl``, one
      JSON line per envelope (``envelope_id``, ``row_key``, ``external_id``, ``status``, ``reason``,
      ``completed_at``), written beside it when all are settled. The failure names the counts and the
      first five. A timeout is a timeout (``AirflowSensorTimeout``) unless every envelope is settled.
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
        wrote (its XCom's ``result_table``). The sensor waits for the envelopes of its ``sent`` rows
        (each envelope once) as a **batch wait** (below). A table without sent rows succeeds at once.
        Pass exactly one of ``envelope_id``, ``envelope_ids`` and ``result_table``.
    :param target_status: The status every envelope must reach.
    :param failure_statuses: Statuses that fail the task at once (not in a batch wait, where every
        envelope that ends without reaching ``target_status`` counts against ``max_unsigned``).
    :param on_expired: ``"fail"`` (default) or ``"wait"``: what to do when a recipient's signing link
        has expired while the envelope is PENDING. In a batch wait, ``"fail"`` counts such an envelope
        as settled ``EXPIRED`` once ``expired_grace`` has passed, and ``"wait"`` never does.
    :param max_unsigned: Makes a wait on ``envelope_ids`` a batch wait, and sets how many envelopes of a
        batch wait may end without reaching ``target_status`` (rejected, cancelled, deleted, expired):
        a count (an ``int`` >= 0) or a fraction of the envelopes (a ``float`` between 0 and 1, rounded
        down). Default ``None``: none may. Not with ``envelope_id``.
    :param expired_grace: In a batch wait, how long (seconds or a ``timedelta``; default 0) a PENDING
        envelope's expired signing link is given to be renewed before it counts as ``EXPIRED``.
    :param result_table_format: ``"jsonl"`` or ``"parquet"`` when the result table's name does not
        tell (default: from its extension).
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
        max_unsigned: int | float | None = None,
        expired_grace: float | timedelta = 0,
        result_table_format: str | None = None,
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
        self.max_unsigned = parse_max_unsigned(max_unsigned)
        self.expired_grace = parse_grace(expired_grace)
        #: A batch wait: settle every envelope, then count (see :mod:`._batch_wait`).
        self.batch = result_table is not None or self.max_unsigned is not None
        _check_batch_arguments(self, envelope_id, result_table_format)
        self.result_table_format = result_table_format
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
        if self.batch:
            return self._batch_ids()
        try:
            return normalize_envelope_ids(self.envelope_id, self.envelope_ids)
        except ValueError as error:
            raise AirflowFailException(f"{self.task_id}: {error}") from error

    def _apply(self, verdict: Verdict) -> Any:
        """Raise on failure, return the XCom value on success, ``None`` while waiting."""
        if verdict.done:
            _outcomes.report(self.hook, self.docsign_conn_id, verdict.states)
        if verdict.outcome == "failure":
            if verdict.expired:
                raise RecipientExpiredFailure(verdict.message, [dict(e) for e in verdict.expired])
            raise AirflowFailException(verdict.message)
        if verdict.outcome == "success":
            self.log.info("%s", verdict.message)
            return verdict.xcom_value()
        self.log.info("Waiting: %s", verdict.message)
        return None

    # ------------------------------------------------------------------------------------ poke mode
    def poke(self, context: Context) -> bool | PokeReturnValue:
        """Read every envelope once (ceil(N / 20) requests) and decide: done, failed or not yet.

        A batch wait reads only the envelopes not yet settled, and decides once all are.
        """
        if self.batch:
            return self._batch_poke()
        ids = self._ids()
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
        for memo in ("_settled", "_open", "_campaign_cache"):  # a new run knows nothing yet
            self.__dict__.pop(memo, None)
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

        # A batch wait hands over only its open envelopes (all of them after a failed first read).
        ids = list(self.__dict__.get("_open") or self._ids()) if self.batch else self._ids()
        self._defer(ids, started + float(self.timeout))

    def _defer(self, envelope_ids: list[str], deadline: float) -> None:
        """Hand the wait on ``envelope_ids`` (in a batch wait: the open ones) to the trigger."""
        from airflow_provider_docsign.triggers.envelope import DocsignEnvelopeTrigger

        left = max(deadline - time.time(), 0.0)
        self.log.info("Deferring: waiting in the triggerer for up to %.0f seconds", left)
        self.defer(
            trigger=DocsignEnvelopeTrigger(
                envelope_ids,
                docsign_conn_id=self.docsign_conn_id,
                target_status=self.target_status,
                failure_statuses=self.failure_statuses,
                on_expired=self.on_expired,
                poll_interval=float(self.poke_interval),
                deadline=deadline,
                batch=self.batch,
                expired_grace=self.expired_grace,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=left + max(_DEFERRAL_GRACE, 2 * float(self.poke_interval))),
        )

    def execute_complete(self, context: Context, event: Any = None) -> Any:
        """Check the trigger's event and finish exactly as poke mode would (same result, same errors)."""
        if self.batch:
            return self._batch_complete(event)
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


def _check_batch_arguments(sensor: DocsignEnvelopeSensor, envelope_id: Any, result_table_format: Any) -> None:
    """Refuse, when the DAG is parsed, the batch parameters where they would be ignored."""
    name = "DocsignEnvelopeSensor"
    if sensor.max_unsigned is not None and envelope_id is not None:
        raise ValueError(
            f"{name}: max_unsigned counts the envelopes of a batch wait: pass envelope_ids or result_table, "
            "not envelope_id (one envelope either completes or fails the wait)"
        )
    if sensor.expired_grace and not sensor.batch:
        raise ValueError(
            f"{name}: expired_grace applies to a batch wait (result_table, or envelope_ids with "
            "max_unsigned); a single wait fails at once on an expired link (on_expired='fail')"
        )
    if sensor.expired_grace and sensor.on_expired == "wait":
        raise ValueError(f"{name}: expired_grace has no effect with on_expired='wait' (expiry never settles)")
    if result_table_format is not None:
        from airflow_provider_docsign.bulk.plan import OUTPUT_FORMATS

        if sensor.result_table is None:
            raise ValueError(f"{name}: result_table_format needs a result_table")
        if result_table_format not in OUTPUT_FORMATS:
            raise ValueError(
                f"{name}: result_table_format must be one of {', '.join(OUTPUT_FORMATS)}, "
                f"not {result_table_format!r}"
            )
