"""Operator that exports the signing process of one data interval as three tables (contract data)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import Asset, get_connection, mask_secret
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.export import rows as _export
from airflow_provider_docsign.export.audit import AuditTimes, audit_times
from airflow_provider_docsign.export.rows import (
    FORMATS,
    PII_MODES,
    TABLES,
    ExportConfigError,
    PiiPolicy,
    Window,
    envelope_rows,
    parse_ts,
    partition_date,
    select,
)
from airflow_provider_docsign.export.store import PartitionWriter, require_pyarrow, uri_of
from airflow_provider_docsign.operators._base import PERMANENT_ERRORS, DocsignBaseOperator, fail_now

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.service.models import EnvelopeSummary

__all__ = ["DocsignExportEnvelopesOperator"]

#: ``POST /envelope/get-many`` takes at most 20 ids.
DETAIL_BATCH = 20
#: The connection extra holding the key of ``pii="hash"``.
PII_KEY_EXTRA = "pii_hash_key"


class DocsignExportEnvelopesOperator(DocsignBaseOperator):
    """Export the envelopes created, updated or completed in the data interval to three tables.

    Writes ``envelopes``, ``recipients`` and ``field_values`` partitions for the interval below
    ``destination`` (``<table>/date=YYYY-MM-DD/part-0000.jsonl`` or ``.parquet``, and ``_SUCCESS`` with
    the row counts), replacing the partition of an earlier run of the same interval. The schema is
    :data:`airflow_provider_docsign.export.rows.TABLES` (see the "Contract data" guide page).

    How envelopes are found (real service): ``GET /envelope`` cannot filter by time and, without
    ``folderId``, lists the root only. So the export lists the root and then every document folder
    (``GET /folder``), 100 per page, newest created first, and stops listing a folder at the first
    envelope created before ``start - lookback``. Envelopes whose ``createdAt``, ``updatedAt`` or
    ``completedAt`` falls in ``[start - overlap, end)`` are read 20 at a time with ``get-many`` and
    streamed to the files. Requests: one per 100 listed, one per 20 exported, plus the folder list.

    Returns (XCom) ``{"date", "format", "rows": {table: count}, "partitions": {table: uri}}``.

    :param destination: Where the tables go: a local path or an ``ObjectStoragePath`` (``s3://``,
        ``gs://``, ``file://``, ...). Templated.
    :param start: The interval's start (inclusive). Templated; default ``{{ data_interval_start }}``.
    :param end: The interval's end (exclusive). Templated; default ``{{ data_interval_end }}``.
    :param overlap: Also export changes this long before ``start`` (catches late-arriving updates).
    :param lookback: How long before the interval an envelope may have been created and still be
        exported for a change inside it (default 30 days); bounds how far back the listing reads.
    :param folder_ids: Export only these folders (``None`` for the root, a folder id otherwise).
        Default: the root and every document folder. Templated.
    :param format: ``"jsonl"`` (default) or ``"parquet"`` (needs the ``parquet`` extra: pyarrow).
    :param pii: ``"hash"`` (default: every column that may name a person becomes a keyed
        HMAC-SHA256, with the key in the connection extra ``pii_hash_key``), ``"keep"`` or ``"drop"``
        (null). Which columns: ``pii_columns``.
    :param pii_columns: The columns (``"table.column"``) the ``pii`` mode applies to; every other
        column is written as the service returned it. Default
        :data:`~airflow_provider_docsign.export.rows.DEFAULT_PII_COLUMNS`: ``envelopes.title``,
        ``envelopes.external_id``, ``envelopes.rejection_reason``, ``recipients.email``,
        ``recipients.name`` and ``field_values.value`` (free-text types). A team whose external ids
        are opaque keys it joins on can leave that column out; ``field_values.label`` may be added.
    :param read_sent_times: Read each exported envelope's audit log for its sending and first opening
        times (the service keeps them nowhere else): fills ``sent_at``, ``sent_source``,
        ``hours_sent_to_completed``, ``seconds_to_sign``, ``first_opened_at`` and
        ``seconds_to_first_open``, at the cost of one more request per exported envelope (oldest entries
        first, stopping once both are found; at most
        :data:`~airflow_provider_docsign.export.audit.AUDIT_SCAN_LIMIT` entries). Default ``False``.
    :param asset: The Asset (Dataset on Airflow 2.11) to emit an event for, with the partition in the
        event's extra. Default: an Asset named after ``destination`` when it is not templated.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("destination", "start", "end", "folder_ids")
    operator_extra_links = ()
    ui_color = "#dbe8f5"

    def __init__(
        self,
        *,
        destination: Any,
        start: Any = "{{ data_interval_start }}",
        end: Any = "{{ data_interval_end }}",
        overlap: timedelta = timedelta(0),
        lookback: timedelta = timedelta(days=30),
        folder_ids: Sequence[str | None] | None = None,
        format: str = "jsonl",
        pii: str = "hash",
        pii_columns: Sequence[str] | None = None,
        read_sent_times: bool = False,
        asset: Any = None,
        **kwargs: Any,
    ) -> None:
        if format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
        if format == "parquet":
            require_pyarrow()  # refused at parse time, naming the extra
        if pii not in PII_MODES:
            raise ValueError(f"pii must be one of {', '.join(PII_MODES)}, not {pii!r}")
        chosen_pii_columns = _export.pii_columns(
            pii_columns
        )  # refused at parse time, naming the allowed ones
        if not isinstance(overlap, timedelta) or overlap < timedelta(0):
            raise ValueError("overlap must be a non-negative timedelta")
        if not isinstance(lookback, timedelta) or lookback < timedelta(0):
            raise ValueError("lookback must be a non-negative timedelta")
        if asset is None and "{{" not in str(destination):
            asset = Asset(_asset_uri(destination))
        if asset is not None:
            outlets = list(kwargs.pop("outlets", None) or [])
            kwargs["outlets"] = [*outlets, asset] if asset not in outlets else outlets
        super().__init__(**kwargs)
        self.destination = destination
        self.start = start
        self.end = end
        self.overlap = overlap
        self.lookback = lookback
        self.folder_ids = folder_ids
        self.format = format
        self.pii = pii
        self.pii_columns = sorted(chosen_pii_columns)
        self.read_sent_times = read_sent_times
        self.asset = asset
        self.partitions: dict[str, str] = {}

    # -- execute ----------------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        """List, select, read and write the interval's partition; emit the asset event."""
        start, end = _time(self.start, "start"), _time(self.end, "end")
        if start is None or end is None or not start < end:
            raise fail_now(
                DocsignValidationError(
                    [f"start ({self.start!r}) must be before end ({self.end!r})"], "export"
                )
            )
        window = Window(start=start - self.overlap, end=end, lookback=self.lookback)
        try:
            policy = PiiPolicy(self.pii, self._hash_key(), frozenset(self.pii_columns))
        except ExportConfigError as err:
            raise fail_now(err) from err
        hook = self.hook
        hook.before_request = self._pacer()
        date = partition_date(start)
        try:
            writer = PartitionWriter(_destination(self.destination), date, self.format)
        except (FileExistsError, NotADirectoryError) as err:  # a file where a directory must be
            where = f"{str(err.filename)!r} is a file, not a directory" if err.filename else str(err)
            raise fail_now(
                DocsignValidationError([f"destination {str(self.destination)!r}: {where}"], "export")
            ) from err
        if writer.swept:
            self.log.warning("Cleaned up after export runs that died: %s", "; ".join(writer.swept))
        try:
            wanted = sorted(set(self._selected(window)))  # (created_at, id): ids only, in a fixed order
            self.log.info("Exporting %d envelopes changed in [%s, %s)", len(wanted), window.start, end)
            for offset in range(0, len(wanted), DETAIL_BATCH):
                batch = [envelope_id for _, envelope_id in wanted[offset : offset + DETAIL_BATCH]]
                for envelope in hook.get_envelopes(batch):
                    audit = self._audit_times(envelope.id) if self.read_sent_times else AuditTimes()
                    rows = envelope_rows(
                        envelope, policy, audit.sent, first_opened_at=audit.first_opened, now=end
                    )  # the funnel's expiry judged at the interval's end: re-runs write the same bytes
                    writer.write(rows)
            counts = writer.commit()
        except PERMANENT_ERRORS as err:
            writer.abort()
            raise fail_now(err) from err
        except BaseException:
            writer.abort()
            raise
        self.partitions = writer.partition_uris()
        result = {"date": date, "format": self.format, "rows": counts, "partitions": self.partitions}
        self.log.info("Exported partition %s: %s", date, counts)
        self.attach_asset_extra(
            context,
            self.asset,
            {k: result[k] for k in ("date", "format", "rows", "partitions")},
            "the partition",
        )
        return result

    def _audit_times(self, envelope_id: str) -> AuditTimes:
        entries = self.hook.get_audit_log(envelope_id, oldest_first=True)
        try:
            return audit_times(entries)
        finally:
            close = getattr(entries, "close", None)
            if close is not None:
                close()  # stop paging once both times are found (or the scan limit is reached)

    def _hash_key(self) -> bytes | None:
        if self.pii != "hash":
            return None
        extras = get_connection(self.docsign_conn_id).extra_dejson or {}
        key = extras.get(PII_KEY_EXTRA)
        if not key:
            return None
        mask_secret(str(key))
        return str(key).encode("utf-8")

    def _pacer(self) -> Any:
        """Pause before each request when the service's rate-limit headers say so (the poller's rule)."""
        from airflow_provider_docsign.hooks._pacing import Pacer

        pacer = Pacer()
        hook = self.hook

        def before_request() -> None:
            pacer.observe(hook.last_rate_limit)
            pause = pacer.delay(time.time())
            if pause > 0:
                self.log.info("Pacing for %.1fs to stay under the service's rate limit", pause)
                time.sleep(pause)
            pacer.spend()

        return before_request

    def _folders(self) -> list[str | None]:
        if self.folder_ids is not None:
            return list(dict.fromkeys(self.folder_ids))
        # Real service: without folderId GET /envelope lists the root only, so every document
        # folder (GET /folder lists every level when parentId is not given) is listed as well.
        folders = sorted(f.id for f in self.hook.list_folders(folder_type="DOCUMENT"))
        return [None, *folders]

    def _selected(self, window: Window) -> Iterator[tuple[str, str]]:
        for folder_id in self._folders():
            listing: Iterator[EnvelopeSummary] = self.hook.find_envelopes(
                folder_id=folder_id, envelope_type="DOCUMENT"
            )
            try:
                yield from select(listing, window)
            finally:
                close = getattr(listing, "close", None)
                if close is not None:
                    close()  # stop paging this folder

    # -- lineage ----------------------------------------------------------------------------------

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: the partitions written, each with a schema facet (see :mod:`..lineage`)."""
        from airflow_provider_docsign.export import lineage

        return lineage.export_facets(
            self.partitions, {t: [(c.name, c.type) for c in TABLES[t]] for t in TABLES}
        )


def _time(value: Any, name: str) -> Any:
    """``start`` or ``end`` as an aware UTC datetime; a value that is no ISO 8601 time fails the task."""
    try:
        return parse_ts(value)
    except (TypeError, ValueError) as err:
        raise fail_now(
            DocsignValidationError(
                [f"{name} must be an ISO 8601 time such as '2026-11-02T00:00:00+00:00', not {value!r}"],
                "export",
            )
        ) from err


def _destination(destination: Any) -> Any:
    if isinstance(destination, str) and "://" in destination:
        from airflow_provider_docsign._compat import ObjectStoragePath

        return ObjectStoragePath(destination)
    return destination


def _asset_uri(destination: Any) -> str:
    if hasattr(destination, "protocol"):
        return uri_of(destination).rstrip("/")
    text = str(destination)
    if "://" in text:
        return text.rstrip("/")
    return uri_of(text).rstrip("/")
