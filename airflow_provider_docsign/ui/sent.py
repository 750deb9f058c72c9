"""When a Contracts row was sent, from what the page already reads: never a service request.

The sources are :func:`~airflow_provider_docsign.service.turnaround.sent`'s, most trusted first (the
listing never reads an audit log, so ``audit`` is not one of them here):

- ``campaign``: the row's own ``sent_at`` in its campaign's result table (a stopped try's checkpoint),
  read only from ``[docsign] ui_result_locations``, and cached, like the Campaigns tab's reads;
- ``task``: the earliest XCom of a distribute task of the envelope (:class:`~.lookup.TaskRef` ``at``).

A campaign's bulk-send task ended after its last row: its time is never a row's send time. An envelope
whose campaign's table cannot be read (not allowed, gone, not a table), or says a time later than now,
has no send time from it: it is counted as such, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.service.expiry import parse_timestamp
from airflow_provider_docsign.ui.campaigns import campaign_connection, sent_times
from airflow_provider_docsign.ui.lookup import CampaignRun, TaskRef


def _key(ref: TaskRef | CampaignRun) -> tuple[str, str, str, int]:
    return (ref.dag_id, ref.run_id, ref.task_id, ref.map_index)


class SendTimes:
    """Each listed envelope's send time, for one request (a campaign's file is read at most once).

    :param state: The app state (its ``tables`` cache is the Campaigns tab's).
    :param runs: The campaigns the user may read.
    :param conn_id: The connection shown: only its campaigns count.
    :param now: The time send times are judged at: one later than that (a file that says tomorrow) is not
        believed (:func:`~airflow_provider_docsign.service.turnaround.sent`).
    """

    def __init__(
        self, state: Any, runs: Iterable[CampaignRun], conn_id: str, now: datetime | None = None
    ) -> None:
        self.state = state
        self.now = now
        self.runs = {_key(r): r for r in runs if campaign_connection(r) == conn_id}
        self.times: dict[tuple[str, str, str, int], dict[str, Any]] = {}
        #: The campaigns whose send times could not be read (their envelopes have none).
        self.unread: set[str] = set()

    def _campaign_times(self, run: CampaignRun) -> dict[str, Any]:
        key = _key(run)
        if key not in self.times:
            try:  # the campaign view's own read: its result table, or a stopped try's checkpoint
                self.times[key] = sent_times(self.state, run)
            except Exception:  # refused, gone, not a table: no send time, said in the summary
                self.unread.add(str(run.result.get("campaign_id")))
                self.times[key] = {}
        return self.times[key]

    def __call__(self, envelope_id: str, tasks: Iterable[TaskRef], campaign: Iterable[TaskRef]) -> Any:
        """The envelope's :class:`~airflow_provider_docsign.service.turnaround.Sent`, or ``None``.

        :param envelope_id: The envelope.
        :param tasks: The task instances linked to it through their XComs (a distribute task is ``sent``).
        :param campaign: The tasks of the campaign that sent it (its bulk send is ``sent``), if any.
        """
        from_campaign = None
        for ref in campaign:
            run = self.runs.get(_key(ref)) if ref.relation == "sent" else None
            if run is not None:
                from_campaign = self._campaign_times(run).get(envelope_id)
                break
        moments = [parse_timestamp(r.at) for r in tasks if r.relation == "sent"]
        known = [m for m in moments if m is not None]
        return turnaround.sent(campaign=from_campaign, task=min(known) if known else None, now=self.now)
