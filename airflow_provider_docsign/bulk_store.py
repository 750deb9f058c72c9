"""Where a bulk campaign keeps its checkpoint: a file beside the result table, replaced atomically.

The checkpoint of ``…/renewals/results.jsonl`` is ``…/renewals/results.jsonl.checkpoint.json``. It is
written the way the archive writes its manifest: on a local disk to a temporary name in the same
folder, flushed to disk, then renamed over the old one (a reader sees the old checkpoint or the new
one, never a torn one); on an object store as one whole object under a temporary key, then moved
over the old one (an object appears whole or not at all).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Any

from airflow_provider_docsign._sources import local_path_of, to_path_like
from airflow_provider_docsign.export_store import uri_of

__all__ = ["CHECKPOINT_SUFFIX", "CheckpointFile", "resolve_output"]

CHECKPOINT_SUFFIX = ".checkpoint.json"


def resolve_output(output: Any) -> Any:
    """The result table's path: a local ``Path`` or an ``ObjectStoragePath`` (``file://`` is local)."""
    if isinstance(output, str | os.PathLike):
        text = os.fspath(output)
        if not text.strip():
            raise ValueError("output is empty: give a file path or a URI such as s3://bucket/results.jsonl")
        path = to_path_like(text)
        return Path(path) if isinstance(path, str) else path
    if hasattr(output, "protocol"):
        local = local_path_of(output)
        return local if local is not None else output
    raise TypeError(f"output must be a path, a URI or an ObjectStoragePath, not {type(output).__name__}")


class CheckpointFile:
    """The checkpoint beside a result table.

    :param output: The result table's path (local ``Path`` or ``ObjectStoragePath``).
    """

    def __init__(self, output: Any) -> None:
        self.path: Any = output.parent / f"{output.name}{CHECKPOINT_SUFFIX}"
        self.local = isinstance(self.path, Path)

    @property
    def uri(self) -> str:
        """The checkpoint's URI (no connection id)."""
        return uri_of(self.path)

    def read(self) -> bytes | None:
        """The checkpoint's bytes, or ``None`` when there is none yet."""
        try:
            if self.local:
                return Path(self.path).read_bytes()
            if not self.path.exists():
                return None
            with self.path.open("rb") as fh:
                return bytes(fh.read())
        except FileNotFoundError:
            return None

    def write(self, data: bytes) -> None:
        """Replace the checkpoint with ``data`` atomically."""
        if self.local:
            self._write_local(Path(self.path), data)
            return
        temp = self.path.parent / f".{self.path.name}.{secrets.token_hex(6)}.partial"
        try:
            with temp.open("wb") as fh:
                fh.write(data)
            temp.rename(self.path)  # a server-side move that replaces the old object whole
        except BaseException:
            with contextlib.suppress(Exception):
                if temp.exists():
                    temp.unlink()
            raise

    @staticmethod
    def _write_local(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.partial")
        try:
            with open(temp, "xb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise
        try:
            fd = os.open(path.parent, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
