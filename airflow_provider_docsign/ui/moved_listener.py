"""Airflow 2.11: the moved-import warnings of a task's DAG file, in that task's own log.

On Airflow 2.11 ``airflow tasks run --local`` parses the DAG file before the task log is attached, and
the forked ``--raw`` process that runs the task is handed the parsed DAG: the warnings that parse logged
(:mod:`airflow_provider_docsign._moved`) reach the worker's output, never the task log a user opens.
This listener, registered by the provider's plugin on 2.11 only, logs them again as the task starts, into
the task log. On Airflow 3 the task process parses the file with its log already attached: nothing to do.
"""

from __future__ import annotations

from typing import Any

from airflow.listeners import hookimpl

from airflow_provider_docsign import _moved


@hookimpl
def on_task_instance_running(previous_state: Any, task_instance: Any, session: Any) -> None:
    """Log this process's moved-import warnings into the starting task's log (Airflow 2.11)."""
    for text in _moved.logged():
        task_instance.log.warning("When this task's DAG file was parsed: %s", text)
