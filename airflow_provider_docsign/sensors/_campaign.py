"""A campaign's result table as a batch wait reads it, and the outcome report the wait writes beside it.

:func:`read_campaign` reads the table :class:`~airflow_provider_docsign.operators.DocsignBulkSendOperator`
wrote (JSON Lines or Parquet, a local path or an object store): the envelopes of its ``sent`` rows, in
table order, each once, with the row key and ``externalId`` of the first row that names it.

:class:`OutcomeReport` is the file ``<result table>.outcome.jsonl`` beside it: one JSON line per envelope
(``envelope_id``, ``row_key``, ``external_id``, ``status``, ``reason``, ``completed_at``, ``signed_at``,
``seconds_to_sign``), replaced atomically by the archive's
:class:`~airflow_provider_docsign.archive.store.Store` (on a local disk a temporary file renamed over
the old one; on an object store one whole object moved into place).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from airflow_provider_docsign.archive.store import Store, quiet_upath, uri_of
from airflow_provider_docsign.sensors._batch import Outcome
from airflow_provider_docsign.sensors._outcomes import campaign_seconds_to_sign

__all__ = ["REPORT_SUFFIX", "Campaign", "OutcomeReport", "read_campaign"]

#: The report of ``…/results.jsonl`` is ``…/results.jsonl.outcome.jsonl``.
REPORT_SUFFIX = ".outcome.jsonl"


@dataclass(frozen=True)
class Campaign:
    """The envelopes a batch wait covers, read from a result table.

    :param path: The table (a local ``Path`` or an ``ObjectStoragePath``).
    :param envelope_ids: The envelopes of the ``sent`` rows, in table order, each once.
    :param row_keys: The row key of the first row naming each envelope.
    :param external_ids: The ``external_id`` of that row.
    :param duplicates: Sent rows naming an envelope an earlier row already named.
    :param not_sent: Rows that are not ``sent`` (invalid, failed, created): not waited for.
    :param sent_at: The ``sent_at`` of that row, as read: the campaign's send time of the envelope.
    """

    path: Any
    envelope_ids: list[str]
    row_keys: dict[str, str | None] = field(default_factory=dict)
    external_ids: dict[str, str | None] = field(default_factory=dict)
    duplicates: int = 0
    not_sent: int = 0
    sent_at: dict[str, Any] = field(default_factory=dict)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def read_campaign(result_table: Any, result_table_format: str | None = None) -> Campaign:
    """Read the sent envelopes of a bulk result table (one read of the file).

    :param result_table: A path, a URI (``s3://conn@bucket/results.jsonl``) or an ``ObjectStoragePath``.
    :param result_table_format: ``jsonl`` or ``parquet``; ``None``: from the file name.
    :raises ValueError: when the file cannot be read or is not a result table (no ``status`` or
        ``envelope_id`` column), naming it.
    """
    from airflow_provider_docsign.bulk.plan import OUTPUT_FORMATS, format_of, read_rows
    from airflow_provider_docsign.bulk.store import resolve_path

    try:
        path = resolve_path(result_table, "result_table")
        with quiet_upath():
            rows = read_rows(path, format_of(path, result_table_format, OUTPUT_FORMATS, "result_table"))
    except (OSError, TypeError) as error:
        raise ValueError(f"the result table {result_table!r} cannot be read: {error}") from error
    ids: list[str] = []
    row_keys: dict[str, str | None] = {}
    external_ids: dict[str, str | None] = {}
    sent_at: dict[str, Any] = {}
    duplicates = not_sent = 0
    for number, row in enumerate(rows, start=1):
        if "status" not in row or "envelope_id" not in row:
            raise ValueError(
                f"row {number} of {result_table} has no status or envelope_id column: not a bulk result table"
            )
        envelope_id = row["envelope_id"]
        if row["status"] != "sent" or not envelope_id:
            not_sent += 1
            continue
        envelope_id = str(envelope_id)
        if envelope_id in row_keys:
            duplicates += 1
            continue
        ids.append(envelope_id)
        row_keys[envelope_id] = _text(row.get("row_key"))
        external_ids[envelope_id] = _text(row.get("external_id"))
        sent_at[envelope_id] = row.get("sent_at")  # ISO text (JSON Lines) or a datetime (Parquet)
    return Campaign(path, ids, row_keys, external_ids, duplicates, not_sent, sent_at)


class OutcomeReport:
    """The report beside a result table: every envelope's final status and reason, one JSON line each.

    :param result_table: The result table's path (local ``Path`` or ``ObjectStoragePath``).
    """

    def __init__(self, result_table: Any) -> None:
        self.name = f"{result_table.name}{REPORT_SUFFIX}"
        self._parent = result_table.parent

    @property
    def uri(self) -> str:
        """The report's URI (no connection id)."""
        with quiet_upath():
            return uri_of(self._parent / self.name)

    @staticmethod
    def lines(
        outcomes: Sequence[Outcome],
        row_keys: Mapping[str, str | None],
        external_ids: Mapping[str, str | None],
        sent_at: Mapping[str, Any] | None = None,
    ) -> bytes:
        """The report's bytes: one JSON object per outcome, in order.

        ``signed_at`` is the last signature of a completed envelope (``None`` otherwise);
        ``seconds_to_sign`` runs from the row's ``sent_at`` to it, as the Contracts page and the
        ``docsign.time_to_sign`` metric count it (``None`` when either time is unknown).
        """
        now = datetime.now(timezone.utc)
        sent = sent_at or {}
        text = "".join(
            json.dumps(
                {
                    "envelope_id": o.envelope_id,
                    "row_key": row_keys.get(o.envelope_id),
                    "external_id": external_ids.get(o.envelope_id),
                    "status": o.status,
                    "reason": o.reason,
                    "completed_at": o.completed_at,
                    "signed_at": o.signed_at,
                    "seconds_to_sign": campaign_seconds_to_sign(o, sent.get(o.envelope_id), now),
                },
                ensure_ascii=False,
            )
            + "\n"
            for o in outcomes
        )
        return text.encode("utf-8")

    def write(self, outcomes: Sequence[Outcome], campaign: Campaign) -> str:
        """Replace the report atomically with ``outcomes``; return its URI.

        :raises OSError: when it cannot be written (the message names the report).
        """
        data = self.lines(outcomes, campaign.row_keys, campaign.external_ids, campaign.sent_at)
        try:
            if isinstance(self._parent, Path):
                self._parent.mkdir(parents=True, exist_ok=True)
            with quiet_upath():
                Store(self._parent, None).write_atomic(self.name, data)
        except OSError as error:
            raise OSError(f"the wait's report {self.uri} could not be written: {error}") from error
        return self.uri
