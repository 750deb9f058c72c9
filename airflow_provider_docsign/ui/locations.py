"""Which campaign files the api-server may read, and reading them at a bounded cost.

The api-server is the most trusted Airflow process; an XCom is written by a DAG author's code. So a
result table or checkpoint that a campaign's XCom names is read only from a place an admin configured
in ``[docsign] ui_result_locations``:

- an absolute local folder (``/srv/airflow/campaigns``): the file's real path (symbolic links
  followed, ``..`` resolved) must lie inside it, and it must be a regular file;
- an object-store prefix with the connection to read it with (``s3://aws_results@bucket/campaigns``):
  same scheme and bucket, a key under the prefix (no ``..``), read with *that* connection. An XCom
  that names another connection is refused, never followed.

Anything else (another scheme, host or bucket, a path outside the folders, ``/proc/self/environ``) is
refused with :class:`Refused` before any file is opened or any socket connected. A file that is
allowed is streamed: JSON Lines a line at a time with a cap on each line, on the rows and on the bytes,
so a huge, binary or one-line file costs bounded memory and time and fails with a reason.
"""

from __future__ import annotations

import json
import os
import posixpath
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

from airflow_provider_docsign.service.expiry import mask_text
from airflow_provider_docsign.service.turnaround import iso, sent

#: A line of a result table longer than this is refused (the table is not a result table).
MAX_LINE_BYTES = 1024 * 1024
#: At most this many bytes of a result table (or Parquet file) are read.
MAX_TABLE_BYTES = 64 * 1024 * 1024
#: At most this many rows of a result table are read.
MAX_TABLE_ROWS = 100_000
#: At most this many bytes of a stopped try's checkpoint are read by the page.
MAX_CHECKPOINT_BYTES = 32 * 1024 * 1024
#: Text kept from a row (row key, reason): longer text is cut.
MAX_TEXT = 500
#: An envelope id longer than this is not one.
MAX_ID = 200
SETTING = "[docsign] ui_result_locations"


class Refused(ValueError):
    """A campaign file the api-server may not read (or that is not what it should be), with the reason."""


@dataclass(frozen=True)
class Place:
    """One configured place: a local folder (``scheme == ""``) or an object-store prefix and connection."""

    scheme: str
    root: str
    conn_id: str | None = None

    @property
    def bucket(self) -> str:
        """The object store's bucket (``""`` for a local folder)."""
        return self.root.split("/", 1)[0] if self.scheme else ""

    @property
    def prefix(self) -> str:
        """The key prefix inside the bucket (``""``: the whole bucket)."""
        return self.root.partition("/")[2] if self.scheme else ""

    def __str__(self) -> str:
        return f"{self.scheme}://{self.conn_id}@{self.root}" if self.scheme else self.root


def parse_places(entries: Iterable[str]) -> tuple[Place, ...]:
    """The configured places, checked.

    :param entries: ``[docsign] ui_result_locations`` entries.
    :raises ValueError: for a relative folder or an object-store location without its connection.
    """
    places = []
    for entry in entries:
        scheme, sep, rest = entry.partition("://")
        if not sep or scheme in ("file", "local"):
            path = entry if not sep else "/" + rest.lstrip("/")
            if not os.path.isabs(path):
                raise ValueError(f"{SETTING}: {entry!r} is not an absolute folder")
            places.append(Place("", os.path.realpath(path)))
            continue
        netloc, _, prefix = rest.partition("/")
        conn_id, at, bucket = netloc.rpartition("@")
        if not at or not conn_id or not bucket:
            raise ValueError(
                f"{SETTING}: {entry!r} names no connection: write {scheme}://<conn_id>@<bucket>/<prefix>"
            )
        prefix = prefix.strip("/")
        if ".." in prefix.split("/"):
            raise ValueError(f"{SETTING}: {entry!r} holds '..'")
        places.append(Place(scheme.lower(), f"{bucket}/{prefix}".rstrip("/"), conn_id))
    return tuple(places)


@dataclass(frozen=True)
class Allowed:
    """A campaign file the api-server may read: a local real path, or a URI with the configured connection."""

    target: str
    local: bool


