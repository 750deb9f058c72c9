"""A bulk campaign's progress: each row's state, the checkpoint's bytes, the log lines (pure code).

Each row moves through ``pending -> in_flight -> created -> sent``; ``invalid`` and ``failed`` end it
early. ``in_flight`` is written to the checkpoint **before** the row's create request goes out (rows
are leased a batch at a time, one checkpoint write per batch), so a row that is ``pending`` in a
checkpoint was certainly never sent. After a crash, an ``in_flight`` row is looked up by its
``externalId``: found, it is adopted; not found, it is sent. A row is never created twice.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from airflow_provider_docsign.bulk.plan import RESULT_STATUSES

__all__ = [
    "CHECKPOINT_VERSION",
    "CampaignState",
    "CheckpointError",
    "RowState",
    "format_duration",
    "utc_now",
]

CHECKPOINT_VERSION = 1
PENDING, IN_FLIGHT, CREATED, SENT, INVALID, FAILED = (
    "pending",
    "in_flight",
    "created",
    "sent",
    "invalid",
    "failed",
)
STATES = (PENDING, IN_FLIGHT, CREATED, SENT, INVALID, FAILED)
#: States a checkpoint records (pending is the default; invalid is found again on every try).
_KEPT = (IN_FLIGHT, CREATED, SENT, FAILED)


class CheckpointError(ValueError):
    """A checkpoint that cannot belong to this campaign, or cannot be read."""


def utc_now() -> str:
    """The time now as the service writes it: ``2026-11-23T10:00:00.000Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class RowState:
    """One row's progress.

    :param key: The row key (``None`` for a row without a usable key).
    :param state: ``pending``, ``in_flight``, ``created``, ``sent``, ``invalid`` or ``failed``.
    :param envelope_id: The envelope made for the row, once known.
    :param error: Why the row is invalid or failed, or why a created envelope was not sent.
    :param attempts: Write requests made for the row, over every try.
    :param sent_at: When the envelope was sent.
    """

    key: str | None
    state: str = PENDING
    envelope_id: str | None = None
    error: str | None = None
    attempts: int = 0
    sent_at: str | None = None


def fingerprint(keys: Iterable[str | None]) -> str:
    """A digest of the rows' keys in order: a checkpoint belongs to exactly these rows."""
    digest = hashlib.sha256()
    for key in keys:
        digest.update(b"\x00" if key is None else key.encode("utf-8") + b"\x01")
    return digest.hexdigest()


@dataclass
class CampaignState:
    """Every row's state, and the checkpoint made of it.

    :param campaign_id: The campaign.
    :param rows: One :class:`RowState` per input row, in input order.
    :param distribute: Whether rows are sent (``False``: ``created`` ends a row).
    """

    campaign_id: str
    rows: list[RowState]
    distribute: bool = True
    started: float = field(default_factory=time.time)
    #: When the previous try last wrote its checkpoint (seconds since the epoch), if resumed.
    resumed_from: float | None = None

    # -- the checkpoint ---------------------------------------------------------------------------

    def to_bytes(self, *, now: float | None = None) -> bytes:
        """The checkpoint: the campaign, the rows' fingerprint and every row not ``pending``/``invalid``."""
        body = {
            "version": CHECKPOINT_VERSION,
            "campaign_id": self.campaign_id,
            "fingerprint": fingerprint(r.key for r in self.rows),
            "rows_total": len(self.rows),
            "updated_at": time.time() if now is None else now,
            "rows": [
                [r.key, r.state, r.envelope_id, r.error, r.attempts, r.sent_at]
                for r in self.rows
                if r.state in _KEPT and r.key is not None
            ],
        }
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    def restore(self, data: bytes) -> int:
        """Take the states of an earlier try's checkpoint; return how many rows it recorded.

        :raises CheckpointError: if it is another campaign's, or its rows are not these rows.
        """
        try:
            body = json.loads(data)
            if not isinstance(body, Mapping) or body.get("version") != CHECKPOINT_VERSION:
                raise CheckpointError("the checkpoint has an unknown version")
            campaign, digest, entries = body["campaign_id"], body["fingerprint"], body["rows"]
            updated = float(body["updated_at"])
        except (ValueError, KeyError, TypeError) as err:
            raise CheckpointError(f"the checkpoint cannot be read ({err})") from None
        if campaign != self.campaign_id:
            raise CheckpointError(
                f"the checkpoint belongs to campaign {campaign!r}, not {self.campaign_id!r}: give this "
                "campaign its own output"
            )
        if digest != fingerprint(r.key for r in self.rows):
            raise CheckpointError(
                "the rows changed since the checkpoint was written (other keys, or another order): a "
                "campaign must resume with the same rows; give changed rows a new campaign_id and output"
            )
        by_key = {r.key: r for r in self.rows if r.key is not None}
        for entry in entries:
            key, state, envelope_id, error, attempts, sent_at = entry
            row = by_key.get(key)
            if row is None or state not in _KEPT:
                raise CheckpointError(f"the checkpoint has a row it cannot have: {key!r} {state!r}")
            row.state, row.envelope_id, row.error = state, envelope_id, error
            row.attempts, row.sent_at = int(attempts), sent_at
        self.resumed_from = updated
        return len(entries)

    # -- counting ---------------------------------------------------------------------------------

    def done(self, row: RowState) -> bool:
        """Whether the row needs nothing more in this campaign."""
        return row.state in (SENT, INVALID, FAILED) or (row.state == CREATED and not self.distribute)

    def counts(self) -> dict[str, int]:
        """Rows per result status (``pending``/``in_flight`` rows, if any, counted on their own)."""
        counts = dict.fromkeys(RESULT_STATUSES, 0)
        for row in self.rows:
            counts[row.state] = counts.get(row.state, 0) + 1
        return counts

    def result_rows(self, external_id: Any) -> Iterable[dict[str, Any]]:
        """The result table's rows, in input order.

        :param external_id: ``key -> externalId`` (the campaign plan's).
        """
        for row in self.rows:
            yield {
                "row_key": row.key,
                "external_id": external_id(row.key) if row.key is not None else None,
                "envelope_id": row.envelope_id,
                "status": row.state if row.state in RESULT_STATUSES else FAILED,
                "error": row.error
                if row.state in RESULT_STATUSES
                else (row.error or f"left {row.state} when the campaign ended"),
                "attempts": row.attempts,
                "sent_at": row.sent_at,
            }


