"""The bulk send's steps before the pool starts: checkpoint, the service's listing, templates, checks.

Functions of the operator's hook and logger (no operator state), so that the operator reads as the
order of its steps: lease, restore, reconcile, read templates, validate, run, write the table.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_docsign.bulk.plan import BulkConfigError, CampaignPlan, SourceRows
from airflow_provider_docsign.bulk.state import (
    CREATED,
    INVALID,
    PENDING,
    SENT,
    CampaignState,
    CheckpointError,
    first_problems,
)
from airflow_provider_docsign.bulk.store import CheckpointFile
from airflow_provider_docsign.exceptions import DocsignAuthError, DocsignNotFoundError, DocsignValidationError
from airflow_provider_docsign.operators._base import PERMANENT_ERRORS, fail_now

__all__ = [
    "describe_try",
    "install_pacer",
    "read_templates",
    "reconcile_with_service",
    "restore_checkpoint",
    "validate_rows",
]


def restore_checkpoint(
    log: Any, checkpoint: CheckpointFile, state: CampaignState, plan: CampaignPlan
) -> None:
    """Take an earlier try's checkpoint (matched by key: the rows may have been amended since)."""
    previous = checkpoint.read()
    if previous is None:
        return
    try:
        recorded = state.restore(previous)
    except CheckpointError as err:
        raise fail_now(
            CheckpointError(
                f"{checkpoint.uri}: {err}. It was left as found, and nothing was sent. To go on, move it "
                "aside (rename it, to keep it for a person to look at) and run the task again: the next "
                "try rebuilds every row's state from the campaign's envelopes at the service, and sends "
                "no row twice"
            )
        ) from err
    log.info(
        "Resuming campaign %s from %s (%d rows recorded%s)",
        plan.campaign_id,
        checkpoint.uri,
        recorded,
        f"; {state.dropped} of them are not among the rows any more" if state.dropped else "",
    )
    amended = [r.key for r in state.rows if r.note]
    if amended:
        log.warning(
            "%d rows changed after their envelope was made; they are not sent again (the result "
            "table notes them): %s%s",
            len(amended),
            ", ".join(repr(k) for k in amended[:10]),
            " ..." if len(amended) > 10 else "",
        )


def reconcile_with_service(hook: Any, log: Any, plan: CampaignPlan, state: CampaignState) -> None:
    """List the campaign's envelopes at the service once; adopt what exists, distrust the rest.

    ``query=<campaign id>(`` is a substring search (title, externalId, recipients): results are
    matched to rows by exact ``externalId``. Costs one request per 100 envelopes of the campaign.
    """
    prefix = plan.search_text
    found: dict[str, list[Any]] = {}
    listed = 0
    for envelope in hook.find_envelopes(query=prefix, folder_id=plan.folder_id):
        listed += 1
        external = envelope.external_id or ""
        if external.startswith(prefix) and external.endswith(")"):
            found.setdefault(external, []).append(envelope)
    state.reconcile(found, plan.external_id, log=log)
    log.info(
        "Campaign %s at the service: %d envelopes with its externalIds (%d listed for %r); %d rows adopted",
        plan.campaign_id,
        sum(len(v) for v in found.values()),
        listed,
        prefix,
        state.adopted,
    )


def read_templates(
    hook: Any, plan: CampaignPlan, rows: Sequence[Mapping[str, Any]], state: CampaignState
) -> dict[str, Any]:
    """Read each template the rows still to send use, once (a missing one is each row's problem)."""
    wanted = {
        plan.template_id_of(row)
        for row, rs in zip(rows, state.rows, strict=True)
        if rs.state not in (SENT, CREATED)
    }
    templates: dict[str, Any] = {}
    for template_id in sorted(t for t in wanted if t):
        try:
            templates[template_id] = hook.get_template(template_id)
        except DocsignAuthError as err:
            raise fail_now(err) from err
        except (DocsignNotFoundError, DocsignValidationError) as err:
            templates[template_id] = f"cannot be used ({err})"
        except PERMANENT_ERRORS as err:
            templates[template_id] = f"cannot be read ({err})"
    return templates


def validate_rows(
    log: Any,
    max_invalid: int,
    plan: CampaignPlan,
    read: SourceRows,
    keys: Sequence[tuple[str | None, list[str]]],
    state: CampaignState,
    templates: Mapping[str, Any],
) -> None:
    """Check every row not yet sent; mark the bad ones invalid; fail past ``max_invalid``."""
    started = time.monotonic()
    rows = read.rows
    invalid: list[tuple[str, str | None, list[str]]] = []
    for index, (row, (key, key_problems), rs) in enumerate(zip(rows, keys, state.rows, strict=True)):
        if rs.state in (SENT, CREATED):
            continue
        problems = read.problems[index] or key_problems or plan.problems(row, key or "", templates)
        if not problems:
            continue
        invalid.append((read.where[index], key, problems))
        if rs.state == PENDING:
            rs.state, rs.error = INVALID, "; ".join(problems)
    log.info(
        "Checked %d rows in %.1fs: %d invalid (max_invalid=%d)",
        len(rows),
        time.monotonic() - started,
        len(invalid),
        max_invalid,
    )
    if len(invalid) > max_invalid:
        raise fail_now(
            BulkConfigError(
                f"{len(invalid)} of {len(rows)} rows are invalid, more than "
                f"max_invalid={max_invalid}; nothing was sent:\n{first_problems(invalid)}"
            )
        )


def describe_try(context: Any) -> str:
    """Who a try is, for another try's error: ``dag.task run <run id> try 2``."""
    ti = context.get("ti") if isinstance(context, Mapping) else None
    if ti is None:
        return "a task outside Airflow"
    return (
        f"{getattr(ti, 'dag_id', '?')}.{getattr(ti, 'task_id', '?')} run {getattr(ti, 'run_id', '?')} "
        f"try {getattr(ti, 'try_number', '?')}"
    )


def install_pacer(hook: Any, reserve_fraction: float, log: logging.Logger | Any) -> Any:
    """Pace every request of ``hook`` through one :class:`~..hooks._pacing.SharedPacer`; return it.

    The hook's session (and the connection) is made here, once, before any thread shares the hook.
    """
    from airflow_provider_docsign.hooks._pacing import SharedPacer

    pacer = SharedPacer(reserve_fraction=reserve_fraction)
    hook.session  # noqa: B018 - the connection is looked up here, once, not by every thread

    def after_response(status: int, rate_limit: Any, retry_after: float | None) -> None:
        pacer.observe(rate_limit)
        if status == 429:
            pause = pacer.on_throttled(retry_after)
            log.warning("The service answered 429: every request of this task waits %.1fs", pause)
        else:
            pacer.on_success()

    hook.before_request = pacer.acquire
    hook.after_response = after_response
    return pacer
