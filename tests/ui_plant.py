"""XComs planted as a DAG author could: task instances of a serialized DAG, and the values they pushed.

:func:`plant` writes a DAG to the metadata database the way the dag processor would, runs it once with
``dag.test(mark_success_pattern=".*")`` (no task's code runs: every task instance is marked success),
then stores the given XComs for its task instances, as a worker would. The api-server under test reads
them from the same database.
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
