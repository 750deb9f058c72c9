"""Every import that differs between Airflow 2.11 and Airflow 3.x lives here.

On Airflow 3.x the public Task SDK (``airflow.sdk``) is used wherever it provides the name; the 2.11
fallbacks are the classic ``airflow.*`` paths. Nothing else in the package imports these names from
Airflow directly, so supporting a new Airflow release means changing only this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow import __version__ as AIRFLOW_VERSION

# Triggers run in the triggerer on both major versions from the same module.
from airflow.triggers.base import BaseTrigger, TriggerEvent
from packaging.version import Version

AIRFLOW_V_3_0_PLUS: bool = Version(Version(AIRFLOW_VERSION).base_version) >= Version("3.0.0")
#: Plugins may add FastAPI apps and external views to the UI from 3.1 on (the Contracts pages).
AIRFLOW_V_3_1_PLUS: bool = Version(Version(AIRFLOW_VERSION).base_version) >= Version("3.1.0")

if TYPE_CHECKING or AIRFLOW_V_3_0_PLUS:
    # Event-driven scheduling (AssetWatcher) exists from Airflow 3.0 only.
    from airflow.sdk import (
        Asset,
        AssetAlias,
        AssetWatcher,
        BaseHook,
        BaseNotifier,
        BaseOperator,
        BaseOperatorLink,
        BaseSensorOperator,
        Context,
        ObjectStoragePath,
        PokeReturnValue,
        conf,
    )
    from airflow.sdk.exceptions import (
        AirflowFailException,
        AirflowSensorTimeout,
        AirflowSkipException,
        TaskDeferred,
    )
    from airflow.sdk.execution_time.xcom import XCom
    from airflow.sdk.log import mask_secret
    from airflow.triggers.base import BaseEventTrigger
else:  # Airflow 2.11
    from airflow.configuration import conf  # type: ignore[no-redef]
    from airflow.datasets import Dataset as Asset  # type: ignore[no-redef,assignment]
    from airflow.datasets import DatasetAlias as AssetAlias  # type: ignore[no-redef,assignment]
    from airflow.exceptions import (  # type: ignore[no-redef,assignment]
        AirflowFailException,
        AirflowSensorTimeout,
        AirflowSkipException,
        TaskDeferred,
    )
    from airflow.hooks.base import BaseHook  # type: ignore[no-redef,assignment]
    from airflow.io.path import ObjectStoragePath  # type: ignore[no-redef,assignment]
    from airflow.models.baseoperator import BaseOperator  # type: ignore[no-redef,assignment]
    from airflow.models.baseoperatorlink import BaseOperatorLink  # type: ignore[no-redef,assignment]
    from airflow.models.xcom import XCom  # type: ignore[no-redef,assignment]
    from airflow.notifications.basenotifier import BaseNotifier  # type: ignore[no-redef,assignment]
    from airflow.sensors.base import (  # type: ignore[no-redef,assignment]
        BaseSensorOperator,
        PokeReturnValue,
    )
    from airflow.utils.context import Context  # type: ignore[no-redef,assignment]
    from airflow.utils.log.secrets_masker import mask_secret  # type: ignore[no-redef,assignment]

    AssetWatcher = None  # type: ignore[assignment,misc]
    BaseEventTrigger = None  # type: ignore[assignment,misc]

__all__ = [
    "AIRFLOW_VERSION",
    "AIRFLOW_V_3_0_PLUS",
    "AirflowFailException",
    "AirflowSensorTimeout",
    "AirflowSkipException",
    "Asset",
    "AssetAlias",
    "AssetWatcher",
    "BaseEventTrigger",
    "BaseHook",
    "BaseNotifier",
    "BaseOperator",
    "BaseOperatorLink",
    "BaseSensorOperator",
    "BaseTrigger",
    "Context",
    "ObjectStoragePath",
    "PokeReturnValue",
    "TaskDeferred",
    "TriggerEvent",
    "XCom",
    "aget_connection",
    "amask_secret",
    "conf",
    "get_connection",
    "mask_secret",
    "ready_stats",
]


def get_connection(conn_id: str) -> Any:
    """Look up an Airflow connection by id (Task SDK on 3.x, metadata DB/secrets on 2.11).

    On Airflow 3 the Task SDK searches, in a process that is neither a task nor a triggerer nor an
    Airflow server (the ``docsign`` command, a script), only environment variables and the configured
    secrets backend: not the metadata database, where the UI and ``airflow connections add`` put
    connections. There, and only there, a connection the SDK did not find is looked up the way the
    ``airflow connections`` commands do (secrets backends, then the metadata database).
    """
    try:
        return BaseHook.get_connection(conn_id)
    except Exception as err:
        if (
            not AIRFLOW_V_3_0_PLUS
            or type(err).__name__ != "AirflowNotFoundException"
            or _in_airflow_runtime()
        ):
            raise
        from airflow.models.connection import Connection

        return Connection.get_connection_from_secrets(conn_id)


def _in_airflow_runtime() -> bool:
    """Whether this process is a task, a triggerer or an Airflow server (where the SDK's search is whole)."""
    import os

    if os.environ.get("_AIRFLOW_PROCESS_CONTEXT"):  # set by the triggerer, scheduler and api-server
        return True
    return _supervisor_comms() is not None


def _supervisor_comms() -> Any:
    """The Task SDK's channel to this process's supervisor, or ``None`` (not a task, or Airflow 2.11)."""
    import sys

    task_runner = sys.modules.get("airflow.sdk.execution_time.task_runner")
    return getattr(task_runner, "SUPERVISOR_COMMS", None)


async def aget_connection(conn_id: str) -> Any:
    """Look up a connection from async code (the triggerer): ``aget_connection`` where Airflow has it.

    One exception, found with ``make demo``: ``airflow dags test`` (and ``dag.test()``) on Airflow 3
    runs a deferred task's trigger in its own process with an in-process supervisor channel that
    answers ``send`` but has no ``asend`` (3.3.2's ``InProcessSupervisorComms``). The SDK's async
    look-up swallows that ``AttributeError`` and searches only environment variables and secrets
    backends, so a connection kept in the metadata database is "not defined" there. Only in that case
    is the connection looked up again with the sync call, which that channel answers from the database
    in-process; in a real triggerer the async look-up's answer stands.
    """
    getter = getattr(BaseHook, "aget_connection", None)
    if getter is None:
        return BaseHook.get_connection(conn_id)
    try:
        return await getter(conn_id)
    except Exception as err:
        if type(err).__name__ != "AirflowNotFoundException" or not _sync_only_supervisor_channel():
            raise
        return BaseHook.get_connection(conn_id)


def _sync_only_supervisor_channel() -> bool:
    """Whether this process talks to its supervisor through a channel with no async ``asend``."""
    comms = _supervisor_comms()
    return comms is not None and not hasattr(comms, "asend")


async def amask_secret(secret: str) -> None:
    """Mask a secret from async code (the triggerer).

    Airflow 3's ``amask_secret`` tells the supervisor without a blocking send from the event loop; where
    it is missing (Airflow 2.11 has no supervisor), the sync ``mask_secret``.
    """
    if AIRFLOW_V_3_0_PLUS:
        try:
            from airflow.sdk.log import amask_secret as _amask_secret
        except ImportError:  # Airflow 3.0: no async twin
            mask_secret(secret)
            return
        await _amask_secret(secret)
        return
    mask_secret(secret)


def ready_stats() -> Any:
    """Airflow's ``Stats`` (imported on first use), set up from ``[metrics]`` if Airflow has not done it.

    Airflow 2.11: ``airflow.stats.Stats``, which reads ``[metrics]`` on first use in any process. Airflow 3:
    the Task SDK's ``airflow.sdk.observability.stats.Stats`` (3.3 warns on ``airflow.stats``), which is set
    up by the task runner (a worker's task process) and, on 3.3, in the triggerer (the live stack's test
    counts the triggerer's requests). Where a task runs otherwise (``dag.test()``, ``airflow dags test``,
    which run deferred triggers in-process too) it would stay the no-op logger; there it is set up once
    from the same ``[metrics]`` options, as the task runner does (``stats_utils.get_stats_factory``).
    """
    stats = _STATS.get("stats")
    if stats is None:
        stats = _STATS["stats"] = _import_stats()
    return stats


_STATS: dict[str, Any] = {}


def _import_stats() -> Any:
    if not AIRFLOW_V_3_0_PLUS:
        from airflow.stats import Stats as LegacyStats

        return LegacyStats
    try:
        from airflow.sdk.observability.stats import Stats
    except ImportError:  # Airflow 3.0, 3.1: no Task SDK Stats yet
        from airflow.stats import Stats as LegacyStats

        return LegacyStats
    try:
        from airflow.sdk._shared.observability.metrics import stats as sdk_stats
        from airflow.sdk.observability.metrics import stats_utils
    except ImportError:  # pragma: no cover - a later layout: Airflow sets it up itself
        return Stats
    if getattr(sdk_stats, "_factory", None) is None:  # nobody set it up: Stats would send nothing
        sdk_stats.initialize(
            factory=stats_utils.get_stats_factory(),
            export_legacy_names=conf.getboolean("metrics", "legacy_names_on", fallback=True),
        )
    return Stats
