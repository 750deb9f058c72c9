"""Who may read what: the DAGs, the docsign connections, and the 403 that says which permission to ask for.

Every data endpoint of the Contracts pages asks the configured auth manager through these functions;
nothing is cached, so a permission or a connection added a moment ago counts at once.
"""

from __future__ import annotations

from typing import Any

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import ConnectionDetails
from fastapi import HTTPException

from airflow_provider_docsign.ui import lookup

NO_CONNECTION = (
    "you may not read any docsign connection: ask for read access to the docsign connection "
    "(Connections, GET) as well as to DAGs"
)


def readable_dags(user: Any) -> set[str]:
    """The DAG ids the user may read (403 when they may not read DAGs at all)."""
    manager = get_auth_manager()
    if not manager.is_authorized_dag(method="GET", user=user):  # the DAGs menu itself
        raise HTTPException(403, "you may not read DAGs: ask for read access to DAGs")
    return set(manager.get_authorized_dag_ids(user=user, method="GET"))


def offered(configured: tuple[str, ...] | list[str], user: Any) -> list[str]:
    """The docsign connections the user may read, of those the page offers.

    :param configured: ``[docsign] ui_conn_ids`` (offered besides the stored connections).
    :param user: The signed-in user.
    """
    # One small query of the metadata database, never cached: a connection added a moment ago is
    # offered at once.
    ids = lookup.docsign_connection_ids(configured)
    manager = get_auth_manager()
    return [
        c
        for c in ids
        if manager.is_authorized_connection(method="GET", details=ConnectionDetails(conn_id=c), user=user)
    ]


def connection(configured: tuple[str, ...] | list[str], user: Any, conn_id: str | None) -> str:
    """The docsign connection to use: ``conn_id`` (or the first offered) if the user may read it.

    404 when it is not an offered docsign connection (nothing is sent to another connection's host),
    403 naming it when the user may not read it.

    :param configured: ``[docsign] ui_conn_ids``.
    :param user: The signed-in user.
    :param conn_id: The connection asked for (``None``: the first offered).
    """
    ids = lookup.docsign_connection_ids(configured)
    chosen = conn_id or (ids[0] if ids else "docsign_default")
    if chosen not in ids:
        raise HTTPException(404, "not a docsign connection: choose one of the connections offered")
    allowed = get_auth_manager().is_authorized_connection(
        method="GET", details=ConnectionDetails(conn_id=chosen), user=user
    )
    if not allowed:
        raise HTTPException(
            403, f"you may not read the connection {chosen!r}: ask for read access to it (Connections, GET)"
        )
    return chosen
