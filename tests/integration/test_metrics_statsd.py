"""The provider's metrics reach a real StatsD socket from a real task run, and hold nothing personal.

A DAG (create with one 429 from the sandbox, distribute, a poke-mode wait, a deferred wait, a small
bulk campaign and the campaign's batch wait) runs with ``dag.test()`` in a process of its own, started
with ``[metrics]`` in its environment, as a worker is started with it: Airflow sets its ``Stats`` up
from that once per process. A UDP socket bound on 127.0.0.1 stands in for the StatsD server.
"""

from __future__ import annotations

import csv
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import conn_json
from statsd_helpers import Datagram, StatsdSink, metrics_env, run_python
from template_helpers import field

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sensors._outcomes import AUDIT_PAGES
from airflow_provider_docsign.service.expiry import parse_timestamp

TITLE = "Confidential merger term sheet 7Q"
EMAIL = "alice.private@example.test"
ROW_EMAIL = "bob.rowperson@example.test"
CAMPAIGN = "spring-renewals"  # with a suffix per run: a campaign the sandbox knows is adopted, not sent

DAG_FILE = """
from datetime import datetime

try:
    from airflow.sdk import DAG

    AIRFLOW_2 = False
except ImportError:  # Airflow 2.11
    from airflow.models.dag import DAG

    AIRFLOW_2 = True

from airflow_provider_docsign.operators import (
    DocsignBulkSendOperator,
    DocsignCreateEnvelopeOperator,
    DocsignDistributeEnvelopeOperator,
)
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

with DAG("docsign_metrics", schedule=None, start_date=datetime(2024, 1, 1), catchup=False) as dag:
    create = DocsignCreateEnvelopeOperator(
        task_id="create",
        title={title!r},
        files=[{pdf!r}],
        recipients=[
            {{
                "email": {email!r},
                "name": "Alice Private",
                "role": "SIGNER",
                "fields": [{{"identifier": 0, "type": "SIGNATURE", "page": 1, "positionX": 10,
                            "positionY": 80, "width": 30, "height": 8}}],
            }}
        ],
    )
    envelope_id = create.output["envelope_id"]
    send = DocsignDistributeEnvelopeOperator(task_id="send", envelope_id=envelope_id)
    wait = DocsignEnvelopeSensor(task_id="wait", envelope_id=envelope_id, mode="poke", poke_interval=0.2)
    wait_deferred = DocsignEnvelopeSensor(
        task_id="wait_deferred", envelope_id=envelope_id, deferrable=True, poke_interval=0.2
    )
    campaign = DocsignBulkSendOperator(
        task_id="campaign",
        rows={rows!r},
        result_table={result!r},
        campaign_id={campaign!r},
        template_id={template_id!r},
        recipients=[{{"placeholder": "Customer", "email": "{{email}}", "name": "{{name}}"}}],
        prefill_fields={{"company": "{{company}}"}},
        title="Renewal for {{name}}",
        max_invalid=1,
    )
    wait_campaign = DocsignEnvelopeSensor(
        task_id="wait_campaign", result_table={result!r}, mode="poke", poke_interval=0.2, max_unsigned=0
    )
    create >> send >> wait >> wait_deferred >> campaign >> wait_campaign

if __name__ == "__main__":
    if AIRFLOW_2:
        dag.sync_to_db()
    run = dag.test()
    state = getattr(run.state, "value", run.state)
    print("RUN STATE", state)
    assert state == "success", state
"""


@pytest.fixture(scope="module")
def signing_sandbox(tmp_path_factory: pytest.TempPathFactory, api_key: str) -> Iterator[SandboxServer]:
    """A sandbox whose signer signs half a second after sending; stopped by its handle."""
    data = tmp_path_factory.mktemp("metrics-sandbox")
    with SandboxServer(data, api_key=api_key, auto_sign_after=0.5) as sb:
        yield sb


