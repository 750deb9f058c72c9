"""A successful run logs no error: the example DAGs and a clean-up run, with ``dag.test()``.

Airflow 3's task runner asks every extra link for its URL when a task ends; the "Docsign envelope" link
of a task that worked on many envelopes (a campaign's batch archive, a clean-up) used to look up an
XCom that was never pushed, and the runner logged ``[error] XCom not found ... docsign_envelope_link``
in a run that succeeded. A task iterating a mapped task's results read one past the end, with the same
line. A newcomer reads an error line as a failure: none may appear when everything worked.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import build_dag, run_dag, run_example, task_states

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignDeleteEnvelopesOperator
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.e2e

#: An error-level line as Airflow 3 (structlog), Airflow 2.11 (its task log format) or pytest prints it.
ERROR_LINE = re.compile(r"\[error\s*\]|\bERROR\b|\{[^}]*\} ERROR - ")


def _error_lines(capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> list[str]:
    out, err = capfd.readouterr()
    lines = [line for line in (out + err).splitlines() if ERROR_LINE.search(line)]
    lines += [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.ERROR]
    return lines


def _state(value: Any) -> str:
    return str(getattr(value, "value", value))


@pytest.mark.parametrize(
    "dag_id",
    [
        "docsign_bulk_signing",  # a campaign: the batch wait and the batch archive
        "docsign_template_onboarding",  # a mapped create whose results a task iterates
        "docsign_bulk_signing_mapped",
    ],
)
def test_an_example_dag_that_succeeds_logs_no_error_line(
    dag_id: str,
    example_env: dict[str, Any],
    autosign_sandbox: SandboxServer,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    dag_run = run_example(dag_id, **example_env)
    errors = _error_lines(capfd, caplog)
    assert _state(dag_run.state) == "success"
    assert set(task_states(dag_run).values()) == {"success"}
    assert errors == []


def test_a_clean_up_run_that_succeeds_logs_no_error_line(
    example_env: dict[str, Any],
    autosign_sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with DocsignHook() as hook:
        drafts = [hook.create_envelope(title=f"Old draft {n}", files=[make_pdf()]) for n in range(2)]
    dag = build_dag("docsign_cleanup_logs")
    with dag:
        DocsignDeleteEnvelopesOperator(task_id="clean_up", envelope_ids=drafts)
    capfd.readouterr()
    caplog.clear()
    caplog.set_level(logging.INFO)
    dag_run, tis = run_dag(dag)
    errors = _error_lines(capfd, caplog)
    assert _state(dag_run.state) == "success"
    assert _state(tis["clean_up"].state) == "success"
    assert sorted(tis["clean_up"].xcom_pull(task_ids="clean_up")["deleted"]) == sorted(drafts)
    assert errors == []
