"""Streaming file I/O for downloads: local paths, binary file objects, ObjectStoragePath.

Sources are opened by :func:`airflow_provider_docsign._sources.open_source`.

Downloads are written atomically:

* local paths (and ``file://`` object paths): the bytes go to a hidden temporary file in the target
  directory, which is fsync'ed and renamed over the target only after every check passed;
* other object stores (``s3://``, ``gs://``, ...): the bytes are streamed to a local temporary file
  first and uploaded to the target key only after full verification. Object stores make an object
  visible only when its upload completes, so a reader never sees a partial or unverified PDF;
* binary file objects: written in place (the first byte only after the checks); if the download
  fails later, a seekable object is truncated back to where it started.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote

from airflow_provider_docsign._sources import is_object_path, is_text_stream, local_path_of, to_path_like
from airflow_provider_docsign.exceptions import DocsignValidationError

CHUNK_SIZE = 1024 * 1024


class SizedReader:
    """A read-only view of a stream from its current position, exposing ``len`` (bytes left).

    requests-toolbelt's encoder needs each part's length up front; it finds it through ``fileno`` or
    ``getvalue`` (which copies a whole ``BytesIO``), and fails for fsspec files that have neither.
    This wrapper gives it the length without reading or copying anything.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        start = stream.tell()
        stream.seek(0, os.SEEK_END)
        end = stream.tell()
        stream.seek(start)
        self._stream = stream
        self._remaining = max(0, end - start)

    @property
    def len(self) -> int:
        """Bytes not yet read."""
        return self._remaining

    def read(self, size: int | None = -1) -> bytes:
        """Read up to ``size`` bytes (all that is left when negative or ``None``)."""
        data = self._stream.read(-1 if size is None or size < 0 else size)
        self._remaining -= len(data)
        return data


class HashingWriter:
    """Counts bytes and computes SHA-256 while forwarding them to a sink."""

    def __init__(self, sink: IO[bytes]) -> None:
        self.sink = sink
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, chunk: bytes) -> None:
        """Write ``chunk`` to the sink and account for it."""
        self.sink.write(chunk)
        self.sha256.update(chunk)
        self.size += len(chunk)


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._ ()+-]")


def filename_from_disposition(value: str | None) -> str | None:
    """A safe file name from ``Content-Disposition`` (no directories, no hidden or odd characters)."""
    if not value:
        return None
    match = re.search(r"filename\*\s*=\s*[^']*'[^']*'([^;]+)", value, re.IGNORECASE)
    name = unquote(match.group(1)) if match else None
    if not name:
        match = re.search(r'filename\s*=\s*"([^"]*)"|filename\s*=\s*([^;]+)', value, re.IGNORECASE)
        if match:
            name = (match.group(1) or match.group(2) or "").strip()
    if not name:
        return None
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = _SAFE_NAME.sub("_", name).strip(" .")
    return name or None


class Sink:
    """Where a verified download goes. ``open()`` after the checks; ``commit()`` or ``abort()`` at the end."""

    uri: str | None = None

    def open(self, filename: str) -> IO[bytes]:
        """Start writing (called only after the status, content type and ``%PDF-`` checks passed)."""
        raise NotImplementedError

    def commit(self) -> str | None:
        """Make the bytes visible at the destination; return its URI."""
        raise NotImplementedError

    def abort(self) -> None:
        """Remove every trace of a failed download."""
        raise NotImplementedError


class LocalSink(Sink):
    """A local file path or directory; temp file in the same directory, then ``os.replace``."""

    def __init__(self, target: Path, *, is_dir: bool, overwrite: bool) -> None:
        self.target = target
        self.is_dir = is_dir
        self.overwrite = overwrite
        self._tmp: str | None = None
        self._fh: IO[bytes] | None = None
        self._final: Path | None = None

    def open(self, filename: str) -> IO[bytes]:
        """Create the hidden temporary file next to the final name."""
        final = self.target / filename if self.is_dir else self.target
        if not self.overwrite and final.exists():
            raise DocsignValidationError(
                [f"destination {final} already exists (overwrite=False)"], "download"
            )
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, self._tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".part", dir=final.parent)
        self._fh = os.fdopen(fd, "wb")
        self._final = final
        return self._fh

    def commit(self) -> str | None:
        """Flush, fsync and atomically rename the temporary file onto the final name."""
        assert self._fh is not None
        assert self._tmp is not None
        assert self._final is not None
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        os.replace(self._tmp, self._final)
        self._tmp = None
        return str(self._final)

    def abort(self) -> None:
        """Close and delete the temporary file."""
        if self._fh is not None and not self._fh.closed:
            self._fh.close()
        if self._tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._tmp)
            self._tmp = None


