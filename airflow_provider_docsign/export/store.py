"""Writing one export partition: stream rows to staged files, then replace the partition as a whole.

Layout below the destination ``root`` (one directory per table, one partition per interval)::

    root/envelopes/date=2026-11-23/part-0000.jsonl      (or .parquet)
    root/envelopes/date=2026-11-23/_SUCCESS             {"rows": {...}, ...}, written last
    root/recipients/date=2026-11-23/...
    root/field_values/date=2026-11-23/...

Rows are streamed to staged files as they come (a Parquet row group every :data:`ROW_GROUP` rows), so an
export never holds more than one batch of rows in memory. What "atomic" means depends on the store:

- **Local file system** (a path, ``file://``): the partition is staged in a hidden sibling directory
  (``.date=…tmp-…``) on the same file system; publishing renames the old partition away, renames the
  staged one into place and removes the old one. A reader sees the old partition or the new one, never
  a mix or a half-written file (for the instant between the two renames the partition is absent).
- **Object stores** (``s3://``, ``gs://``, …) have no rename. Each file is staged on local disk and
  uploaded with one ``open("wb")``; an object becomes visible only when its upload completes, whole.
  Publishing first deletes the old ``_SUCCESS`` (readers that wait for it see the partition as
  in-progress), then uploads the new part files over the old names, then writes ``_SUCCESS``, then
  deletes any object of the partition the new run did not write (e.g. an old ``.jsonl`` after a switch
  to Parquet). So after a re-run the partition holds exactly the new files.

If the export fails before publishing, the staged files are removed and the old partition is untouched.

A run killed outright (``kill -9``, an OOM kill, a lost worker) cannot clean up. Each writer therefore
holds an exclusive ``flock`` on a lock file (``.docsign-export-<token>.lock``, beside its staging)
for as long as it lives; the kernel releases it when the process dies, however it dies. Every new
writer first sweeps what dead runs left (:func:`sweep_stale_staging`): staging whose lock file is gone
or no longer held is removed, and a partition a dead run had moved aside but not yet replaced is put
back. Staging of a run still alive (its lock held) is never touched.

:class:`TableFile` writes one table to one file with the same writers and the same rules (the bulk
operator's result table): staged beside it and renamed into place on a local disk, staged locally and
uploaded whole to an object store.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from airflow_provider_docsign.archive.store import fsync_dir
from airflow_provider_docsign.export.rows import SCHEMA_VERSION, TABLES, Column, ExportConfigError, parse_ts

__all__ = [
    "PART_NAME",
    "ROW_GROUP",
    "SUCCESS_NAME",
    "PartitionWriter",
    "TableFile",
    "parquet_schema",
    "require_pyarrow",
    "sweep_stale_staging",
    "uri_of",
]

PART_NAME = "part-0000"
SUCCESS_NAME = "_SUCCESS"
#: Rows buffered per table before a Parquet row group is written.
ROW_GROUP = 5000
_COPY_CHUNK = 1024 * 1024


_LOCK_PREFIX = ".docsign-export-"
_LOCK_RE = re.compile(r"^\.docsign-export-([0-9a-f]+)\.lock(\.new)?$")
_STAGE_RE = re.compile(r"^\.(date=[^/]+)\.(tmp|old)-([0-9a-f]+)$")
_REMOTE_STAGE_RE = re.compile(r"^docsign-export-([0-9a-f]+)$")


def _flock(fd: int, *, wait: bool) -> bool:
    """Take an exclusive ``flock`` on ``fd``; ``False`` when another open file holds it (no wait)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock, and no sweeping (see _held)
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


