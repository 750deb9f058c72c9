"""The task view's data: the envelopes one task instance handles, and the campaign it sent or works through.

A bulk-send task's tab shows its campaign (the task's counts, a data error said so, why a try stopped,
and the way to the campaign's view), not "no envelope": its XComs name no envelope id. A batch archive
or batch wait whose rendered ``result_table`` is a campaign's shows that campaign too. The campaign is
shown only to a user who may read its own connection. Rejected envelopes say so, with when and why.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from fastapi import HTTPException

from airflow_provider_docsign.ui import access, lookup, reader
from airflow_provider_docsign.ui.batches import task_campaign
from airflow_provider_docsign.ui.campaigns import campaign_connection, run_dict


def task_data(
    state: Any,
    user: Any,
    base: str,
    key: tuple[str, str, str, int],
    hook_of: Callable[[str], Any],
) -> dict[str, Any]:
    """The JSON of ``/api/task`` for the task instance ``key`` (the caller checked its DAG's rights).

    :param state: The app state (settings, caches).
    :param user: The signed-in user.
    :param base: The Airflow UI's base path.
    :param key: ``(dag_id, run_id, task_id, map_index)``.
    :param hook_of: Makes a hook for a connection id.
    """
    configured = state.settings.conn_ids
    if not access.offered(configured, user):  # nothing about contracts for one who may read no connection
        raise HTTPException(403, access.NO_CONNECTION)
    campaign = None
    found = task_campaign(*key)
    if found is not None:
        run, relation = found
        own = access.connection(configured, user, campaign_connection(run))  # 403 names it
        campaign = {**run_dict(run, base), "relation": relation, "connection": own}
    ids, conn_from_task = lookup.task_envelopes(*key)
    if not ids:
        connection = campaign["connection"] if campaign else None
        return {"envelopes": [], "total": 0, "connection": connection, "campaign": campaign}
    chosen = access.connection(configured, user, conn_from_task)
    shown = ids[: reader.TASK_ENVELOPES]

    def load() -> dict[str, Any]:
        hook = hook_of(chosen)
        try:
            now = datetime.now(timezone.utc)
            envelopes = hook.get_envelopes(shown)
            web_url = str(hook.web_url or "")
            rows = [reader.envelope_detail(e, web_url, now) for e in envelopes]
            for row in rows[: reader.AUDIT_ENVELOPES]:
                row["audit"] = reader.audit_rows(hook, row["id"])
            return {"envelopes": rows}
        finally:
            hook.close()

    data, age = state.tasks.get((chosen, tuple(shown)), load)
    return {
        **data,
        "total": len(ids),
        "requests_per_refresh": math.ceil(len(shown) / 20) + min(len(shown), reader.AUDIT_ENVELOPES),
        "connection": chosen,
        "cache_age_seconds": round(age, 1),
        "campaign": campaign,
    }
