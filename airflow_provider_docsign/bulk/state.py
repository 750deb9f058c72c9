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
    "STOPPED_XCOM_KEY",
    "CampaignState",
    "CheckpointError",
    "RowState",
    "format_duration",
    "parse_checkpoint",
    "row_digest",
    "utc_now",
]

CHECKPOINT_VERSION = 2
#: The XCom key a bulk-send try that stopped pushes (the campaign, its counts, why, its checkpoint);
#: a finished try returns its result instead. The Contracts page lists both.
STOPPED_XCOM_KEY = "docsign_campaign_stopped"
#: Versions a checkpoint may have (1: 0.3.0, without row digests).
_READABLE_VERSIONS = (1, 2)
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
#: Bounds of what a checkpoint entry may hold (anything else is a malformed checkpoint).
_MAX_TEXT = 4000
_MAX_ATTEMPTS = 1_000_000
#: A checkpoint is read whole; one larger than this is not ours (10,000 rows take about 2 MB).
MAX_CHECKPOINT_BYTES = 256 * 1024 * 1024


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
    :param digest: A digest of the row's content when it was sent (to tell an amended row).
    :param note: What a person should know about a row that needs no action (amended after sending).
    """

    key: str | None
    state: str = PENDING
    envelope_id: str | None = None
    error: str | None = None
    attempts: int = 0
    sent_at: str | None = None
    digest: str | None = None
    note: str | None = None


def row_digest(row: Mapping[str, Any]) -> str:
    """A digest of a row's content (every column), to tell whether it changed since it was sent."""
    text = json.dumps(row, sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _refuse_constant(name: str) -> Any:
    raise CheckpointError(f"the checkpoint holds {name}, which no checkpoint has")


def _text(value: Any, what: str, key: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > _MAX_TEXT:
        raise CheckpointError(f"the checkpoint's row {key!r} has a malformed {what}")
    return value


#: One checkpoint row: ``(key, state, envelope_id, error, attempts, sent_at, digest)``.
Entry = tuple[str, str, str | None, str | None, int, str | None, str | None]


def _entry(entry: Any) -> Entry:
    """One checkpoint row, checked: ``[key, state, envelope_id, error, attempts, sent_at, digest?]``."""
    if not isinstance(entry, list) or len(entry) not in (6, 7):
        raise CheckpointError("the checkpoint has a row that is not a list of 6 or 7 values")
    key, state, envelope_id, error, attempts, sent_at = entry[:6]
    if not isinstance(key, str) or not key or len(key) > _MAX_TEXT:
        raise CheckpointError("the checkpoint has a row without a usable key")
    if state not in _KEPT:
        raise CheckpointError(f"the checkpoint's row {key!r} has a state it cannot have: {str(state)[:40]!r}")
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 0 <= attempts <= _MAX_ATTEMPTS:
        raise CheckpointError(f"the checkpoint's row {key!r} has a malformed attempts count")
    digest = _text(entry[6], "digest", key) if len(entry) == 7 else None
    return (
        key,
        state,
        _text(envelope_id, "envelope id", key),
        _text(error, "error", key),
        attempts,
        _text(sent_at, "sent_at", key),
        digest,
    )


def parse_checkpoint(data: bytes, *, now: float | None = None) -> tuple[str, list[Entry], float]:
    """A checkpoint's campaign id, its rows (checked) and when it was written.

    Each row is ``(key, state, envelope_id, error, attempts, sent_at, digest)``; ``state`` is one of
    ``in_flight``, ``created``, ``sent``, ``failed`` (pending and invalid rows are not kept).

    :param data: The checkpoint's bytes.
    :param now: The time to judge ``updated_at`` against (default: now).
    :raises CheckpointError: when it is malformed in any way.
    """
    if len(data) > MAX_CHECKPOINT_BYTES:
        raise CheckpointError(f"the checkpoint is {len(data):,} bytes: too large to be a checkpoint")
    try:
        body = json.loads(data, parse_constant=_refuse_constant)
    except CheckpointError:
        raise
    except (ValueError, RecursionError) as err:
        raise CheckpointError(f"the checkpoint is not JSON ({type(err).__name__})") from None
    if not isinstance(body, dict) or body.get("version") not in _READABLE_VERSIONS:
        raise CheckpointError("the checkpoint has an unknown version")
    campaign, entries, updated = body.get("campaign_id"), body.get("rows"), body.get("updated_at")
    if not isinstance(campaign, str) or not isinstance(entries, list):
        raise CheckpointError("the checkpoint has no campaign_id or no rows")
    current = time.time() if now is None else now
    if (
        isinstance(updated, bool)
        or not isinstance(updated, int | float)
        or not 0 < updated <= current + 86400
    ):
        raise CheckpointError("the checkpoint's updated_at is not a time this try can believe")
    return campaign, [_entry(e) for e in entries], float(updated)


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
    #: Checkpoint rows whose keys are not among the rows any more (an amended campaign dropped them).
    dropped: int = 0
    #: Rows found at the service (by externalId) and adopted, not sent, in this try.
    adopted: int = 0
    #: Each row's :func:`row_digest`, in row order (kept in the checkpoint for rows made).
    digests: list[str | None] | None = None

    # -- the checkpoint ---------------------------------------------------------------------------

    def to_bytes(self, *, now: float | None = None) -> bytes:
        """The checkpoint: the campaign and every row not ``pending``/``invalid``, with its digest."""
        body = {
            "version": CHECKPOINT_VERSION,
            "campaign_id": self.campaign_id,
            "rows_total": len(self.rows),
            "updated_at": time.time() if now is None else now,
            "rows": [
                [r.key, r.state, r.envelope_id, r.error, r.attempts, r.sent_at, self._digest_of(i, r)]
                for i, r in enumerate(self.rows)
                if r.state in _KEPT and r.key is not None
            ],
        }
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    def _digest_of(self, index: int, row: RowState) -> str | None:
        if row.digest is None and row.state in (SENT, CREATED) and self.digests is not None:
            row.digest = self.digests[index]  # the content the row was made from
        return row.digest

    def restore(self, data: bytes, *, now: float | None = None) -> int:
        """Take the states of an earlier try's checkpoint; return how many rows it recorded.

        The rows may have changed since (an amended campaign): rows are matched by key; keys the
        checkpoint has and the rows do not are counted in :attr:`dropped`; a sent row whose content
        changed is kept as sent, with a note (it is never sent again).

        :raises CheckpointError: if it is another campaign's, or it is malformed in any way.
        """
        campaign, checked, updated = parse_checkpoint(data, now=now)
        if campaign != self.campaign_id:
            raise CheckpointError(
                f"the checkpoint belongs to campaign {campaign[:200]!r}, not {self.campaign_id!r}: give "
                "this campaign its own result table"
            )
        index: dict[str, int] = {}
        for n, r in enumerate(self.rows):
            if r.key is not None and r.state != INVALID:  # a repeated key's later rows are invalid
                index.setdefault(r.key, n)
        seen: dict[str, Entry] = {}
        for entry in checked:
            key, state, envelope_id, error, attempts, sent_at, digest = entry
            if key in seen:
                if seen[key][1:3] == entry[1:3]:
                    continue  # written twice with the same state and envelope (0.3.x did): one row
                raise CheckpointError(
                    f"the checkpoint has row {key!r} twice, with different envelopes or states"
                )
            seen[key] = entry
            found = index.get(key)
            if found is None:
                self.dropped += 1
                continue
            row = self.rows[found]
            row.state, row.envelope_id, row.error = state, envelope_id, error
            row.attempts, row.sent_at, row.digest = attempts, sent_at, digest
            now_digest = self.digests[found] if self.digests is not None else None
            if state in (SENT, CREATED) and digest and now_digest and digest != now_digest:
                row.note = "the row changed after its envelope was made: not sent again"
                row.digest = digest
        self.resumed_from = updated
        return len(checked)

    def reconcile(self, found: Mapping[str, Sequence[Any]], external_id: Any, *, log: Any) -> None:
        """Make the service, not the checkpoint, say what exists (one listing of the campaign).

        :param found: The campaign's envelopes at the service by ``externalId`` (exact).
        :param external_id: ``key -> externalId``.
        """
        for row in self.rows:
            if row.key is None or row.state == INVALID:  # never sent: a repeated key's envelope is not its
                continue
            matches = found.get(external_id(row.key), ())
            if len(matches) > 1:
                ids = ", ".join(str(m.id) for m in matches[:5])
                row.state, row.envelope_id = FAILED, str(matches[0].id)
                row.error = (
                    f"{len(matches)} envelopes have externalId {external_id(row.key)!r} ({ids}); none is "
                    "sent again: keep one and delete the others"
                )
                continue
            if matches:
                envelope = matches[0]
                draft = str(getattr(envelope.status, "value", envelope.status)) == "DRAFT"
                if row.envelope_id is not None and row.envelope_id != envelope.id and row.state != IN_FLIGHT:
                    log.warning(
                        "Row %r: the checkpoint names envelope %s, but the service's envelope with its "
                        "externalId is %s: the service's is kept, the other is not touched",
                        row.key,
                        row.envelope_id,
                        envelope.id,
                    )
                if row.state not in (SENT, CREATED) or row.envelope_id != envelope.id:
                    self.adopted += 1
                    row.sent_at = None if draft else (row.sent_at or getattr(envelope, "updated_at", None))
                row.envelope_id, row.error = str(envelope.id), None
                row.state = CREATED if draft else SENT
                continue
            if row.state in (SENT, CREATED):
                # The checkpoint says it exists, the service has no envelope with the row's externalId:
                # believe the service; look the row up again as if it were in flight.
                log.warning(
                    "Row %r: the checkpoint says %s (%s) but the service has no envelope with externalId "
                    "%r: looked up again before anything is sent",
                    row.key,
                    row.state,
                    row.envelope_id,
                    external_id(row.key),
                )
                row.state, row.envelope_id, row.note = IN_FLIGHT, None, None
            elif row.state == FAILED:
                row.envelope_id = None

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
                "error": (row.error or row.note)
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
    :param adopted: Rows found already made at the service (adopted, not sent) in this try: they are
        not envelopes of this try's rate.
    """

    envelopes: int
    requests: int
    seconds: float
    limit: int | None
    window: float = 60.0
    adopted: int = 0

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

    @property
    def whole_windows(self) -> bool:
        """Whether the try ran for at least one whole rate window (only then is the limit a yardstick)."""
        return self.seconds >= self.window

    def describe(self) -> str:
        """``912 envelopes/min (0.91x the limit-bound 1,000/min: 1,000 requests/min / 1.00 per envelope)``.

        The rate is compared with the limit only when the try ran at least one whole window: over a
        shorter run, a window's whole allowance can be spent in seconds, and the ratio says nothing.
        """
        text = f"{self.per_minute:,.0f} envelopes/min"
        if self.adopted:
            text += f" ({self.envelopes:,} sent, {self.adopted:,} adopted, not counted)"
        bound = self.limit_bound
        if bound and not self.whole_windows:
            text += (
                f" (ran {format_duration(self.seconds)}, less than one {self.window:.0f}s rate window: "
                "not compared with the limit)"
            )
        elif bound:
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


def first_problems(rows: Sequence[tuple[str, str | None, list[str]]], limit: int = 5) -> str:
    """The first few invalid rows and their problems, for the error that stops a campaign.

    :param rows: ``(where, key, problems)``: where the row is in its file (``line 8``), its key.
    """
    lines = []
    for where, key, problems in rows[:limit]:
        head = where + (f" ({key!r})" if key is not None else "")
        lines.append(f"  - {head}: " + "; ".join(problems[:3]) + (" ..." if len(problems) > 3 else ""))
    if len(rows) > limit:
        lines.append(f"  ... and {len(rows) - limit} more")
    return "\n".join(lines)
