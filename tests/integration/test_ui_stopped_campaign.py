"""A campaign whose bulk-send try stopped before the end is on the Campaigns tab (issue 38 follow-up).

A stopped try writes no result table (the table means "finished"), so the page used to miss exactly
the campaigns that need a look. The try now pushes what it knows (``STOPPED_XCOM_KEY``); the page lists
it as stopped with the reason, and reads its sent envelopes and failed rows from the checkpoint. Run
against the sandbox over HTTP: the operator stops for real (three refused creations past
``max_failures=2``), and the page's reads are counted there.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from bulk_helpers import stopped_campaign

from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.skipif(
    not AIRFLOW_V_3_1_PLUS, reason="the Contracts pages are an Airflow 3.1+ UI plugin"
)


def test_a_stopped_campaign_is_listed_with_its_reason_and_read_from_its_checkpoint(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    from airflow_provider_docsign.ui.app import State
    from airflow_provider_docsign.ui.campaigns import campaign_page, campaign_rows, campaign_summaries
    from airflow_provider_docsign.ui.lookup import CampaignRun
    from airflow_provider_docsign.ui.settings import UiSettings

    pushed = stopped_campaign(hook, sandbox, make_pdf, tmp_path / "results.jsonl")
    assert pushed["campaign_id"] == "renewals-stopped"
    assert pushed["docsign_conn_id"] == docsign_conn
    assert pushed["rows"] == 30
    assert pushed["counts"]["failed"] == 3
    sent = pushed["counts"]["sent"]
    assert sent == 10  # adopted from the earlier run
    assert "max_failures=2" in pushed["stopped"]
    assert pushed["checkpoint"].startswith("file://")

    run = CampaignRun("docsign_bulk", "manual__1", "bulk", -1, "2026-11-26T12:00:00+00:00", pushed)
    assert run.stopped
    state = State(UiSettings(result_locations=(str(tmp_path),)))  # the api-server may read it there
    hooks: list[DocsignHook] = []

    def hook_of(conn_id: str) -> DocsignHook:
        hooks.append(DocsignHook(conn_id))
        return hooks[-1]

    sandbox.clear_requests()
    listed = campaign_summaries(state, docsign_conn, [run], "/", hook_of)["campaigns"]
    assert [c["campaign_id"] for c in listed] == ["renewals-stopped"]
    assert "max_failures=2" in listed[0]["stopped"]
    assert listed[0]["counts"]["failed"] == 3
    # What was sent is read from the checkpoint, and asked of the service with get-many only.
    service = listed[0]["service"]
    assert service["envelopes"] == sent
    assert service["counts"]["not_found"] == 0
    assert service["counts"]["pending"] + service["counts"]["completed"] == sent
    opened = campaign_page(state, docsign_conn, run, "/", hook_of)
    assert opened["stopped"] == listed[0]["stopped"]
    served = sandbox.requests()
    assert {r["path"] for r in served} == {"/envelope/get-many"}
    assert len(served) <= math.ceil(sent / 20)  # the page's open reuses the list's cached read
    # The failed rows so far, with the service's reason; nothing else (invalid rows are not kept).
    problems = campaign_rows(state, run, 1, 50)
    assert problems["total"] == 3
    assert {p["status"] for p in problems["items"]} == {"failed"}
    assert all("400" in str(p["error"]) for p in problems["items"]), problems["items"]
    assert all(p["row"] is None and p["attempts"] == 1 for p in problems["items"])
    assert "careless.owner@customer.example" not in repr(listed) + repr(problems)
    assert "c***@customer.example" in {p["row_key"] for p in problems["items"]}
    for made in hooks:
        made.close()
