"""A campaign's funnel, signed share and time to sign, attacked through its result table.

The numbers come from the table's ``sent_at`` (a DAG author's worker wrote it) and the envelopes the view
already reads with ``get-many``. A careless or hostile table holds times that are no times, times in the
future, an envelope twice with two times, 5,000 ids, ids whose envelope is gone, or lies where the
api-server may not read: each case asserts the safe outcome, counted at the sandbox.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.skipif(
    not AIRFLOW_V_3_1_PLUS, reason="the Contracts pages are an Airflow 3.1+ UI plugin"
)

NOW = datetime.now(timezone.utc).replace(microsecond=0)
SENT = NOW - timedelta(days=20)


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _signed(sandbox: SandboxServer, hours: list[float]) -> list[str]:
    """Envelopes signed ``hours`` after SENT, one each."""
    specs = []
    for n, h in enumerate(hours):
        at = _iso(SENT + timedelta(hours=h))
        signer = {
            "email": f"s{n}@hostile.example",
            "role": "SIGNER",
            "signingStatus": "SIGNED",
            "signedAt": at,
        }
        specs.append({"title": f"T {n}", "status": "COMPLETED", "completedAt": at, "recipients": [signer]})
    return sandbox.seed(specs)


def _view(
    tmp_path: Path, conn: str, lines: list[str], *, allowed: Path | None = None, campaign: str = "hostile-tt"
) -> tuple[Any, Any]:
    """The app state (reading campaign files under ``allowed``) and a campaign whose table holds ``lines``."""
    from airflow_provider_docsign.ui.app import State
    from airflow_provider_docsign.ui.lookup import CampaignRun
    from airflow_provider_docsign.ui.settings import UiSettings

    table = tmp_path / "tables" / f"{campaign}.jsonl"
    table.parent.mkdir(parents=True, exist_ok=True)
    table.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    result = {
        "campaign_id": campaign,
        "docsign_conn_id": conn,
        "rows": len(lines),
        "counts": {"sent": len(lines), "invalid": 0, "failed": 0},
        "result_table": str(table),
        "format": "jsonl",
    }
    run = CampaignRun("hostile_dag", "manual__1", "bulk", -1, _iso(NOW), result)
    state = State(UiSettings(result_locations=(str(allowed or tmp_path / "tables"),)))
    return state, run


def _row(envelope_id: str, sent_at: Any = None, **extra: Any) -> str:
    row = {"row_key": envelope_id, "status": "sent", "envelope_id": envelope_id, **extra}
    if sent_at is not None:
        row["sent_at"] = sent_at
    return json.dumps(row)


def test_send_times_that_are_no_times_in_the_future_or_twice_are_not_believed(
    docsign_conn: str, sandbox: SandboxServer, tmp_path: Path
) -> None:
    from airflow_provider_docsign.ui.campaigns import campaign_page

    ids = _signed(sandbox, [1, 2, 3, 4, 5, 6, 7, 8, 9])
    good = _iso(SENT)
    lines = [
        _row(ids[0], good),
        _row(ids[1], good),
        _row(ids[2], "yesterday"),
        _row(ids[3]),  # no sent_at at all
        _row(ids[4], 1_700_000_000),  # a number, not a time
        _row(ids[5], _iso(NOW + timedelta(days=1))),  # tomorrow
        _row(ids[6], "9999-12-31T23:59:59.999Z"),
        _row(ids[7], "2026-11-23T10:00:00Z" + "9" * 5000),  # huge
        _row(ids[8], "NAN_HERE").replace('"NAN_HERE"', "NaN"),  # JSON's NaN
        _row(ids[0], _iso(SENT - timedelta(days=300))),  # the same envelope again, another time: ignored
        _row(ids[1], "{{ ti.xcom_pull('x') }}"),
    ]
    state, run = _view(tmp_path, docsign_conn, lines)
    sandbox.clear_requests()
    svc = campaign_page(state, docsign_conn, run, "/", DocsignHook, now=NOW)["service"]
    assert [r["path"] for r in sandbox.requests()] == ["/envelope/get-many"]  # 9 distinct ids: one request
    assert svc["envelopes"] == 9
    assert svc["sent_times"] == {"source": "campaign", "known": 2, "unknown": 7}
    # Only the two believable times count: signed 1 h and 2 h after the first row's time.
    ttl = svc["time_to_sign"]
    assert (ttl["count"], ttl["median_seconds"], ttl["p90_seconds"]) == (2, 3600.0, 7200.0)
    assert ttl["completed_without_sent"] == 7
    assert [(p["hours"], p["eligible"], p["signed"]) for p in svc["share"]["table"]] == [
        (1.0, 2, 1),
        (6.0, 2, 2),
        (24.0, 2, 2),
        (72.0, 2, 2),
        (168.0, 2, 2),
    ]
    # The funnel does not need a send time: every envelope's signer counts.
    assert svc["funnel"]["stages"]["signed"] == 9
    assert len(svc["share"]["points"]) <= 48
    assert "{{" not in json.dumps(svc)


def test_5000_ids_cost_the_same_250_requests_and_vanished_envelopes_count_as_not_found(
    docsign_conn: str, sandbox: SandboxServer, tmp_path: Path
) -> None:
    from airflow_provider_docsign.ui.campaigns import MAX_CAMPAIGN_ENVELOPES, campaign_page

    real = _signed(sandbox, [5, 30])
    gone = [f"envelope_gone{n:05d}" for n in range(MAX_CAMPAIGN_ENVELOPES + 500)]
    lines = [_row(i, _iso(SENT)) for i in real] + [_row(i, _iso(SENT)) for i in gone]
    state, run = _view(tmp_path, docsign_conn, lines)
    sandbox.clear_requests()
    svc = campaign_page(state, docsign_conn, run, "/", DocsignHook, now=NOW)["service"]
    served = sandbox.requests()
    assert len(served) == math.ceil(MAX_CAMPAIGN_ENVELOPES / 20) == svc["requests"]
    assert {r["path"] for r in served} == {"/envelope/get-many"}
    assert svc["truncated"] == f"only the first 5000 of {len(lines)} envelopes are read"
    assert svc["counts"]["not_found"] == MAX_CAMPAIGN_ENVELOPES - 2
    # Only the envelopes the service returned are in the numbers.
    assert svc["funnel"]["stages"] == {"sent": 2, "opened": 2, "signed": 2, "rejected": 0, "expired": 0}
    assert svc["sent_times"]["known"] == 2
    assert svc["time_to_sign"]["count"] == 2
    assert [p["signed"] for p in svc["share"]["table"]] == [0, 1, 1, 2, 2]


def test_a_campaign_with_nothing_read_has_empty_numbers_not_errors(
    docsign_conn: str, sandbox: SandboxServer, tmp_path: Path
) -> None:
    from airflow_provider_docsign.ui.campaigns import campaign_page

    state, run = _view(tmp_path, docsign_conn, [_row("envelope_nowhere", "garbage")])
    svc = campaign_page(state, docsign_conn, run, "/", DocsignHook, now=NOW)["service"]
    assert svc["funnel"]["stages"] == dict.fromkeys(("sent", "opened", "signed", "rejected", "expired"), 0)
    assert set(svc["funnel"]["shares"].values()) == {None}
    assert svc["share"]["points"] == []
    assert {p["share"] for p in svc["share"]["table"]} == {None}
    assert svc["time_to_sign"]["median_seconds"] is None


def test_a_table_the_api_server_may_not_read_gives_no_numbers_but_the_reason_and_no_read(
    docsign_conn: str, sandbox: SandboxServer, tmp_path: Path
) -> None:
    from airflow_provider_docsign.ui.campaigns import campaign_page, campaign_summaries
    from airflow_provider_docsign.ui.locations import Refused

    ids = _signed(sandbox, [1])
    allowed = tmp_path / "elsewhere"
    allowed.mkdir()
    state, run = _view(tmp_path, docsign_conn, [_row(ids[0], _iso(SENT))], allowed=allowed)
    sandbox.clear_requests()
    with pytest.raises(Refused, match="ui_result_locations"):
        campaign_page(state, docsign_conn, run, "/", DocsignHook, now=NOW)
    (listed,) = campaign_summaries(state, docsign_conn, [run], "/", DocsignHook)["campaigns"]
    assert listed["service"] is None
    assert "ui_result_locations" in listed["service_error"]
    assert sandbox.requests() == []
