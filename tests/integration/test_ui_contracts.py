"""The Contracts pages' API under Airflow's own api-server: who may read it, what it shows, what it costs.

A real ``airflow api-server`` (the plugin loaded through its entry point) on the session's metadata
database, a sandbox holding 50 seeded envelopes, and ``docsign_ui`` added with ``airflow connections
add``. Every service request is counted at the sandbox.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from ui_helpers import STALLED_DAYS, XSS_TITLE, ApiServer, Seeded, port_of, seed_contracts, tokens_of

from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = [
    pytest.mark.skipif(not AIRFLOW_V_3_1_PLUS, reason="the Contracts pages are an Airflow 3.1+ UI plugin"),
]

API_KEY = "api_ui_contracts_key_0001"
CONN = "docsign_ui"
DATA_PATHS = [
    "/docsign/api/connections",
    f"/docsign/api/contracts?conn_id={CONN}",
    f"/docsign/api/campaigns?conn_id={CONN}",
    f"/docsign/api/campaigns/any?conn_id={CONN}",
    "/docsign/api/task?dag_id=d&run_id=r&task_id=t",
]
PAGES = ["/docsign/ui/contracts", "/docsign/ui/task?dag_id=d", "/docsign/ui/static/contracts.js"]


@pytest.fixture(scope="module")
def ui_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("ui-sandbox"), api_key=API_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def seeded(ui_sandbox: SandboxServer) -> Seeded:
    return seed_contracts(ui_sandbox)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, airflow_db: str, ui_sandbox: SandboxServer, seeded: Seeded
) -> Iterator[ApiServer]:
    with ApiServer(tmp_path_factory.mktemp("ui-api")) as api:
        api.add_connection(CONN, "docsign", ui_sandbox.base_url, API_KEY, port_of(ui_sandbox.base_url))
        yield api


def _bodies_hold_no_secret(bodies: list[str], seeded: Seeded, tokens: set[str]) -> None:
    for body in bodies:
        assert API_KEY not in body
        for email in seeded.emails:
            assert email not in body, email
        for token in tokens:
            assert token not in body


def test_without_credentials_or_permission_nothing_is_read(
    server: ApiServer, ui_sandbox: SandboxServer, seeded: Seeded
) -> None:
    ui_sandbox.clear_requests()
    anonymous, viewer = server.session(None), server.session("viewer")
    forged = requests.Session()
    forged.headers["Authorization"] = "Bearer not.a.jwt"
    for path in DATA_PATHS + PAGES:
        assert anonymous.get(server.url + path, timeout=30).status_code == 401, path
        assert forged.get(server.url + path, timeout=30).status_code in (401, 403), path
    for path in DATA_PATHS:
        resp = viewer.get(server.url + path, timeout=30)
        assert resp.status_code == 403, (path, resp.status_code, resp.text)
    # The cookie the UI sets is honoured like the header, and a wrong one is refused the same way.
    cookie = requests.get(server.url + DATA_PATHS[1], cookies={"_token": "forged"}, timeout=30)
    assert cookie.status_code in (401, 403)
    assert ui_sandbox.requests() == []


def test_an_admin_sees_all_50_at_the_cost_of_one_refresh(
    server: ApiServer, ui_sandbox: SandboxServer, seeded: Seeded
) -> None:
    admin = server.session("admin")
    assert (
        admin.get(server.url + "/docsign/api/connections", timeout=30).json()["connections"].count(CONN) == 1
    )
    ui_sandbox.clear_requests()
    bodies: list[str] = []

    def load(**params: Any) -> dict[str, Any]:
        resp = admin.get(
            server.url + "/docsign/api/contracts", params={"conn_id": CONN, **params}, timeout=60
        )
        assert resp.status_code == 200, resp.text
        assert "script-src 'self'" in resp.headers["Content-Security-Policy"]
        bodies.append(resp.text)
        return dict(resp.json())

    everything = load()
    assert sorted(r["id"] for r in everything["rows"]) == sorted(seeded.ids)
    assert everything["total"] == 50
    stalled = load(stalled="true")
    assert {r["id"] for r in stalled["rows"]} == seeded.stalled
    assert len(seeded.stalled) == 11
    assert {r["id"] for r in load(folder_id=seeded.folder_id)["rows"]} == seeded.in_folder
    assert {r["id"] for r in load(status="completed")["rows"]} == seeded.by_status["COMPLETED"]
    oldest_first = [r["age_days"] for r in load(sort="-age")["rows"]]
    assert oldest_first == sorted(oldest_first, reverse=True)
    newest_first = [r["age_days"] for r in load(sort="age")["rows"]]
    assert newest_first == sorted(newest_first)
    # A wider threshold is a filter on the same listing: no new request.
    wider = load(stalled="true", stalled_days=str(STALLED_DAYS * 2))
    assert {r["id"] for r in wider["rows"]} < seeded.stalled
    for _ in range(3):
        load()
    assert len(bodies) == 10
    served = ui_sandbox.requests()
    assert len(served) <= math.ceil(50 / 20) + 2, served
    assert [r["path"] for r in served] == ["/folder", "/envelope", "/envelope"], served
    # The title is data: returned as the very string, for the page to write as text.
    row = next(r for r in everything["rows"] if r["id"] == seeded.xss)
    assert row["title"] == XSS_TITLE
    folder = next(r for r in everything["rows"] if r["id"] in seeded.in_folder)
    assert folder["folder"] == "Legal <b>hold</b>"
    # What a row says of its recipients: role and a masked e-mail.
    pending = next(r for r in everything["rows"] if r["status"] == "PENDING")
    assert pending["unsigned"][0]["role"] == "SIGNER"
    assert "***@" in pending["unsigned"][0]["email"]
    assert pending["earliest_expiry"]
    _bodies_hold_no_secret(bodies, seeded, tokens_of(ui_sandbox, seeded.ids))


def test_the_pages_carry_no_data_and_no_inline_script(server: ApiServer) -> None:
    admin = server.session("admin")
    for page in ("contracts", "task"):
        resp = admin.get(f"{server.url}/docsign/ui/{page}", timeout=30)
        assert resp.status_code == 200
        assert resp.headers["Content-Type"].startswith("text/html")
        for banned in ("<script>", "onerror", "innerHTML"):
            assert banned not in resp.text
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
    for name in ("contracts.js", "task.js", "charts.js", "vendor/uPlot.iife.min.js"):
        script = admin.get(f"{server.url}/docsign/ui/static/{name}", timeout=30)
        assert script.headers["Content-Type"].startswith("text/javascript")
        for banned in ("innerHTML", "insertAdjacentHTML", "outerHTML", "document.write", "eval("):
            assert banned not in script.text, (name, banned)
    # The chart library is served from the plugin itself: uPlot, the pinned version, never a CDN.
    library = admin.get(f"{server.url}/docsign/ui/static/vendor/uPlot.iife.min.js", timeout=30).text
    assert library.startswith("/*! https://github.com/leeoniya/uPlot (v1.6.32) */")
    assert "new Function" not in library
    style = admin.get(f"{server.url}/docsign/ui/static/vendor/uPlot.min.css", timeout=30)
    assert style.headers["Content-Type"].startswith("text/css")
    refused = ("../app.py", "vendor/../../app.py", "vendor/uplot.json", "vendor/uPlot.iife.js", "/etc/passwd")
    for name in refused:
        assert admin.get(f"{server.url}/docsign/ui/static/{name}", timeout=30).status_code == 404, name


def test_a_task_airflow_knows_nothing_of_costs_nothing(server: ApiServer, ui_sandbox: SandboxServer) -> None:
    ui_sandbox.clear_requests()
    resp = server.session("admin").get(
        f"{server.url}/docsign/api/task",
        params={"dag_id": "no_such_dag", "run_id": "r", "task_id": "t", "map_index": "-1"},
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["envelopes"] == []
    assert resp.json()["total"] == 0
    assert ui_sandbox.requests() == []


def test_the_plugin_is_registered_as_installed(server: ApiServer) -> None:
    plugins = server.session("admin").get(f"{server.url}/api/v2/plugins", timeout=30).json()["plugins"]
    (ours,) = [p for p in plugins if p["name"] == "docsign"]
    views = {(v["destination"], v["href"]) for v in ours["external_views"]}
    assert ("nav", "/docsign/ui/contracts") in views
    assert any(d == "task_instance" and "{TASK_ID}" in h for d, h in views)
    assert [a["url_prefix"] for a in ours["fastapi_apps"]] == ["/docsign"]


def test_turned_off_it_registers_nothing(tmp_path: Path, airflow_db: str) -> None:
    import subprocess
    import sys

    env = {**ApiServer(tmp_path).env, "AIRFLOW__DOCSIGN__UI_ENABLED": "False"}
    code = (
        "from airflow_provider_docsign.ui.plugin import DocsignUiPlugin as P\n"
        "print(len(P.fastapi_apps), len(P.external_views))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1].split() == ["0", "0"], done.stderr[-2000:]


# --- The views tell the truth: campaigns, batch tasks, rejections -----------------------------------

BATCH_CONN = "docsign_ui_batch"
CAMPAIGN = "ui-batch-camp"
TABLE = f"s3://results/campaigns/{CAMPAIGN}/results.jsonl"
REJECTED_AT = "2026-01-07T09:30:00.000Z"
REASON = "Ann Lee (ann.lee@customer.example) will not sign: wrong price"


@pytest.fixture(scope="module")
def batch_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("ui-batch-sandbox"), api_key=API_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def batch(server: ApiServer, batch_sandbox: SandboxServer) -> dict[str, Any]:
    """A campaign (bulk send, batch wait on its table, batch archive) and a batch wait on listed ids.

    Each group has two PENDING envelopes, one COMPLETED and one REJECTED (by Ann Lee, with a reason that
    names her). The table's wait waits between two pokes; the listed ids' wait is deferred on our trigger.
    """
    from ui_plant import (
        batch_archive_task,
        batch_wait_task,
        bulk_task,
        dag_of,
        plant,
        rendered,
        still_waiting,
    )

    server.add_connection(
        BATCH_CONN, "docsign", batch_sandbox.base_url, API_KEY, port_of(batch_sandbox.base_url)
    )
    statuses = ["PENDING", "PENDING", "COMPLETED", "REJECTED"]

    def spec(external_id: str, status: str) -> dict[str, Any]:
        signer: dict[str, Any] = {"email": "ann.lee@customer.example", "name": "Ann Lee", "role": "SIGNER"}
        if status == "REJECTED":
            signer.update(signingStatus="REJECTED", rejectionReason=REASON, signedAt=REJECTED_AT)
        elif status == "COMPLETED":
            signer.update(signingStatus="SIGNED", signedAt="2026-01-06T09:00:00.000Z")
        made = {"title": external_id, "status": status, "externalId": external_id, "recipients": [signer]}
        if status != "PENDING":
            made["completedAt"] = REJECTED_AT if status == "REJECTED" else "2026-01-06T09:00:00.000Z"
        return made

    specs = [spec(f"{CAMPAIGN}(R-{n})", s) for n, s in enumerate(statuses)]
    specs += [spec(f"listed-{n}", s) for n, s in enumerate(statuses)]
    ids = batch_sandbox.seed(specs)
    camp, listed = dict(zip(statuses, ids[:4], strict=False)), dict(zip(statuses, ids[4:], strict=False))
    camp["PENDING2"], listed["PENDING2"] = ids[1], ids[5]
    with dag_of("ui_batch") as dag:
        bulk_task("send")
        batch_wait_task("wait_table", result_table="/nonexistent/results.jsonl")
        batch_wait_task("wait_listed", envelope_ids=["envelope_x"])
        batch_archive_task("archive")
    sent = {"campaign_id": CAMPAIGN, "docsign_conn_id": BATCH_CONN, "rows": 4, "result_table": TABLE}
    sent["counts"] = {"sent": 4, "invalid": 0, "failed": 0}
    run_id = plant(dag, {"send": {"return_value": sent}})
    # What the workers rendered: the table's URI with the object store's connection, as the example has it.
    with_conn = TABLE.replace("s3://", "s3://docsign_s3@")
    rendered(
        "ui_batch",
        run_id,
        {
            "wait_table": {"result_table": with_conn},
            "archive": {"result_table": with_conn, "destination": "/srv/archive"},
            "wait_listed": {"envelope_ids": ids[4:]},
        },
    )
    still_waiting("ui_batch", run_id, "wait_table")
    still_waiting(
        "ui_batch",
        run_id,
        "wait_listed",
        {"envelope_ids": ids[4:], "docsign_conn_id": BATCH_CONN, "batch": True, "poll_interval": 60},
    )
    return {"run_id": run_id, "campaign": camp, "listed": listed}


def _relations(row: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["relation"], t["task_id"]) for t in row["tasks"]}


def test_batch_tasks_show_as_what_they_are_and_settled_envelopes_wait_for_no_one(
    server: ApiServer, batch_sandbox: SandboxServer, batch: dict[str, Any]
) -> None:
    batch_sandbox.clear_requests()
    resp = server.session("admin").get(
        f"{server.url}/docsign/api/contracts", params={"conn_id": BATCH_CONN}, timeout=60
    )
    assert resp.status_code == 200, resp.text[:500]
    rows = {r["id"]: r for r in resp.json()["rows"]}
    assert len(rows) == 8
    camp, listed = batch["campaign"], batch["listed"]
    for key in ("PENDING", "PENDING2"):  # open: the campaign's tasks, and the batch wait that still waits
        assert _relations(rows[camp[key]]) == {
            ("sent", "send"),
            ("handled", "archive"),
            ("waiting", "wait_table"),
        }
        assert _relations(rows[listed[key]]) == {("waiting", "wait_listed")}
    for key in ("COMPLETED", "REJECTED"):  # settled: the same tasks, but nothing waits on them any more
        assert _relations(rows[camp[key]]) == {("sent", "send"), ("handled", "archive")}
        assert _relations(rows[listed[key]]) == set()
    archive = next(t for t in rows[camp["PENDING"]]["tasks"] if t["relation"] == "handled")
    assert archive["url"].endswith("/tasks/archive")
    assert [r["path"] for r in batch_sandbox.requests()] == ["/folder", "/envelope"]


def test_the_bulk_send_tasks_view_shows_its_campaign_at_no_cost(
    server: ApiServer, batch_sandbox: SandboxServer, batch: dict[str, Any]
) -> None:
    batch_sandbox.clear_requests()
    admin = server.session("admin")

    def view(task_id: str) -> dict[str, Any]:
        params = {"dag_id": "ui_batch", "run_id": batch["run_id"], "task_id": task_id, "map_index": "-1"}
        resp = admin.get(f"{server.url}/docsign/api/task", params=params, timeout=60)
        assert resp.status_code == 200, resp.text[:500]
        return dict(resp.json())

    sent = view("send")
    assert sent["total"] == 0
    assert sent["connection"] == BATCH_CONN
    campaign = sent["campaign"]
    assert (campaign["campaign_id"], campaign["relation"], campaign["connection"]) == (
        CAMPAIGN,
        "sent",
        BATCH_CONN,
    )
    assert (campaign["rows"], campaign["counts"], campaign["data_error"]) == (
        4,
        {"sent": 4, "invalid": 0, "failed": 0},
        None,
    )
    assert campaign["task"]["url"].endswith("/tasks/send")
    archived = view("archive")["campaign"]
    assert (archived["campaign_id"], archived["relation"]) == (CAMPAIGN, "handled")
    assert batch_sandbox.requests() == []  # the task's word: nothing is asked of the service


def test_a_rejection_says_rejected_with_when_and_the_masked_reason(
    server: ApiServer, batch_sandbox: SandboxServer, batch: dict[str, Any]
) -> None:
    params = {"dag_id": "ui_batch", "run_id": batch["run_id"], "task_id": "wait_listed", "map_index": "-1"}
    resp = server.session("admin").get(f"{server.url}/docsign/api/task", params=params, timeout=60)
    assert resp.status_code == 200, resp.text[:500]
    data = resp.json()
    assert data["total"] == 4
    envelopes = {e["id"]: e for e in data["envelopes"]}
    rejected = envelopes[batch["listed"]["REJECTED"]]
    assert rejected["status"] == "REJECTED"
    assert rejected["completed_at"] is None
    assert rejected["rejected_at"] == REJECTED_AT
    (said,) = rejected["rejections"]
    assert said["at"] == REJECTED_AT
    assert said["reason"] == "A*** (a***@customer.example) will not sign: wrong price"
    (signer,) = rejected["recipients"]
    assert (signer["signed_at"], signer["rejected_at"]) == (None, REJECTED_AT)
    completed = envelopes[batch["listed"]["COMPLETED"]]
    assert completed["completed_at"]
    assert (completed["rejected_at"], completed["rejections"]) == (None, [])
    assert "ann.lee@customer.example" not in resp.text
    assert "Ann Lee" not in resp.text