# -- what a person reads in the log ---------------------------------------------------------------


def format_duration(seconds: float) -> str:
    """``1h02m``, ``9m41s`` or ``12s``."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


@dataclass(frozen=True)
class Throughput:
    """How fast a campaign goes, against what the service's limit allows.

    :param envelopes: Envelopes finished in this try.
    :param requests: Requests sent in this try.
    :param seconds: Seconds since this try started sending.
    :param limit: The window's limit (``X-RateLimit-Limit``), if the service sent it.
    :param window: The window's length in seconds (60 on the real service).
    """

    envelopes: int
    requests: int
    seconds: float
    limit: int | None
    window: float = 60.0

    @property
    def per_minute(self) -> float:
        """Envelopes a minute."""
        return self.envelopes * 60.0 / self.seconds if self.seconds > 0 else 0.0

    @property
    def requests_per_envelope(self) -> float | None:
        """Requests per finished envelope."""
        return self.requests / self.envelopes if self.envelopes else None

    @property
    def limit_bound(self) -> float | None:
        """Envelopes a minute the limit allows: requests allowed a minute / requests per envelope."""
        per = self.requests_per_envelope
        if not self.limit or not per:
            return None
        return self.limit * 60.0 / self.window / per

    def describe(self) -> str:
        """``912 envelopes/min (0.91x the limit-bound 1,000/min: 1,000 requests/min / 1.00 per envelope)``."""
        text = f"{self.per_minute:,.0f} envelopes/min"
        bound = self.limit_bound
        if bound:
            per = self.requests_per_envelope or 0.0
            text += (
                f" ({self.per_minute / bound:.2f}x the limit-bound {bound:,.0f}/min: "
                f"{self.limit * 60.0 / self.window:,.0f} requests/min / {per:.2f} per envelope)"  # type: ignore[operator]
            )
        return text


def progress_line(
    campaign_id: str, done: int, total: int, counts: Mapping[str, int], speed: Throughput, left: int
) -> str:
    """One progress line: done/total, the statuses, the rate against the limit and the ETA."""
    parts = ", ".join(f"{name} {counts.get(name, 0):,}" for name in RESULT_STATUSES)
    eta = f"ETA {format_duration(left * 60.0 / speed.per_minute)}" if speed.per_minute > 0 and left else ""
    return f"Campaign {campaign_id}: {done:,}/{total:,} rows done ({parts}); {speed.describe()}" + (
        f"; {eta}" if eta else ""
    )


def summary_table(
    campaign_id: str,
    state: CampaignState,
    speed: Throughput,
    *,
    throttled: int,
    paced_seconds: float,
    result_uri: str | None,
    examples: int = 5,
) -> str:
    """The summary a person reads at the end of the task's log."""
    counts = state.counts()
    lines = [f"Campaign {campaign_id}: {len(state.rows):,} rows", f"  {'status':<10}{'rows':>10}"]
    lines += [f"  {name:<10}{counts.get(name, 0):>10,}" for name in counts]
    per = speed.requests_per_envelope
    lines.append(
        f"  requests  {speed.requests:,} this try ({f'{per:.2f}' if per else '-'} per envelope), "
        f"{throttled} answered 429, {paced_seconds:.1f} s paced"
    )
    lines.append(f"  rate      {speed.describe()} over {format_duration(speed.seconds)}")
    if result_uri:
        lines.append(f"  results   {result_uri}")
    bad = [r for r in state.rows if r.state in (INVALID, FAILED)]
    for row in bad[:examples]:
        lines.append(f"  {row.state} {row.key!r}: {(row.error or '').splitlines()[0][:300]}")
    if len(bad) > examples:
        lines.append(f"  ... and {len(bad) - examples} more (see the result table)")
    return "\n".join(lines)


def first_problems(rows: Sequence[tuple[int, str | None, list[str]]], limit: int = 5) -> str:
    """The first few invalid rows and their problems, for the error that stops a campaign."""
    lines = []
    for index, key, problems in rows[:limit]:
        head = f"row #{index}" + (f" ({key!r})" if key is not None else "")
        lines.append(f"  - {head}: " + "; ".join(problems[:3]) + (" ..." if len(problems) > 3 else ""))
    if len(rows) > limit:
        lines.append(f"  ... and {len(rows) - limit} more")
    return "\n".join(lines)
