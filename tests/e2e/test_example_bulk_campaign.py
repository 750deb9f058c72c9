"""The campaign example (``docsign_bulk_signing``) runs for real with ``dag.test()`` against the sandbox.

Template, rows, one bulk task, one deferrable wait on the result table, one batch archive, a report:
every customer's envelope is sent once, signed by the sandbox's signers, archived in its own folder
with its own manifest, and the report counts it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import run_example, task_states

from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.e2e

CUSTOMERS = [
    {"id": f"R-{n}", "name": f"Rene {n}", "email": f"rene{n}@example.test", "company": f"Renewals {n}"}
    for n in range(5)
]


def _state(value: Any) -> str:
    return str(getattr(value, "value", value))


def test_the_campaign_example_sends_waits_archives_and_reports(
    example_env: dict[str, Any], autosign_sandbox: SandboxServer
) -> None:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    campaign_id = f"renewals-{uuid.uuid4().hex[:8]}"
    dag_run = run_example("docsign_bulk_signing", customers=CUSTOMERS, campaign=campaign_id, **example_env)

    assert _state(dag_run.state) == "success"
    states = task_states(dag_run)
    assert set(states.values()) == {"success"}, states
    # One task per step, whatever the number of rows: nothing is mapped.
    assert {map_index for _, map_index in states} == {-1}

    (campaign,) = list((Path(example_env["work_dir"]) / "campaigns").iterdir())
    table = [json.loads(line) for line in (campaign / "results.jsonl").read_text().splitlines()]
    assert [r["row_key"] for r in table] == [c["id"] for c in CUSTOMERS]
    assert {r["status"] for r in table} == {"sent"}
    assert [r["external_id"] for r in table] == [f"{campaign_id}({c['id']})" for c in CUSTOMERS]

    with DocsignHook() as hook:
        found = Counter(
            e.external_id
            for e in hook.find_envelopes(query=campaign_id)
            if (e.external_id or "").startswith(campaign_id)
        )
        first = hook.get_envelope(table[0]["envelope_id"])
    assert found == Counter({r["external_id"]: 1 for r in table})  # one envelope per row
    assert first.title == "Contract renewal - Rene 0"
    assert [r.email for r in first.recipients] == ["rene0@example.test"]
    assert [f.custom_text for f in first.fields if f.type == "TEXT"] == ["Renewals 0"]  # prefilled

    archive_dir = Path(example_env["archive_dir"])
    manifests = {p: json.loads(p.read_text()) for p in archive_dir.glob("*/manifest.json")}
    assert len(manifests) == 5  # one folder and one manifest per envelope
    assert {m["external_id"] for m in manifests.values()} == {r["external_id"] for r in table}
    for path, manifest in manifests.items():
        assert manifest["status"] == "COMPLETED"
        (entry,) = manifest["files"]
        pdf = path.parent / entry["path"]
        signed = autosign_sandbox.item_bytes(entry["item_id"], "signed")
        assert pdf.read_bytes() == signed
        assert hashlib.sha256(signed).hexdigest() == entry["sha256"]

    report = json.loads((campaign / "report.json").read_text())
    assert report["send"] == {"sent": 5, "created": 0, "invalid": 0, "failed": 0}
    assert report["archive"] == {"archived": 5, "skipped": 0, "not_signed": 0, "failed": 0}
    assert report["campaign_id"] == campaign_id


def _campaign_with_rejections() -> list[dict[str, str]]:
    """100 customers: 5 reject, 3 let their link expire (the sandbox's auto-sign personas), 92 sign."""
    customers = []
    for n in range(100):
        local = f"reject.{n}" if n % 20 == 3 else f"expire.{n}" if n in (10, 50, 90) else f"cust{n}"
        customers.append(
            {"id": f"K-{n:03d}", "name": f"Kim {n}", "email": f"{local}@example.test", "company": f"Co {n}"}
        )
    return customers


@pytest.mark.parametrize(("max_unsigned", "succeeds"), [("10", True), ("0", False)])
def test_a_campaign_with_rejections_and_expired_links_ends_and_archives_the_signed_ones(
    example_env: dict[str, Any],
    autosign_sandbox: SandboxServer,
    monkeypatch: pytest.MonkeyPatch,
    max_unsigned: str,
    succeeds: bool,
) -> None:
    monkeypatch.setenv("DOCSIGN_EXAMPLE_MAX_UNSIGNED", max_unsigned)
    customers = _campaign_with_rejections()
    campaign = f"rejections-{uuid.uuid4().hex[:8]}"
    dag_run = run_example("docsign_bulk_signing", customers=customers, campaign=campaign, **example_env)
    states = task_states(dag_run)
    (campaign,) = list((Path(example_env["work_dir"]) / "campaigns").iterdir())
    outcome = [
        json.loads(line) for line in (campaign / "results.jsonl.outcome.jsonl").read_text().splitlines()
    ]
    by_status = Counter(row["status"] for row in outcome)
    # The wait ended only when every envelope had: 92 signed, 5 rejected, 3 with an expired link.
    assert by_status == Counter({"COMPLETED": 92, "REJECTED": 5, "EXPIRED": 3})
    rejected = {row["row_key"] for row in outcome if row["status"] == "REJECTED"}
    assert rejected == {c["id"] for c in customers if c["email"].startswith("reject.")}
    archive_dir = Path(example_env["archive_dir"])
    manifests = list(archive_dir.glob("*/manifest.json"))
    if succeeds:
        assert _state(dag_run.state) == "success", states
        assert len(manifests) == 92  # the signed ones, one folder each
        assert {json.loads(p.read_text())["status"] for p in manifests} == {"COMPLETED"}
        report = json.loads((campaign / "report.json").read_text())
        assert report["archive"]["archived"] == 92
        assert report["archive"]["not_signed"] == 8
    else:
        assert states[("wait_for_signatures", -1)] == "failed"
        assert states[("archive", -1)] == "upstream_failed"
        assert manifests == []


def test_the_campaign_example_run_again_sends_nothing_twice_and_a_new_word_sends_a_new_campaign(
    example_env: dict[str, Any], autosign_sandbox: SandboxServer
) -> None:
    """The same campaign triggered once more after it finished: every row adopted, one envelope each."""
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    campaign_id = f"again-{uuid.uuid4().hex[:8]}"
    first = run_example("docsign_bulk_signing", customers=CUSTOMERS, campaign=campaign_id, **example_env)
    autosign_sandbox.clear_requests()
    second = run_example("docsign_bulk_signing", customers=CUSTOMERS, campaign=campaign_id, **example_env)
    assert _state(first.state) == _state(second.state) == "success"
    uses = [r for r in autosign_sandbox.requests() if r["path"] == "/envelope/use"]
    assert uses == []  # the second run sent nothing
    folders = sorted((Path(example_env["work_dir"]) / "campaigns").iterdir())
    assert len(folders) == 2  # one folder per run, one campaign
    tables = [
        [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
        for folder in folders
    ]
    assert [r["envelope_id"] for r in tables[0]] == [r["envelope_id"] for r in tables[1]]
    assert {r["status"] for r in tables[1]} == {"sent"}
    with DocsignHook() as hook:
        found = Counter(
            e.external_id
            for e in hook.find_envelopes(query=f"{campaign_id}(")
            if (e.external_id or "").startswith(f"{campaign_id}(")
        )
    assert found == Counter({f"{campaign_id}({c['id']})": 1 for c in CUSTOMERS})
    # One word more: a new campaign over the same customers.
    third = run_example(
        "docsign_bulk_signing", customers=CUSTOMERS, campaign=f"{campaign_id}-2", **example_env
    )
    assert _state(third.state) == "success"
    assert sum(1 for r in autosign_sandbox.requests() if r["path"] == "/envelope/use") == len(CUSTOMERS)
