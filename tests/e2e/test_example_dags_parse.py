"""Every example DAG parses cleanly, and parsing touches no connection, database or network."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from e2e_helpers import EXAMPLE_DAG_IDS, load_dagbag

pytestmark = pytest.mark.e2e


def _connection_lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Spy on every public way a DAG file could look a connection up."""
    calls: list[str] = []

    def spy(name: str) -> Any:
        def _lookup(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            raise AssertionError(f"connection lookup at parse time: {name}{args}")

        return _lookup

    from airflow.models.connection import Connection

    from airflow_provider_docsign import _compat

    targets: list[tuple[Any, str]] = [
        (_compat.BaseHook, "get_connection"),
        (Connection, "get_connection_from_secrets"),
    ]
    if _compat.AIRFLOW_V_3_0_PLUS:
        from airflow.sdk import Connection as SdkConnection

        targets.append((SdkConnection, "get"))
    for owner, attr in targets:
        if hasattr(owner, attr):
            monkeypatch.setattr(owner, attr, spy(f"{owner.__name__}.{attr}"))
    return calls


def test_example_dags_import_without_errors_or_side_effects(
    monkeypatch: pytest.MonkeyPatch, airflow_db: str
) -> None:
    from airflow import settings
    from sqlalchemy import event

    lookups = _connection_lookups(monkeypatch)
    connects: list[Any] = []

    def no_connect(self: socket.socket, address: Any) -> None:
        connects.append(address)
        raise AssertionError(f"network connection at parse time: {address}")

    monkeypatch.setattr(socket.socket, "connect", no_connect)
    queries: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        queries.append(statement)

    assert settings.engine is not None
    event.listen(settings.engine, "before_cursor_execute", record)
    try:
        bag = load_dagbag()
    finally:
        event.remove(settings.engine, "before_cursor_execute", record)

    assert bag.import_errors == {}
    assert getattr(bag, "captured_warnings", {}) == {}  # e.g. no "external_id missing with retries"
    assert set(bag.dag_ids) == EXAMPLE_DAG_IDS
    assert lookups == []
    assert connects == []
    assert queries == []
    for dag_id in EXAMPLE_DAG_IDS:
        dag = bag.dags[dag_id]
        assert len(dag.doc_md or "") > 200, f"{dag_id} needs a docstring saying what it shows"
        if dag_id != "docsign_contract_metrics":  # it archives nothing: its export dir is an env var
            assert {"archive_dir", "work_dir"} <= set(dag.params.keys())


def test_every_create_uses_a_templated_external_id(airflow_db: str) -> None:
    """Safe retries: each create task sets an external_id (templated, or built per mapped item)."""
    bag = load_dagbag()
    creates = [
        (dag_id, task)
        for dag_id, dag in bag.dags.items()
        for task in dag.tasks
        if task.task_type == "DocsignCreateEnvelopeOperator"
    ]
    assert len(creates) >= 4
    for dag_id, task in creates:
        if getattr(task, "partial_kwargs", None) is not None:
            continue  # mapped: external_id is built per customer (asserted by the bulk run test)
        assert "{{ run_id }}" in task.external_id, (dag_id, task.task_id)
