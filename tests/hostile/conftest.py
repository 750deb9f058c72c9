"""Hostile tests: what a careless or hostile user would send, each outcome counted at the sandbox.

Every public surface has a module here (``test_<surface>_*.py``). A test sends the input a user could
really give (concurrent tries, re-runs, malformed files, odd Unicode, data that looks like a template)
and asserts the safe outcome where it can be seen: requests and envelopes counted at the sandbox,
files on disk, the task's error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_docsign.hooks.docsign import DocsignHook


@pytest.fixture
def hook(docsign_conn: str) -> Iterator[DocsignHook]:
    """A hook on ``docsign_default`` (the sandbox); its HTTP session is closed after the test."""
    with DocsignHook(docsign_conn) as h:
        yield h


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every hostile test talks to the sandbox: mark it ``integration`` (and ``hostile``)."""
    for item in items:
        if "tests/hostile/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.hostile)


@pytest.fixture
def task_log(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> Callable[[], str]:
    """``task_log()``: every line logged since the test began, as one text.

    Airflow 3 logs a task's lines through structlog to the terminal, 2.11 through ``logging``: both are
    read (the records at DEBUG and above, and what reached stdout and stderr).
    """
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []

    def read() -> str:
        out, err = capfd.readouterr()
        seen.extend((out, err))
        return "\n".join([*(r.getMessage() for r in caplog.records), *seen])

    return read


@pytest.fixture
def render(api_key: str) -> Callable[..., Any]:
    """``render(operator, try_number=1, **params)``: render its template fields as Airflow does, once.

    The context holds ``params`` (data a DAG passes in, which may itself look like a template) and
    ``conn``, whose ``docsign_default.password`` is the API key: a field rendered twice would put the key
    in. Returns the context, to pass to ``execute``.
    """
    from helpers import FakeTI

    def _render(operator: Any, try_number: int = 1, **params: Any) -> Any:
        context = {
            "params": params,
            "conn": SimpleNamespace(docsign_default=SimpleNamespace(password=api_key)),
            "run_id": "manual__hostile",
            "dag": None,  # Airflow 2.11 reads it (the template environment of a DAG, none here)
            "ti": FakeTI(try_number),
        }
        operator.render_template_fields(context)
        return context

    return _render
