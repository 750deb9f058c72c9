"""Opening file sources (paths, URLs, ``ObjectStoragePath``, binary file objects) as binary streams.

A neutral module below both the pure layer (``payloads.py``, ``signatures.py``) and the HTTP layer
(the hook): every part of the provider that reads a user's file opens it here, the same way.

Local files are read only when they are **regular files** (:func:`open_regular_file`): a FIFO, a
device, a socket or a directory is refused before it is opened, so that no reader can block on a
named pipe or read ``/dev/zero`` forever. Nothing here imports Airflow for a local path: object
storage (``s3://``, an ``ObjectStoragePath``) loads it only when such a source is given.
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import sys
from pathlib import Path, PurePath
from typing import IO, Any
from urllib.parse import unquote

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


class NotARegularFileError(OSError):
    """A local path names something other than a regular file (a FIFO, a device, a socket, a directory).

    An ``OSError``, so that every reader that already reports unreadable files reports this one too.

    :param path: The path as given.
    :param kind: What it is instead (``"a FIFO (named pipe)"``, ``"a character device"``...).
    """

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path} is {kind}, not a regular file; it is not read")
        self.path = path
        self.kind = kind


class _DirectoryError(NotARegularFileError, IsADirectoryError):
    """A directory where a file was expected (also an ``IsADirectoryError``, as ``open`` would raise)."""


class OutsideFolderError(OSError):
    """A local path, once its symbolic links are resolved, leads outside the folder it must stay in.

    :param path: The path as given.
    :param folder: The folder it must stay in.
    :param target: Where its links lead.
    """

    def __init__(self, path: str, folder: str, target: str) -> None:
        super().__init__(f"{path} is a symbolic link leading outside {folder} (to {target}); it is not read")
        self.path = path
        self.folder = folder
        self.target = target


def file_kind(mode: int) -> str:
    """What a ``st_mode`` describes, for a message: ``"a FIFO (named pipe)"``, ``"a directory"``..."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def _is_inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _refuse_unless_regular(text: str, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    error = _DirectoryError if stat.S_ISDIR(mode) else NotARegularFileError
    raise error(text, file_kind(mode))


def open_regular_file(
    path: str | os.PathLike[str], *, inside: str | os.PathLike[str] | None = None
) -> IO[bytes]:
    """Open a local regular file for reading, refusing anything else before it is opened.

    The path's symbolic links are resolved first; with ``inside``, the resolved path must lie in that
    folder (itself resolved). The target is then ``stat``-ed: a FIFO, a device, a socket or a
    directory is refused without being opened (opening a FIFO blocks until a writer appears, and a
    device may never end). It is opened with ``O_NONBLOCK`` and checked again on the open descriptor,
    so that a file swapped for a FIFO between the two steps is refused too, never waited on.

    :param path: The local path.
    :param inside: A folder the file must stay in once links are resolved (``None``: anywhere).
    :raises FileNotFoundError: When nothing is there (a dangling link included).
    :raises NotARegularFileError: For a FIFO, a device, a socket or a directory.
    :raises OutsideFolderError: When the resolved path leaves ``inside``.
    :raises OSError: For any other failure to open it (permissions, for example).
    """
    text = os.fspath(path)
    if "\x00" in text:
        raise NotARegularFileError(repr(text), "a path with a NUL byte (no file can have that name)")
    real = os.path.realpath(text)
    if inside is not None:
        root = os.path.realpath(os.fspath(inside))
        if not _is_inside(real, root):
            raise OutsideFolderError(text, os.fspath(inside), real)
    _refuse_unless_regular(text, os.stat(real).st_mode)
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    flags |= getattr(os, "O_NOFOLLOW", 0)  # ``real`` has no link left: one appearing now is refused
    fd = os.open(real, flags)
    try:
        _refuse_unless_regular(text, os.fstat(fd).st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_confined(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> IO[bytes]:
    """Open ``path`` for reading only if it lies in ``root``, checked on the descriptors as it is opened.

    ``root`` is resolved once; ``path`` (which must lie under it, as a check made earlier found) is
    then opened one component at a time from the root's descriptor (``openat``), every folder with
    ``O_NOFOLLOW | O_DIRECTORY`` and the file with ``O_NOFOLLOW | O_NONBLOCK``, and the file is checked
    to be a regular file on its descriptor. A folder or file swapped for a symbolic link after the
    earlier check is refused here (``OutsideFolderError``), never followed: what is read is inside.

    :param root: The folder the file must stay in.
    :param path: The file (absolute, or relative to ``root``).
    :raises OutsideFolderError: When ``path`` leaves ``root`` or a component is a symbolic link now.
    :raises NotARegularFileError: For a FIFO, a device, a socket or a directory.
    """
    text = os.fspath(path)
    base = os.path.realpath(os.fspath(root))
    full = os.path.normpath(text if os.path.isabs(text) else os.path.join(base, text))
    if not _is_inside(full, base) or full == base:
        raise OutsideFolderError(text, base, full)
    parts = os.path.relpath(full, base).split(os.sep)
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    cloexec = getattr(os, "O_CLOEXEC", 0)
    folder_flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | nofollow | cloexec
    file_flags = os.O_RDONLY | nofollow | cloexec | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(base, folder_flags)
    try:
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            try:
                child = os.open(part, file_flags if last else folder_flags, dir_fd=fd)
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    where = os.path.join(base, *parts[: depth + 1])
                    raise OutsideFolderError(text, base, f"{where}, a symbolic link now") from None
                raise
            os.close(fd)
            fd = child
        _refuse_unless_regular(text, os.fstat(fd).st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        stream = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    stream.raw.name = full  # type: ignore[attr-defined]  # the name a message and the upload show
    return stream


def is_local_path(value: Any) -> bool:
    """Whether ``value`` is a plain :mod:`pathlib` path (an ``ObjectStoragePath`` may subclass one)."""
    return isinstance(value, PurePath) and type(value).__module__.split(".")[0] == "pathlib"


def _object_storage_path_cls() -> Any:
    from airflow_provider_docsign._compat import ObjectStoragePath

    return ObjectStoragePath


def is_object_path(value: Any) -> bool:
    """Whether ``value`` is an ``ObjectStoragePath`` (any fsspec-backed path).

    Never imports Airflow to answer: strings and plain :mod:`pathlib` paths are local, and no
    ``ObjectStoragePath`` can exist before Airflow has been imported by whoever made it.
    """
    if isinstance(value, str | bytes) or "airflow" not in sys.modules:
        return False
    if is_local_path(value):
        return False
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
    :raises NotARegularFileError: For a local path that is not a regular file (see
        :func:`open_regular_file`).
    """
    source = to_path_like(source)
    if is_object_path(source):
        local = local_path_of(source)
        if local is not None:
            return open_regular_file(local), True
        if not source.exists():
            raise FileNotFoundError(str(source))
        if source.is_dir():
            raise IsADirectoryError(str(source))
        return source.open("rb"), True
    if isinstance(source, str | os.PathLike):
        return open_regular_file(source), True
    if hasattr(source, "read") and hasattr(source, "seek") and hasattr(source, "tell"):
        if is_text_stream(source):
            raise TypeError("file objects must be opened in binary mode ('rb')")
        return source, False
    if hasattr(source, "read"):
        raise TypeError("file objects must be seekable (so that a retry can start again)")
    raise TypeError(f"unsupported file source {type(source).__name__}; use a path, ObjectStoragePath or file")
