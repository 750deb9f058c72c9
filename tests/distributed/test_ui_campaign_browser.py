"""A campaign's funnel and signed-share chart in a real browser (Debian's Chromium, Playwright).

Airflow's own api-server (tests/ui_helpers.py, the plugin loaded through its entry point) on the test
session's metadata database, not the distributed stack: a bulk send's XCom is planted as a worker would
write it (tests/ui_plant.py), its result table lies where ``[docsign] ui_result_locations`` lets the
api-server read it, and its 30 envelopes are seeded in a sandbox this module starts and stops, sent ten
days ago with signatures at set delays, rejections, expired links and unanswered ones.

The campaign's id and two row keys look like markup, a template and a bidi trick: they show as the very
text. The chart renders with as many points as the JSON holds, the tables beside it hold the JSON's
numbers, the view costs ``ceil(30 / 20)`` ``get-many`` requests, and no request of the page leaves for
another host. The screenshot docs/ui.md shows is written to ``docs/img/``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from ui_helpers import ARTIFACTS, ApiServer, port_of, signed_in_page

from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(not AIRFLOW_V_3_1_PLUS, reason="the Contracts pages are an Airflow 3.1+ UI plugin"),
]

ROOT = Path(__file__).resolve().parents[2]
DOCS_IMG = ROOT / "docs" / "img"
KEY = "api_ui_campaign_browser_01"
CONN = "docsign_campaign_ui"
CAMPAIGN = "<svg onload=alert(1)>{{ ti }}\u202erenewals"
ROW_KEYS = ["<img src=x onerror=alert(2)>", "{{ conn.docsign_default.password }} \u202eexe.pdf"]
#: Hours after sending at which the 12 signers signed.
DELAYS = [0.5, 0.5, 2, 4, 8, 20, 20, 30, 50, 70, 100, 160]
TIMEOUT_MS = 60_000


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _specs(sent: list[datetime], now: datetime) -> list[dict[str, Any]]:
    """12 signed at DELAYS, 3 rejected, 3 with an expired link, 4 opened and pending, 8 not opened."""
    specs = []
    for n, at in enumerate(sent):
        signer: dict[str, Any] = {"email": f"signer{n}@campaign.example", "name": f"S {n}", "role": "SIGNER"}
        status = "PENDING"
        signer.update(sendStatus="SENT", signingStatus="NOT_SIGNED")
        if n >= 15:
            signer["expiresAt"] = _iso(now + timedelta(days=60))
        if n < len(DELAYS):
            status = "COMPLETED"
            signed = _iso(at + timedelta(hours=DELAYS[n]))
            signer.update(signingStatus="SIGNED", readStatus="OPENED", signedAt=signed)
        elif n < 15:
            status = "REJECTED"
            signer.update(
                signingStatus="REJECTED", readStatus="OPENED", signedAt=_iso(at + timedelta(hours=3))
            )
        elif n < 18:
            signer["expiresAt"] = _iso(now - timedelta(days=2))
        elif n < 22:
            signer["readStatus"] = "OPENED"
        spec = {"title": f"Renewal {n}", "status": status, "createdAt": _iso(at), "recipients": [signer]}
        if status != "PENDING":
            spec["completedAt"] = signer["signedAt"]
        specs.append(spec)
    return specs


@pytest.fixture(scope="module")
def ui_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("ui-campaign-sandbox"), api_key=KEY) as server:
        yield server


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ui-campaign-results")


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, airflow_db: str, ui_sandbox: SandboxServer, results: Path
) -> Iterator[ApiServer]:
    env = {"AIRFLOW__DOCSIGN__UI_RESULT_LOCATIONS": str(results)}
    with ApiServer(tmp_path_factory.mktemp("ui-campaign-api"), extra_env=env) as api:
        api.add_connection(CONN, "docsign", ui_sandbox.base_url, KEY, port_of(ui_sandbox.base_url))
        yield api


@pytest.fixture(scope="module")
def campaign(server: ApiServer, ui_sandbox: SandboxServer, results: Path) -> dict[str, Any]:
    """The campaign: 30 envelopes sent ten days ago, two failed rows; its bulk send's XCom planted."""
    from ui_plant import bulk_task, dag_of, plant

    now = datetime.now(timezone.utc)
    sent = [now - timedelta(days=10) + timedelta(minutes=n) for n in range(30)]
    ids = ui_sandbox.seed(_specs(sent, now))
    table = results / "turnaround" / "results.jsonl"
    table.parent.mkdir(parents=True)
    rows = [
        {"row_key": f"R-{n:02d}", "status": "sent", "envelope_id": i, "sent_at": _iso(at), "attempts": 1}
        for n, (i, at) in enumerate(zip(ids, sent, strict=True))
    ]
    rows += [
        {"row_key": key, "status": "failed", "envelope_id": None, "error": "HTTP 400", "attempts": 1}
        for key in ROW_KEYS
    ]
    table.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with dag_of("ui_campaign_turnaround") as dag:
        bulk_task("send")
    pushed = {
        "campaign_id": CAMPAIGN,
        "docsign_conn_id": CONN,
        "rows": 32,
        "counts": {"sent": 30, "invalid": 0, "failed": 2},
        "result_table": str(table),
        "format": "jsonl",
    }
    plant(dag, {"send": {"return_value": pushed}})
    return pushed


