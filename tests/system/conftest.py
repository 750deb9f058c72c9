"""The ``system`` group: the provider against a real Documenso instance, opt-in.

Collected only when ``DOCSIGN_SYSTEM_URL`` (the API base URL, ending in ``/api/v2``) and
``DOCSIGN_SYSTEM_API_KEY`` are set (see ``collect_ignore`` in ``tests/conftest.py``); run it with
``make system-test``. Two optional variables open what a self-hosted instance allows beyond its API:

* ``DOCSIGN_SYSTEM_DATABASE_URL`` (``postgresql://documenso@127.0.0.1:54320/documenso``): tests that
  set the organisation's rate window or let a signing link expire now do it in the instance's
  database, as its own jobs would;
* ``DOCSIGN_SYSTEM_SEAL_CERT``: the PEM file of the instance's sealing certificate, to pin it.

A test that needs one of them and does not have it is skipped, saying which.

Everything the tests create carries one run's unique external-id prefix and lives
in one folder made for the run. The session's finaliser deletes those envelopes and that folder even
when a test fails, and touches nothing else on the instance.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign.exceptions import DocsignError, DocsignNotFoundError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.samples import write_sample_pdf

SYSTEM_CONN_ID = "docsign_system"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/system/" in item.nodeid:
            item.add_marker(pytest.mark.system)


@dataclass
class SystemRun:
    """What one system-test session created, so that it can all be removed at the end."""

    prefix: str
    folder_id: str
    envelope_ids: list[str] = field(default_factory=list)
    folder_ids: list[str] = field(default_factory=list)
    #: Templates (and any other envelope) to delete at the end by id.
    template_ids: list[str] = field(default_factory=list)

    def external_id(self, name: str) -> str:
        """A unique external id inside this run's prefix."""
        return f"{self.prefix}-{name}-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="session")
def system_conn() -> Iterator[str]:
    """The ``docsign_system`` Airflow connection (an environment variable) for the instance under test."""
    url, key = os.environ["DOCSIGN_SYSTEM_URL"], os.environ["DOCSIGN_SYSTEM_API_KEY"]
    variable = f"AIRFLOW_CONN_{SYSTEM_CONN_ID.upper()}"
    os.environ[variable] = json.dumps(
        {
            "conn_type": "docsign",
            "host": url,
            "password": key,
            "extra": {"max_retries": 3, "backoff_factor": 0.5, "max_retry_wait": 10, "timeout": [10, 60]},
        }
    )
    try:
        yield SYSTEM_CONN_ID
    finally:
        os.environ.pop(variable, None)


@pytest.fixture(scope="session")
def system_hook(system_conn: str) -> Iterator[DocsignHook]:
    """A hook on the instance under test, through the Airflow connection (the operators' path)."""
    with DocsignHook(system_conn) as hook:
        yield hook


def _cleanup(hook: DocsignHook, run: SystemRun) -> list[str]:
    """Delete every envelope of the run (by id and by prefix search) and its folders; return failures."""
    failures: list[str] = []
    ids = dict.fromkeys([*run.envelope_ids, *run.template_ids])
    for folder_id in (run.folder_id, None):
        try:
            for summary in hook.find_envelopes(query=run.prefix, folder_id=folder_id):
                if (summary.external_id or "").startswith(run.prefix):
                    ids[summary.id] = None
        except DocsignError as exc:
            failures.append(f"search in {folder_id or 'the root'}: {exc}")
    removals = [(f"envelope {i}", hook.delete_envelope, i) for i in ids]
    removals += [(f"folder {f}", hook.delete_folder, f) for f in [*run.folder_ids, run.folder_id]]
    for what, delete, ident in removals:
        try:
            delete(ident)
        except DocsignNotFoundError:
            pass  # already gone (a test deleted it, or deleting its folder moved it)
        except DocsignError as exc:
            failures.append(f"{what}: {exc}")
    return failures


@pytest.fixture(scope="session")
def system_run(system_hook: DocsignHook) -> Iterator[SystemRun]:
    """This run's prefix and folder; at the end, everything it created is deleted (even on failure)."""
    prefix = f"docsign-system-{uuid.uuid4().hex[:10]}"
    folder = system_hook.create_folder(prefix)
    run = SystemRun(prefix=prefix, folder_id=folder.id)
    try:
        yield run
    finally:
        failures = _cleanup(system_hook, run)
        assert not failures, "system-test cleanup left things behind: " + "; ".join(failures)


@pytest.fixture(scope="session")
def system_db() -> Callable[..., list[tuple[Any, ...]]]:
    """Run SQL on the instance's database (``DOCSIGN_SYSTEM_DATABASE_URL``); skip the test without it."""
    url = os.environ.get("DOCSIGN_SYSTEM_DATABASE_URL")
    if not url:
        pytest.skip(
            "needs DOCSIGN_SYSTEM_DATABASE_URL (the instance's PostgreSQL) to change what the API cannot"
        )
    import psycopg2

    def _run(sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg2.connect(url, connect_timeout=10) as conn, conn.cursor() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall()) if cur.description else []

    return _run


@pytest.fixture(scope="session")
def seal_cert_pem() -> Path:
    """The instance's sealing certificate (``DOCSIGN_SYSTEM_SEAL_CERT``); skip the test without it."""
    path = os.environ.get("DOCSIGN_SYSTEM_SEAL_CERT")
    if not path or not Path(path).is_file():
        pytest.skip(
            "needs DOCSIGN_SYSTEM_SEAL_CERT (the PEM of the instance's sealing certificate) to pin it"
        )
    return Path(path)


@pytest.fixture
def pdf(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``pdf("a.pdf", pages=2)`` writes a small valid PDF."""

    def _make(name: str, pages: int = 1) -> Path:
        return write_sample_pdf(tmp_path / name, pages=pages, title=Path(name).stem)

    return _make


@pytest.fixture
def new_envelope(system_hook: DocsignHook, system_run: SystemRun) -> Callable[..., str]:
    """Factory: create a draft envelope in the run's folder with a run-prefixed external id; return its id."""

    def _create(name: str, files: list[Path], recipients: list[dict[str, Any]], **kwargs: Any) -> str:
        kwargs.setdefault("external_id", system_run.external_id(name))
        envelope_id = system_hook.create_envelope(
            title=f"{system_run.prefix} {name}",
            files=files,
            recipients=recipients,
            folder_id=system_run.folder_id,
            **kwargs,
        )
        system_run.envelope_ids.append(envelope_id)
        return envelope_id

    return _create
