"""The Campaigns tab's stopped campaigns fed what a careless or hostile XCom or file could hold.

A stopped try's XCom names its checkpoint; the page reads that file. Checkpoints that are malformed,
another campaign's, missing or not named, and reasons that look like markup or a template: each
campaign is still listed, says what is wrong with its checkpoint, and nothing is asked of the service
(requests counted at the sandbox).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bulk_helpers import stopped_campaign

from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.skipif(
    not AIRFLOW_V_3_1_PLUS, reason="the Contracts pages are an Airflow 3.1+ UI plugin"
)


def listed(conn: str, pushed: dict[str, Any]) -> dict[str, Any]:
    from airflow_provider_docsign.ui.app import State
    from airflow_provider_docsign.ui.campaigns import campaign_summaries
    from airflow_provider_docsign.ui.lookup import CampaignRun
    from airflow_provider_docsign.ui.settings import UiSettings

    run = CampaignRun("docsign_bulk", "manual__1", "bulk", -1, None, pushed)
    checkpoint = pushed.get("checkpoint")
    named = isinstance(checkpoint, str) and checkpoint.startswith("file://")
    where = str(Path(checkpoint[len("file://") :]).parent) if named else "/nonexistent"
    settings = UiSettings(result_locations=(where,))  # the folder the api-server may read
    (row,) = campaign_summaries(State(settings), conn, [run], "/", DocsignHook)["campaigns"]
    return row


@pytest.fixture
def pushed(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> dict[str, Any]:
    value = stopped_campaign(hook, sandbox, make_pdf, tmp_path / "results.jsonl")
    sandbox.clear_requests()
    return value


def _checkpoint(pushed: dict[str, Any]) -> Path:
    return Path(pushed["checkpoint"][len("file://") :])


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (
            lambda p: p.write_bytes(b'{"version": 2, "campaign_id": "renewals-stopped", "rows": [["k"]]}'),
            "cannot be read",
        ),
        (lambda p: p.write_bytes(b"\x00\xff not json"), "is not JSON"),
        (lambda p: p.write_bytes(b'{"version": 99}'), "unknown version"),
        (lambda p: p.unlink(), "cannot be read"),
    ],
    ids=["malformed-row", "binary", "unknown-version", "gone"],
)
def test_a_damaged_checkpoint_is_named_and_nothing_is_asked(
    docsign_conn: str, sandbox: SandboxServer, pushed: dict[str, Any], damage: Any, words: str
) -> None:
    damage(_checkpoint(pushed))
    row = listed(docsign_conn, pushed)
    assert row["campaign_id"] == "renewals-stopped"
    assert row["service"] is None
    assert words in row["service_error"], row["service_error"]
    assert sandbox.requests() == []


def test_another_campaigns_checkpoint_is_not_read_as_this_ones(
    docsign_conn: str, sandbox: SandboxServer, pushed: dict[str, Any]
) -> None:
    path = _checkpoint(pushed)
    body = json.loads(path.read_bytes())
    body["campaign_id"] = "someone-elses"
    path.write_text(json.dumps(body))
    row = listed(docsign_conn, pushed)
    assert "belongs to another campaign" in row["service_error"]
    assert sandbox.requests() == []


@pytest.mark.parametrize("checkpoint", [None, "", 42, ["file:///tmp/x"]])
def test_a_checkpoint_not_named_is_said_plainly(
    docsign_conn: str, sandbox: SandboxServer, pushed: dict[str, Any], checkpoint: Any
) -> None:
    row = listed(docsign_conn, {**pushed, "checkpoint": checkpoint})
    assert "names no checkpoint" in row["service_error"]
    assert sandbox.requests() == []


def test_a_reason_that_looks_like_markup_or_a_template_comes_back_literally_and_masked(
    docsign_conn: str, pushed: dict[str, Any]
) -> None:
    reason = "<img src=x onerror=alert(1)> {{ conn.docsign_default.password }} owner@customer.example"
    row = listed(docsign_conn, {**pushed, "stopped": reason})
    assert (
        row["stopped"]
        == "<img src=x onerror=alert(1)> {{ conn.docsign_default.password }} o***@customer.example"
    )
