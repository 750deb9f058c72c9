"""Hostile tests: what a careless or hostile user would send, each outcome counted at the sandbox.

Every public surface has a module here (``test_<surface>_*.py``). A test sends the input a user could
really give (concurrent tries, re-runs, malformed files, odd Unicode, data that looks like a template)
and asserts the safe outcome where it can be seen: requests and envelopes counted at the sandbox,
files on disk, the task's error.
"""

from __future__ import annotations

from collections.abc import Iterator

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
