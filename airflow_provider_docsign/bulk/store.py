"""Where a bulk campaign keeps its checkpoint: a file beside the result table, replaced atomically.

The checkpoint of ``…/renewals/results.jsonl`` is ``…/renewals/results.jsonl.checkpoint.json``. It is
written by the archive's own :class:`~airflow_provider_docsign.archive.store.Store`, with its rules:
on a local disk to a temporary name in the same folder, flushed to disk, renamed over the old one
(a reader sees the old checkpoint or the new one, never a torn one), the folder flushed too; on an
object store as one whole object under a temporary key, then moved over the old one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from airflow_provider_docsign._sources import local_path_of, to_path_like
from airflow_provider_docsign.archive.store import Store, uri_of

__all__ = [
    "CHECKPOINT_SUFFIX",
    "CheckpointFile",
    "default_lease_dir",
    "lease_beat",
    "lease_folder",
    "resolve_path",
    "service_identity",
    "static_uri",
]

CHECKPOINT_SUFFIX = ".checkpoint.json"


def resolve_path(value: Any, what: str = "result_table") -> Any:
    """A file named by a path, a URI or an ``ObjectStoragePath``: a local ``Path`` or an object path."""
    if isinstance(value, str | os.PathLike):
        text = os.fspath(value)
        if not text.strip():
            raise ValueError(f"{what} is empty: give a file path or a URI such as s3://bucket/results.jsonl")
        path = to_path_like(text)
        return Path(path) if isinstance(path, str) else path
    if hasattr(value, "protocol"):
        local = local_path_of(value)
        return local if local is not None else value
    raise TypeError(f"{what} must be a path, a URI or an ObjectStoragePath, not {type(value).__name__}")


def static_uri(value: Any) -> str | None:
    """A file's URI when it is known at parse time, without any connection id; ``None`` if templated.

    Nothing is constructed or looked up (an ``ObjectStoragePath`` made from a string at parse time could
    reach for its connection).
    """
    if hasattr(value, "protocol"):
        return uri_of(resolve_path(value))
    if not isinstance(value, str | os.PathLike):
        return None
    text = os.fspath(value)
    if not text.strip() or "{{" in text or "{%" in text:
        return None
    if "://" not in text:
        return uri_of(Path(text))
    scheme, _, rest = text.partition("://")
    if scheme in ("file", "local"):
        return uri_of(Path("/" + rest.lstrip("/")))
    netloc, slash, path = rest.partition("/")
    return f"{scheme}://{netloc.rsplit('@', 1)[-1]}{slash}{path}"


class CheckpointFile:
    """The checkpoint beside a result table.

    :param result_table: The result table's path (local ``Path`` or ``ObjectStoragePath``).
    """

    def __init__(self, result_table: Any) -> None:
        self.name = f"{result_table.name}{CHECKPOINT_SUFFIX}"
        self._parent = result_table.parent
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        """The folder of the result table, as an archive store (made on first use)."""
        if self._store is None:
            if isinstance(self._parent, Path):
                self._parent.mkdir(parents=True, exist_ok=True)
            self._store = Store(self._parent, None)
        return self._store

    @property
    def uri(self) -> str:
        """The checkpoint's URI (no connection id)."""
        return uri_of(self._parent / self.name)

    def read(self) -> bytes | None:
        """The checkpoint's bytes, or ``None`` when there is none yet."""
        path = self._parent / self.name
        try:
            if isinstance(path, Path):
                return path.read_bytes()
            if not path.exists():
                return None
            with path.open("rb") as fh:
                return bytes(fh.read())
        except FileNotFoundError:
            return None

    def write(self, data: bytes) -> None:
        """Replace the checkpoint with ``data`` atomically."""
        self.store.write_atomic(self.name, data)


#: The ``[docsign]`` settings of campaign leases (``AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_*`` work too).
LEASE_DIR_SETTING = "campaign_lease_dir"
LEASE_CONN_SETTING = "campaign_lease_conn_id"
LEASE_BEAT_SETTING = "campaign_lease_heartbeat"


def default_lease_dir() -> Path:
    """Where leases are kept when ``[docsign] campaign_lease_dir`` is not set: one machine's disk.

    ``$AIRFLOW_HOME/docsign/campaign-leases``: shared by every worker process of one machine (the
    LocalExecutor, a single Celery worker); workers on several machines need a shared location.
    """
    home = os.environ.get("AIRFLOW_HOME") or os.path.join(os.path.expanduser("~"), "airflow")
    return Path(home) / "docsign" / "campaign-leases"


def lease_folder(conf: Any) -> Any:
    """The folder of every campaign's lease: ``[docsign] campaign_lease_dir``, or the default.

    An administrator's setting, never a DAG's: a local folder (the default
    ``$AIRFLOW_HOME/docsign/campaign-leases``, or a path every worker mounts) or an object-store URL
    (``s3://bucket/docsign-leases``, read with ``[docsign] campaign_lease_conn_id``).

    :param conf: Airflow's configuration (``conf.get(section, key, fallback=...)``).
    :raises ValueError: for a setting that is not a usable path or URL.
    """
    value = str(conf.get("docsign", LEASE_DIR_SETTING, fallback="") or "").strip()
    if not value:
        return default_lease_dir()
    if "://" in value and not value.startswith("file://"):
        from airflow_provider_docsign._sources import _object_storage_path_cls

        conn_id = str(conf.get("docsign", LEASE_CONN_SETTING, fallback="") or "").strip() or None
        return _object_storage_path_cls()(value, conn_id=conn_id)
    path = Path(value[len("file://") :] if value.startswith("file://") else value).expanduser()
    if not path.is_absolute():
        raise ValueError(f"[docsign] {LEASE_DIR_SETTING} must be an absolute path or a URL, not {value!r}")
    return path


def lease_beat(conf: Any, default: float) -> float:
    """Seconds between two heartbeats of a lease: ``[docsign] campaign_lease_heartbeat`` (0.05-600)."""
    value = conf.getfloat("docsign", LEASE_BEAT_SETTING, fallback=default)
    if not 0.05 <= value <= 600:
        raise ValueError(f"[docsign] {LEASE_BEAT_SETTING} must be 0.05-600 seconds, not {value!r}")
    return float(value)


def service_identity(base_url: str) -> str:
    """The service a campaign's envelopes live at, for its lease: the base URL, without credentials."""
    from urllib.parse import urlsplit

    parts = urlsplit(base_url.strip())
    host = (parts.hostname or "").lower()
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme.lower()}://{host}{port}{parts.path.rstrip('/')}"
