"""A small auth manager for the Contracts pages' tests: Airflow's simple one, plus users limited by DAG
and by connection (the simple one's fixed roles cannot say "DAG A only" or "this connection only").

The api-server of a test loads it with ``AIRFLOW__CORE__AUTH_MANAGER=ui_auth_manager.TeamAuthManager``
(``tests/`` on its ``PYTHONPATH``). ``DOCSIGN_TEST_TEAMS`` (JSON) names the limited users: for each,
the DAGs it may read (``null``: every DAG) and the connections it may read; they may change nothing.
Every other user is the simple auth manager's.
"""

from __future__ import annotations

import json
import os
from typing import Any

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager


def _teams() -> dict[str, dict[str, Any]]:
    return dict(json.loads(os.environ.get("DOCSIGN_TEST_TEAMS") or "{}"))


class TeamAuthManager(SimpleAuthManager):
    """The simple auth manager, with the users of ``DOCSIGN_TEST_TEAMS`` limited by DAG and connection."""

    def is_authorized_dag(
        self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None
    ) -> bool:
        team = _teams().get(user.get_name())
        if team is None:
            return bool(
                super().is_authorized_dag(
                    method=method, user=user, access_entity=access_entity, details=details
                )
            )
        if method != "GET":
            return False
        dags = team.get("dags")
        return dags is None or details is None or details.id in dags

    def filter_authorized_dag_ids(
        self, *, dag_ids: set[str], user: Any, method: Any = "GET", team_name: str | None = None
    ) -> set[str]:
        team = _teams().get(user.get_name())
        if team is None:
            return set(
                super().filter_authorized_dag_ids(
                    dag_ids=dag_ids, user=user, method=method, team_name=team_name
                )
            )
        dags = team.get("dags")
        return set(dag_ids) if dags is None else set(dag_ids) & set(dags)

    def is_authorized_connection(self, *, method: Any, user: Any, details: Any = None) -> bool:
        team = _teams().get(user.get_name())
        if team is None:
            return bool(super().is_authorized_connection(method=method, user=user, details=details))
        return method == "GET" and details is not None and details.conn_id in team.get("conns", [])
