"""A campaign's tables: reading its rows (CSV, JSON Lines, Parquet) and its result table's format.

Pure code, no network: files are opened through :func:`~airflow_provider_docsign._sources.open_source`
(a local path or an ``ObjectStoragePath`` the caller made). Every row keeps where it is in its file
(``line 8``: the line a person sees, the CSV header being line 1), and what was wrong with it there (a
cell over :data:`MAX_CELL` characters, a line that is not a JSON object) becomes that row's problem,
not the whole file's.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_docsign._sources import open_source, to_path_like

__all__ = [
    "INPUT_FORMATS",
    "MAX_CELL",
    "OUTPUT_FORMATS",
    "BulkConfigError",
    "SourceRows",
    "default_max_failures",
    "format_of",
    "read_campaign_rows",
    "read_rows",
    "result_table_format",
    "sent_envelope_ids",
]

INPUT_FORMATS = ("csv", "jsonl", "parquet")
OUTPUT_FORMATS = ("jsonl", "parquet")
#: The longest cell a row may hold (characters): Python's csv module's own default limit.
MAX_CELL = 131_072
#: Cells up to this size are read (and then refused as too long): larger ones fail the whole file.
_CSV_READ_LIMIT = 16 * 1024 * 1024
#: File name endings and the format each means.
_EXTENSIONS = (
    (".csv", "csv"),
    (".jsonl", "jsonl"),
    (".ndjson", "jsonl"),
    (".parquet", "parquet"),
    (".json", "json"),
)


class BulkConfigError(ValueError):
    """The campaign is configured in a way that cannot work (raised before any request is sent)."""


def default_max_failures(rows: int) -> int:
    """The failures a campaign tolerates before it stops: 1 % of the rows, at least 10."""
    return max(10, math.ceil(rows * 0.01))


def format_of(path: Any, given: str | None, allowed: Sequence[str], what: str) -> str:
    """The file format: ``given``, else the path's extension (``.csv``, ``.jsonl``, ``.parquet``)."""
    if given is not None:
        if given not in allowed:
            raise BulkConfigError(f"{what} format must be one of {', '.join(allowed)}, not {given!r}")
        return given
    name = str(getattr(path, "name", None) or path).lower()
    for ext, fmt in _EXTENSIONS:
        if name.endswith(ext) and fmt in allowed:
            return fmt
    if what == "output":
        return "jsonl"
    raise BulkConfigError(
        f"cannot tell the {what} format of {name!r} from its name: give {what}_format ({', '.join(allowed)})"
    )


# -- reading the rows ---------------------------------------------------------------------------


@dataclass
class SourceRows:
    """A campaign's rows as read, with where each is in its file and what was wrong with it there.

    :param rows: The rows, in file order.
    :param where: Each row's place, as a person finds it: ``line 8`` (CSV: the file's line, the header
        being line 1; JSON Lines: the line), ``row 3`` (Parquet), ``rows[2]`` (a list).
    :param problems: Each row's problems found while reading (a cell too long, a line not JSON).
    """

    rows: list[dict[str, Any]]
    where: list[str]
    problems: list[list[str]]

    @classmethod
    def of_list(cls, rows: Sequence[Mapping[str, Any]]) -> SourceRows:
        """Rows given as a list of mappings (for example another task's XCom)."""
        bad = [i for i, row in enumerate(rows) if not isinstance(row, Mapping)]
        if bad:
            raise BulkConfigError(f"rows must be objects; rows[{bad[0]}] is a {type(rows[bad[0]]).__name__}")
        listed = [dict(row) for row in rows]
        return cls(listed, [f"rows[{i}]" for i in range(len(listed))], [_cell_problems(r) for r in listed])


def read_rows(source: Any, fmt: str) -> list[dict[str, Any]]:
    """Read every row of a CSV, JSON Lines or Parquet file (a local path or an ``ObjectStoragePath``).

    :raises BulkConfigError: for a file that cannot be read as ``fmt``, naming the line.
    """
    read = read_campaign_rows(source, fmt)
    for where, problems in zip(read.where, read.problems, strict=True):
        if problems:
            raise BulkConfigError(f"{where} of {source}: {problems[0]}")
    return read.rows


def read_campaign_rows(source: Any, fmt: str) -> SourceRows:
    """Read every row of a campaign file, with each row's line and the problems found reading it.

    CSV cells are strings; an empty cell is ``None``. A JSON Lines line must be an object. A cell over
    :data:`MAX_CELL` characters, or a line that is not a JSON object, makes its row invalid (with the
    reason); a file that is not text at all fails as a whole.

    :raises BulkConfigError: for a file that cannot be read as ``fmt``.
    """
    stream, owned = open_source(to_path_like(source))
    try:
        if fmt == "parquet":
            rows = _parquet_rows(stream)
            return SourceRows(
                rows, [f"row {i}" for i in range(1, len(rows) + 1)], [_cell_problems(r) for r in rows]
            )
        text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
        try:
            return _csv_rows(text) if fmt == "csv" else _jsonl_rows(text)
        finally:
            text.detach()
    except UnicodeDecodeError as err:
        raise BulkConfigError(f"the rows file is not UTF-8 text ({err.reason} at byte {err.start})") from None
    finally:
        if owned:
            stream.close()