class ObjectStoreSink(Sink):
    """A non-local ``ObjectStoragePath``: spool to a local temp file, upload after verification."""

    def __init__(self, target: Any, *, is_dir: bool, overwrite: bool) -> None:
        self.target = target
        self.is_dir = is_dir
        self.overwrite = overwrite
        self._spool: IO[bytes] | None = None
        self._final: Any = None

    def open(self, filename: str) -> IO[bytes]:
        """Open the local spool file."""
        if self.is_dir:
            # universal_pathlib (Airflow 2.11) warns from os.fspath inside "/" for remote paths; the
            # result is right, and the alternatives lose the connection id on one version or another.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PendingDeprecationWarning)
                self._final = self.target / filename
        else:
            self._final = self.target
        if not self.overwrite and self._final.exists():
            raise DocsignValidationError(
                [f"destination {self._final} already exists (overwrite=False)"], "download"
            )
        self._spool = tempfile.TemporaryFile(prefix="docsign-download-")  # noqa: SIM115 - closed in commit/abort
        return self._spool

    def commit(self) -> str | None:
        """Upload the verified spool to the target key in chunks (visible only once complete)."""
        assert self._spool is not None
        self._spool.flush()
        self._spool.seek(0)
        try:
            with self._final.open("wb") as out:
                shutil.copyfileobj(self._spool, out, CHUNK_SIZE)
        finally:
            self._spool.close()
            self._spool = None
        return str(self._final)

    def abort(self) -> None:
        """Drop the spool; nothing was written to the object store."""
        if self._spool is not None:
            self._spool.close()
            self._spool = None


class FileObjectSink(Sink):
    """A caller's binary file object: written in place; on failure truncated back to its start."""

    def __init__(self, fileobj: IO[bytes]) -> None:
        self.fileobj = fileobj
        self._start: int | None = None

    def open(self, filename: str) -> IO[bytes]:
        """Remember the start position (if seekable) and hand out the object itself."""
        try:
            if self.fileobj.seekable():
                self._start = self.fileobj.tell()
        except (OSError, ValueError, AttributeError):
            self._start = None
        return self.fileobj

    def commit(self) -> str | None:
        """Flush the caller's object; its ``name`` (if a string) is reported as the URI."""
        self.fileobj.flush()
        name = getattr(self.fileobj, "name", None)
        return name if isinstance(name, str) else None

    def abort(self) -> None:
        """Truncate a seekable object back to where the download started."""
        if self._start is not None:
            try:
                self.fileobj.seek(self._start)
                self.fileobj.truncate()
            except (OSError, ValueError):
                pass


def make_sink(destination: Any, *, overwrite: bool = True) -> Sink:
    """Choose a :class:`Sink` for ``destination`` and check it before any request is sent.

    :param destination: A path (file or existing directory; a trailing separator means directory),
        an ``ObjectStoragePath`` (a directory if the prefix already holds objects) or a binary file
        object opened for writing.
    :param overwrite: Whether an existing file may be replaced (atomically) on success.
    """
    trailing_slash = isinstance(destination, str) and destination.endswith("/")
    destination = to_path_like(destination)
    if is_object_path(destination):
        local = local_path_of(destination)
        if local is None:
            # A prefix that already holds objects is a directory (ObjectStoragePath drops a trailing
            # "/", so an empty prefix can only be named as a string URL ending in "/").
            is_dir = trailing_slash or destination.is_dir()
            if not is_dir and not overwrite and destination.exists():
                raise DocsignValidationError(
                    [f"destination {destination} already exists (overwrite=False)"], "download"
                )
            return ObjectStoreSink(destination, is_dir=is_dir, overwrite=overwrite)
        destination = local
    if isinstance(destination, str | os.PathLike):
        text = os.fspath(destination)
        path = Path(text).expanduser()
        is_dir = path.is_dir() or text.endswith(("/", os.sep))
        if not is_dir:
            if path.exists() and not path.is_file():
                raise DocsignValidationError(
                    [f"destination {path} exists and is not a regular file"], "download"
                )
            if not overwrite and path.exists():
                raise DocsignValidationError(
                    [f"destination {path} already exists (overwrite=False)"], "download"
                )
        return LocalSink(path, is_dir=is_dir, overwrite=overwrite)
    if hasattr(destination, "write"):
        if is_text_stream(destination):
            raise DocsignValidationError(
                ["destination file object must be opened in binary mode ('wb')"], "download"
            )
        return FileObjectSink(destination)
    raise DocsignValidationError(
        [
            f"unsupported destination {type(destination).__name__}; "
            "use a path, ObjectStoragePath or binary file"
        ],
        "download",
    )
