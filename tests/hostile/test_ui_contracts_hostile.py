"""The Contracts pages' API, attacked: other connections' secrets, odd parameters, data that looks like
markup or a template, a failing service, a crowd of viewers. Counted at the sandbox (and at a listener
standing in for another connection's host).

A real ``airflow api-server`` with the plugin (tests/ui_helpers.py) on the session's metadata database.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from ui_helpers import ApiServer, Listener, port_of, rss_kib

from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.skipif(
    not AIRFLOW_V_3_1_PLUS, reason="the Contracts pages are an Airflow 3.1+ UI plugin"
)

KEY = "api_ui_hostile_key_000001"
#: Users limited by the test auth manager (tests/ui_auth_manager.py): by DAG, and by connection.
TEAMS = {
    "team_a": {"dags": ["ui_team_a"], "conns": ["docsign_team"]},
    "reader_h": {"dags": None, "conns": ["docsign_h"]},
}
OTHER_SECRET = "other-connections-secret-0001"
TITLES = [
    '"><script>alert(1)</script>',
    "{{ conn.docsign_default.password }}",
    "{% for x in range(10**9) %}{% endfor %}",
    "Invoice \u202eexe.pdf",
    "\U0001f4dd Contrat sign\u00e9 \u2014 \u65e5\u672c",
    "</td></tr><tr><td>forged row",
]


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
def team_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("ui-team-sandbox"), api_key=KEY) as server:
        yield server


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The one folder the api-server may read campaign files from, and one beside it that it may not."""
    return {
        "inside": tmp_path_factory.mktemp("ui-results"),
        "outside": tmp_path_factory.mktemp("ui-elsewhere"),
    }


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
    airflow_db: str,
    ui_sandbox: SandboxServer,
    team_sandbox: SandboxServer,
    listener: Listener,
    roots: dict[str, Path],
) -> Iterator[ApiServer]:
    tests = str(Path(__file__).resolve().parents[1])
    env = {
        "AIRFLOW__CORE__AUTH_MANAGER": "ui_auth_manager.TeamAuthManager",
        "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")]),
        "DOCSIGN_TEST_TEAMS": json.dumps(TEAMS),
        # One local folder, and an object store prefix read with the admin's connection only.
        "AIRFLOW__DOCSIGN__UI_RESULT_LOCATIONS": f"{roots['inside']}, s3://docsign_results_s3@results/campaigns",
    }
    users = dict.fromkeys(TEAMS, "viewer")
    with ApiServer(tmp_path_factory.mktemp("ui-hostile-api"), extra_env=env, users=users) as api:
        port = port_of(ui_sandbox.base_url)
        for conn_id in (
            "docsign_h",
            "docsign_h_down",
            "docsign_h_crowd",
            "docsign_secret",
            "docsign_h_count",
        ):
            api.add_connection(conn_id, "docsign", ui_sandbox.base_url, KEY, port)
        api.add_connection(
            "docsign_team", "docsign", team_sandbox.base_url, KEY, port_of(team_sandbox.base_url)
        )
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


# --- Planted XComs: the api-server reads only what an admin configured ------------------------------


def _table(path: Path, ids: list[str]) -> str:
    path.write_text(
        "".join(json.dumps({"row_key": i, "status": "sent", "envelope_id": i}) + "\n" for i in ids)
    )
    return str(path)


