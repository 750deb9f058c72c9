"""Fixtures for the end-to-end tests: a sandbox whose signers sign by themselves, tmp destinations.

The example DAGs read ``DOCSIGN_EXAMPLE_POKE_INTERVAL`` when they are parsed, so the helpers in
``e2e_helpers`` parse the DAG files *after* the environment is set, from the real ``dags_examples/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import sandbox_conn_json

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.sandbox import SandboxServer


@pytest.fixture(scope="module")
def autosign_sandbox(tmp_path_factory: pytest.TempPathFactory, api_key: str) -> Iterator[SandboxServer]:
    """A sandbox whose signers sign one second after an envelope is sent; stopped by its handle."""
    with SandboxServer(
        tmp_path_factory.mktemp("autosign-data"),
        api_key=api_key,
        auto_sign_after=1.0,
        webhook_ssrf_bypass_hosts="127.0.0.1",  # deliveries to 127.0.0.1 allowed, as when listed
    ) as sb:
        yield sb


@pytest.fixture
def example_env(
    autosign_sandbox: SandboxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, airflow_db: str
) -> dict[str, Any]:
    """``docsign_default`` pointing at the auto-signing sandbox, fast polls, and tmp destinations."""
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", sandbox_conn_json(autosign_sandbox))
    monkeypatch.setenv("DOCSIGN_EXAMPLE_POKE_INTERVAL", "1")
    if not AIRFLOW_V_3_0_PLUS:
        # Airflow 2.11's unit-test config picks the LocalExecutor, which 2.11 refuses with SQLite;
        # dag.test() consults the executor for sensor dependencies, so use the SQLite-safe one.
        monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "SequentialExecutor")
        # 2.11 caches the executor names per process: forget a LocalExecutor an earlier test resolved.
        from airflow.executors import executor_loader

        monkeypatch.setattr(executor_loader, "_executor_names", [])
    autosign_sandbox.clear_faults()
    archive_dir, work_dir = tmp_path / "archive", tmp_path / "work"
    archive_dir.mkdir()
    return {"archive_dir": str(archive_dir), "work_dir": str(work_dir)}
