"""Where the archive writes: a local directory or an object store, with atomic writes and no escapes.

:class:`Store` is the archive's destination. It knows the temporary names (``.<name>.<token>.partial``
beside the final name), the atomic moves (``os.replace`` / ``os.link`` and ``fsync`` on a local disk; a
whole-object write under a temporary key and a server-side move on object stores) and the check that
every local path stays inside the destination's real root (:meth:`Store.check_inside`).

Pure code: no HTTP, and no Airflow for local destinations. An :class:`ObjectStoragePath` can only exist
once Airflow is imported, so Airflow's path class is looked up only then (:func:`_object_storage_type`),
and a URI destination imports it on demand.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import logging
import os
import secrets
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from airflow_provider_docsign.exceptions import DocsignArchiveEscapeError

__all__ = ["PDF_MAGIC", "HashingWriter", "Store", "static_destination_uri", "sync", "uri_of"]

log = logging.getLogger(__name__)

CHUNK = 1024 * 1024
PDF_MAGIC = b"%PDF-"


def _object_storage_type() -> type | None:
    """Airflow's ``ObjectStoragePath`` class, or None when Airflow is not imported (then none exists)."""
    if "airflow" not in sys.modules:
        return None
    from airflow_provider_docsign._compat import ObjectStoragePath

    return ObjectStoragePath  # type: ignore[no-any-return]


def _is_object_storage(path: Any) -> bool:
    kind = _object_storage_type()
    return kind is not None and isinstance(path, kind)


class HashingWriter(io.RawIOBase):
    """A write-only stream that hashes and counts the bytes it passes on to ``target``."""

    def __init__(self, target: IO[bytes]) -> None:
        super().__init__()
        self._target = target
        self.digest = hashlib.sha256()
        self.size = 0
        self.head = b""

    def writable(self) -> bool:
        """Always true: the writer only writes."""
        return True

    def write(self, data: Any) -> int:
        """Pass ``data`` on to the target, hashing and counting it."""
        chunk = bytes(data)
        if len(self.head) < len(PDF_MAGIC):
            self.head += chunk[: len(PDF_MAGIC) - len(self.head)]
        self._target.write(chunk)
        self.digest.update(chunk)
        self.size += len(chunk)
        return len(chunk)


