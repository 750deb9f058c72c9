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

__all__ = ["CHECKPOINT_SUFFIX", "CheckpointFile", "resolve_path", "static_uri"]

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