@pytest.fixture(scope="module")
def planted(server: ApiServer, roots: dict[str, Path], listener: Listener) -> dict[str, Any]:
    """One DAG whose bulk-send task instances pushed what a DAG author chose (and a class named like ours)."""
    from ui_plant import bulk_task, dag_of, lookalike_task, plant

    inside, outside = roots["inside"], roots["outside"]
    many = _table(inside / "many.jsonl", [f"envelope_planted{n:04d}" for n in range(600)])
    huge = inside / "huge.jsonl"
    with huge.open("wb") as fh:  # one 300 MB line (sparse: NUL bytes), no newline
        fh.truncate(300 * 1024 * 1024)
    (inside / "binary.jsonl").write_bytes(b"\x00\xff\xfe" * 1000 + b"\n")
    cases = {
        "url": f"http://127.0.0.1:{listener.port}/latest/meta-data/results.jsonl",
        "environ": "/proc/self/environ",
        "outside": _table(outside / "results.jsonl", ["envelope_outside0001"]),
        "dotdot": f"{inside}/../{outside.name}/results.jsonl",
        "store": "s3://results/campaigns/r.jsonl",
        "huge": str(huge),
        "binary": str(inside / "binary.jsonl"),
    }
    xcoms: dict[str, dict[str, Any]] = {}

    def push(task_id: str, campaign_id: str, table: str, **more: Any) -> None:
        value = {"campaign_id": campaign_id, "docsign_conn_id": "docsign_h", "rows": 1, "counts": {"sent": 1}}
        xcoms[task_id] = {"return_value": {**value, "result_table": table, **more}}

    with dag_of("ui_plant") as dag:
        for name, table in cases.items():
            bulk_task(f"bulk_{name}")
            push(f"bulk_{name}", f"plant-{name}", table, result_table_conn_id="plain_http_h")
        bulk_task("bulk_zero")  # "sent: 0", 600 ids in its table
        push(
            "bulk_zero",
            "plant-zero",
            many,
            counts={"sent": 0, "failed": -5},
            docsign_conn_id="docsign_h_count",
        )
        bulk_task("bulk_negative")
        push(
            "bulk_negative",
            "plant-negative",
            many,
            rows=-1,
            counts={"sent": -1000},
            docsign_conn_id="docsign_h_count",
        )
        bulk_task("bulk_slash")
        push("bulk_slash", "emea/renewals-2027", _table(inside / "slash.jsonl", ["envelope_slash0001"]))
        bulk_task("bulk_secret")  # sent through another docsign connection
        push("bulk_secret", "plant-secret", _table(inside / "secret.jsonl", ["envelope_secret001"]))
        xcoms["bulk_secret"]["return_value"]["docsign_conn_id"] = "docsign_secret"
        lookalike_task("bulk_lookalike")
        push("bulk_lookalike", "plant-lookalike", _table(inside / "look.jsonl", ["envelope_lookalike1"]))
    run_id = plant(dag, xcoms)
    return {"cases": cases, "run_id": run_id}


REFUSED = ["url", "environ", "outside", "dotdot", "store"]


def test_a_planted_file_outside_the_configured_places_is_refused_before_anything_is_read(
    admin: requests.Session, server: ApiServer, ui_sandbox: SandboxServer, listener: Listener, planted: Any
) -> None:
    ui_sandbox.clear_requests()
    before = listener.accepted
    listed = _get(admin, server, "campaigns", conn_id="docsign_h")
    assert listed.status_code == 200, listed.text[:500]
    rows = {c["campaign_id"]: c for c in listed.json()["campaigns"]}
    assert "plant-lookalike" not in rows  # a class named like ours is not trusted
    assert "plant-secret" not in rows  # listed under its own connection only
    for name in REFUSED:
        row = rows[f"plant-{name}"]
        assert row["service"] is None
        assert (
            "not in a place the api-server may read" in row["service_error"]
            or "names the connection" in (row["service_error"])
        ), (name, row)
        opened = _get(admin, server, f"campaigns/plant-{name}", conn_id="docsign_h")
        assert opened.status_code == 422, (name, opened.status_code, opened.text[:300])
        assert opened.text.count("\n") <= 1
        assert "ui_result_locations" in opened.json()["detail"]
        assert opened.headers["X-Content-Type-Options"] == "nosniff"
    assert "names the connection 'plain_http_h'" in rows["plant-store"]["service_error"]
    assert listener.accepted == before
    asked = [r for r in ui_sandbox.requests() if "outside" in json.dumps(r) or "environ" in json.dumps(r)]
    assert asked == []
    assert "AIRFLOW__API_AUTH__JWT_SECRET" not in listed.text + opened.text


