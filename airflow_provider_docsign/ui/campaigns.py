"""The Campaigns tab: the bulk sends Airflow ran, their rows, and what the service says of them.

A campaign is found from the ``return_value`` XCom of its ``DocsignBulkSendOperator`` task (campaign id,
counts, result table), never by scanning storage. Its failed and invalid rows are read from its result
table (cached), its envelopes' states with ``get-many`` over the table's sent envelopes: at most
``ceil(sent / 20)`` requests per refresh, cached like the list. A try that stopped before the end
(past ``max_failures``, say) writes no result table: it is listed from what it pushed instead
(``STOPPED_XCOM_KEY``), marked stopped with its reason, and its sent envelopes and failed rows are
read from its checkpoint (invalid rows are not kept there). The list loads the states of the newest
campaigns up to :data:`LIST_BUDGET` envelopes per refresh; the others load when opened.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from airflow_provider_docsign.service.expiry import mask_email
from airflow_provider_docsign.ui import reader
from airflow_provider_docsign.ui.lookup import CampaignRun, TaskRef

#: The list reads the service's state of at most this many envelopes per refresh (100 requests).
LIST_BUDGET = 2_000
#: A string that looks like an e-mail address (row keys and errors may hold one).
_EMAIL = re.compile(r"[^\s@'\"<>(),;:]+@[^\s@'\"<>(),;:]+\.[^\s@'\"<>(),;:]+")


def mask_text(value: Any) -> Any:
    """Every e-mail address inside a string masked (``a***@example.com``); other values as they are."""
    if not isinstance(value, str):
        return value
    return _EMAIL.sub(lambda m: mask_email(m.group(0)), value)


def _run_dict(run: CampaignRun, base: str) -> dict[str, Any]:
    result = run.result
    raw = result.get("counts")
    counts: dict[str, Any] = raw if isinstance(raw, dict) else {}
    task = TaskRef(run.dag_id, run.run_id, run.task_id, run.map_index, "sent", run.finished)
    return {
        "campaign_id": result.get("campaign_id"),
        "rows": result.get("rows"),
        "counts": {str(k): v for k, v in counts.items() if isinstance(v, int)},
        "finished": run.finished,
        "task": task.to_dict(base),
        "connection": result.get("docsign_conn_id"),
        "stopped": mask_text(str(result["stopped"])) if run.stopped else None,
    }


def table_location(result: dict[str, Any], what: str = "result_table") -> str:
    """Where a campaign's result table (or checkpoint) can be opened, from its XCom.

    A local path, or a URI with its object store's connection (``s3://conn@bucket/key``): the XCom's
    URI never carries the connection, its ``<what>_conn_id`` does.

    :param result: The bulk-send task's ``return_value`` (or its stopped try's XCom).
    :param what: ``result_table`` or ``checkpoint``.
    :raises ValueError: when the XCom names no such file.
    """
    table = result.get(what)
    if not isinstance(table, str) or not table:
        raise ValueError(f"the campaign's XCom names no {what.replace('_', ' ')}")
    if table.startswith("file://"):
        return table[len("file://") :]
    conn_id = result.get(f"{what}_conn_id")
    scheme, sep, rest = table.partition("://")
    if sep and isinstance(conn_id, str) and conn_id and "@" not in rest.split("/", 1)[0]:
        return f"{scheme}://{conn_id}@{rest}"
    return table


def _sent_ids(state: Any, run: CampaignRun) -> list[str]:
    if run.stopped:
        return [entry[2] for entry in _checkpoint(state, run) if entry[1] == "sent" and entry[2]]
    return list(_table(state, run).envelope_ids)


def _checkpoint(state: Any, run: CampaignRun) -> list[Any]:
    """The rows of a stopped try's checkpoint (cached like a result table)."""
    from airflow_provider_docsign.bulk.state import MAX_CHECKPOINT_BYTES, CheckpointError, parse_checkpoint
    from airflow_provider_docsign.bulk.store import resolve_path

    location = table_location(run.result, "checkpoint")

    def load() -> list[Any]:
        path = resolve_path(location, "checkpoint")
        try:
            with path.open("rb") as fh:
                data = bytes(fh.read(MAX_CHECKPOINT_BYTES + 1))  # parse_checkpoint refuses more
            campaign, rows, _ = parse_checkpoint(data)
        except (OSError, CheckpointError) as error:
            raise ValueError(f"the checkpoint {location!r} cannot be read: {error}") from error
        if campaign != run.result.get("campaign_id"):
            raise ValueError(f"the checkpoint {location!r} belongs to another campaign")
        return rows

    rows, _ = state.tables.get(("checkpoint", location), load)
    return list(rows)


