"""The Campaigns tab: the bulk sends Airflow ran, their rows, and what the service says of them.

A campaign is found from the ``return_value`` XCom of a task whose serialized operator is the provider's
own ``DocsignBulkSendOperator`` (campaign id, counts, result table), never by scanning storage. Its
result table is read only from a place ``[docsign] ui_result_locations`` allows (see
:mod:`~airflow_provider_docsign.ui.locations`), streamed and bounded; its failed and invalid rows and
its sent envelopes come from it (cached), its envelopes' states from ``get-many`` over the ids actually
read: ``ceil(ids / 20)`` requests per refresh, at most :data:`MAX_CAMPAIGN_ENVELOPES` ids. The counts
an XCom declares are shown as the task's word, never used as a budget; one that is not a count is a
data error. A try that stopped before the end writes no result table: it is listed from what it
pushed (``STOPPED_XCOM_KEY``), marked stopped with its reason, and read from its checkpoint. The list
spends at most :data:`LIST_REQUESTS` requests and reads at most :data:`LIST_TABLES` campaigns' files
per refresh (newest first); the others load when opened. A campaign is listed only under its own
connection. Its funnel, signed share and time to sign (:func:`turnaround_of`) come from the same read
and the rows' ``sent_at``, by the definitions of :mod:`~airflow_provider_docsign.service.turnaround`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.service.expiry import mask_text
from airflow_provider_docsign.ui import reader
from airflow_provider_docsign.ui.locations import (
    Refused,
    Table,
    allow,
    parse_places,
    read_checkpoint_bytes,
    read_table,
)
from airflow_provider_docsign.ui.lookup import CampaignRun, TaskRef

#: The list spends at most this many service requests per refresh (``get-many``, 20 ids each), counted
#: on the envelope ids its result tables and checkpoints actually hold, never on an XCom's counts.
LIST_REQUESTS = 100
#: The list reads at most this many campaigns' files per refresh (newest first); the others when opened.
LIST_TABLES = 20
#: A campaign's view reads the service's state of at most this many envelopes (250 requests).
MAX_CAMPAIGN_ENVELOPES = 5_000
#: The most a count may be (the bulk operator's rows are far fewer); more is a data error.
MAX_COUNT = 10_000_000


def _count(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
    return value if ok else None


def campaign_connection(run: CampaignRun) -> str:
    """The docsign connection a campaign was sent through (the operator's default when it says none)."""
    named = run.result.get("docsign_conn_id")
    return named if isinstance(named, str) and named else "docsign_default"


def run_dict(run: CampaignRun, base: str) -> dict[str, Any]:
    """A campaign as the browser reads it: the task's counts (a false one is a data error), the task."""
    result = run.result
    raw = result.get("counts")
    counts: dict[str, Any] = raw if isinstance(raw, dict) else {}
    task = TaskRef(run.dag_id, run.run_id, run.task_id, run.map_index, "sent", run.finished)
    # The XCom's counts are shown as what the task said, never used as a budget; a count that is not
    # one (negative, huge, not a number, absent) is a data error, said so.
    problems = [f"counts.{k}" for k in ("sent", "invalid", "failed") if _count(counts.get(k)) is None]
    if _count(result.get("rows")) is None:
        problems.insert(0, "rows")
    return {
        "campaign_id": result.get("campaign_id"),
        "rows": _count(result.get("rows")),
        "counts": {str(k)[:50]: v for k, v in list(counts.items())[:20] if _count(v) is not None},
        "data_error": f"the task's XCom holds no valid {', '.join(problems)}" if problems else None,
        "finished": run.finished,
        "task": task.to_dict(base),
        "connection": campaign_connection(run),
        "stopped": mask_text(str(result["stopped"])[:2000]) if run.stopped else None,
    }


def _allowed(state: Any, run: CampaignRun, what: str) -> Any:
    places = parse_places(state.settings.result_locations)
    return allow(places, run.result.get(what), run.result.get(f"{what}_conn_id"), what.replace("_", " "))


def _sent_ids(state: Any, run: CampaignRun) -> list[str]:
    if run.stopped:
        return [entry[2] for entry in _checkpoint(state, run) if entry[1] == "sent" and entry[2]]
    return list(_table(state, run).envelope_ids)


def sent_times(state: Any, run: CampaignRun) -> dict[str, Any]:
    """Envelope id -> the bulk send's ``sent_at`` for its row (result table, or a stopped try's checkpoint).

    The first row of an id wins, as it does for the ids read.
    """
    if run.stopped:
        times: dict[str, Any] = {}
        for entry in _checkpoint(state, run):
            if entry[1] == "sent" and entry[2]:
                times.setdefault(entry[2], entry[5])
        return times
    return dict(getattr(_table(state, run), "sent_at", {}))


def turnaround_of(envelopes: list[Any], sent_at: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A campaign's funnel, signed share and time to sign, from the one definition in ``turnaround``.

    Each envelope's send time is its row's ``sent_at`` (source ``campaign``); one that is not a time, or
    is later than ``now``, is not believed and the envelope is counted in ``sent_times.unknown``.

    :param envelopes: The campaign's envelopes as ``get-many`` read them.
    :param sent_at: Envelope id -> its row's ``sent_at``.
    :param now: The time everything is judged at.
    """
    pairs = [(e, turnaround.sent(campaign=sent_at.get(e.id), now=now)) for e in envelopes]
    known = [s.at for _, s in pairs if s is not None]
    signatures = [(s, turnaround.last_signature(e)) for e, s in pairs]
    stages = turnaround.funnel(envelopes, now)
    return {
        "funnel": {"stages": stages, "shares": turnaround.funnel_shares(stages)},
        "share": {
            "table": turnaround.signed_share(signatures, now, turnaround.SHARE_HOURS),
            "points": turnaround.signed_share(signatures, now, turnaround.chart_hours(known, now)),
        },
        "time_to_sign": turnaround.summarize(pairs).to_dict(),
        "sent_times": {"source": "campaign", "known": len(known), "unknown": len(pairs) - len(known)},
        "judged_at": turnaround.iso(now),
    }


def _checkpoint(state: Any, run: CampaignRun) -> list[Any]:
    """The rows of a stopped try's checkpoint (cached like a result table)."""
    from airflow_provider_docsign.bulk.state import CheckpointError, parse_checkpoint

    allowed = _allowed(state, run, "checkpoint")

    def load() -> list[Any]:
        try:
            data = read_checkpoint_bytes(allowed)
            campaign, rows, _ = parse_checkpoint(data)
        except (Refused, CheckpointError) as error:
            raise Refused(f"the checkpoint {allowed.target!r} cannot be read: {error}") from None
        if campaign != run.result.get("campaign_id"):
            raise Refused(f"the checkpoint {allowed.target!r} belongs to another campaign")
        return rows

    rows, _ = state.tables.get(("checkpoint", allowed), load)
    return list(rows)


def _table(state: Any, run: CampaignRun) -> Table:
    allowed = _allowed(state, run, "result_table")

    def load() -> Table:
        try:
            return read_table(allowed, run.result.get("format"))
        except Refused as error:
            raise Refused(f"the result table {allowed.target!r} cannot be read: {error}") from None

    table: Table = state.tables.get(("campaign", allowed), load)[0]
    return table


def _service_state(
    state: Any,
    conn_id: str,
    run: CampaignRun,
    hook_of: Callable[[str], Any],
    now: datetime | None = None,
) -> dict[str, Any]:
    key = (conn_id, run.result.get("campaign_id"), run.finished)

    def load() -> dict[str, Any]:
        read = _sent_ids(state, run)
        ids = read[:MAX_CAMPAIGN_ENVELOPES]
        hook = hook_of(conn_id)
        try:
            envelopes = hook.get_envelopes(ids)
        finally:
            hook.close()
        judged = now or datetime.now(timezone.utc)
        counts = reader.campaign_state(envelopes, judged)
        counts["not_found"] = len(ids) - len(envelopes)
        return {
            **turnaround_of(envelopes, sent_times(state, run), judged),
            "counts": counts,
            "requests": math.ceil(len(ids) / 20),
            "envelopes": len(ids),
            "truncated": f"only the first {len(ids)} of {len(read)} envelopes are read"
            if len(read) > len(ids)
            else None,
        }

    value, age = state.states.get(key, load)
    return {**value, "cache_age_seconds": round(age, 1)}


def campaign_summaries(
    state: Any, conn_id: str, runs: list[CampaignRun], base: str, hook_of: Callable[[str], Any]
) -> dict[str, Any]:
    """The Campaigns tab's list: each campaign's counts, and the service's for the newest ones.

    :param state: The app state (caches).
    :param conn_id: The connection the page shows.
    :param runs: The bulk-send runs the user may read.
    :param base: The Airflow UI's base path.
    :param hook_of: Makes a hook for a connection id.
    """
    requests_left, tables_left = LIST_REQUESTS, LIST_TABLES
    out = []
    for run in runs:
        if campaign_connection(run) != conn_id:
            continue
        row = run_dict(run, base)
        row["service"] = None
        out.append(row)
        if tables_left <= 0 or requests_left <= 0:
            row["service_note"] = "loads when opened"
            continue
        tables_left -= 1
        try:
            ids = _sent_ids(state, run)
        except Exception as error:  # one unreadable table must not hide the others
            row["service_error"] = mask_text(str(error)[:1000])
            continue
        cost = math.ceil(min(len(ids), MAX_CAMPAIGN_ENVELOPES) / 20)
        if cost > requests_left:
            row["service_note"] = "loads when opened"
            continue
        requests_left -= cost
        try:
            row["service"] = _service_state(state, conn_id, run, hook_of)
        except Exception as error:
            row["service_error"] = mask_text(str(error)[:1000])
    return {"connection": conn_id, "campaigns": out, "list_requests": LIST_REQUESTS}


def campaign_page(
    state: Any,
    conn_id: str,
    run: CampaignRun,
    base: str,
    hook_of: Callable[[str], Any],
    now: datetime | None = None,
) -> dict[str, Any]:
    """One campaign: its counts, the service's state of its envelopes (``ceil(sent / 20)`` requests).

    Its funnel, signed share and time to sign come from the same read (:func:`turnaround_of`).

    :param state: The app state.
    :param conn_id: The connection.
    :param run: The campaign's bulk-send run.
    :param base: The Airflow UI's base path.
    :param hook_of: Makes a hook for a connection id.
    :param now: The time the numbers are judged at (default: now; a test's clock).
    """
    data = run_dict(run, base)
    data["connection"] = conn_id
    data["service"] = _service_state(state, conn_id, run, hook_of, now)
    return data


def campaign_rows(state: Any, run: CampaignRun, page: int, page_size: int) -> dict[str, Any]:
    """The campaign's failed and invalid rows with their reasons, one page, e-mails masked.

    :param state: The app state.
    :param run: The campaign's run.
    :param page: The page (from 1).
    :param page_size: Rows per page.
    """
    if run.stopped:  # no result table: the failed rows so far, from the checkpoint
        problems = [
            {
                "row": None,
                "row_key": mask_text(str(key)[:500]),
                "status": kept,
                "error": mask_text(str(error)[:500]) if error is not None else None,
                "attempts": attempts,
            }
            for key, kept, _, error, attempts, *_ in _checkpoint(state, run)
            if kept == "failed"
        ]
    else:
        problems = _table(state, run).problems
    start = (page - 1) * page_size
    return {
        "page": page,
        "page_size": page_size,
        "total": len(problems),
        "pages": max(1, math.ceil(len(problems) / page_size)),
        "items": problems[start : start + page_size],
    }