def allow(places: Iterable[Place], value: Any, conn_named: Any = None, what: str = "result table") -> Allowed:
    """Where to read a file an XCom names, if it lies in a configured place; nothing is opened.

    :param places: The configured places.
    :param value: The XCom's path or URI.
    :param conn_named: The object store's connection the XCom names (``<what>_conn_id``), if any.
    :param what: ``result table`` or ``checkpoint`` (for the reason).
    :raises Refused: naming the reason.
    """
    places = tuple(places)
    if not isinstance(value, str) or not value:
        raise Refused(f"the campaign's XCom names no {what}")
    if "\x00" in value or len(value) > 4096:
        raise Refused(f"the campaign's {what} is not a path or a URI")
    where = f"the {what} {value[:300]!r} is not in a place the api-server may read ({SETTING})"
    if not places:
        raise Refused(f"{where}: none is configured")
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() in ("file", "local"):
        path = value if not sep else "/" + rest.lstrip("/")
        if not os.path.isabs(path):
            raise Refused(where)
        real = os.path.realpath(path)  # no byte is read: the names are looked up
        for place in places:
            if not place.scheme and (real == place.root or real.startswith(place.root.rstrip("/") + "/")):
                return Allowed(real, True)
        raise Refused(where)
    netloc, _, key = rest.partition("/")
    userinfo, _, bucket = netloc.rpartition("@")
    named = userinfo or (conn_named if isinstance(conn_named, str) else None) or None
    if not key or ".." in key.split("/") or posixpath.normpath(key) != key:
        raise Refused(where)
    for place in places:
        if place.scheme != scheme.lower() or place.bucket != bucket:
            continue
        if place.prefix and not key.startswith(place.prefix + "/"):
            continue
        if named not in (None, place.conn_id):
            raise Refused(
                f"the {what} names the connection {str(named)[:100]!r}; the api-server reads "
                f"{place} only with {place.conn_id!r} ({SETTING})"
            )
        return Allowed(f"{place.scheme}://{place.conn_id}@{bucket}/{key}", False)
    raise Refused(where)


def open_allowed(allowed: Allowed) -> IO[bytes]:
    """Open an allowed file for reading bytes (a local one only if it is a regular file)."""
    if allowed.local:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(allowed.target, flags)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise Refused(f"{allowed.target!r} is not a regular file")
        return os.fdopen(fd, "rb")
    from airflow_provider_docsign.bulk.store import resolve_path

    stream: IO[bytes] = resolve_path(allowed.target).open("rb")
    return stream


@dataclass
class Table:
    """What the page needs of a result table: the sent envelopes, and the failed and invalid rows.

    :param sent_at: Envelope id -> when the bulk send sent it (the row's ``sent_at``, ISO text), for the
        rows that say so in a form that parses (a Contracts row's send time, source ``campaign``).
    """

    envelope_ids: list[str] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)
    rows: int = 0
    sent_at: dict[str, str] = field(default_factory=dict)


#: A ``sent_at`` longer than this is not a timestamp.
MAX_TIME_TEXT = 64


def _sent_time(value: Any) -> str | None:
    """A row's ``sent_at`` as ISO text (UTC), if it is a time, else ``None``.

    ISO text (JSON Lines) or a datetime (Parquet); anything else (a number, a huge or malformed text) is
    no time.
    """
    if isinstance(value, str) and len(value) > MAX_TIME_TEXT:
        return None
    if not isinstance(value, str | datetime):
        return None
    found = sent(campaign=value)
    return iso(found.at) if found is not None else None


def _short(value: Any) -> Any:
    if value is None or isinstance(value, int | float | bool):
        return value
    return mask_text(str(value)[:MAX_TEXT])


def _count_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _add(table: Table, seen: set[str], number: int, row: Any) -> None:
    if not isinstance(row, dict) or "status" not in row or "envelope_id" not in row:
        raise Refused(f"row {number} has no status or envelope_id: not a bulk result table")
    table.rows += 1
    status, envelope_id = row["status"], row["envelope_id"]
    if status == "sent" and isinstance(envelope_id, str) and 0 < len(envelope_id) <= MAX_ID:
        if envelope_id not in seen:
            seen.add(envelope_id)
            table.envelope_ids.append(envelope_id)
            at = _sent_time(row.get("sent_at"))
            if at is not None:
                table.sent_at[envelope_id] = at
    elif status in ("failed", "invalid"):
        attempts = row.get("attempts")
        table.problems.append(
            {
                "row": number,
                "row_key": _short(row.get("row_key")),
                "status": status,
                "error": _short(row.get("error")),
                "attempts": _count_or_none(attempts),
            }
        )


