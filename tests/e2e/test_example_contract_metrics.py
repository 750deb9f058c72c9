"""The contract-metrics example runs with ``dag.test()`` on a sandbox seeded with a dozen known timings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import load_dagbag, task_states
from helpers import asset_events, conn_json

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service import turnaround

pytestmark = pytest.mark.e2e

DAY = datetime(2026, 11, 2, tzinfo=timezone.utc)
# (template, hours from sent to the last signature): nearest-rank medians 2.0 and 1.5, p90 4.0 and 10.0.
TIMINGS = [(101, 1.0), (101, 2.0), (101, 3.0), (101, 4.0), (102, 0.5), (102, 1.5), (102, 2.5), (102, 10.0)]


def _iso(dt: datetime) -> str:
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _specs() -> list[dict[str, Any]]:
    specs = []
    for n, (template, hours) in enumerate(TIMINGS):
        sent = DAY + timedelta(hours=1, minutes=n)
        done = sent + timedelta(hours=hours)
        specs.append(
            {
                "title": f"Order form {n}",
                "status": "COMPLETED",
                "templateId": template,
                "createdAt": _iso(sent - timedelta(minutes=2)),
                "sentAt": _iso(sent),
                "updatedAt": _iso(done),
                "completedAt": _iso(done),
                "recipients": [
                    {
                        "email": f"buyer{n}@example.test",
                        "name": f"Buyer {n}",
                        "signingStatus": "SIGNED",
                        "sendStatus": "SENT",
                        "signedAt": _iso(done),
                    }
                ],
            }
        )
    pending = {
        "status": "PENDING",
        "templateId": 101,
        "recipients": [{"email": "late@example.test", "name": "Late"}],
    }
    specs.append(
        {
            **pending,
            "title": "Stalled",
            "createdAt": _iso(DAY + timedelta(hours=1)),
            "sentAt": _iso(DAY + timedelta(hours=1)),
        }
    )
    specs.append(
        {
            **pending,
            "title": "Fresh",
            "createdAt": _iso(DAY + timedelta(hours=20)),
            "sentAt": _iso(DAY + timedelta(hours=20)),
        }
    )
    specs.append(
        {"title": "Draft", "status": "DRAFT", "templateId": 102, "createdAt": _iso(DAY + timedelta(hours=3))}
    )
    specs.append(
        {
            "title": "Other day",
            "status": "COMPLETED",
            "templateId": 101,
            "createdAt": _iso(DAY - timedelta(days=1)),
            "completedAt": _iso(DAY - timedelta(days=1, hours=-1)),
            "sentAt": _iso(DAY - timedelta(days=1)),
        }
    )
    return specs


@pytest.fixture(scope="module")
def metrics_sandbox(tmp_path_factory: pytest.TempPathFactory, api_key: str) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("metrics-sandbox"), api_key=api_key) as server:
        server.seed(_specs())
        yield server


def _turnaround_per_template(server: SandboxServer, api_key: str) -> dict[str, dict[str, Any]]:
    """What service/turnaround computes from the sandbox's own envelopes and audit logs, per template."""
    hook = DocsignHook(base_url=server.base_url, api_key=api_key)
    ids = [s.id for s in hook.find_envelopes(envelope_type="DOCUMENT")]
    pairs: dict[str, list[tuple[Any, Any]]] = {}
    for envelope in hook.get_envelopes(ids):
        if (envelope.created_at or "") < "2026-11-02":  # the other day's envelope is not in the day's view
            continue
        sent = turnaround.sent(audit=turnaround.audit_time(hook.get_audit_log(envelope.id), "DOCUMENT_SENT"))
        name = f"template {envelope.raw.get('templateId') or 'none'}"
        pairs.setdefault(name, []).append((envelope, sent))
    result = {}
    for name, group in sorted(pairs.items()):
        summary = turnaround.summarize(group)
        if summary.count:
            result[name] = {
                "envelopes": summary.count,
                "median_seconds": summary.median_seconds,
                "p90_seconds": summary.p90_seconds,
            }
    return result


def test_contract_metrics_reports_known_medians_and_draws_the_chart(
    metrics_sandbox: SandboxServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    airflow_db: str,
    api_key: str,
) -> None:
    export_dir = tmp_path / "contract-data"
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(metrics_sandbox, pii_hash_key="metrics-key"))
    monkeypatch.setenv("DOCSIGN_EXAMPLE_EXPORT_DIR", str(export_dir))
    if not AIRFLOW_V_3_0_PLUS:
        monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "SequentialExecutor")
        from airflow.executors import executor_loader

        monkeypatch.setattr(executor_loader, "_executor_names", [])
    bag = load_dagbag()
    assert not bag.import_errors, bag.import_errors
    dag = bag.dags["docsign_contract_metrics"]
    if not AIRFLOW_V_3_0_PLUS:
        # Airflow 2.11's dag.test() does not write the DAG (and its outlet datasets) to the database
        # itself, and records events only for datasets that exist there.
        dag.sync_to_db()
    conf = {"stalled_hours": 12}
    # A manual run at midnight of Nov 3 covers the last complete interval: [Nov 2, Nov 3).
    when = DAY + timedelta(days=1)
    if AIRFLOW_V_3_0_PLUS:
        dag_run = dag.test(logical_date=when, run_conf=conf)
    else:
        dag_run = dag.test(execution_date=when, run_conf=conf)
    assert set(task_states(dag_run).values()) == {"success"}
    assert dag_run.data_interval_start == DAY

    report_dir = export_dir / "reports" / "date=2026-11-02"
    report = json.loads((report_dir / "time_to_sign.json").read_text())
    hours = {
        name: {k: v for k, v in values.items() if k in ("envelopes", "median_hours", "p90_hours")}
        for name, values in report["time_to_sign"].items()
    }
    assert hours == {
        "template 101": {"envelopes": 4, "median_hours": 2.0, "p90_hours": 4.0},
        "template 102": {"envelopes": 4, "median_hours": 1.5, "p90_hours": 10.0},
    }
    # The report's seconds are what the one definition (service/turnaround) computes from the service's
    # own data: the example, the Contracts page and a warehouse query agree to the second.
    seconds = {
        name: {k: v for k, v in values.items() if k in ("envelopes", "median_seconds", "p90_seconds")}
        for name, values in report["time_to_sign"].items()
    }
    assert seconds == _turnaround_per_template(metrics_sandbox, api_key)
    assert seconds["template 101"]["median_seconds"] == 2 * 3600.0
    assert report["stalled_envelopes"] == 1  # "Stalled" (sent at 01:00); "Fresh" changed at 20:00
    png = (report_dir / "time_to_sign.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) > 5000
    rows = (export_dir / "envelopes" / "date=2026-11-02" / "part-0000.jsonl").read_text().splitlines()
    assert len(rows) == 11  # the other day's envelope is not in this day's partition
    recipients = (export_dir / "recipients" / "date=2026-11-02" / "part-0000.jsonl").read_text()
    assert "@example.test" not in recipients  # hashed
    events = asset_events(f"file://{export_dir}")
    assert len(events) == 1
    assert events[0]["date"] == "2026-11-02"
    assert events[0]["rows"] == {"envelopes": 11, "recipients": 10, "field_values": 0}