class Store:
    """The archive destination: a local directory (``pathlib``) or an :class:`ObjectStoragePath`.

    Local destinations get the strongest guarantees (``os.replace``/``os.link`` renames, ``fsync``);
    object stores get whole-object writes under a temporary key and a server-side move.
    """

    def __init__(self, destination: Any, conn_id: str | None) -> None:
        self.created_dirs: list[Path] = []
        if _is_object_storage(destination):
            root: Any = destination
        elif isinstance(destination, str | os.PathLike):
            text = os.fspath(destination)
            if not text.strip():
                raise ValueError(
                    "destination is empty: give a local directory or a URI such as s3://bucket/prefix"
                )
            # conn_id only when given: Airflow 2.11 lets an explicit None override the connection id
            # of a URI such as s3://conn@bucket/prefix (3.x keeps the URI's).
            options = {"conn_id": conn_id} if conn_id else {}
            if "://" in text:
                from airflow_provider_docsign._compat import ObjectStoragePath

                root = ObjectStoragePath(text, **options)
            else:
                root = Path(text)
        else:
            raise TypeError(
                f"destination must be a local directory, a URI or an ObjectStoragePath, not "
                f"{type(destination).__name__}"
            )
        if _is_object_storage(root) and root.protocol in {"file", "local"}:
            root = Path(root.path)
        self.local = is_local(root)
        self.root: Any = root.absolute() if self.local else root
        if self.local and self.root.exists() and not self.root.is_dir():
            raise ValueError(f"destination {self.root} exists and is not a directory")
        # The root itself may be a link (/archive -> /mnt/disk/archive): what is inside is judged
        # against where it really is.
        self.real_root: Path | None = Path(os.path.realpath(self.root)) if self.local else None

    @property
    def uri(self) -> str:
        """The destination as a URI without any connection id (``file:///…``, ``s3://bucket/…``)."""
        return uri_of(self.root)

    def path(self, name: str) -> Any:
        """The final path of the archive name ``name`` (``/``-separated), checked to stay inside."""
        with quiet_upath():
            target = self.root.joinpath(*name.split("/"))
        self.check_inside(target, name)
        return target

    def check_inside(self, target: Any, name: str) -> None:
        """Refuse a local path that resolves (through symlinks) outside the destination's real root.

        Every final and temporary path goes through here before anything is created or written, so
        a symlinked envelope folder or final file name that leads elsewhere fails the task with
        nothing written. Object stores have no symlinks (a key is a key), so the check is moot there.

        :raises DocsignArchiveEscapeError: When ``target`` lies outside the destination.
        """
        if not self.local or self.real_root is None:
            return  # object store: no links, nothing to resolve
        real = Path(os.path.realpath(target))
        if real == self.real_root or not real.is_relative_to(self.real_root):
            raise DocsignArchiveEscapeError(
                f"refusing to write {name!r}: {target} resolves to {real}, outside the destination "
                f"{self.real_root} (a symbolic link in the way?). Nothing was written; remove the link "
                "or choose another destination"
            )

    def uri_of(self, name: str) -> str:
        """The URI of the archive name ``name``, without any connection id."""
        return uri_of(self.path(name))

    def temp_for(self, name: str) -> Any:
        """A fresh temporary path beside ``name``'s final path (``.<name>.<token>.partial``)."""
        final = self.path(name)
        with quiet_upath():
            temp = final.parent / f".{final.name}.{secrets.token_hex(6)}.partial"
        self.check_inside(temp, name)
        return temp

    def ensure_parent(self, target: Any) -> None:
        """Create the missing local folders above ``target``, remembering which this run created."""
        if not self.local:
            return  # object stores have no directories to create
        missing = []
        parent = target.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        for directory in reversed(missing):
            try:
                directory.mkdir()
            except FileExistsError:
                continue
            self.created_dirs.append(directory)

    def open_new(self, target: Any) -> IO[bytes]:
        """Open ``target`` for writing; on a local disk it must not exist yet (``O_EXCL``)."""
        self.ensure_parent(target)
        if self.local:
            # O_EXCL with O_CREAT never follows a link at the last component; the folders above were
            # checked by check_inside.
            return open(target, "xb")
        return target.open("wb")  # type: ignore[no-any-return]

    def exists(self, target: Any) -> bool:
        """Whether something is at ``target``."""
        return bool(target.exists())

    def size(self, target: Any) -> int:
        """The size of the file at ``target`` in bytes."""
        return int(target.stat().st_size) if self.local else int(target.stat()["size"])

    def sha256(self, target: Any) -> str:
        """The SHA-256 (hex) of the file at ``target``, read in chunks."""
        digest = hashlib.sha256()
        with target.open("rb") as fh:
            while chunk := fh.read(CHUNK):
                digest.update(chunk)
        return digest.hexdigest()

    def holds(self, target: Any, sha256: str, size: int) -> bool:
        """Whether the file at ``target`` has these bytes: its size first, then its SHA-256 (hex)."""
        return self.size(target) == size and self.sha256(target) == sha256

    def commit(
        self, temp: Any, final: Any, *, overwrite: bool, same_as: tuple[str, int] | None = None
    ) -> bool:
        """Move ``temp`` to ``final``. Without ``overwrite``, return False if ``final`` appeared meanwhile.

        :param same_as: ``temp``'s SHA-256 (hex) and size. A file that appeared at ``final`` with these
            bytes is kept, ``temp`` removed, and True returned: two tries archiving one envelope into one
            folder at once (a campaign DAG triggered twice, whose sensors see the completion at the same
            poll) both find nothing at the compare and both commit; the second finds the first's file.
        """
        if self._commit(temp, final, overwrite=overwrite):
            return True
        if same_as is None or not self.holds(final, *same_as):
            return False
        self.remove(temp)
        log.info("%s was written meanwhile with the same bytes (another try archiving it)", uri_of(final))
        return True

    def _commit(self, temp: Any, final: Any, *, overwrite: bool) -> bool:
        if self.local:
            if overwrite:
                os.replace(temp, final)
            else:
                try:
                    os.link(temp, final)  # atomic, and fails if final exists: never clobbers
                except FileExistsError:
                    return False
                except OSError as err:  # no hard links here (some network file systems)
                    if err.errno not in {errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}:
                        raise
                    if final.exists():
                        return False
                    os.replace(temp, final)
                    fsync_dir(final.parent)
                    return True
                os.unlink(temp)
            fsync_dir(final.parent)
            return True
        if not overwrite and final.exists():
            # Object stores offer no portable "create if absent"; this check narrows the window.
            return False
        temp.rename(final)
        return True

    def remove(self, target: Any) -> None:
        """Remove the file at ``target`` if it is there."""
        try:
            if self.local:
                os.unlink(target)
            elif target.exists():
                target.unlink()
        except FileNotFoundError:
            pass

    def remove_created_dirs(self) -> None:
        """Remove the folders this run created, where they are still empty."""
        for directory in reversed(self.created_dirs):
            try:
                directory.rmdir()  # only if empty
            except OSError:
                continue

    def stage_bytes(self, name: str, data: bytes) -> Any:
        """Write ``data`` under a temporary name beside ``name``; returns it (removed on failure)."""
        temp = self.temp_for(name)
        try:
            fh = self.open_new(temp)
            with fh:
                fh.write(data)
                sync(fh, local=self.local)
        except BaseException:
            self.remove(temp)
            raise
        return temp

    def replace(self, temp: Any, name: str) -> None:
        """Move a staged file to ``name``, replacing what is there (atomically on a local disk)."""
        final = self.path(name)
        if self.local:
            os.replace(temp, final)
            fsync_dir(final.parent)
        else:
            temp.rename(final)  # a server-side copy that replaces the old object whole

    def write_atomic(self, name: str, data: bytes) -> None:
        """Write ``data`` at ``name`` through a temporary name (readers see old or new, never half)."""
        temp = self.stage_bytes(name, data)
        try:
            self.replace(temp, name)
        except BaseException:
            self.remove(temp)
            raise