def _dag_file(tmp_path: Path, sandbox: SandboxServer, campaign: str) -> Path:
    with DocsignHook(base_url=sandbox.base_url, api_key=sandbox.api_key) as hook:
        template_id = hook.create_template(
            title="Renewal template",
            files=[write_sample_pdf(tmp_path / "t.pdf", title="t")],
            recipients=[
                {
                    "email": "customer@placeholder.test",
                    "name": "Customer",
                    "role": "SIGNER",
                    "fields": [field("TEXT", 1, 10, "company"), field("SIGNATURE", 1, 80)],
                }
            ],
        )
    rows = tmp_path / "rows.csv"
    with rows.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["row_key", "email", "name", "company"])
        writer.writeheader()
        writer.writerow({"row_key": "R-1", "email": ROW_EMAIL, "name": "Bob Row", "company": "Co 1"})
        writer.writerow({"row_key": "R-2", "email": "carol@example.test", "name": "Carol", "company": "Co 2"})
        writer.writerow({"row_key": "R-3", "email": "not an e-mail", "name": "Invalid", "company": "Co 3"})
    dags = tmp_path / "dags"
    dags.mkdir()
    dag_file = dags / "docsign_metrics_dag.py"
    source = DAG_FILE.format(
        title=TITLE,
        pdf=str(write_sample_pdf(tmp_path / "contract.pdf", title="contract")),
        email=EMAIL,
        rows=str(rows),
        result=str(tmp_path / "out" / "results.jsonl"),
        campaign=campaign,
        template_id=template_id,
    )
    dag_file.write_text(textwrap.dedent(source))
    return dag_file