def _table(state: Any, run: CampaignRun) -> Any:
    from airflow_provider_docsign.sensors._campaign import read_campaign

    table = table_location(run.result)
    fmt = run.result.get("format")
    loaded, _ = state.tables.get(("campaign", table), lambda: read_campaign(table, fmt))
    return loaded


def _service_state(
    state: Any, conn_id: str, run: CampaignRun, hook_of: Callable[[str], Any]
) -> dict[str, Any]:
    key = (conn_id, run.result.get("campaign_id"), run.finished)

    def load() -> dict[str, Any]:
        ids = _sent_ids(state, run)
        hook = hook_of(conn_id)
        try:
            envelopes = hook.get_envelopes(ids)
        finally:
            hook.close()
        counts = reader.campaign_state(envelopes, datetime.now(timezone.utc))
        counts["not_found"] = len(ids) - len(envelopes)
        return {"counts": counts, "requests": math.ceil(len(ids) / 20), "envelopes": len(ids)}

    value, age = state.states.get(key, load)
    return {**value, "cache_age_seconds": round(age, 1)}


def _belongs(run: CampaignRun, conn_id: str) -> bool:
    named = run.result.get("docsign_conn_id")
    return named is None or named == conn_id


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
    budget = LIST_BUDGET
    out = []
    for run in runs:
        if not _belongs(run, conn_id):
            continue
        row = _run_dict(run, base)
        sent = int(row["counts"].get("sent", 0))
        row["service"] = None
        if sent <= budget:
            budget -= sent
            try:
                row["service"] = _service_state(state, conn_id, run, hook_of)
            except Exception as error:  # one unreadable table must not hide the others
                row["service_error"] = mask_text(str(error))
        out.append(row)
    return {"connection": conn_id, "campaigns": out, "list_budget": LIST_BUDGET}


def campaign_page(
    state: Any, conn_id: str, run: CampaignRun, base: str, hook_of: Callable[[str], Any]
) -> dict[str, Any]:
    """One campaign: its counts, the service's state of its envelopes (``ceil(sent / 20)`` requests).

    :param state: The app state.
    :param conn_id: The connection.
    :param run: The campaign's bulk-send run.
    :param base: The Airflow UI's base path.
    :param hook_of: Makes a hook for a connection id.
    """
    data = _run_dict(run, base)
    data["connection"] = conn_id
    data["service"] = _service_state(state, conn_id, run, hook_of)
    return data


def campaign_rows(state: Any, run: CampaignRun, page: int, page_size: int) -> dict[str, Any]:
    """The campaign's failed and invalid rows with their reasons, one page, e-mails masked.

    :param state: The app state.
    :param run: The campaign's run.
    :param page: The page (from 1).
    :param page_size: Rows per page.
    """
    from airflow_provider_docsign.bulk.plan import OUTPUT_FORMATS, format_of, read_rows
    from airflow_provider_docsign.bulk.store import resolve_path

    if run.stopped:  # no result table: the failed rows so far, from the checkpoint
        table = table_location(run.result, "checkpoint")

        def load() -> list[dict[str, Any]]:
            return [
                {
                    "row": None,
                    "row_key": mask_text(key),
                    "status": kept,
                    "error": mask_text(error),
                    "attempts": attempts,
                }
                for key, kept, _, error, attempts, *_ in _checkpoint(state, run)
                if kept == "failed"
            ]

    else:
        table = table_location(run.result)

        def load() -> list[dict[str, Any]]:
            path = resolve_path(table, "result_table")
            rows = read_rows(path, format_of(path, run.result.get("format"), OUTPUT_FORMATS, "result_table"))
            return [
                {
                    "row": number,
                    "row_key": mask_text(row.get("row_key")),
                    "status": row.get("status"),
                    "error": mask_text(row.get("error")),
                    "attempts": row.get("attempts"),
                }
                for number, row in enumerate(rows, start=1)
                if row.get("status") in ("failed", "invalid")
            ]

    problems, _ = state.tables.get(("problems", table), load)
    start = (page - 1) * page_size
    return {
        "page": page,
        "page_size": page_size,
        "total": len(problems),
        "pages": max(1, math.ceil(len(problems) / page_size)),
        "items": problems[start : start + page_size],
    }
