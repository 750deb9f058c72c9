"""A bulk campaign's worker killed with SIGKILL mid-flight, then run again: every row exists exactly once.

The task runs in its own process (``dag.test()`` of a one-task DAG, as a worker runs it). Every
``POST /envelope/use`` is held back by the sandbox for a moment, so that when the process is killed
several creates are in flight: they reach the service after the worker is gone. The second run must
find those by their ``externalId`` instead of creating them again.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers import conn_json
from template_helpers import field

from airflow_provider_docsign.bulk.store import CHECKPOINT_SUFFIX
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.e2e

ROWS = 300
KILL_AFTER = 120  # creates answered before the kill

DAG_FILE = """
from datetime import datetime

try:
    from airflow.sdk import DAG

    AIRFLOW_2 = False
except ImportError:  # Airflow 2.11
    from airflow.models.dag import DAG

    AIRFLOW_2 = True

from airflow_provider_docsign.operators import DocsignBulkSendOperator

with DAG("bulk_kill", schedule=None, start_date=datetime(2024, 1, 1), catchup=False) as dag:
    DocsignBulkSendOperator(
        task_id="send",
        rows={rows!r},
        result_table={result!r},
        campaign_id="killed-campaign",
        template_id={template_id!r},
        recipients=[{{"placeholder": "Customer", "email": "{{email}}", "name": "{{name}}"}}],
        prefill_fields={{"company": "{{company}}"}},
        title="Renewal for {{name}}",
        max_in_flight=8,
        progress_seconds=2,
    )

if __name__ == "__main__":
    if AIRFLOW_2:  # 2.11's dag.test() writes no dataset rows (the dag processor would): events need them
        dag.sync_to_db()
    dag.test()
"""


def campaign_envelopes(hook: DocsignHook) -> list[str]:
    """The external ids of the campaign's envelopes at the sandbox, one entry per envelope."""
    return [
        e.external_id or ""
        for e in hook.find_envelopes(query="killed-campaign(")
        if (e.external_id or "").startswith("killed-campaign(")
    ]


