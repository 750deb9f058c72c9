"""The Contracts pages' API, attacked: other connections' secrets, odd parameters, data that looks like
markup or a template, a failing service, a crowd of viewers. Counted at the sandbox (and at a listener
standing in for another connection's host).

A real ``airflow api-server`` with the plugin (tests/ui_helpers.py) on the session's metadata database.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from ui_helpers import ApiServer, port_of

from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.skipif(
    not AIRFLOW_V_3_1_PLUS, reason="the Contracts pages are an Airflow 3.1+ UI plugin"
)

KEY = "api_ui_hostile_key_000001"
OTHER_SECRET = "other-connections-secret-0001"
TITLES = [
    '"><script>alert(1)</script>',
    "{{ conn.docsign_default.password }}",
    "{% for x in range(10**9) %}{% endfor %}",
    "Invoice \u202eexe.pdf",
    "\U0001f4dd Contrat sign\u00e9 \u2014 \u65e5\u672c",
    "</td></tr><tr><td>forged row",
]


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it is offered (stopped by its handle)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.stop()


@pytest.fixture(scope="module")
def ui_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("ui-hostile-sandbox"), api_key=KEY) as server:
        server.seed(
            [{"title": t, "status": "PENDING", "recipients": [{"email": "a@b.example"}]} for t in TITLES]
        )
        yield server


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, airflow_db: str, ui_sandbox: SandboxServer, listener: Listener
) -> Iterator[ApiServer]:
    with ApiServer(tmp_path_factory.mktemp("ui-hostile-api")) as api:
        port = port_of(ui_sandbox.base_url)
        for conn_id in ("docsign_h", "docsign_h_down", "docsign_h_crowd"):
            api.add_connection(conn_id, "docsign", ui_sandbox.base_url, KEY, port)
        # Not a docsign connection: its password must never be sent anywhere by the page.
        api.add_connection(
            "plain_http_h", "http", f"http://127.0.0.1:{listener.port}", OTHER_SECRET, listener.port
        )
        yield api


@pytest.fixture(scope="module")
def admin(server: ApiServer) -> requests.Session:
    return server.session("admin")


def _get(admin: requests.Session, server: ApiServer, path: str, **params: Any) -> requests.Response:
    return admin.get(f"{server.url}/docsign/api/{path}", params=params, timeout=120)


@pytest.mark.parametrize(
    "conn_id",
    [
        "plain_http_h",
        "docsign_h ",
        "DOCSIGN_H",
        "docsign_h\u200b",
        "../docsign_h",
        "x" * 5000,
        "docsign_h\x00",
    ],
)
def test_a_connection_that_is_not_an_offered_docsign_one_is_never_used(
    admin: requests.Session, server: ApiServer, ui_sandbox: SandboxServer, listener: Listener, conn_id: str
) -> None:
    ui_sandbox.clear_requests()
    before = listener.accepted
    for path in ("contracts", "campaigns", "campaigns/c"):
        resp = _get(admin, server, path, conn_id=conn_id)
        assert resp.status_code == 404, (path, resp.status_code, resp.text[:300])
        assert "not a docsign connection" in resp.json()["detail"]
        assert OTHER_SECRET not in resp.text
    assert listener.accepted == before
    assert ui_sandbox.requests() == []


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("contracts", {"stalled_days": "-1"}),
        ("contracts", {"stalled_days": "nan"}),
        ("contracts", {"stalled_days": "1e400"}),
        ("contracts", {"stalled_days": "seven"}),
        ("contracts", {"sort": "age; DROP TABLE xcom"}),
        ("contracts", {"stalled": "maybe"}),
        ("campaigns/c", {"page": "0"}),
        ("campaigns/c", {"page": "-1"}),
        ("campaigns/c", {"page": str(10**12)}),
        ("campaigns/c", {"page_size": "0"}),
        ("campaigns/c", {"page_size": "100000"}),
        ("task", {"dag_id": "d", "run_id": "r", "task_id": "t", "map_index": "first"}),
        ("task", {"dag_id": "d"}),
    ],
)
def test_malformed_parameters_are_refused_naming_them_with_nothing_sent(
    admin: requests.Session, server: ApiServer, ui_sandbox: SandboxServer, path: str, params: dict[str, str]
) -> None:
    ui_sandbox.clear_requests()
    resp = _get(admin, server, path, conn_id="docsign_h", **params)
    assert resp.status_code == 422, resp.text[:500]
    named = {p for p in params if p != "dag_id"} or {"run_id"}
    assert any(name in resp.text for name in named), resp.text[:500]
    assert ui_sandbox.requests() == []


def test_titles_that_look_like_markup_or_templates_come_back_as_the_very_strings(
    admin: requests.Session, server: ApiServer
) -> None:
    resp = _get(admin, server, "contracts", conn_id="docsign_h")
    assert resp.status_code == 200, resp.text[:500]
    assert resp.headers["Content-Type"] == "application/json"
    assert sorted(r["title"] for r in resp.json()["rows"]) == sorted(TITLES)
    assert "a@b.example" not in resp.text


@pytest.mark.parametrize(
    "campaign_id", ["../../etc/passwd", "..%2f..%2fetc", "c" * 5000, "x\u202ey", "{{ 7*7 }}"]
)
def test_campaign_ids_that_look_like_paths_or_templates_find_nothing(
    admin: requests.Session, server: ApiServer, ui_sandbox: SandboxServer, campaign_id: str
) -> None:
    ui_sandbox.clear_requests()
    resp = admin.get(
        f"{server.url}/docsign/api/campaigns/{requests.utils.quote(campaign_id, safe='')}",
        params={"conn_id": "docsign_h"},
        timeout=60,
    )
    assert resp.status_code == 404, resp.text[:300]
    assert "49" not in resp.text
    assert ui_sandbox.requests() == []


def test_a_failing_service_is_reported_once_and_not_asked_by_every_page_load(
    admin: requests.Session, server: ApiServer, ui_sandbox: SandboxServer
) -> None:
    ui_sandbox.clear_requests()
    ui_sandbox.inject_fault(method="GET", path="/folder", status=401, count=100)
    try:
        first = _get(admin, server, "contracts", conn_id="docsign_h_down")
        assert first.status_code == 502, first.text[:300]
        assert "the signing service could not be read" in first.json()["detail"]
        assert KEY not in first.text
        asked = len(ui_sandbox.requests())
        assert 1 <= asked <= 5
        for _ in range(5):
            assert _get(admin, server, "contracts", conn_id="docsign_h_down").status_code == 502
        assert len(ui_sandbox.requests()) == asked  # the failure is remembered for a few seconds
    finally:
        ui_sandbox.clear_faults()


def test_a_crowd_of_viewers_on_a_cold_cache_costs_one_refresh(
    server: ApiServer, ui_sandbox: SandboxServer
) -> None:
    sessions = [server.session("admin") for _ in range(12)]
    ui_sandbox.clear_requests()
    statuses: list[int] = []

    def view(http: requests.Session) -> None:
        statuses.append(
            http.get(f"{server.url}/docsign/api/contracts?conn_id=docsign_h_crowd", timeout=120).status_code
        )

    threads = [threading.Thread(target=view, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert statuses == [200] * 12
    # The folders once, then the root (no folder holds anything): one refresh for twelve viewers.
    assert [r["path"] for r in ui_sandbox.requests()] == ["/folder", "/envelope"]
