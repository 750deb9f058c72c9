"""The provider's Airflow plugin: the Contracts page (navigation) and a per-task tab (Airflow 3.1+).

Registered through ``get_provider_info()["plugins"]``, so installing the package is enough. On Airflow
2.11 the provider does not offer it (``get_provider_info`` leaves it out) and this module still imports,
registering no view: only a listener that puts moved-import warnings in the task log
(``moved_listener``). ``[docsign] ui_enabled = False`` turns the UI off (no app, no views).
"""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS, AIRFLOW_V_3_1_PLUS

#: Where the app is mounted under the api-server.
URL_PREFIX = "/docsign"
#: The per-task view: Airflow fills in the task instance's identifiers.
TASK_HREF = (
    f"{URL_PREFIX}/ui/task?dag_id={{DAG_ID}}&run_id={{RUN_ID}}&task_id={{TASK_ID}}&map_index={{MAP_INDEX}}"
)


def _components() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if not AIRFLOW_V_3_1_PLUS:
        return [], []
    from airflow_provider_docsign.ui.settings import UiSettings

    settings = UiSettings.from_airflow()
    if not settings.enabled:
        return [], []
    from airflow_provider_docsign.ui.app import create_app

    apps = [{"app": create_app(settings), "url_prefix": URL_PREFIX, "name": "Docsign contracts"}]
    views = [
        {
            "name": "Contracts",
            "href": f"{URL_PREFIX}/ui/contracts",
            "destination": "nav",
            "category": "browse",
            "url_route": "docsign-contracts",
        },
        {
            "name": "Contracts",
            "href": TASK_HREF,
            "destination": "task_instance",
            "url_route": "docsign-task",
        },
    ]
    return apps, views


def _listeners() -> list[Any]:
    """Airflow 2.11 only: the listener that puts moved-import warnings in the task log."""
    if AIRFLOW_V_3_0_PLUS:
        return []
    from airflow_provider_docsign.ui import moved_listener

    return [moved_listener]


class DocsignUiPlugin(AirflowPlugin):
    """The Contracts page and the per-task Contracts tab of the Airflow 3 UI.

    On Airflow 2.11, no view: a listener that puts moved-import warnings in the task log.
    """

    name = "docsign"
    fastapi_apps, external_views = _components()
    listeners = _listeners()