def start_worker(dag_file: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, str(dag_file)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def test_sigkill_mid_campaign_then_rerun_sends_every_row_exactly_once(
    tmp_path: Path, api_key: str, airflow_db: str
) -> None:
    from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS

    rows = [
        {"row_key": f"K-{i:04d}", "email": f"k{i}@example.test", "name": f"Kay {i}", "company": f"Co {i}"}
        for i in range(ROWS)
    ]
    source = tmp_path / "rows.csv"
    with source.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = tmp_path / "out" / "results.jsonl"
    from airflow_provider_docsign.samples import write_sample_pdf

    with SandboxServer(tmp_path / "sandbox", api_key=api_key) as sandbox:
        with DocsignHook(base_url=sandbox.base_url, api_key=api_key) as hook:
            template_id = hook.create_template(
                title="Kill template",
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
        dags = tmp_path / "dags"  # dag.test() syncs the DAG from its dags folder (Airflow 3)
        dags.mkdir()
        dag_file = dags / "bulk_kill_dag.py"
        dag_file.write_text(
            textwrap.dedent(DAG_FILE).format(rows=str(source), result=str(result), template_id=template_id)
        )
        leases = tmp_path / "leases"  # [docsign] campaign_lease_dir
        # A 20 s heartbeat: a stale period of 45 s, which outlasts a loaded machine's start of the retry
        # (with the default 10 s, 25 s, a busy CI run's retry found the lease stale before it looked).
        env = dict(
            os.environ,
            AIRFLOW__CORE__DAGS_FOLDER=str(dags),
            AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_DIR=str(leases),
            AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_HEARTBEAT="20",
        )
        # A short read timeout: the rerun looks up the rows in flight that long after the last checkpoint.
        env["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = conn_json(sandbox, timeout=[5, 3])
        if not AIRFLOW_V_3_0_PLUS:
            env["AIRFLOW__CORE__EXECUTOR"] = "SequentialExecutor"
        # Every create is processed at once but answered 0.5 s later: the kill lands with creates that
        # took effect while the worker never heard of them.
        sandbox.inject_fault("POST", "/envelope/use", "delay_reply", delay=0.5, count=10 * ROWS)
        sandbox.clear_requests()

        log = tmp_path / "worker.log"
        worker = start_worker(dag_file, env, log)
        try:
            deadline = time.monotonic() + 240
            answered = 0
            while answered < KILL_AFTER:
                assert worker.poll() is None, log.read_text(errors="replace")[-3000:]
                assert time.monotonic() < deadline, "the campaign did not get going"
                time.sleep(0.2)
                answered = sum(1 for r in sandbox.requests() if r["path"] == "/envelope/use")
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(timeout=30)
        assert worker.returncode == -signal.SIGKILL
        killed_at = sum(1 for r in sandbox.requests() if r["path"] == "/envelope/use")
        assert KILL_AFTER <= killed_at < ROWS, "the kill must land in the middle of the campaign"
        assert not result.exists()
        checkpoint = json.loads(Path(f"{result}{CHECKPOINT_SUFFIX}").read_text())
        in_flight = [entry for entry in checkpoint["rows"] if entry[1] == "in_flight"]
        assert in_flight, "some rows must have been in flight at the kill"
        time.sleep(1.0)  # the held answers go out (to nobody)
        with DocsignHook(base_url=sandbox.base_url, api_key=api_key) as hook:
            before = len(campaign_envelopes(hook))
        sent_before = sum(1 for entry in checkpoint["rows"] if entry[1] == "sent")
        # Envelopes exist that the checkpoint does not know as sent: the case a rerun must not duplicate.
        assert before > sent_before

        sandbox.clear_faults()
        uses_before = sum(1 for r in sandbox.requests() if r["path"] == "/envelope/use")
        sandbox.clear_requests()
        # Retried at once: the dead worker's lease is still fresh. The retry waits (at most one stale
        # period, saying why), takes the lease over once the dead owner's beat is stale, and finishes.
        (lease_file,) = leases.glob(".docsign-campaign-*.lease.json")
        lease = json.loads(lease_file.read_text())
        assert lease["owner"] is not None  # the dead owner's record, never given back
        assert lease["stale_after"] == 2 * 20 + 2 + 3  # two beats, the margin, the read timeout
        # The dead owner's last beat as if the kill had come just now: on a busy machine the checks
        # above and the retry's start can take a long while, and the retry would then find the lease
        # stale at once instead of waiting, which is what is tested here.
        lease["beat"] = time.time()
        lease_file.write_text(json.dumps(lease))
        rerun = subprocess.run(
            [sys.executable, str(dag_file)], env=env, capture_output=True, timeout=600, check=False
        )
        output = (rerun.stdout + rerun.stderr).decode(errors="replace")
        assert rerun.returncode == 0, output[-3000:]
        assert api_key not in output
        assert "Waiting up to 45s for the lease of campaign 'killed-campaign'" in output
        assert "Taking over the lease of campaign 'killed-campaign'" in output

        with DocsignHook(base_url=sandbox.base_url, api_key=api_key) as hook:
            counts = Counter(campaign_envelopes(hook))
        uses = uses_before + sum(1 for r in sandbox.requests() if r["path"] == "/envelope/use")

    expected = {f"killed-campaign({row['row_key']})" for row in rows}
    assert set(counts) == expected
    assert set(counts.values()) == {1}, [k for k, n in counts.items() if n > 1]
    # One create per row, plus at most one more for a row whose request the kill cut off before the
    # service had read it (then nothing was created, and the rerun created it).
    assert ROWS <= uses <= ROWS + len(in_flight)
    table = [json.loads(line) for line in result.read_text().splitlines()]
    assert len(table) == ROWS
    assert [r["row_key"] for r in table] == [row["row_key"] for row in rows]
    assert {r["status"] for r in table} == {"sent"}
    assert len({r["envelope_id"] for r in table}) == ROWS
    assert "Resuming campaign killed-campaign" in output
    # The finished run emitted one Asset event for the result table, with its counts (the killed run none).
    from helpers import asset_events

    (event,) = asset_events(result.as_uri())
    assert event["counts"] == {"sent": ROWS, "created": 0, "invalid": 0, "failed": 0}
    assert event["result_table"] == result.as_uri()
