"""XComs planted as a DAG author could: task instances of a serialized DAG, and the values they pushed.

:func:`plant` writes a DAG to the metadata database the way the dag processor would, runs it once with
``dag.test(mark_success_pattern=".*")`` (no task's code runs: every task instance is marked success),
then stores the given XComs for its task instances, as a worker would. :func:`rendered` stores their
rendered template fields, and :func:`still_waiting` puts a sensor back to waiting (deferred on the
provider's trigger, or between two pokes). The api-server under test reads them from the same database.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any


def plant(dag: Any, xcoms: dict[str, dict[str, Any]]) -> str:
    """Serialize ``dag``, mark one run of it successful, store ``xcoms`` (task id -> key -> value).

    :returns: The run id.
    """
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        DagBundlesManager().sync_bundles_to_db(session=session)
    bag = DagBag(dag_folder=None, collect_dags=False)
    bag.bag_dag(dag)
    sync_bag_to_db(bag, "dags-folder", None)
    run = dag.test(mark_success_pattern=".*")
    assert str(getattr(run.state, "value", run.state)) == "success"
    with create_session() as session:
        for task_id, values in xcoms.items():
            for key, value in values.items():
                XComModel.set(
                    key, value, dag_id=dag.dag_id, task_id=task_id, run_id=run.run_id, session=session
                )
    return str(run.run_id)


def dag_of(dag_id: str) -> Any:
    """An unscheduled DAG (its tasks are added by the caller)."""
    from airflow.sdk import DAG

    return DAG(dag_id, start_date=datetime(2024, 1, 1), schedule=None, catchup=False)


def bulk_task(task_id: str) -> Any:
    """The provider's own bulk-send operator (never run: its task instance is marked success)."""
    from airflow_provider_docsign.operators.bulk import DocsignBulkSendOperator

    return DocsignBulkSendOperator(
        task_id=task_id,
        rows="/nonexistent/rows.jsonl",
        result_table="/nonexistent/results.jsonl",
        campaign_id=task_id.replace("_", "-"),
        template_id="template_1",
        recipients=[{"email": "a@b.example", "role": "SIGNER"}],
    )


def lookalike_task(task_id: str) -> Any:
    """A DAG file's own class named ``DocsignBulkSendOperator`` (what a DAG author could write)."""
    from airflow.sdk import BaseOperator

    class DocsignBulkSendOperator(BaseOperator):
        def execute(self, context: Any) -> None:
            return None

    return DocsignBulkSendOperator(task_id=task_id)


def empty_task(task_id: str) -> Any:
    """A task that does nothing (its XComs are planted)."""
    from airflow.providers.standard.operators.empty import EmptyOperator

    return EmptyOperator(task_id=task_id)


def rendered(dag_id: str, run_id: str, fields: dict[str, dict[str, Any]]) -> None:
    """Store the rendered template fields of task instances (task id -> fields), as a worker would."""
    from airflow.models.renderedtifields import RenderedTaskInstanceFields as Rtif
    from airflow.utils.session import create_session
    from sqlalchemy import delete, insert

    table = Rtif.__table__
    with create_session() as session:
        for task_id, values in fields.items():
            where = (table.c.dag_id == dag_id) & (table.c.run_id == run_id) & (table.c.task_id == task_id)
            session.execute(delete(table).where(where))
            session.execute(
                insert(table).values(
                    dag_id=dag_id, run_id=run_id, task_id=task_id, map_index=-1, rendered_fields=values
                )
            )


def still_waiting(
    dag_id: str, run_id: str, task_id: str, trigger_kwargs: dict[str, Any] | None = None
) -> None:
    """Put a task instance back to waiting: deferred on the provider's trigger (with ``trigger_kwargs``),
    else ``up_for_reschedule`` (a sensor in reschedule mode between two pokes)."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.trigger import Trigger
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        ti = session.execute(
            select(TaskInstance).where(
                TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id, TaskInstance.task_id == task_id
            )
        ).scalar_one()
        if trigger_kwargs is None:
            ti.state = "up_for_reschedule"
            return
        trigger = Trigger("airflow_provider_docsign.triggers.envelope.DocsignEnvelopeTrigger", trigger_kwargs)
        session.add(trigger)
        session.flush()
        ti.trigger_id = trigger.id
        ti.state = "deferred"


def batch_archive_task(task_id: str) -> Any:
    """The provider's batch archive (never run), on a campaign's result table."""
    from airflow_provider_docsign.operators.archive_batch import DocsignBatchArchiveOperator

    return DocsignBatchArchiveOperator(
        task_id=task_id, result_table="/nonexistent/results.jsonl", destination="/nonexistent/archive"
    )


def batch_wait_task(task_id: str, **kwargs: Any) -> Any:
    """The provider's sensor as a batch wait (never run): ``result_table=`` or ``envelope_ids=``."""
    from airflow_provider_docsign.sensors.envelope import DocsignEnvelopeSensor

    return DocsignEnvelopeSensor(task_id=task_id, max_unsigned=0, **kwargs)