def _run(tmp_path: Path, sandbox: SandboxServer, env: dict[str, str], campaign: str) -> str:
    dag_file = _dag_file(tmp_path, sandbox, campaign)
    env["AIRFLOW__CORE__DAGS_FOLDER"] = str(dag_file.parent)
    env["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = conn_json(sandbox)
    env["AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_DIR"] = str(tmp_path / "leases")
    if not AIRFLOW_V_3_0_PLUS:
        env["AIRFLOW__CORE__EXECUTOR"] = "SequentialExecutor"
    # One 429 (with Retry-After) on the create: retried by the hook, counted in the metrics.
    sandbox.inject_fault("POST", "/envelope/create", "status", status=429, retry_after=0.1, count=1)
    return run_python(dag_file, env)


def _names(datagrams: list[Datagram]) -> set[str]:
    return {d.name.removeprefix("airflow.") for d in datagrams}


def _private_texts(sandbox: SandboxServer) -> list[str]:
    return [EMAIL, ROW_EMAIL, "carol@example.test", TITLE, "Alice Private", "Bob Row", sandbox.api_key]


def _campaign_times_to_sign_ms(tmp_path: Path, sandbox: SandboxServer) -> list[float]:
    """From the result table's ``sent_at`` to the last ``signedAt`` at the sandbox, in ms, sorted."""
    times = []
    for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["status"] != "sent":
            continue
        envelope = sandbox.get_envelope(row["envelope_id"])
        signed = max(parse_timestamp(r["signedAt"]) for r in envelope["recipients"] if r["role"] != "CC")
        times.append(round((signed - parse_timestamp(row["sent_at"])).total_seconds(), 3) * 1000.0)
    assert len(times) == 2, times
    return sorted(times)


def _audit_reads(sandbox: SandboxServer) -> int:
    return sum(1 for r in sandbox.requests() if str(r["path"]).endswith("/audit-log"))


@pytest.mark.parametrize("datadog", [False, True], ids=["statsd", "dogstatsd"])
def test_a_task_run_sends_the_documented_metrics_and_nothing_personal(
    tmp_path: Path, signing_sandbox: SandboxServer, airflow_db: str, datadog: bool
) -> None:
    signing_sandbox.clear_requests()
    campaign = f"{CAMPAIGN}-{'dd' if datadog else 'plain'}"
    with StatsdSink() as sink:
        output = _run(tmp_path, signing_sandbox, metrics_env(sink.port, datadog=datadog), campaign)
    assert "RUN STATE success" in output
    datagrams = sink.datagrams()
    names = _names(datagrams)
    # The dimensions go in names of their own only where the backend drops tags (plain StatsD).
    by_dimension = {
        "docsign.requests.create_envelope.4xx",
        "docsign.requests.create_envelope.2xx",
        "docsign.requests.distribute_envelope.2xx",
        "docsign.requests.get_envelopes.2xx",
        "docsign.rate_limited.create_envelope",
        "docsign.retries.create_envelope",
    }
    if datadog:
        assert not {
            n
            for n in names
            if n.startswith(("docsign.requests.", "docsign.rate_limited.", "docsign.retries."))
        }
    expected = {
        *(set() if datadog else by_dimension),
        "docsign.requests",
        "docsign.rate_limited",
        "docsign.retries",
        "docsign.retry_wait",
        "docsign.envelopes.created",
        "docsign.envelopes.sent",
        "docsign.envelopes.completed",
        "docsign.time_to_sign",
        "docsign.campaign.rows.sent",
        "docsign.campaign.rows.invalid",
        "docsign.campaign.sent",
        "docsign.campaign.invalid",
        "docsign.campaign.in_flight",
    }
    assert expected <= names, sorted(expected - names)
    by_name: dict[str, list[Datagram]] = {}
    for d in datagrams:
        by_name.setdefault(d.name.removeprefix("airflow."), []).append(d)
    # One per single wait (from the audit log), one per campaign envelope (from its row's sent_at).
    assert [d.kind for d in by_name["docsign.time_to_sign"]] == ["ms"] * 4
    campaign_ms = sorted(float(d.value) for d in by_name["docsign.time_to_sign"][2:])
    assert campaign_ms == pytest.approx(_campaign_times_to_sign_ms(tmp_path, signing_sandbox), abs=0.01)
    assert {d.kind for d in by_name["docsign.campaign.sent"]} == {"g"}
    assert sum(int(d.value) for d in by_name["docsign.campaign.rows.sent"]) == 2
    assert sum(int(d.value) for d in by_name["docsign.envelopes.completed"]) == 4  # each wait saw each once
    # Metrics on: the send time came from the audit log, read within its bound.
    assert 1 <= _audit_reads(signing_sandbox) <= 2 * AUDIT_PAGES
    if datadog:
        limited = by_name["docsign.rate_limited"][0].tags
        assert limited == {"conn_id": "docsign_default", "operation": "create_envelope"}
        statuses = {(d.tags["operation"], d.tags["status_class"]) for d in by_name["docsign.requests"]}
        assert ("create_envelope", "4xx") in statuses
        assert ("get_audit_log", "2xx") in statuses
        assert {d.tags.get("campaign") for d in by_name["docsign.campaign.rows.sent"]} == {campaign}
        sources = [d.tags for d in by_name["docsign.time_to_sign"]]
        assert sources == [
            {"conn_id": "docsign_default", "source": s} for s in ["audit"] * 2 + ["campaign"] * 2
        ]
    else:
        assert all(not d.tags for d in datagrams)  # plain StatsD: the dimensions are in the names
    every = "\n".join(sink.lines())
    for text in _private_texts(signing_sandbox):
        assert text not in every
    assert "@" not in every


def test_with_metrics_off_nothing_is_sent_and_no_audit_log_is_read(
    tmp_path: Path, signing_sandbox: SandboxServer, airflow_db: str
) -> None:
    signing_sandbox.clear_requests()
    with StatsdSink() as sink:
        output = _run(tmp_path, signing_sandbox, metrics_env(sink.port, on=False), f"{CAMPAIGN}-off")
    assert "RUN STATE success" in output
    assert sink.lines() == []
    assert _audit_reads(signing_sandbox) == 0
