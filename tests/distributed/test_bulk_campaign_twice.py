"""The campaign example triggered twice at once through the REST API, then once more: one envelope a row.

``docsign_bulk_signing`` on two Celery workers that share no disk, with the stack's leases in one S3
prefix (``[docsign] campaign_lease_dir``, as docs/bulk.md tells a deployment on several machines). Two
``POST /api/v2/dags/{id}/dagRuns`` at once (a double click on *Trigger*), then a third after both
ended. docs/bulk.md says such a DAG "never contacts a customer twice: the second run finds each row's
envelope at the service and adopts it"; this counts it where it shows: envelopes per ``externalId`` at
the stack's sandbox, each run's send XCom and result table, and the lease on S3 (none on any worker's
disk).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import pytest
import requests
from stack import LEASE_DIR, WORK_BUCKET, WORKERS, Stack

from airflow_provider_docsign.bulk.lease import lease_name
from airflow_provider_docsign.bulk.store import service_identity

from .dist_helpers import archive_prefix, keys, manifests

pytestmark = pytest.mark.distributed

DAG_ID = "docsign_bulk_signing"
ROWS = 3


def _customers(campaign: str) -> list[dict[str, str]]:
    return [
        {"id": f"T-{n}", "name": f"Twice {n}", "email": f"twice{n}@{campaign}.example", "company": f"Co {n}"}
        for n in range(ROWS)
    ]


def _send_logs(stack: Stack, run_id: str, task_id: str = "send_campaign") -> str:
    pattern = f"dag_id={DAG_ID}/run_id={run_id}/task_id={task_id}/attempt=*.log"
    return "\n".join(p.read_text(errors="replace") for p in (stack.base / "hosts").rglob(pattern))


def _sent(api: Any, run_id: str) -> dict[str, Any]:
    """The send task's XCom (its last try's)."""
    path = f"/dags/{DAG_ID}/dagRuns/{quote(run_id)}/taskInstances/send_campaign/xcomEntries/return_value"
    value = api.get(path)["value"]
    return dict(json.loads(value) if isinstance(value, str) else value)


def _table(s3: Any, uri: str) -> list[dict[str, Any]]:
    key = uri.removeprefix(f"s3://{WORK_BUCKET}/")
    body = s3.get_object(Bucket=WORK_BUCKET, Key=key)["Body"].read().decode()
    return [json.loads(line) for line in body.splitlines()]


def _trigger_together(api: Any, conf: dict[str, Any]) -> list[str]:
    """Two ``POST .../dagRuns`` released at the same moment, each on its own connection."""
    api.wait(f"{DAG_ID} to be parsed", lambda: api.http.get(f"{api.url}/api/v2/dags/{DAG_ID}", timeout=10))
    gate = threading.Barrier(2)

    def post(_: int) -> str:
        gate.wait(timeout=30)
        resp = requests.post(
            f"{api.url}/api/v2/dags/{DAG_ID}/dagRuns",
            json={"logical_date": None, "conf": conf},
            headers={"Authorization": api.http.headers["Authorization"]},
            timeout=30,
        )
        assert resp.status_code == 200, resp.text
        return str(resp.json()["dag_run_id"])

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(post, range(2)))


def _green_or_names_the_owner(api: Any, stack: Stack, run_id: str) -> str:
    """The run's end: green, or failed at the send with the lease's owner named in its log."""
    state = api.finish(DAG_ID, run_id)
    states = {t["task_id"]: t["state"] for t in api.task_instances(DAG_ID, run_id)}
    if state != "success":
        failed = {t: _send_logs(stack, run_id, t)[-3000:] for t, st in states.items() if st == "failed"}
        assert states["send_campaign"] == "failed", (states, failed)
        assert "is being sent by another try (" in _send_logs(stack, run_id), states
    else:
        assert set(states.values()) == {"success"}, states
    return state


def test_the_example_triggered_twice_at_once_then_again_sends_each_row_one_envelope(
    stack: Stack, api: Any, s3: Any, docsign_hook: Any
) -> None:
    campaign = f"twice-{uuid.uuid4().hex[:8]}"
    customers = _customers(campaign)
    # One archive folder for every run, as a double click gives: the second archive skips what is there.
    conf = {"campaign": campaign, "customers": customers, "archive_dir": archive_prefix(campaign)}
    external_ids = [f"{campaign}({c['id']})" for c in customers]

    together = _trigger_together(api, conf)
    ends = [_green_or_names_the_owner(api, stack, run_id) for run_id in together]
    again = api.trigger(DAG_ID, **conf)
    ends.append(_green_or_names_the_owner(api, stack, again))
    assert "success" in ends

    # At the sandbox: one envelope per row, whatever the three runs did.
    found = Counter(e.external_id for e in docsign_hook.find_envelopes(query=f"{campaign}(") if e.external_id)
    assert found == Counter(dict.fromkeys(external_ids, 1))

    # Each green run's result table names the same envelopes, all sent; every run but the one that
    # sent adopted every row (the second of the two at once waited for the lease, then adopted).
    green = [run_id for run_id, end in zip([*together, again], ends, strict=True) if end == "success"]
    results = {run_id: _sent(api, run_id) for run_id in green}
    tables = {run_id: _table(s3, r["result_table"]) for run_id, r in results.items()}
    for table in tables.values():
        assert [r["external_id"] for r in table] == external_ids
        assert {r["status"] for r in table} == {"sent"}
    assert len({tuple(r["envelope_id"] for r in t) for t in tables.values()}) == 1
    assert len({r["result_table"] for r in results.values()}) == len(green)  # a folder per run
    adopted = sorted(r["adopted"] for r in results.values())
    assert adopted == [0] + [ROWS] * (len(green) - 1)  # exactly one run sent
    assert results[again]["adopted"] == ROWS
    assert results[again]["counts"] == {"sent": ROWS, "created": 0, "invalid": 0, "failed": 0}

    # The archive: one folder and one manifest per envelope, however many runs archived.
    assert sorted(m["external_id"] for m in manifests(s3, f"{campaign}/")) == sorted(external_ids)

    # The lease is one S3 object in the shared prefix, given back; no worker kept one on its own disk.
    prefix = LEASE_DIR.removeprefix(f"s3://{WORK_BUCKET}/")
    name = lease_name(campaign, service_identity(stack.sandbox_url))
    assert f"{prefix}/{name}" in keys(s3, WORK_BUCKET, f"{prefix}/")
    record = json.loads(s3.get_object(Bucket=WORK_BUCKET, Key=f"{prefix}/{name}")["Body"].read())
    assert (record["campaign_id"], record["owner"]) == (campaign, None)
    for worker in WORKERS:
        assert not list(stack.home(worker).rglob(".docsign-campaign-*.lease.json")), worker
