"""The batch wait of :class:`~airflow_provider_docsign.sensors.DocsignEnvelopeSensor` (a campaign's wait).

A batch wait (``result_table=``, or ``envelope_ids=`` with ``max_unsigned``) polls until every envelope
is settled, then passes unless more than ``max_unsigned`` did not complete (the rules:
:mod:`._batch`). What is settled is re-derived from the service, never kept only in memory:

- **poke mode** remembers, within one task run, the envelopes already settled and reads only the
  others: ⌈still open / 20⌉ requests per poll;
- **reschedule mode** starts each poke afresh and reads every envelope: ⌈N / 20⌉ per poll;
- **deferrable** reads every envelope once, hands the open ones to the trigger (which drops each as
  it settles), and when the trigger says all are settled reads every envelope once more to decide
  and write the report. Should one have reopened meanwhile (an expired link renewed), it defers again.

At the end, for a result table, :class:`~._campaign.OutcomeReport` writes every envelope's outcome beside
the table; the XCom is a summary (see :meth:`BatchWaitMixin._batch_xcom`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import (
    AirflowFailException,
    AirflowSensorTimeout,
    PokeReturnValue,
)
from airflow_provider_docsign.sensors import _outcomes
from airflow_provider_docsign.sensors._batch import BatchVerdict, Outcome, judge, settle_many
from airflow_provider_docsign.sensors._campaign import Campaign, OutcomeReport, read_campaign
from airflow_provider_docsign.sensors._evaluate import (
    EVENT_STATUSES,
    classify_error,
    describe_error,
    normalize_envelope_ids,
    read_error_message,
)

if TYPE_CHECKING:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

__all__ = ["MAX_LISTED", "BatchWaitMixin"]

#: The XCom's ``not_completed`` lists at most this many envelopes (the report lists every one).
MAX_LISTED = 1000


class BatchWaitMixin:
    """The sensor's batch wait: poke, finish (verdict, report, XCom) and the end of a deferral.

    Mixed into :class:`~airflow_provider_docsign.sensors.DocsignEnvelopeSensor`, which provides the
    attributes declared below.
    """

    if TYPE_CHECKING:
        task_id: str

        @property
        def log(self) -> Any: ...

        @property
        def hook(self) -> DocsignHook: ...

        envelope_ids: Any
        result_table: Any
        result_table_format: str | None
        target_status: str
        on_expired: str
        expired_grace: float
        max_unsigned: int | float | None
        docsign_conn_id: str

        def _defer(self, envelope_ids: list[str], deadline: float) -> None: ...

    # --------------------------------------------------------------------------------------- inputs
    def _campaign(self) -> Campaign | None:
        """The result table's sent envelopes (read once per task run); ``None`` without a table."""
        if self.result_table is None:
            return None
        cached: Campaign | None = self.__dict__.get("_campaign_cache")
        if cached is None:
            try:
                cached = read_campaign(self.result_table, self.result_table_format)
            except ValueError as error:
                raise AirflowFailException(f"{self.task_id}: {error}") from error
            self.__dict__["_campaign_cache"] = cached
            self.log.info(
                "Waiting for the %d sent envelope(s) of %s (%d row(s) not sent are not waited for)",
                len(cached.envelope_ids),
                self.result_table,
                cached.not_sent,
            )
            if cached.duplicates:
                self.log.warning(
                    "%d sent row(s) of %s name an envelope an earlier row already names: each envelope "
                    "is waited for, counted and reported once (with the first row's key)",
                    cached.duplicates,
                    self.result_table,
                )
        return cached

    def _batch_ids(self) -> list[str]:
        campaign = self._campaign()
        if campaign is not None:
            return campaign.envelope_ids
        try:
            return normalize_envelope_ids(envelope_ids=self.envelope_ids)
        except ValueError as error:
            raise AirflowFailException(f"{self.task_id}: {error}") from error

    # ----------------------------------------------------------------------------------------- poke
    def _batch_poke(self) -> bool | PokeReturnValue:
        """Read the envelopes not known to be settled; finish when none is open."""
        ids = self._batch_ids()
        settled: dict[str, Outcome] = self.__dict__.setdefault("_settled", {})
        to_read = [i for i in ids if i not in settled]
        self.__dict__["_open"] = to_read
        if to_read:
            try:
                envelopes = self.hook.get_envelopes(to_read)
            except Exception as error:
                if classify_error(error) != "transient":
                    message = read_error_message(error, count=len(to_read), conn_id=self.docsign_conn_id)
                    raise AirflowFailException(message) from error
                self.log.warning(
                    "Reading %d envelope(s) failed with a transient error; trying again at the next poke: %s",
                    len(to_read),
                    describe_error(error),
                )
                return False
            found, still_open = settle_many(
                envelopes,
                to_read,
                target_status=self.target_status,
                expired_grace=self.expired_grace,
                on_expired=self.on_expired,
            )
            settled.update(found)
            self.__dict__["_open"] = still_open
            if still_open:
                counts: dict[str, int] = {}
                for envelope_id in ids:
                    if envelope_id in settled:
                        status = settled[envelope_id].status
                        counts[status] = counts.get(status, 0) + 1
                summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none yet"
                self.log.info(
                    "Waiting: %d of %d envelope(s) settled (%s); %d still open, the next poll reads them "
                    "in %d request(s)",
                    len(ids) - len(still_open),
                    len(ids),
                    summary,
                    len(still_open),
                    math.ceil(len(still_open) / 20),
                )
                return False
        return PokeReturnValue(is_done=True, xcom_value=self._finish_batch(ids, settled))

    # --------------------------------------------------------------------------------------- finish
    def _finish_batch(self, ids: list[str], settled: Mapping[str, Outcome]) -> dict[str, Any]:
        """Every envelope is settled: write the report, then pass (the XCom) or fail naming the first few."""
        verdict = judge([settled[i] for i in ids], self.target_status, self.max_unsigned)
        campaign = self._campaign()
        _outcomes.report_batch(self.docsign_conn_id, verdict.outcomes, campaign.sent_at if campaign else None)
        report = OutcomeReport(campaign.path).write(verdict.outcomes, campaign) if campaign else None
        message = verdict.message(report=report, rows=campaign.row_keys if campaign else None)
        if not verdict.passed:
            raise AirflowFailException(message)
        self.log.info("%s", message)
        return self._batch_xcom(verdict, campaign, report)

    def _batch_xcom(
        self, verdict: BatchVerdict, campaign: Campaign | None, report: str | None
    ) -> dict[str, Any]:
        """The XCom of a batch wait that passed (``max_unsigned`` in it is the allowance as a count).

        ``{"result_table"?, "envelopes", "status", "completed", "unsigned", "max_unsigned", "by_status",
        "not_completed": [{"envelope_id", "row_key"?, "status", "reason"}], "report"}``.
        """
        missing = []
        for outcome in verdict.not_completed[:MAX_LISTED]:
            entry: dict[str, Any] = {"envelope_id": outcome.envelope_id}
            if campaign is not None:
                entry["row_key"] = campaign.row_keys.get(outcome.envelope_id)
            entry.update(status=outcome.status, reason=outcome.reason)
            missing.append(entry)
        value: dict[str, Any] = {}
        if self.result_table is not None:
            value["result_table"] = str(self.result_table)
        value.update(
            envelopes=len(verdict.outcomes),
            status=self.target_status,
            completed=verdict.completed,
            unsigned=verdict.unsigned,
            max_unsigned=verdict.allowed,
            by_status=verdict.by_status(),
            not_completed=missing,
            report=report,
        )
        return value

    # ------------------------------------------------------------------------------------- deferral
    def _batch_complete(self, event: Any) -> Any:
        """The trigger's event: a timeout or an error ends the task; "settled" re-reads and decides."""
        if not isinstance(event, Mapping) or event.get("status") not in EVENT_STATUSES:
            raise AirflowFailException(
                f"{self.task_id}: the trigger sent an event this sensor does not understand: "
                f"{type(event).__name__} with status {getattr(event, 'get', lambda _k: None)('status')!r}"
            )
        status = event["status"]
        message = str(event.get("message") or "")
        if status == "timeout":
            opened = ", ".join(str(i) for i in event.get("open") or [])
            raise AirflowSensorTimeout(
                f"Sensor has timed out: {message}" + (f"; open: {opened}" if opened else "")
            )
        if status == "error":
            raise AirflowFailException(message or "the trigger failed to read the envelopes")
        # Settled, as the trigger saw it: decide from the service's answers, not from the event.
        self.__dict__.pop("_settled", None)
        result = self._batch_poke()
        if isinstance(result, PokeReturnValue) and result.is_done:
            return result.xcom_value
        deadline = event.get("deadline")
        still_open: list[str] = self.__dict__.get("_open") or self._batch_ids()
        if not isinstance(deadline, int | float) or isinstance(deadline, bool) or time.time() >= deadline:
            raise AirflowSensorTimeout(
                f"Sensor has timed out: {len(still_open)} envelope(s) are open again after the trigger "
                f"saw them settled, and the sensor's deadline has passed: {', '.join(still_open[:20])}"
            )
        self.log.info("%d envelope(s) are open again (a renewed link?): waiting on", len(still_open))
        self._defer(still_open, float(deadline))
