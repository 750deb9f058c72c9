"""What Airflow knows about envelopes: which task created one, which waits on it, which campaigns ran.

Read from the metadata database by the api-server (the plugin runs there), never from storage and
never from the signing service:

- **created**: an XCom ``envelope_id`` (pushed by every creating operator), or a ``return_value`` of a
  ``Docsign*`` operator naming ``envelope_id``;
- **waiting**: a deferred task instance whose trigger is ours (the trigger's ``envelope_ids`` kwarg),
  or a docsign sensor in ``reschedule`` or ``poke`` mode, from its rendered ``envelope_id(s)``;
- **campaigns**: the ``return_value`` of each finished task whose serialized operator is the provider's
  own ``DocsignBulkSendOperator`` (module and class, not a class of that name), or what a
  try that stopped before the end pushed (``STOPPED_XCOM_KEY``).

Every query is bounded: the newest :data:`MAX_XCOM_ROWS` rows of the last ``lookback_days`` days, and
only the DAGs the user may read. What cannot be matched (an XCom cleared, a custom operator that
pushes nothing, a sensor whose id came from elsewhere) shows no link; docs/ui.md says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_provider_docsign.bulk.state import STOPPED_XCOM_KEY

#: At most this many XCom rows are read per query (newest first).
MAX_XCOM_ROWS = 20_000
#: At most this many campaigns are listed (newest first).
MAX_CAMPAIGNS = 200
#: Our trigger's module: a deferred task instance with this classpath waits on envelopes.
TRIGGER_PREFIX = "airflow_provider_docsign.triggers."
#: The states of a sensor that still waits.
WAITING_STATES = ("deferred", "up_for_reschedule", "running", "queued", "scheduled")


@dataclass(frozen=True)
class TaskRef:
    """A task instance that created an envelope or waits on it.

    :param relation: ``created`` (its ``envelope_id`` XCom), ``sent`` (a distribute task, or the
        bulk send of its campaign), ``handled`` (another docsign task whose result names it, or a batch
        archive) or ``waiting`` (a sensor or batch wait that still waits).
    :param at: When its XCom was written (ISO text; ``None`` for a waiting task).
    """

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    relation: str
    at: str | None = None

    def to_dict(self, base: str) -> dict[str, Any]:
        """JSON for the browser, with the Airflow UI path of the task instance under ``base``."""
        from urllib.parse import quote

        path = f"{base}/dags/{quote(self.dag_id, safe='')}/runs/{quote(self.run_id, safe='')}"
        path += f"/tasks/{quote(self.task_id, safe='')}"
        if self.map_index >= 0:
            path += f"/mapped/{self.map_index}"
        return {
            "dag_id": self.dag_id,
            "run_id": self.run_id,
            "task_id": self.task_id,
            "map_index": self.map_index,
            "relation": self.relation,
            "at": self.at,
            "url": path,
        }


def _value(raw: Any) -> Any:
    """An XCom value as stored (JSON, maybe a JSON string inside), decoded once more if it is text."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _ids(value: Any) -> list[str]:
    """The envelope ids a value names: ``"envelope_x"``, a list of them, or a dict's ``envelope_id(s)``."""
    if isinstance(value, str):
        return [value] if value.startswith("envelope_") else []
    if isinstance(value, list | tuple):  # ids, or records naming one (a batch's ``[{"envelope_id"}]``)
        return [i for v in value if isinstance(v, str | dict) for i in _ids(v)]
    if isinstance(value, dict):
        return _ids(value.get("envelope_id")) + _ids(value.get("envelope_ids"))
    return []


def _since(lookback_days: float) -> datetime:
    return datetime.now(timezone.utc) - timedelta(days=lookback_days)


