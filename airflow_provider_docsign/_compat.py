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
    "conf",
    "get_connection",
    "mask_secret",
]


def get_connection(conn_id: str) -> Any:
    """Look up an Airflow connection by id (Task SDK on 3.x, metadata DB/secrets on 2.11)."""
    return BaseHook.get_connection(conn_id)


async def aget_connection(conn_id: str) -> Any:
    """Look up a connection from async code (the triggerer): ``aget_connection`` where Airflow has it."""
    getter = getattr(BaseHook, "aget_connection", None)
    if getter is not None:
        return await getter(conn_id)
    return BaseHook.get_connection(conn_id)