def _cell_problems(row: Mapping[str, Any]) -> list[str]:
    problems = []
    for name, value in row.items():
        size = (
            len(value)
            if isinstance(value, str)
            else len(json.dumps(value, default=str))
            if isinstance(value, list | dict)
            else 0
        )
        if size > MAX_CELL:
            problems.append(
                f"column {str(name)[:80]!r} holds {size:,} characters; a cell may hold at most {MAX_CELL:,}"
            )
    return problems


def _csv_rows(text: io.TextIOWrapper) -> SourceRows:
    old = csv.field_size_limit(_CSV_READ_LIMIT)
    try:
        reader = csv.reader(text)
        try:
            header = next(reader, None)
        except csv.Error as err:
            raise BulkConfigError(f"line 1 of the rows file is not CSV ({err})") from None
        read = SourceRows([], [], [])
        if not header:
            return read
        line = reader.line_num
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as err:
                raise BulkConfigError(f"line {line + 1} of the rows file is not CSV ({err})") from None
            first, line = line + 1, reader.line_num
            if not cells:
                continue
            row = {k: (v if v != "" else None) for k, v in zip(header, cells, strict=False)}
            problems = _cell_problems(row)
            if len(cells) > len(header):
                problems.append(f"has {len(cells)} cells, the header {len(header)}")
            read.rows.append(row)
            read.where.append(f"line {first}")
            read.problems.append(problems)
        return read
    finally:
        csv.field_size_limit(old)


def _jsonl_rows(text: io.TextIOWrapper) -> SourceRows:
    read = SourceRows([], [], [])
    for number, line in enumerate(text, start=1):
        if not line.strip():
            continue
        problems: list[str] = []
        value: Any = {}
        if len(line) > MAX_CELL * 8:
            problems.append(f"the line holds {len(line):,} characters; at most {MAX_CELL * 8:,}")
        else:
            try:
                value = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as err:
                problems.append(f"the line is not JSON ({getattr(err, 'msg', type(err).__name__)})")
            if not problems and not isinstance(value, dict):
                problems.append(f"the line is a JSON {type(value).__name__}, not an object")
        row = value if isinstance(value, dict) and not problems else {}
        read.rows.append(row)
        read.where.append(f"line {number}")
        read.problems.append(problems or _cell_problems(row))
    return read


def _parquet_rows(stream: Any) -> list[dict[str, Any]]:
    from airflow_provider_docsign.export.store import require_pyarrow

    require_pyarrow()
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    rows: list[dict[str, Any]] = []
    for batch in pq.ParquetFile(stream).iter_batches(batch_size=5000):
        rows.extend(batch.to_pylist())
    return rows


def sent_envelope_ids(source: Any, fmt: str, statuses: Sequence[str] = ("sent",)) -> list[str]:
    """The envelope ids of a bulk result table's rows with one of ``statuses``, in table order.

    For the batch sensor and the batch archive, which take the table's URI instead of a list of ids.

    :param source: The result table (local path or ``ObjectStoragePath``).
    :param fmt: ``jsonl`` or ``parquet``.
    :param statuses: Which rows count (``sent`` by default: only sent envelopes can be signed).
    :raises BulkConfigError: when the file is not a result table.
    """
    rows = read_rows(source, fmt)
    wanted = set(statuses)
    ids: list[str] = []
    for number, row in enumerate(rows, start=1):
        if "status" not in row or "envelope_id" not in row:
            raise BulkConfigError(
                f"row {number} of {source} has no status or envelope_id column: not a bulk result table"
            )
        if row["status"] in wanted and row["envelope_id"]:
            ids.append(str(row["envelope_id"]))
    return list(dict.fromkeys(ids))


def result_table_format(path: Any, given: str | None) -> str:
    """The format the bulk send writes its result table in, refused when a reader could not tell it.

    ``given`` (``output_format``) or the name's extension decides; a name whose extension says another
    format (``results.csv`` with JSON Lines in it), or no known extension without ``given``, is refused
    before any request. Readers (the sensor, the batch archive) take the same ``result_table_format``.

    :raises BulkConfigError: naming the file and what to give instead.
    """
    name = str(getattr(path, "name", None) or path)
    lower = name.lower()
    said = next((fmt for ext, fmt in _EXTENSIONS if lower.endswith(ext)), None)
    if given is not None and given not in OUTPUT_FORMATS:
        raise BulkConfigError(f"output_format must be one of {', '.join(OUTPUT_FORMATS)}, not {given!r}")
    if said is not None and said not in OUTPUT_FORMATS:
        raise BulkConfigError(
            f"the result table {name!r} is named like a {said.upper()} file, and the bulk send writes JSON "
            "Lines or Parquet: name it .jsonl or .parquet"
        )
    if said is not None and given is not None and said != given:
        raise BulkConfigError(
            f"the result table {name!r} is named like a {said} file but output_format is {given!r}: make "
            "them agree"
        )
    if said is None and given is None:
        raise BulkConfigError(
            f"cannot tell the result table's format from {name!r}: name it .jsonl or .parquet, or give "
            "output_format (and the same result_table_format to the sensor and the batch archive)"
        )
    return given or said  # type: ignore[return-value]