class _RunLock:
    """The lock file that marks a writer's staging as in progress while its process lives.

    Created already locked (written under a temporary name, locked, then renamed into place), so no
    sweeper ever sees it unlocked while its writer is alive.
    """

    def __init__(self, directory: Path, token: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{_LOCK_PREFIX}{token}.lock"
        fresh = self.path.with_name(self.path.name + ".new")
        self._fd: int | None = os.open(fresh, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600)
        _flock(self._fd, wait=True)
        os.write(self._fd, f"{os.getpid()}\n".encode())
        os.replace(fresh, self.path)

    def release(self) -> None:
        """Remove the lock file, then let go of the lock (in that order: see the module docstring)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None


def _held(lock: Path) -> bool:
    """Whether a live writer holds ``lock`` (a missing file is held by nobody)."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        return not _flock(fd, wait=False)
    finally:
        os.close(fd)  # releases the lock if this call took it


def sweep_stale_staging(lock_dir: Path, tables_root: Path | None) -> list[str]:
    """Remove the staging that dead export runs left; return what was removed or put back.

    :param lock_dir: Where the writers' lock files are (the export root, or the local temp directory
        for an object-store destination).
    :param tables_root: The local export root whose ``<table>/.date=...tmp-/old-`` directories are
        swept, or ``None`` (object store: the staging is ``lock_dir/docsign-export-<token>``).
    """
    try:
        names = os.listdir(lock_dir)
    except (FileNotFoundError, NotADirectoryError):
        return []
    locks: dict[str, list[Path]] = {}
    for name in names:
        match = _LOCK_RE.match(name)
        if match:
            locks.setdefault(match.group(1), []).append(lock_dir / name)
    live = {token for token, paths in locks.items() if any(_held(p) for p in paths)}
    done: list[str] = []
    if tables_root is None:
        for name in names:
            match = _REMOTE_STAGE_RE.match(name)
            if match and match.group(1) not in live and (lock_dir / name).is_dir():
                shutil.rmtree(lock_dir / name, ignore_errors=True)
                done.append(f"removed {lock_dir / name}")
    else:
        for table in TABLES:
            done += _sweep_table(tables_root / table, live)
    for token, paths in locks.items():
        if token not in live:
            for path in paths:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
    return done


def _sweep_table(directory: Path, live: set[str]) -> list[str]:
    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    done = []
    for name in names:
        match = _STAGE_RE.match(name)
        if not match or match.group(3) in live:
            continue
        stale, final = directory / name, directory / match.group(1)
        if match.group(2) == "old" and not final.exists():
            # The run died between moving the published partition aside and moving its own in:
            # put the published one back (the dead run's partition never became visible).
            with contextlib.suppress(OSError):
                os.replace(stale, final)
                done.append(f"restored {final}")
                continue
        shutil.rmtree(stale, ignore_errors=True)
        done.append(f"removed {stale}")
    return done


def require_pyarrow() -> Any:
    """Import pyarrow, or fail with the extra to install (checked at DAG parse time by the operator)."""
    try:
        import pyarrow  # type: ignore[import-untyped]
    except ImportError:
        raise ExportConfigError(
            "format='parquet' needs pyarrow: install the 'parquet' extra "
            "(pip install 'airflow-provider-docsign[parquet]') or use format='jsonl'"
        ) from None
    return pyarrow


def parquet_schema(table: str) -> Any:
    """The explicit pyarrow schema of ``table``, column for column the documented one."""
    return columns_schema(
        TABLES[table], {"docsign_schema_version": str(SCHEMA_VERSION), "docsign_table": table}
    )


def columns_schema(columns: Sequence[Column], metadata: Mapping[str, str]) -> Any:
    """The explicit pyarrow schema of a table with these columns (all nullable)."""
    pa = require_pyarrow()
    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("ms", tz="UTC"),
    }
    return pa.schema(
        [pa.field(c.name, types[c.type], nullable=True) for c in columns], metadata=dict(metadata)
    )


