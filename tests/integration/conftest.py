"""Fixtures shared by the integration tests: a hook on the sandbox (S3 fixtures: tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_provider_docsign.hooks.docsign import DocsignHook


@pytest.fixture
def hook(docsign_conn: str) -> Iterator[DocsignHook]:
    """A hook on ``docsign_default`` (the sandbox); its HTTP session is closed after the test."""
    with DocsignHook(docsign_conn) as h:
        yield h