@contextlib.contextmanager
def quiet_upath() -> Iterator[None]:
    """Silence universal_pathlib's warning on joins of remote paths (Airflow 2.11; not actionable)."""
    # Airflow 2.11's ObjectStoragePath (universal_pathlib 0.2) warns on every join of a remote path
    # ("in a future version of UPath this will be set to None..."): upstream noise, not actionable.
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="in a future version of UPath", category=PendingDeprecationWarning
        )
        yield


def is_local(path: Any) -> bool:
    """Whether ``path`` is a local ``pathlib`` path (not an object-store path)."""
    # On Airflow 2.11 ObjectStoragePath (universal_pathlib 0.2) subclasses pathlib.Path: test it first.
    return isinstance(path, Path) and not _is_object_storage(path)


def uri_of(path: Any) -> str:
    """The URI of a local path or object-store path, without any connection id."""
    if is_local(path):
        # Not percent-encoded, like ObjectStoragePath's own URIs: the manifest stays readable.
        return f"file://{path.absolute().as_posix()}"
    protocol = path.protocol
    if isinstance(protocol, tuple | list):
        protocol = protocol[0]
    # str(ObjectStoragePath) embeds the connection id ("s3://conn@bucket/key"); manifests must not.
    return f"{protocol}://{path.path}"


def sync(fh: IO[bytes], *, local: bool) -> None:
    """Flush and ``fsync`` a local file (object stores commit on close)."""
    if local:
        fh.flush()
        os.fsync(fh.fileno())


def fsync_dir(directory: Path) -> None:
    """``fsync`` a local folder, so that a rename in it survives a crash (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def static_destination_uri(destination: Any) -> str | None:
    """The destination's URI when it is known at parse time (no template, no connection look-up)."""
    if _is_object_storage(destination):
        return (
            uri_of(Path(destination.path))
            if destination.protocol in {"file", "local"}
            else uri_of(destination)
        )
    if not isinstance(destination, str | os.PathLike):
        return None
    text = os.fspath(destination)
    if not text.strip() or "{{" in text or "{%" in text:
        return None
    if "://" not in text:
        return uri_of(Path(text))
    scheme, _, rest = text.partition("://")
    if scheme in {"file", "local"}:
        return uri_of(Path("/" + rest.lstrip("/")))
    return f"{scheme}://{rest.rstrip('/')}"