def jsonl_record(row: Mapping[str, Any], columns: Sequence[Column]) -> bytes:
    """One JSON Lines record with the columns in schema order (stable bytes)."""
    ordered = {c.name: row.get(c.name) for c in columns}
    return (json.dumps(ordered, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _local_path(root: Any) -> Path | None:
    protocol = getattr(root, "protocol", None)
    if protocol is None:
        return Path(os.fspath(root))
    if isinstance(protocol, tuple | list):
        protocol = protocol[0] if protocol else ""
    if protocol in ("", "file", "local"):
        return Path(str(getattr(root, "path", root)))
    return None


def uri_of(path: Any) -> str:
    """A path's URI for XCom, events and lineage: ``file://…`` or ``s3://bucket/key``.

    Never the ``conn_id@`` that ``str(ObjectStoragePath)`` embeds.
    """
    local = _local_path(path)
    if local is not None:
        return f"file://{local.absolute().as_posix()}"
    protocol = path.protocol
    if isinstance(protocol, tuple | list):
        protocol = protocol[0]
    return f"{protocol}://{str(path.path).lstrip('/')}"


class _Sink:
    """One table's staged file (JSON Lines or Parquet)."""

    def __init__(
        self,
        table: str,
        path: Path,
        fmt: str,
        columns: Sequence[Column] | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        self.table = table
        self.columns = tuple(columns) if columns is not None else TABLES[table]
        self.schema_metadata = (
            dict(metadata)
            if metadata is not None
            else {"docsign_schema_version": str(SCHEMA_VERSION), "docsign_table": table}
        )
        self.path = path
        self.fmt = fmt
        self.rows = 0
        self._buffer: list[Mapping[str, Any]] = []
        self._file: IO[bytes] | None = None
        self._writer: Any = None
        if fmt == "jsonl":
            self._file = path.open("wb")
        else:
            import pyarrow.parquet as pq  # type: ignore[import-untyped]

            self._writer = pq.ParquetWriter(str(path), self._schema(), compression="zstd")

    def _schema(self) -> Any:
        return columns_schema(self.columns, self.schema_metadata)

    def write(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.rows += 1
            if self._file is not None:
                self._file.write(jsonl_record(row, self.columns))
            else:
                self._buffer.append(row)
        if len(self._buffer) >= ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer:
            return
        import pyarrow as pa  # type: ignore[import-untyped]

        columns: dict[str, list[Any]] = {}
        for col in self.columns:
            values = [row.get(col.name) for row in self._buffer]
            if col.type == "timestamp":
                values = [parse_ts(v) for v in values]
            columns[col.name] = values
        self._writer.write_table(pa.table(columns, schema=self._schema()))
        self._buffer = []

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        if self._writer is not None:
            self._flush()
            self._writer.close()


class PartitionWriter:
    """Stage the three tables of one partition, then publish them (see the module docstring).

    :param root: The destination: a local path or an ``ObjectStoragePath``.
    :param date: The partition name (``YYYY-MM-DD``).
    :param fmt: ``jsonl`` or ``parquet``.
    """

    def __init__(self, root: Any, date: str, fmt: str = "jsonl") -> None:
        if fmt not in ("jsonl", "parquet"):
            raise ExportConfigError(f"format must be 'jsonl' or 'parquet', not {fmt!r}")
        if fmt == "parquet":
            require_pyarrow()
        self.root = root
        self.date = date
        self.fmt = fmt
        self.ext = "jsonl" if fmt == "jsonl" else "parquet"
        self._token = secrets.token_hex(6)
        self._local_root = _local_path(root)
        if self._local_root is not None:
            self.root = self._local_root
            lock_dir = self._stage_root = self._local_root
        else:
            lock_dir = Path(tempfile.gettempdir())
            self._stage_root = lock_dir / f"docsign-export-{self._token}"
        self._lock = _RunLock(lock_dir, self._token)
        self._staged: dict[str, Path] = {}
        self.sinks: dict[str, _Sink] = {}
        try:
            #: What the sweep of dead runs' staging removed or put back (for the task log).
            self.swept = sweep_stale_staging(lock_dir, self._local_root)
            if self._local_root is None:
                self._stage_root.mkdir(mode=0o700)
            for table in TABLES:
                stage = self._stage_root / table / f".date={date}.tmp-{self._token}"
                stage.mkdir(parents=True, exist_ok=True)
                self._staged[table] = stage
                self.sinks[table] = _Sink(table, stage / f"{PART_NAME}.{self.ext}", fmt)
        except BaseException:
            self.abort()
            raise

    @property
    def part_name(self) -> str:
        """The file name of each table's part."""
        return f"{PART_NAME}.{self.ext}"

    def write(self, rows_by_table: Mapping[str, Iterable[Mapping[str, Any]]]) -> None:
        """Append rows to the staged tables."""
        for table, rows in rows_by_table.items():
            self.sinks[table].write(rows)

    @property
    def counts(self) -> dict[str, int]:
        """Rows written so far, per table."""
        return {table: sink.rows for table, sink in self.sinks.items()}

    def success_body(self) -> bytes:
        """The ``_SUCCESS`` marker: the row counts of every table (no run time: re-runs are identical)."""
        body = {
            "schema_version": SCHEMA_VERSION,
            "date": self.date,
            "format": self.fmt,
            "files": {table: f"{table}/date={self.date}/{self.part_name}" for table in TABLES},
            "rows": self.counts,
        }
        return (json.dumps(body, sort_keys=True, indent=2) + "\n").encode("utf-8")

    def partition_uris(self) -> dict[str, str]:
        """The published partition directory of each table, as a URI or path string."""
        return {table: uri_of(self.root / table / f"date={self.date}") for table in TABLES}

    def commit(self) -> dict[str, int]:
        """Close the staged files and publish the partition; return the row counts."""
        for sink in self.sinks.values():
            sink.close()
        success = self.success_body()
        for stage in self._staged.values():
            (stage / SUCCESS_NAME).write_bytes(success)
        try:
            for table, stage in self._staged.items():
                if self._local_root is not None:
                    self._publish_local(self._local_root / table / f"date={self.date}", stage)
                else:
                    self._publish_remote(self.root / table / f"date={self.date}", stage)
        finally:
            self.abort()
        return self.counts

    def _publish_local(self, final: Path, stage: Path) -> None:
        old = final.with_name(f".date={self.date}.old-{self._token}")
        if final.exists():
            os.replace(final, old)
        os.replace(stage, final)
        shutil.rmtree(old, ignore_errors=True)

    def _publish_remote(self, final: Any, stage: Path) -> None:
        marker = final / SUCCESS_NAME
        if marker.exists():
            marker.unlink()
        written = {self.part_name, SUCCESS_NAME}
        for name in (self.part_name, SUCCESS_NAME):  # _SUCCESS last
            with (stage / name).open("rb") as src, (final / name).open("wb") as dst:
                shutil.copyfileobj(src, dst, _COPY_CHUNK)
        with contextlib.suppress(FileNotFoundError):
            for stale in list(final.iterdir()):
                if stale.name not in written:
                    stale.unlink()

    def abort(self) -> None:
        """Remove whatever is still staged (the published partition is left as it is)."""
        for sink in self.sinks.values():
            with contextlib.suppress(Exception):
                sink.close()
        for stage in self._staged.values():
            shutil.rmtree(stage, ignore_errors=True)
        if self._local_root is None:
            shutil.rmtree(self._stage_root, ignore_errors=True)
        self._lock.release()  # last: the staging is gone


class TableFile:
    """Write one table to one file, staged, then published whole (the export's rules, one file).

    :param target: The file: a local path or an ``ObjectStoragePath``.
    :param columns: The table's columns.
    :param fmt: ``jsonl`` or ``parquet``.
    :param name: The table's name (Parquet metadata ``docsign_table``).
    :param schema_version: The table's schema version (Parquet metadata ``docsign_schema_version``).
    """

    def __init__(
        self, target: Any, columns: Sequence[Column], fmt: str = "jsonl", *, name: str, schema_version: int
    ) -> None:
        if fmt not in ("jsonl", "parquet"):
            raise ExportConfigError(f"format must be 'jsonl' or 'parquet', not {fmt!r}")
        if fmt == "parquet":
            require_pyarrow()
        self.target = target
        self._local = _local_path(target)
        token = secrets.token_hex(6)
        if self._local is not None:
            self._local.parent.mkdir(parents=True, exist_ok=True)
            stage = self._local.with_name(f".{self._local.name}.tmp-{token}")
            self._stage_dir: Path | None = None
        else:
            self._stage_dir = Path(tempfile.mkdtemp(prefix="docsign-table-"))
            stage = self._stage_dir / f"table-{token}"
        self._stage = stage
        metadata = {"docsign_schema_version": str(schema_version), "docsign_table": name}
        self._sink = _Sink(name, stage, fmt, columns, metadata)

    def write(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append rows to the staged file."""
        self._sink.write(rows)

    def commit(self) -> int:
        """Close the staged file and publish it in place of the target; return the rows written."""
        try:
            self._sink.close()
            if self._local is not None:
                with self._stage.open("rb") as fh:
                    os.fsync(fh.fileno())
                os.replace(self._stage, self._local)
                fsync_dir(self._local.parent)
            else:
                with self._stage.open("rb") as src, self.target.open("wb") as dst:
                    shutil.copyfileobj(src, dst, _COPY_CHUNK)
        finally:
            self.abort()
        return self._sink.rows

    def abort(self) -> None:
        """Remove the staged file (the published one, if any, is left as it is)."""
        with contextlib.suppress(Exception):
            self._sink.close()
        with contextlib.suppress(FileNotFoundError):
            self._stage.unlink()
        if self._stage_dir is not None:
            shutil.rmtree(self._stage_dir, ignore_errors=True)
