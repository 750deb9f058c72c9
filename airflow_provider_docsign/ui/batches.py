"""Campaigns and the batch tasks that work through them, as the Contracts pages link them.

Read from the metadata database only (no result table is opened here):

- the campaign a bulk-send task instance sent: its own ``return_value`` (or what a stopped try pushed),
  trusted only from the provider's own ``DocsignBulkSendOperator`` (see
  :func:`~airflow_provider_docsign.ui.lookup.campaigns`);
- the **batch archive** (``DocsignBatchArchiveOperator``, *handled*) and the **batch wait**
  (``DocsignEnvelopeSensor`` on many envelopes, *waiting* while its task instance still waits): linked to
  envelopes by their rendered ``envelope_id(s)``, and to a campaign's envelopes when their rendered
  ``result_table`` is the campaign's (same DAG; ``s3://conn@bucket/key`` and ``s3://bucket/key`` are
  the same place). A deferred batch wait is also found by its trigger
  (:mod:`~airflow_provider_docsign.ui.lookup`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from airflow_provider_docsign.bulk.state import STOPPED_XCOM_KEY
from airflow_provider_docsign.ui.campaigns import campaign_connection
from airflow_provider_docsign.ui.lookup import (
    MAX_XCOM_ROWS,
    WAITING_STATES,
    CampaignRun,
    TaskRef,
    _ids,
    _our_bulk_tasks,
    _since,
    _value,
    _xcoms_of_task_instances,
)

#: The batch tasks, and how they relate to the envelopes they name.
BATCH_OPERATORS = {"DocsignBatchArchiveOperator": "handled", "DocsignEnvelopeSensor": "waiting"}


@dataclass(frozen=True)
class BatchTask:
    """A batch archive or batch wait task instance: what it names (ids, or a result table's place)."""

    ref: TaskRef
    result_table: str | None
    ids: tuple[str, ...]


def place_key(value: Any) -> str | None:
    """A result table's place, the same whether or not its URI names a connection; ``None``: no place.

    ``s3://conn@bucket/a/../b.jsonl`` and ``s3://bucket/b.jsonl`` are one place; a local path and its
    ``file://`` URI are one place.
    """
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    parts = urlsplit(text)
    if len(parts.scheme) > 1 and parts.scheme != "file":  # not a Windows drive letter
        host = parts.netloc.rsplit("@", 1)[-1]
        return f"{parts.scheme}://{host}{posixpath.normpath(parts.path or '/')}"
    return posixpath.normpath(parts.path if parts.scheme == "file" else text)


def batch_tasks(dag_ids: set[str], lookback_days: float = 90.0) -> list[BatchTask]:
    """The batch archives (any state) and the batch waits that still wait, in the readable DAGs.

    :param dag_ids: The DAGs the user may read.
    :param lookback_days: Only task instances started in this many days (or still waiting).
    """
    if not dag_ids:
        return []
    from airflow.models.renderedtifields import RenderedTaskInstanceFields as Rtif
    from airflow.models.taskinstance import TaskInstance as Ti
    from airflow.utils.session import create_session
    from sqlalchemy import or_, select

    query = (
        select(
            Ti.dag_id,
            Ti.run_id,
            Ti.task_id,
            Ti.map_index,
            Ti.operator,
            Ti.state,
            Ti.end_date,
            Rtif.rendered_fields,
        )
        .join(
            Rtif,
            (Ti.dag_id == Rtif.dag_id)
            & (Ti.run_id == Rtif.run_id)
            & (Ti.task_id == Rtif.task_id)
            & (Ti.map_index == Rtif.map_index),
        )
        .where(
            Ti.dag_id.in_(sorted(dag_ids)),
            Ti.operator.in_(sorted(BATCH_OPERATORS)),
            or_(
                Ti.start_date >= _since(lookback_days), Ti.start_date.is_(None), Ti.state.in_(WAITING_STATES)
            ),
        )
        .limit(MAX_XCOM_ROWS)
    )
    with create_session() as session:
        rows = session.execute(query).all()
    found = []
    for dag_id, run_id, task_id, map_index, operator, state, ended, raw in rows:
        relation = BATCH_OPERATORS[str(operator)]
        if relation == "waiting" and str(getattr(state, "value", state)) not in WAITING_STATES:
            continue  # a wait that ended waits on nothing
        fields = _value(raw)
        fields = fields if isinstance(fields, dict) else {}
        at = ended.isoformat() if relation == "handled" and ended is not None else None
        ref = TaskRef(dag_id, run_id, task_id, map_index, relation, at)
        found.append(BatchTask(ref, place_key(fields.get("result_table")), tuple(_ids(fields))))
    return found


def batch_envelopes(tasks: Iterable[BatchTask]) -> dict[str, list[TaskRef]]:
    """Envelope id -> the batch tasks that name it in their rendered ``envelope_id(s)``."""
    found: dict[str, list[TaskRef]] = {}
    for task in tasks:
        for envelope_id in task.ids:
            refs = found.setdefault(envelope_id, [])
            if task.ref not in refs:
                refs.append(task.ref)
    return found


class CampaignLinks:
    """External id ``<campaign_id>(<row key>)`` -> its campaign's bulk-send task and batch tasks.

    :param runs: The campaigns the user may read.
    :param tasks: The batch tasks of the DAGs the user may read.
    :param conn_id: The connection shown: only its campaigns count.
    """

    def __init__(self, runs: Iterable[CampaignRun], tasks: Iterable[BatchTask], conn_id: str) -> None:
        on_table: dict[tuple[str, str], list[TaskRef]] = {}
        for task in tasks:
            if task.result_table is not None:
                on_table.setdefault((task.ref.dag_id, task.result_table), []).append(task.ref)
        self.by_campaign: dict[str, list[TaskRef]] = {}
        for run in runs:
            if campaign_connection(run) != conn_id:
                continue
            sender = TaskRef(run.dag_id, run.run_id, run.task_id, run.map_index, "sent", run.finished)
            place = place_key(run.result.get("result_table"))
            batch = on_table.get((run.dag_id, place), []) if place is not None else []
            self.by_campaign[str(run.result["campaign_id"])] = [sender, *batch]

    def __call__(self, external_id: str | None) -> list[TaskRef]:
        """The tasks of the campaign that sent ``external_id`` (none when no campaign did)."""
        if not external_id or not external_id.endswith(")"):
            return []
        # The campaign id is what comes before one "(": a row key (or an id) may hold more than one.
        for at, char in enumerate(external_id):
            if char == "(" and external_id[:at] in self.by_campaign:
                return list(self.by_campaign[external_id[:at]])
        return []


def task_campaign(dag_id: str, run_id: str, task_id: str, map_index: int) -> tuple[CampaignRun, str] | None:
    """The campaign a task instance sent (``sent``) or works through (batch archive or wait), if any.

    A bulk-send task instance's own result; a batch task's campaign is the one of the same DAG run whose
    result table is its rendered ``result_table``.

    :param dag_id: The DAG.
    :param run_id: The run.
    :param task_id: The task.
    :param map_index: The map index (``-1`` when not mapped).
    """
    from airflow.models.renderedtifields import RenderedTaskInstanceFields as Rtif
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    query = (
        _xcoms_of_task_instances(XComModel.timestamp, XComModel.value, TaskInstance.dag_version_id)
        .where(
            XComModel.dag_id == dag_id,
            XComModel.run_id == run_id,
            XComModel.key.in_(["return_value", STOPPED_XCOM_KEY]),
            TaskInstance.operator == "DocsignBulkSendOperator",
        )
        .order_by(XComModel.timestamp.desc())
        .limit(100)
    )
    with create_session() as session:
        rows = session.execute(query).all()
        ours = _our_bulk_tasks(session, {(r[-1], r[2]) for r in rows})
        ti = session.execute(
            select(TaskInstance.operator, Rtif.rendered_fields)
            .outerjoin(
                Rtif,
                (Rtif.dag_id == TaskInstance.dag_id)
                & (Rtif.run_id == TaskInstance.run_id)
                & (Rtif.task_id == TaskInstance.task_id)
                & (Rtif.map_index == TaskInstance.map_index),
            )
            .where(
                TaskInstance.dag_id == dag_id,
                TaskInstance.run_id == run_id,
                TaskInstance.task_id == task_id,
                TaskInstance.map_index == map_index,
            )
        ).first()
    runs: list[CampaignRun] = []
    for d, r, t, m, stamp, raw, version in rows:
        value = _value(raw)
        if (version, t) in ours and isinstance(value, dict) and isinstance(value.get("campaign_id"), str):
            runs.append(CampaignRun(d, r, t, m, stamp.isoformat() if stamp is not None else None, value))
    own = next((c for c in runs if (c.task_id, c.map_index) == (task_id, map_index)), None)
    if own is not None:
        return own, "sent"
    relation = BATCH_OPERATORS.get(str(ti.operator)) if ti is not None else None
    fields = _value(ti.rendered_fields) if ti is not None and relation else None
    place = place_key(fields.get("result_table")) if isinstance(fields, dict) else None
    if relation is None or place is None:
        return None
    match = next((c for c in runs if place_key(c.result.get("result_table")) == place), None)
    return (match, relation) if match is not None else None