def _xcoms_of_task_instances(*columns: Any) -> Any:
    """``SELECT dag_id, run_id, task_id, map_index, *columns`` from XComs joined with their task instance."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from sqlalchemy import and_, select

    return select(XComModel.dag_id, XComModel.run_id, XComModel.task_id, XComModel.map_index, *columns).join(
        TaskInstance,
        and_(
            TaskInstance.dag_id == XComModel.dag_id,
            TaskInstance.run_id == XComModel.run_id,
            TaskInstance.task_id == XComModel.task_id,
            TaskInstance.map_index == XComModel.map_index,
        ),
    )


def envelope_tasks(dag_ids: set[str], lookback_days: float = 90.0) -> dict[str, list[TaskRef]]:
    """Map envelope id -> the task instances that created it or wait on it, in the readable DAGs.

    :param dag_ids: The DAGs the user may read (nothing else is looked at).
    :param lookback_days: Only XComs written in this many days.
    """
    found: dict[str, list[TaskRef]] = {}
    if not dag_ids:
        return found
    for envelope_id, ref in _created(dag_ids, lookback_days):
        found.setdefault(envelope_id, []).append(ref)
    for envelope_id, ref in _waiting(dag_ids):
        refs = found.setdefault(envelope_id, [])
        if ref not in refs:
            refs.append(ref)
    return found


def _created(dag_ids: set[str], lookback_days: float) -> Iterator[tuple[str, TaskRef]]:
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import and_, or_

    query = (
        _xcoms_of_task_instances(XComModel.value, XComModel.timestamp, TaskInstance.operator, XComModel.key)
        .where(
            XComModel.dag_id.in_(sorted(dag_ids)),
            XComModel.timestamp >= _since(lookback_days),
            or_(
                XComModel.key == "envelope_id",
                and_(XComModel.key == "return_value", TaskInstance.operator.like("Docsign%")),
            ),
        )
        .order_by(XComModel.timestamp.desc())
        .limit(MAX_XCOM_ROWS)
    )
    with create_session() as session:
        rows = session.execute(query).all()
    rank = {"created": 0, "sent": 1, "handled": 2}
    best: dict[tuple[str, str, str, str, int], TaskRef] = {}
    for dag_id, run_id, task_id, map_index, raw, stamp, operator, key in rows:
        if key == "envelope_id":  # pushed by the operators that create an envelope
            relation = "created"
        elif operator == "DocsignDistributeEnvelopeOperator":
            relation = "sent"
        else:
            relation = "handled"  # archive, cancel, corrections...: it named the envelope in its result
        at = stamp.isoformat() if stamp is not None else None
        for envelope_id in _ids(_value(raw)):
            ref = TaskRef(dag_id, run_id, task_id, map_index, relation, at)
            slot = (envelope_id, dag_id, run_id, task_id, map_index)
            if slot not in best or rank[relation] < rank[best[slot].relation]:
                best[slot] = ref
    for (envelope_id, *_), ref in best.items():
        yield envelope_id, ref


def _waiting(dag_ids: set[str]) -> Iterator[tuple[str, TaskRef]]:
    from airflow.models.renderedtifields import RenderedTaskInstanceFields as Rtif
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.trigger import Trigger
    from airflow.utils.session import create_session
    from sqlalchemy import select

    deferred = (
        select(
            TaskInstance.dag_id, TaskInstance.run_id, TaskInstance.task_id, TaskInstance.map_index, Trigger
        )
        .join(Trigger, Trigger.id == TaskInstance.trigger_id)
        .where(
            TaskInstance.dag_id.in_(sorted(dag_ids)),
            TaskInstance.state == "deferred",
            Trigger.classpath.like(TRIGGER_PREFIX + "%"),
        )
        .limit(MAX_XCOM_ROWS)
    )
    sensing = (
        select(Rtif.dag_id, Rtif.run_id, Rtif.task_id, Rtif.map_index, Rtif.rendered_fields)
        .join(
            TaskInstance,
            (TaskInstance.dag_id == Rtif.dag_id)
            & (TaskInstance.run_id == Rtif.run_id)
            & (TaskInstance.task_id == Rtif.task_id)
            & (TaskInstance.map_index == Rtif.map_index),
        )
        .where(
            TaskInstance.dag_id.in_(sorted(dag_ids)),
            TaskInstance.state.in_([s for s in WAITING_STATES if s != "deferred"]),
            TaskInstance.operator.like("Docsign%Sensor"),
        )
        .limit(MAX_XCOM_ROWS)
    )
    with create_session() as session:
        for dag_id, run_id, task_id, map_index, trigger in session.execute(deferred).all():
            for envelope_id in _trigger_ids(trigger):
                yield envelope_id, TaskRef(dag_id, run_id, task_id, map_index, "waiting")
        for dag_id, run_id, task_id, map_index, fields in session.execute(sensing).all():
            for envelope_id in _ids(_value(fields)):
                yield envelope_id, TaskRef(dag_id, run_id, task_id, map_index, "waiting")


def _trigger_ids(trigger: Any) -> list[str]:
    try:
        kwargs = trigger.kwargs  # decrypted with the Fernet key
    except Exception:  # a trigger from another key or an older format: no link, not an error page
        return []
    return _ids(kwargs) if isinstance(kwargs, dict) else []


def task_envelopes(dag_id: str, run_id: str, task_id: str, map_index: int) -> tuple[list[str], str | None]:
    """The envelopes one task instance handles, and the docsign connection it names (if it says).

    From its XComs (``envelope_id``, ``return_value``), its trigger's kwargs when deferred, and its
    rendered ``envelope_id(s)``.

    :param dag_id: The DAG.
    :param run_id: The run.
    :param task_id: The task.
    :param map_index: The map index (``-1`` when not mapped).
    """
    from airflow.models.renderedtifields import RenderedTaskInstanceFields as Rtif
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.trigger import Trigger
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    ids: list[str] = []
    conn_id: str | None = None

    def same_ti(model: Any) -> Any:
        return (
            (model.dag_id == dag_id)
            & (model.run_id == run_id)
            & (model.task_id == task_id)
            & (model.map_index == map_index)
        )

    with create_session() as session:
        for (raw,) in session.execute(
            select(XComModel.value).where(
                same_ti(XComModel), XComModel.key.in_(["envelope_id", "return_value"])
            )
        ).all():
            ids += _ids(_value(raw))
        ti = session.execute(
            select(TaskInstance.trigger_id, TaskInstance.operator).where(same_ti(TaskInstance))
        ).first()
        if ti is not None and ti.trigger_id is not None:
            trigger = session.get(Trigger, ti.trigger_id)
            if trigger is not None and trigger.classpath.startswith(TRIGGER_PREFIX):
                ids += _trigger_ids(trigger)
                try:
                    conn_id = trigger.kwargs.get("docsign_conn_id")
                except Exception:
                    conn_id = None
        fields = session.execute(select(Rtif.rendered_fields).where(same_ti(Rtif))).scalar()
        if ti is not None and str(ti.operator or "").startswith("Docsign"):
            ids += _ids(_value(fields))
    return list(dict.fromkeys(ids)), conn_id


@dataclass(frozen=True)
class CampaignRun:
    """One finished bulk-send task instance and what it returned.

    :param result: Its ``return_value`` (campaign id, rows, counts, result table, format, connection),
        or, for a try that stopped before the end, what it pushed instead (``STOPPED_XCOM_KEY``: the
        counts so far, why it stopped, its checkpoint).
    """

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    finished: str | None
    result: dict[str, Any]

    @property
    def stopped(self) -> bool:
        """Whether this try stopped before the end (no result table; its checkpoint says what was sent)."""
        return bool(self.result.get("stopped"))


def campaigns(dag_ids: set[str], lookback_days: float = 90.0) -> list[CampaignRun]:
    """The bulk-send runs of the readable DAGs, newest first (each campaign id's latest try wins).

    :param dag_ids: The DAGs the user may read.
    :param lookback_days: Only XComs written in this many days.
    """
    if not dag_ids:
        return []
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    query = (
        _xcoms_of_task_instances(XComModel.timestamp, XComModel.value, TaskInstance.dag_version_id)
        .where(
            XComModel.dag_id.in_(sorted(dag_ids)),
            XComModel.key.in_(["return_value", STOPPED_XCOM_KEY]),
            XComModel.timestamp >= _since(lookback_days),
            TaskInstance.operator == "DocsignBulkSendOperator",
        )
        .order_by(XComModel.timestamp.desc())
        .limit(MAX_CAMPAIGNS * 4)
    )
    with create_session() as session:
        rows = session.execute(query).all()
        ours = _our_bulk_tasks(session, {(r[-1], r[2]) for r in rows})
    seen: set[str] = set()
    found: list[CampaignRun] = []
    for dag_id, run_id, task_id, map_index, stamp, raw, version in rows:
        if (version, task_id) not in ours:  # a class named like ours, from a DAG file: not trusted
            continue
        value = _value(raw)
        if not isinstance(value, dict) or not isinstance(value.get("campaign_id"), str):
            continue
        if value["campaign_id"] in seen:
            continue
        seen.add(value["campaign_id"])
        finished = stamp.isoformat() if stamp is not None else None
        found.append(CampaignRun(dag_id, run_id, task_id, map_index, finished, value))
        if len(found) >= MAX_CAMPAIGNS:
            break
    return found


#: The provider's bulk-send operator, as Airflow serializes it: only its XComs describe campaigns.
BULK_MODULE, BULK_CLASS = "airflow_provider_docsign.operators.bulk", "DocsignBulkSendOperator"


def _our_bulk_tasks(session: Any, wanted: set[tuple[Any, str]]) -> set[tuple[Any, str]]:
    """The (DAG version, task id) pairs whose serialized operator is the provider's own bulk send.

    Read from the serialized DAG of the version each task instance ran (module and class name, as the
    dag processor wrote them), so a class of the same name defined in a DAG file is not trusted.
    """
    from airflow.models.serialized_dag import SerializedDagModel
    from sqlalchemy import select

    versions = {v for v, _ in wanted if v is not None}
    trusted: set[tuple[Any, str]] = set()
    for version in versions:
        model = session.execute(
            select(SerializedDagModel).where(SerializedDagModel.dag_version_id == version)
        ).scalar()
        try:
            tasks = model.data["dag"]["tasks"] if model is not None else []
        except (KeyError, TypeError, ValueError):
            continue
        for task in tasks:
            spec = task.get("__var", task) if isinstance(task, dict) else {}
            if spec.get("_task_module") == BULK_MODULE and spec.get("task_type") == BULK_CLASS:
                trusted.add((version, str(spec.get("task_id"))))
    return {w for w in wanted if w in trusted}


def every_dag(readable: set[str]) -> bool:
    """Whether ``readable`` holds every DAG Airflow knows (such a user also sees envelopes no DAG made)."""
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        known = set(session.execute(select(DagModel.dag_id)).scalars())
    return known <= readable


def docsign_connection_ids(configured: Iterable[str] = ()) -> list[str]:
    """The docsign connections to offer: those of type ``docsign`` in the metadata database, and more.

    Also those named in ``[docsign] ui_conn_ids`` (connections kept in a secrets backend or in
    ``AIRFLOW_CONN_`` variables, which cannot be listed).

    :param configured: The configured extra ids.
    """
    from airflow.models.connection import Connection
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        stored = session.execute(
            select(Connection.conn_id).where(Connection.conn_type == "docsign")
        ).scalars()
        ids = sorted(set(stored) | {c for c in configured if c})
    return ids or ["docsign_default"]
