"""The Contracts page's numbers with 500 envelopes (issue 48's acceptance): what the sandbox holds, what
the export writes, and what the page shows agree to the second, at the cost of the listing alone.

A real ``airflow api-server`` (the plugin through its entry point), a sandbox holding 500 envelopes with
known send and signing times (tests/ui_turnaround_seed.py), sent as far as Airflow knows by a campaign
(its result table, under ``[docsign] ui_result_locations``, holds each row's ``sent_at``) and by
distribute tasks (their XCom time). Every service request is counted at the sandbox.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import conn_json, ctx
from ui_helpers import ApiServer, port_of
from ui_turnaround_seed import STALLED_DAYS, Turnaround, plant_senders, seed_turnaround, write_table

from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.service.models import EnvelopeSummary
from airflow_provider_docsign.service.stalled import stalled

pytestmark = [
    pytest.mark.skipif(not AIRFLOW_V_3_1_PLUS, reason="the Contracts pages are an Airflow 3.1+ UI plugin"),
]

API_KEY = "api_ui_turnaround_key_001"
CONN = "docsign_turnaround"
CAMPAIGN = "turnaround-500"
COUNT = 500


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("turnaround-sandbox"), api_key=API_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("turnaround-tables")


@pytest.fixture(scope="module")
def seeded(airflow_db: str, sandbox: SandboxServer, tables: Path) -> Turnaround:
    found = seed_turnaround(sandbox, COUNT, campaign=CAMPAIGN)
    plant_senders(found, write_table(found, tables), CONN, "ui_turnaround")
    return found


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxServer, seeded: Turnaround, tables: Path
) -> Iterator[ApiServer]:
    env = {"AIRFLOW__DOCSIGN__UI_RESULT_LOCATIONS": str(tables)}
    with ApiServer(tmp_path_factory.mktemp("turnaround-api"), cache_seconds=600, extra_env=env) as api:
        api.add_connection(CONN, "docsign", sandbox.base_url, API_KEY, port_of(sandbox.base_url))
        yield api


def _time(text: Any) -> datetime | None:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None


def expected(
    sandbox: SandboxServer, seeded: Turnaround, ids: list[str], now: datetime
) -> tuple[dict[str, Any], dict[str, float | None]]:
    """The summary and each envelope's time to sign, from the sandbox's own records and turnaround."""
    counts: dict[str, int] = {}
    pairs = []
    seconds: dict[str, float | None] = {}
    stalled_count = without = 0
    for envelope_id in ids:
        envelope = EnvelopeSummary.from_json(sandbox.get_envelope(envelope_id))
        status = str(getattr(envelope.status, "value", envelope.status))
        counts[status] = counts.get(status, 0) + 1
        sent = turnaround.sent(audit=seeded.sent_at(envelope_id))  # the DOCUMENT_SENT entry's time
        pairs.append((envelope, sent))
        seconds[envelope_id] = turnaround.seconds_to_sign(envelope, sent)
        stalled_count += stalled(envelope, now, older_than_days=STALLED_DAYS) is not None
        without += sent is None and status != "DRAFT"
    timed = [s for s in seconds.values() if s is not None]
    summary = {
        "shown": len(ids),
        "counts": dict(sorted(counts.items())),
        "stalled": stalled_count,
        "time_to_sign": turnaround.summarize(pairs).to_dict(),
        "histogram": turnaround.histogram(timed),
        "without_sent": without,
    }
    return summary, seconds


def _page(server: ApiServer, **params: Any) -> dict[str, Any]:
    resp = server.session("admin").get(
        f"{server.url}/docsign/api/contracts", params={"conn_id": CONN, **params}, timeout=120
    )
    assert resp.status_code == 200, resp.text[:1000]
    return dict(resp.json())


def _export(
    sandbox: SandboxServer, destination: Path, monkeypatch: pytest.MonkeyPatch
) -> list[dict[str, Any]]:
    from airflow_provider_docsign.operators.export import DocsignExportEnvelopesOperator

    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox))
    now = datetime.now(timezone.utc)
    start, end = now - timedelta(days=1), now + timedelta(minutes=5)
    op = DocsignExportEnvelopesOperator(
        task_id="export",
        destination=str(destination),
        start=start.isoformat(),
        end=end.isoformat(),
        lookback=timedelta(days=90),  # the slowest signers took a month
        read_sent_times=True,
        pii="drop",
    )
    result = op.execute(ctx())
    text = (destination / "envelopes" / f"date={result['date']}" / "part-0000.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_500_envelopes_the_page_the_sandbox_and_the_export_agree_at_the_listings_cost(
    server: ApiServer,
    sandbox: SandboxServer,
    seeded: Turnaround,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sandbox.clear_requests()
    page = _page(server)
    filtered = {
        "template 1": _page(server, template_id="1"),
        "no template": _page(server, template_id="none"),
        "folder": _page(server, folder_id=seeded.folder_id),
        "completed": _page(server, status="COMPLETED"),
        "stalled": _page(server, stalled="true"),
    }
    # The listing alone: the folders once, then 100 envelopes a page at the root and in the folder.
    in_folder = sum(1 for s in seeded.specs.values() if s.get("folderId"))
    listing = 1 + math.ceil((COUNT - in_folder) / 100) + math.ceil(in_folder / 100)
    served = [r["path"] for r in sandbox.requests()]
    assert set(served) == {"/folder", "/envelope"}, served
    assert len(served) == listing, served
    now = datetime.now(timezone.utc)

    # Every row: its send time as Airflow knows it, the same instant as the audit entry.
    rows = {r["id"]: r for r in page["rows"]}
    assert len(rows) == page["total"] == COUNT
    for envelope_id in seeded.by_campaign:
        assert rows[envelope_id]["sent"] == {"at": seeded.sent_at(envelope_id), "source": "campaign"}
    for envelope_id in seeded.by_task:
        assert rows[envelope_id]["sent"] == {"at": seeded.sent_at(envelope_id), "source": "task"}
    assert {i for i, r in rows.items() if r["sent"] is None} == {
        i for i in seeded.ids if seeded.sent_at(i) is None
    }
    assert len(seeded.by_task) >= 15
    assert len(seeded.by_campaign) >= 400

    # The page's numbers = the sandbox's records through turnaround's definitions, for each filter.
    summary, seconds = expected(sandbox, seeded, seeded.ids, now)
    got = {k: v for k, v in page["summary"].items() if k != "unread_campaigns"}
    assert got == summary
    assert page["summary"]["unread_campaigns"] == []
    assert all(b["count"] >= 2 for b in summary["histogram"]), summary["histogram"]
    assert summary["counts"]["COMPLETED"] > 250
    assert summary["stalled"] > 20
    assert {i: r["seconds_to_sign"] for i, r in rows.items()} == seconds
    subsets = {
        "template 1": [i for i in seeded.ids if seeded.specs[i].get("templateId") == 1],
        "no template": [i for i in seeded.ids if seeded.specs[i].get("templateId") is None],
        "folder": [i for i in seeded.ids if seeded.specs[i].get("folderId")],
        "completed": [i for i in seeded.ids if seeded.specs[i]["status"] == "COMPLETED"],
        "stalled": [i for i in seeded.ids if rows[i]["stalled"]],
    }
    for name, ids in subsets.items():
        data = filtered[name]
        assert sorted(r["id"] for r in data["rows"]) == sorted(ids), name
        want, _ = expected(sandbox, seeded, ids, now)
        assert {k: v for k, v in data["summary"].items() if k != "unread_campaigns"} == want, name
    assert page["templates"] == [1, 2]
    assert {r["template_id"] for r in filtered["template 1"]["rows"]} == {1}

    # The export over the same envelopes (send times from the audit log): the same numbers, to the second.
    exported = {r["envelope_id"]: r for r in _export(sandbox, tmp_path / "export", monkeypatch)}
    assert set(exported) == set(rows)
    for envelope_id, row in rows.items():
        # The same instants were planted: equal to the millisecond (the task's and the audit's clocks
        # would otherwise differ by the distribute request's latency, under a second).
        assert row["seconds_to_sign"] == exported[envelope_id]["seconds_to_sign"], envelope_id
        if row["sent"] is not None:
            assert _time(row["sent"]["at"]) == _time(exported[envelope_id]["sent_at"]), envelope_id
    timed = [r["seconds_to_sign"] for r in exported.values() if r["seconds_to_sign"] is not None]
    tts = page["summary"]["time_to_sign"]
    assert tts["median_seconds"] == turnaround.percentile(timed, 0.5)
    assert tts["p90_seconds"] == turnaround.percentile(timed, 0.9)
    assert tts["count"] == len(timed)
    assert page["summary"]["histogram"] == turnaround.histogram(timed)
    by_status: dict[str, int] = {}
    for r in exported.values():
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
    assert page["summary"]["counts"] == dict(sorted(by_status.items()))
