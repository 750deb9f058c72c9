"""The Contracts tab's numbers fed what a careless or hostile service, XCom, result table or URL could
hold: a template filter of garbage, template ids that are no ids, send times that are no times,
signatures before the send, envelopes with no recipients, a campaign's table outside the allowed place,
and 5,000 envelopes. Each gives a safe answer, counted at the sandbox: no request beyond the listing.

A real ``airflow api-server`` with the plugin (tests/ui_helpers.py) on the session's metadata database.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_helpers import ApiServer, port_of

from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.skipif(
    not AIRFLOW_V_3_1_PLUS, reason="the Contracts pages are an Airflow 3.1+ UI plugin"
)

KEY = "api_ui_turnaround_hostile1"
CONN, BIG = "docsign_tt_hostile", "docsign_tt_big"
CAMPAIGN, OUTSIDE = "tt-hostile", "tt-outside"
SENT = "2026-11-01T10:00:00.000Z"
#: Template ids as a careless service or seed could give them: none of them is a template id.
BAD_TEMPLATES: list[Any] = ["<script>alert(1)</script>", 10**30, -4, 1.5, True, "12abc", {"id": 3}]
#: A result table's ``sent_at`` that is no time.
BAD_SENT: list[Any] = [
    "not a time",
    1e20,
    "9999-12-31T23:59:59-05:00",
    "2026-11-01T10:00:00Z" * 10,
    None,
    "2099-01-01T00:00:00Z",  # sent tomorrow: not believed
]


def _signed(at: str, role: str = "SIGNER") -> dict[str, Any]:
    return {"email": "a@b.example", "role": role, "signingStatus": "SIGNED", "signedAt": at}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("tt-hostile-sandbox"), api_key=KEY) as server:
        yield server


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("tt-big-sandbox"), api_key=KEY) as server:
        yield server


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {"inside": tmp_path_factory.mktemp("tt-results"), "outside": tmp_path_factory.mktemp("tt-else")}


def _completed(external_id: str, recipients: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "title": external_id,
        "status": "COMPLETED",
        "externalId": external_id,
        "createdAt": "2026-11-01T09:00:00.000Z",
        "completedAt": "2026-11-02T10:00:00.000Z",
        "recipients": recipients,
        **extra,
    }


@pytest.fixture(scope="module")
def seeded(
    airflow_db: str, sandbox: SandboxServer, big: SandboxServer, roots: dict[str, Path]
) -> dict[str, Any]:
    """Envelopes of a campaign with odd data, one of a campaign outside the allowed place, and 5,000."""
    from ui_plant import bulk_task, dag_of, plant

    specs = [_completed(f"{CAMPAIGN}(T-{n})", [_signed("2026-11-01T12:00:00.000Z")], templateId=t)
             for n, t in enumerate(BAD_TEMPLATES)]  # fmt: skip
    specs.append(
        _completed(f"{CAMPAIGN}(early)", [_signed("2026-10-01T00:00:00.000Z")])
    )  # signed before sent
    specs.append(_completed(f"{CAMPAIGN}(nobody)", []))  # no recipients: completedAt stands in
    specs.append(_completed(f"{CAMPAIGN}(cc-only)", [_signed("2026-11-01T11:00:00.000Z", "CC")]))
    specs += [
        _completed(f"{CAMPAIGN}(S-{n})", [_signed("2026-11-01T12:00:00.000Z")]) for n in range(len(BAD_SENT))
    ]
    specs.append(_completed(f"{OUTSIDE}(R-0)", [_signed("2026-11-01T12:00:00.000Z")]))
    ids = sandbox.seed(specs)
    named = dict(zip([s["externalId"] for s in specs], ids, strict=True))
    rows = [{"row_key": k, "status": "sent", "envelope_id": i, "sent_at": SENT}
            for k, i in named.items() if k.startswith(CAMPAIGN) and "(S-" not in k]  # fmt: skip
    rows += [{"row_key": f"S-{n}", "status": "sent", "envelope_id": named[f"{CAMPAIGN}(S-{n})"], "sent_at": v}
             for n, v in enumerate(BAD_SENT)]  # fmt: skip
    inside = roots["inside"] / "hostile.jsonl"
    inside.write_text("".join(json.dumps(r) + "\n" for r in rows))
    outside = roots["outside"] / "outside.jsonl"
    outside.write_text(
        json.dumps({"status": "sent", "envelope_id": named[f"{OUTSIDE}(R-0)"], "sent_at": SENT})
    )
    # 5,000 envelopes, every one sent by one campaign whose table gives each its time.
    many = big.seed(
        [_completed(f"{CAMPAIGN}-big(R-{n})", [_signed("2026-11-01T12:00:00.000Z")]) for n in range(5000)]
    )
    big_table = roots["inside"] / "big.jsonl"
    big_table.write_text(
        "".join(json.dumps({"status": "sent", "envelope_id": i, "sent_at": SENT}) + "\n" for i in many)
    )
    with dag_of("ui_turnaround_hostile") as dag:
        bulk_task("send")
        bulk_task("send_outside")
        bulk_task("send_big")
    pushed = {
        "send": {"campaign_id": CAMPAIGN, "docsign_conn_id": CONN, "result_table": str(inside)},
        "send_outside": {"campaign_id": OUTSIDE, "docsign_conn_id": CONN, "result_table": str(outside)},
        "send_big": {
            "campaign_id": f"{CAMPAIGN}-big",
            "docsign_conn_id": BIG,
            "result_table": str(big_table),
        },
    }
    for result in pushed.values():
        result.update(rows=1, counts={"sent": 1, "invalid": 0, "failed": 0}, format="jsonl")
    plant(dag, {task: {"return_value": result} for task, result in pushed.items()})
    return named


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
    sandbox: SandboxServer,
    big: SandboxServer,
    seeded: dict[str, Any],
    roots: dict[str, Path],
) -> Iterator[ApiServer]:
    env = {"AIRFLOW__DOCSIGN__UI_RESULT_LOCATIONS": str(roots["inside"])}
    with ApiServer(tmp_path_factory.mktemp("tt-hostile-api"), cache_seconds=600, extra_env=env) as api:
        api.add_connection(CONN, "docsign", sandbox.base_url, KEY, port_of(sandbox.base_url))
        api.add_connection(BIG, "docsign", big.base_url, KEY, port_of(big.base_url))
        yield api


def _get(server: ApiServer, conn: str = CONN, **params: Any) -> Any:
    return server.session("admin").get(
        f"{server.url}/docsign/api/contracts", params={"conn_id": conn, **params}, timeout=120
    )


@pytest.mark.parametrize(
    "value",
    ["<script>alert(1)</script>", "1 OR 1=1", "9" * 40, "-1", "1.5", "{{ ti }}", "\u202e7", "NONE", "0x10"],
)
def test_a_template_filter_of_garbage_is_refused_before_any_request(
    server: ApiServer, sandbox: SandboxServer, value: str
) -> None:
    sandbox.clear_requests()
    resp = _get(server, template_id=value)
    assert resp.status_code == 422, resp.text[:300]
    assert "template_id" in resp.json()["detail"]
    assert "<script>" not in resp.text
    assert sandbox.requests() == []


def test_odd_data_gives_safe_numbers_and_names_what_it_could_not_read(
    server: ApiServer, sandbox: SandboxServer, seeded: dict[str, Any]
) -> None:
    data = _get(server).json()
    rows = {r["external_id"]: r for r in data["rows"]}
    # A template id that is no id is no template: never echoed, never a filter option.
    assert {rows[f"{CAMPAIGN}(T-{n})"]["template_id"] for n in range(len(BAD_TEMPLATES))} == {None}
    assert data["templates"] == []
    assert len(_get(server, template_id="none").json()["rows"]) == len(rows)
    assert _get(server, template_id="1").json()["rows"] == []
    # A signature before the send time is a time to sign of 0, never negative.
    assert rows[f"{CAMPAIGN}(early)"]["seconds_to_sign"] == 0
    # No recipients: the service's completedAt stands in; a CC's signature is never the last signature.
    assert rows[f"{CAMPAIGN}(nobody)"]["seconds_to_sign"] == 24 * 3600
    assert rows[f"{CAMPAIGN}(cc-only)"]["seconds_to_sign"] == 24 * 3600
    # A result table's sent_at that is no time gives no send time (never the bulk task's end).
    for n in range(len(BAD_SENT)):
        row = rows[f"{CAMPAIGN}(S-{n})"]
        assert (row["sent"], row["sent_at"], row["seconds_to_sign"]) == (None, None, None), n
    # A campaign whose table lies outside the allowed place: no send times, and the summary names it.
    assert rows[f"{OUTSIDE}(R-0)"]["sent"] is None
    summary = data["summary"]
    assert summary["unread_campaigns"] == [OUTSIDE]
    assert summary["without_sent"] == len(BAD_SENT) + 1
    assert summary["time_to_sign"]["completed_without_sent"] == len(BAD_SENT) + 1
    assert summary["time_to_sign"]["count"] == len(rows) - len(BAD_SENT) - 1
    assert all(b["count"] >= 0 for b in summary["histogram"])
    assert sum(b["count"] for b in summary["histogram"]) == summary["time_to_sign"]["count"]


def test_5000_envelopes_cost_the_listing_alone_and_filters_cost_nothing(
    server: ApiServer, big: SandboxServer, seeded: dict[str, Any]
) -> None:
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.ui.reader import read_listing

    # What the listing alone costs (the page's budget before the numbers came).
    big.clear_requests()
    with DocsignHook(base_url=big.base_url, api_key=KEY) as hook:
        assert len(read_listing(hook).envelopes) == 5000
    baseline = [r["path"] for r in big.requests()]
    big.clear_requests()
    data = _get(server, BIG).json()
    assert [r["path"] for r in big.requests()] == baseline
    assert data["total"] == 5000
    assert data["truncated"] is None
    assert data["summary"]["time_to_sign"]["count"] == 5000
    assert data["summary"]["time_to_sign"]["median_seconds"] == 2 * 3600
    big.clear_requests()
    for params in (
        {"template_id": "none"},
        {"status": "COMPLETED"},
        {"folder_id": "root"},
        {"stalled": "true"},
    ):
        assert _get(server, BIG, **params).status_code == 200
    assert big.requests() == []
