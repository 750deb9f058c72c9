"""The ``[docsign]`` settings of the Contracts pages (``AIRFLOW__DOCSIGN__UI_*`` variables work too).

============================  ==========  ==================================================================
``ui_enabled``                ``True``    ``False``: the plugin registers no page, view or app
``ui_cache_seconds``          ``30``      how long one read of the service serves every viewer
``ui_stalled_days``           ``7``       PENDING longer than this: stalled (the page may change it)
``ui_conn_ids``               (empty)     extra docsign connection ids to offer (secrets backends, env vars)
``ui_lookback_days``          ``90``      how far back XComs are searched for tasks and campaigns
``ui_result_locations``       (empty)     where campaign result tables and checkpoints may be read from:
                                          absolute local folders and ``scheme://conn_id@bucket/prefix``
============================  ==========  ==================================================================

Nothing else is read: a result table or checkpoint an XCom names outside these places is refused before
any byte is read (see :mod:`airflow_provider_docsign.ui.locations`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_provider_docsign.service.stalled import DEFAULT_STALLED_DAYS

SECTION = "docsign"


@dataclass(frozen=True)
class UiSettings:
    """The Contracts pages' settings.

    :param enabled: Whether the plugin registers its pages.
    :param cache_seconds: The cache time of every read of the service and of the metadata database.
    :param stalled_days: The default stalled threshold in days.
    :param conn_ids: Connection ids to offer besides the ``docsign`` connections in the database.
    :param lookback_days: How far back XComs are searched.
    :param result_locations: The places campaign files may be read from (local folders, and object-store
        prefixes with the connection to read them with).
    """

    enabled: bool = True
    cache_seconds: float = 30.0
    stalled_days: float = DEFAULT_STALLED_DAYS
    conn_ids: tuple[str, ...] = ()
    lookback_days: float = 90.0
    result_locations: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from airflow_provider_docsign.ui.locations import parse_places

        parse_places(self.result_locations)  # a wrong entry fails at start, naming it
        if not 0 <= self.cache_seconds <= 3600:
            raise ValueError(f"[docsign] ui_cache_seconds must be 0-3600, not {self.cache_seconds!r}")
        if not 0 <= self.stalled_days <= 3650:
            raise ValueError(f"[docsign] ui_stalled_days must be 0-3650, not {self.stalled_days!r}")
        if not 1 <= self.lookback_days <= 3650:
            raise ValueError(f"[docsign] ui_lookback_days must be 1-3650, not {self.lookback_days!r}")

    @classmethod
    def from_airflow(cls, conf: Any = None) -> UiSettings:
        """Read ``[docsign] ui_*`` from Airflow's configuration (defaults where unset).

        :param conf: An ``AirflowConfigParser`` (default: Airflow's).
        """
        if conf is None:
            from airflow.configuration import conf as airflow_conf

            conf = airflow_conf
        return cls(
            enabled=conf.getboolean(SECTION, "ui_enabled", fallback=True),
            cache_seconds=conf.getfloat(SECTION, "ui_cache_seconds", fallback=30.0),
            stalled_days=conf.getfloat(SECTION, "ui_stalled_days", fallback=DEFAULT_STALLED_DAYS),
            conn_ids=_entries(conf.get(SECTION, "ui_conn_ids", fallback="")),
            lookback_days=conf.getfloat(SECTION, "ui_lookback_days", fallback=90.0),
            result_locations=_entries(conf.get(SECTION, "ui_result_locations", fallback="")),
        )


def _entries(value: Any) -> tuple[str, ...]:
    return tuple(e.strip() for e in str(value or "").split(",") if e.strip())