@pytest.fixture
def page(server: ApiServer) -> Iterator[Any]:
    with signed_in_page(server, height=1100, timeout_ms=TIMEOUT_MS) as signed_in:
        yield signed_in


def _texts(frame: Any, selector: str) -> list[list[str]]:
    rows = frame.locator(selector).evaluate_all(
        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    return [list(r) for r in rows]


def _percent(share: float | None) -> str:
    return "none" if share is None else f"{100 * share:.1f} %"


def test_the_campaign_view_draws_its_funnel_and_signed_share_as_text_and_a_chart(
    server: ApiServer, ui_sandbox: SandboxServer, campaign: dict[str, Any], page: Any
) -> None:
    asked: list[tuple[str, str]] = []
    page.on("request", lambda r: asked.append((r.url, r.frame.url if r.frame else "")))
    page.goto(server.url + "/plugin/docsign-contracts")
    frame = page.frame_locator("iframe[src*='/docsign/ui/contracts']")
    frame.locator("#conn").select_option(CONN)
    frame.locator("#count").filter(has_text="of 30 envelopes").wait_for()  # the Contracts tab's own read
    ui_sandbox.clear_requests()
    frame.locator("#tab-campaigns").click()
    entry = frame.locator("#campaigns tbody tr").filter(has_text="renewals")
    entry.get_by_role("button").click()
    chart = frame.locator("#campaign-share-chart[data-chart-points]")
    chart.wait_for()
    frame.locator("#campaign-share-chart canvas").first.wait_for()

    served = ui_sandbox.requests()
    assert {r["path"] for r in served} == {"/envelope/get-many"}
    assert len(served) <= 2  # ceil(30 / 20): the list's read, reused by the view within the cache time
    data = (
        server.session("admin")
        .get(
            f"{server.url}/docsign/api/campaigns/{quote(CAMPAIGN, safe='')}",
            params={"conn_id": CONN},
            timeout=60,
        )
        .json()
    )
    svc = data["service"]
    assert svc["funnel"]["stages"] == {"sent": 30, "opened": 19, "signed": 12, "rejected": 3, "expired": 3}
    assert chart.get_attribute("data-chart-points") == str(len(svc["share"]["points"]))
    assert len(svc["share"]["points"]) > 1
    assert all(2 * p["eligible"] >= 30 for p in svc["share"]["points"])  # each point: half the campaign
    assert _texts(frame, "#campaign-share tbody tr") == [
        [f"{p['hours']:g}", str(p["eligible"]), str(p["signed"]), _percent(p["share"])]
        for p in svc["share"]["table"]
    ]
    assert _texts(frame, "#campaign-funnel tbody tr") == [
        [stage, str(n), _percent(svc["funnel"]["shares"][stage])]
        for stage, n in svc["funnel"]["stages"].items()
    ]
    ttl = frame.locator("#campaign-ttl").inner_text()
    assert ttl.startswith(
        f"Time to sign over {svc['time_to_sign']['count']} completed envelopes: median 20.0 h"
    )

    # What looks like markup, a template or a bidi trick is the very text; no element is made of it.
    assert frame.locator("#campaign-title").text_content() == "Campaign " + CAMPAIGN
    keys = [r[1] for r in _texts(frame, "#campaign-rows tbody tr")]
    assert keys == ROW_KEYS
    assert frame.locator("#campaign svg, #campaign img").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]
    # The page's own requests stay on the api-server's host.
    ours = [u for u, f in asked if "/docsign/" in f]
    assert ours
    assert {urlsplit(u).netloc for u in ours} == {urlsplit(server.url).netloc}, ours

    frame.locator("#campaign-turnaround").scroll_into_view_if_needed()
    shot = ARTIFACTS / "ui-campaign-turnaround.png"
    page.screenshot(path=str(shot))
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, DOCS_IMG / shot.name)