def test_a_false_count_neither_raises_nor_lowers_the_cost_and_is_called_a_data_error(
    admin: requests.Session, server: ApiServer, ui_sandbox: SandboxServer, planted: Any
) -> None:
    ui_sandbox.clear_requests()
    listed = _get(admin, server, "campaigns", conn_id="docsign_h_count").json()
    rows = {c["campaign_id"]: c for c in listed["campaigns"]}
    assert sorted(rows) == ["plant-negative", "plant-zero"]
    assert "counts.failed" in rows["plant-zero"]["data_error"]
    assert "rows" in rows["plant-negative"]["data_error"]
    assert rows["plant-negative"]["rows"] is None
    served = ui_sandbox.requests()
    assert {r["path"] for r in served} <= {"/envelope/get-many"}
    # Bounded by the ids read (600 in the table, 20 a request), never by "sent: 0" or "sent: -1000",
    # and by the documented bound per refresh of the list.
    assert len(served) <= listed["list_requests"] == 100
    assert rows["plant-zero"]["service"]["envelopes"] == 600
    assert len(served) == sum(-(-c["service"]["envelopes"] // 20) for c in rows.values() if c["service"])
    print(f"one load of the Campaigns list: {len(served)} requests")


@pytest.mark.parametrize(("name", "words"), [("huge", "longer than"), ("binary", "not JSON text")])
def test_a_hostile_table_is_one_json_error_line_at_a_bounded_cost(
    admin: requests.Session, server: ApiServer, ui_sandbox: SandboxServer, planted: Any, name: str, words: str
) -> None:
    ui_sandbox.clear_requests()
    before = rss_kib(server)
    resp = _get(admin, server, f"campaigns/plant-{name}", conn_id="docsign_h")
    after = rss_kib(server)
    assert resp.status_code == 422, resp.text[:300]
    assert words in resp.json()["detail"]
    assert resp.text.count("\n") <= 1
    assert resp.headers["Content-Security-Policy"]
    assert after - before < 64 * 1024, (before, after)
    print(f"RSS of the api-server: {before} KiB -> {after} KiB reading the {name} table")
    assert _get(admin, server, "connections").status_code == 200  # the next request is served
    assert ui_sandbox.requests() == []


def test_a_campaign_opens_only_through_its_own_connection_to_who_may_read_it(
    server: ApiServer, ui_sandbox: SandboxServer, planted: Any
) -> None:
    reader = server.session("reader_h")  # every DAG; connection docsign_h only
    ui_sandbox.clear_requests()
    for conn_id, status in ((None, 403), ("docsign_h", 404), ("docsign_secret", 403)):
        params = {} if conn_id is None else {"conn_id": conn_id}
        resp = reader.get(f"{server.url}/docsign/api/campaigns/plant-secret", params=params, timeout=60)
        assert resp.status_code == status, (conn_id, resp.status_code, resp.text[:300])
        assert "envelope_secret" not in resp.text
        assert "secret.jsonl" not in resp.text
    assert "docsign_secret" in resp.json()["detail"]
    assert "read access" in resp.json()["detail"]
    assert ui_sandbox.requests() == []


def test_every_campaign_id_the_send_accepts_opens(
    admin: requests.Session, server: ApiServer, planted: Any
) -> None:
    resp = _get(admin, server, "campaigns/emea%2Frenewals-2027", conn_id="docsign_h")
    assert resp.status_code == 200, resp.text[:300]
    assert resp.json()["campaign_id"] == "emea/renewals-2027"


def test_a_bulk_send_tasks_view_shows_its_campaign_only_to_who_may_read_its_connection(
    admin: requests.Session, server: ApiServer, ui_sandbox: SandboxServer, planted: Any
) -> None:
    def view(http: requests.Session, task_id: str) -> requests.Response:
        params = {"dag_id": "ui_plant", "run_id": planted["run_id"], "task_id": task_id}
        return http.get(f"{server.url}/docsign/api/task", params=params, timeout=60)

    ui_sandbox.clear_requests()
    shown = view(admin, "bulk_secret").json()["campaign"]
    assert (shown["campaign_id"], shown["connection"], shown["relation"]) == (
        "plant-secret",
        "docsign_secret",
        "sent",
    )
    refused = view(server.session("reader_h"), "bulk_secret")  # may read docsign_h, not docsign_secret
    assert refused.status_code == 403, refused.text[:300]
    assert "'docsign_secret'" in refused.json()["detail"]
    assert "plant-secret" not in refused.text
    assert view(admin, "bulk_lookalike").json()["campaign"] is None  # a class named like ours: no campaign
    zero = view(admin, "bulk_zero").json()["campaign"]
    assert "counts.failed" in zero["data_error"]
    assert ui_sandbox.requests() == []


@pytest.mark.parametrize(
    ("path", "status"), [("/docsign/api/nope", 404), ("/docsign/api/contracts?stalled_days=x", 422)]
)
def test_every_failure_is_one_json_line_with_the_security_headers(
    admin: requests.Session, server: ApiServer, path: str, status: int
) -> None:
    resp = admin.get(server.url + path, timeout=30)
    assert resp.status_code == status
    assert resp.headers["Content-Type"] == "application/json"
    assert isinstance(resp.json()["detail"], str)
    assert resp.text.count("\n") <= 1
    assert "frame-ancestors" in resp.headers["Content-Security-Policy"]


# --- A user limited to one DAG sees that DAG's contracts ----------------------------------------------


def test_a_user_limited_to_one_dag_sees_only_its_envelopes_and_every_dag_sees_all(
    server: ApiServer, team_sandbox: SandboxServer
) -> None:
    from ui_plant import dag_of, empty_task, plant

    base = "2026-01-05T10:00:{:02d}.000Z"
    specs = [
        {
            "title": f"{who} {n}",
            "status": "PENDING",
            "createdAt": base.format(n * 7 % 60),
            "recipients": [{"email": "x@y.example"}],
        }
        for n, who in enumerate(["A", "B", "nobody", "A", "B", "A"])
    ]
    ids = team_sandbox.seed(specs)
    for dag_id, who in (("ui_team_a", "A"), ("ui_team_b", "B")):
        with dag_of(dag_id) as dag:
            empty_task("create")
        mine = [i for i, s in zip(ids, specs, strict=True) if s["title"].startswith(who)]
        plant(dag, {"create": {"envelope_id": mine}})
    team_sandbox.clear_requests()
    team = server.session("team_a").get(
        f"{server.url}/docsign/api/contracts?conn_id=docsign_team", timeout=60
    )
    assert team.status_code == 200, team.text[:300]
    assert sorted(r["title"] for r in team.json()["rows"]) == ["A 0", "A 3", "A 5"]
    assert team.json()["total"] == 3
    assert not team.json()["all_dags"]
    everything = server.session("admin").get(
        f"{server.url}/docsign/api/contracts", params={"conn_id": "docsign_team", "sort": "-age"}, timeout=60
    )
    rows = everything.json()["rows"]
    assert everything.json()["total"] == 6
    assert len(rows) == 6
    # Oldest first, by the exact creation time (all within one minute).
    created = [r["created_at"] for r in rows]
    assert created == sorted(created), created
    newest = server.session("admin").get(
        f"{server.url}/docsign/api/contracts", params={"conn_id": "docsign_team", "sort": "age"}, timeout=60
    )
    assert [r["created_at"] for r in newest.json()["rows"]] == created[::-1]
