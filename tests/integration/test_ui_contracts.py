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
    script = admin.get(f"{server.url}/docsign/ui/static/contracts.js", timeout=30)
    assert script.headers["Content-Type"].startswith("text/javascript")
    for banned in ("innerHTML", "insertAdjacentHTML", "outerHTML", "document.write"):
        assert banned not in script.text
    assert admin.get(f"{server.url}/docsign/ui/static/../app.py", timeout=30).status_code == 404


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
