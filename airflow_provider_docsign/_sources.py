"""Opening file sources (paths, URLs, ``ObjectStoragePath``, binary file objects) as binary streams.

A neutral module below both the pure layer (``payloads.py``, ``signatures.py``) and the HTTP layer
(the hook): every part of the provider that reads a user's file opens it here, the same way.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote


def _object_storage_path_cls() -> Any:
    from airflow_provider_docsign._compat import ObjectStoragePath

    return ObjectStoragePath


def is_object_path(value: Any) -> bool:
    """Whether ``value`` is an ``ObjectStoragePath`` (any fsspec-backed path)."""
    try:
        cls = _object_storage_path_cls()
    except ImportError:  # pragma: no cover - Airflow always ships it
        return False
    return isinstance(value, cls)


def local_path_of(path: Any) -> Path | None:
    """The local filesystem path of an ``ObjectStoragePath`` with the ``file``/``local`` protocol."""
    protocol = getattr(path, "protocol", None) or ""
    if isinstance(protocol, tuple | list):
        protocol = protocol[0] if protocol else ""
    if protocol in ("", "file", "local"):
        raw = getattr(path, "path", None) or str(path)
        if raw.startswith("file://"):
            raw = raw[len("file://") :]
        return Path(raw)
    return None


def to_path_like(value: Any) -> Any:
    """Turn a string URL with a scheme (``s3://…``) into an ``ObjectStoragePath``; leave others alone."""
    if isinstance(value, str) and re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", value):
        if value.startswith("file://"):
            return Path(unquote(value[len("file://") :]))
        return _object_storage_path_cls()(value)
    return value


def is_text_stream(fileobj: Any) -> bool:
    """Whether a file object is opened in text mode (it would corrupt or refuse PDF bytes)."""
    if isinstance(fileobj, io.TextIOBase):
        return True
    mode = getattr(fileobj, "mode", "b")
    return isinstance(mode, str) and "b" not in mode


def open_source(source: Any) -> tuple[IO[bytes], bool]:
    """Open an upload source as a binary stream: ``(stream, caller_must_close)``.

    :param source: A local path (``str``/``PathLike``), an ``ObjectStoragePath`` or a binary file object
        (which is used from its current position and not closed).
    """
    source = to_path_like(source)
    if is_object_path(source):
        local = local_path_of(source)
        if local is not None:
            return open(local, "rb"), True
        if not source.exists():
            raise FileNotFoundError(str(source))
        if source.is_dir():
            raise IsADirectoryError(str(source))
        return source.open("rb"), True
    if isinstance(source, str | os.PathLike):
        return open(source, "rb"), True
    if hasattr(source, "read") and hasattr(source, "seek") and hasattr(source, "tell"):
        if is_text_stream(source):
            raise TypeError("file objects must be opened in binary mode ('rb')")
        return source, False
    if hasattr(source, "read"):
        raise TypeError("file objects must be seekable (so that a retry can start again)")
    raise TypeError(f"unsupported file source {type(source).__name__}; use a path, ObjectStoragePath or file")