#: Bytes asked of a stream at a time.
CHUNK_BYTES = 64 * 1024


def lines(stream: IO[bytes], limit: int) -> Iterator[bytes]:
    """The stream's lines (each with its newline), read with ``read(n)`` only, in bounded memory.

    An object store's file (fsspec's ``AbstractBufferedFile``) has no ``readline(size)``, and a plain
    ``readline()`` would hold a 300 MB line whole. A line longer than ``limit`` is yielded cut to
    ``limit + 1`` bytes, and nothing after it is read.

    :param stream: A binary stream.
    :param limit: The longest line wanted.
    """
    pending = b""
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if not chunk:
            if pending:
                yield pending
            return
        pending += chunk
        start = 0
        while (cut := pending.find(b"\n", start)) >= 0:
            yield pending[start : cut + 1]
            start = cut + 1
        pending = pending[start:]
        if len(pending) > limit:
            yield pending[: limit + 1]
            return


def read_table(allowed: Allowed, fmt: Any) -> Table:
    """Read a result table (JSON Lines streamed, Parquet bounded in size) into a :class:`Table`.

    :param allowed: From :func:`allow`.
    :param fmt: The XCom's ``format`` (``jsonl`` or ``parquet``; else from the file name).
    :raises Refused: for a file that is too large, binary, or not a result table, naming the line.
    """
    if fmt not in ("jsonl", "parquet"):
        fmt = "parquet" if allowed.target.endswith(".parquet") else "jsonl"
    table, seen = Table(), set[str]()
    try:
        with open_allowed(allowed) as stream:
            if fmt == "parquet":
                return _parquet(stream, table, seen)
            total = 0
            for line in lines(stream, MAX_LINE_BYTES):
                number = table.rows + 1
                total += len(line)
                if len(line) > MAX_LINE_BYTES:
                    raise Refused(f"line {number} is longer than {MAX_LINE_BYTES} bytes: not a result table")
                if total > MAX_TABLE_BYTES or number > MAX_TABLE_ROWS:
                    raise Refused(f"more than {MAX_TABLE_ROWS} rows or {MAX_TABLE_BYTES} bytes: not read")
                if not line.strip():
                    continue
                try:
                    row = json.loads(line.decode("utf-8"))
                except ValueError:  # UnicodeDecodeError too
                    raise Refused(f"line {number} is not JSON text: not a result table") from None
                _add(table, seen, number, row)
            return table
    except OSError as error:
        raise Refused(f"it cannot be read: {error.strerror or type(error).__name__}") from None


def _parquet(stream: IO[bytes], table: Table, seen: set[str]) -> Table:
    data = stream.read(MAX_TABLE_BYTES + 1)
    if len(data) > MAX_TABLE_BYTES:
        raise Refused(f"larger than {MAX_TABLE_BYTES} bytes: not read")
    import io

    from airflow_provider_docsign.export.store import require_pyarrow

    require_pyarrow()
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    try:
        rows = pq.read_table(io.BytesIO(data)).to_pylist()
    except Exception as error:  # pyarrow's errors are many; the file is not what it says
        raise Refused(f"not a Parquet result table ({type(error).__name__})") from None
    for number, row in enumerate(rows[: MAX_TABLE_ROWS + 1], start=1):
        if number > MAX_TABLE_ROWS:
            raise Refused(f"more than {MAX_TABLE_ROWS} rows: not read")
        _add(table, seen, number, row)
    return table


def read_checkpoint_bytes(allowed: Allowed) -> bytes:
    """A checkpoint's bytes, at most :data:`MAX_CHECKPOINT_BYTES` (more is refused, not read)."""
    try:
        with open_allowed(allowed) as stream:
            data = bytes(stream.read(MAX_CHECKPOINT_BYTES + 1))
    except OSError as error:
        raise Refused(f"it cannot be read: {error.strerror or type(error).__name__}") from None
    if len(data) > MAX_CHECKPOINT_BYTES:
        raise Refused(f"larger than {MAX_CHECKPOINT_BYTES} bytes: not read by the page")
    return data
