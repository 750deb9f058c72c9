"""After a campaign: the sensor waits on its result table, the batch archive stores every envelope once."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_envelope, ctx, signer, tsa_conn_json

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignArchiveError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive_batch import DocsignBatchArchiveOperator
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sensors.envelope import DocsignEnvelopeSensor

pytestmark = pytest.mark.integration

SENT_AT = "2026-11-01T08:00:00.000Z"  # the campaign's send time of each row


def result_table(path: Path, rows: list[dict[str, Any]]) -> Path:
    """A result table as the bulk operator writes it (JSON Lines)."""
    columns = ("row_key", "external_id", "envelope_id", "status", "error", "attempts", "sent_at")
    path.write_text("".join(json.dumps({c: row.get(c) for c in columns}) + "\n" for row in rows))
    return path


@pytest.fixture
def campaign(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> tuple[Path, list[str]]:
    """Four completed envelopes as ``sent`` rows, and one invalid and one failed row without envelopes."""
    ids = [
        completed_envelope(
            hook, sandbox, [make_pdf(f"c{i}.pdf")], title=f"Contract {i}", external_id=f"batch({i})"
        )
        for i in range(4)
    ]
    rows = [
        {"row_key": str(i), "envelope_id": e, "status": "sent", "sent_at": SENT_AT} for i, e in enumerate(ids)
    ]
    rows += [{"row_key": "x", "status": "invalid", "error": "bad"}, {"row_key": "y", "status": "failed"}]
    return result_table(tmp_path / "results.jsonl", rows), ids


def test_the_sensor_waits_on_a_result_table_and_returns_counts(
    campaign: tuple[Path, list[str]], sandbox: SandboxServer, hook: DocsignHook
) -> None:
    table, ids = campaign
    sandbox.clear_requests()
    sensor = DocsignEnvelopeSensor(task_id="wait", result_table=str(table), poke_interval=1, timeout=30)
    report = table.with_name("results.jsonl.outcome.jsonl")
    assert sensor.execute(ctx()) == {
        "result_table": str(table),
        "envelopes": 4,
        "status": "COMPLETED",
        "completed": 4,
        "unsigned": 0,
        "max_unsigned": 0,
        "by_status": {"COMPLETED": 4},
        "not_completed": [],
        "report": report.as_uri(),
    }
    # The four sent rows' envelopes, read in one get-many: the invalid and failed rows are not waited for.
    assert [(r["method"], r["path"]) for r in sandbox.requests()] == [("POST", "/envelope/get-many")]
    lines = [json.loads(line) for line in report.read_text().splitlines()]
    assert [(x["row_key"], x["status"]) for x in lines] == [(str(i), "COMPLETED") for i in range(4)]
    # Each line's signature time is the sandbox's last signedAt; its time to sign runs from the row's
    # sent_at to it (the page's and the metric's number).
    for line, envelope_id in zip(lines, ids, strict=True):
        signed = max(r.signed_at for r in hook.get_envelope(envelope_id).recipients if r.signed_at)
        signed_at = datetime.fromisoformat(signed.replace("Z", "+00:00"))
        sent_at = datetime.fromisoformat(SENT_AT.replace("Z", "+00:00"))
        assert datetime.fromisoformat(line["signed_at"].replace("Z", "+00:00")) == signed_at
        assert line["seconds_to_sign"] == round((signed_at - sent_at).total_seconds(), 3)


def test_a_deferred_table_wait_hands_the_trigger_json_safe_ids(
    campaign: tuple[Path, list[str]], hook: DocsignHook, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    from airflow_provider_docsign._compat import TaskDeferred

    _, ids = campaign
    pending = hook.create_envelope(title="Pending", files=[make_pdf("p.pdf")], recipients=[signer()])
    hook.distribute_envelope(pending)
    rows = [{"row_key": str(i), "envelope_id": e, "status": "sent"} for i, e in enumerate([*ids, pending])]
    table = result_table(tmp_path / "pending.jsonl", rows)
    sensor = DocsignEnvelopeSensor(task_id="wait", result_table=str(table), deferrable=True, timeout=30)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(ctx())
    path, kwargs = deferred.value.trigger.serialize()
    assert json.loads(json.dumps(kwargs)) == kwargs
    # Only the envelope still open goes to the trigger: the four completed ones are settled already.
    assert kwargs["envelope_ids"] == [pending]
    assert (kwargs["batch"], kwargs["expired_grace"]) == (True, 0.0)
    assert path.endswith("DocsignEnvelopeTrigger")


def test_a_table_without_sent_rows_has_nothing_to_wait_for(tmp_path: Path, docsign_conn: str) -> None:
    table = result_table(tmp_path / "none.jsonl", [{"row_key": "x", "status": "invalid"}])
    sensor = DocsignEnvelopeSensor(task_id="wait", result_table=str(table), timeout=30)
    result = sensor.execute(ctx())
    assert (result["envelopes"], result["unsigned"], result["by_status"]) == (0, 0, {})
    assert (tmp_path / "none.jsonl.outcome.jsonl").read_text() == ""  # an empty report, all the same


def test_the_batch_archive_stores_each_envelope_once_and_resumes(
    campaign: tuple[Path, list[str]], hook: DocsignHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    table, _ = campaign
    archive = tmp_path / "archive"
    op = DocsignBatchArchiveOperator(task_id="archive", result_table=str(table), destination=str(archive))
    first = op.execute(ctx())
    assert first == {
        "destination": archive.as_uri(),
        "envelopes": 4,
        "archived": 4,
        "skipped": 0,
        "not_signed": 0,
        "failed": 0,
        "failures": [],
        "not_signed_envelopes": [],
    }
    manifests = sorted(archive.glob("*/manifest.json"))
    assert [p.parent.name for p in manifests] == [f"batch({i})" for i in range(4)]  # one folder each
    for path in manifests:
        manifest = json.loads(path.read_text())
        (entry,) = manifest["files"]
        pdf = path.parent / entry["path"]
        assert pdf.read_bytes() == sandbox.item_bytes(entry["item_id"], "signed")
        assert entry["signature"]["signed"] is True  # the same verification as one envelope's archive

    # Again: every envelope has a matching manifest, so nothing is downloaded.
    sandbox.clear_requests()
    again = op.execute(ctx(try_number=2))
    assert (again["archived"], again["skipped"]) == (0, 4)
    assert Counter(r["path"] for r in sandbox.requests()) == {"/envelope/get-many": 1}

    # A file gone from one envelope's folder: that envelope alone is archived again.
    gone = json.loads(manifests[2].read_text())["files"][0]
    (manifests[2].parent / gone["path"]).unlink()
    sandbox.clear_requests()
    third = op.execute(ctx(try_number=3))
    assert (third["archived"], third["skipped"]) == (1, 3)
    downloads = [r["path"] for r in sandbox.requests() if r["path"].endswith("/download")]
    assert downloads == [f"/envelope/item/{gone['item_id']}/download"]
    assert (manifests[2].parent / gone["path"]).read_bytes() == sandbox.item_bytes(gone["item_id"], "signed")


def test_an_unsigned_envelope_fails_the_batch_after_the_others_unless_skipped(
    campaign: tuple[Path, list[str]],
    hook: DocsignHook,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    _, ids = campaign
    pending = hook.create_envelope(title="Pending", files=[make_pdf("p.pdf")], recipients=[signer()])
    hook.distribute_envelope(pending)
    archive = tmp_path / "archive"
    op = DocsignBatchArchiveOperator(
        task_id="archive", envelope_ids=[*ids, pending], destination=str(archive)
    )
    with pytest.raises(
        DocsignArchiveError, match=f"(?s)1 of 5 envelope\\(s\\) could not be archived.*{pending} is PENDING"
    ):
        op.execute(ctx())
    assert len(list(archive.glob("*/manifest.json"))) == 4  # the others were archived
    assert not (archive / pending).exists()

    skip = DocsignBatchArchiveOperator(
        task_id="archive", envelope_ids=[*ids, pending], destination=str(archive), on_unsigned="skip"
    )
    result = skip.execute(ctx())
    assert (result["skipped"], result["not_signed"], result["failed"]) == (4, 1, 0)
    assert result["not_signed_envelopes"] == [{"envelope_id": pending, "status": "PENDING", "reason": None}]


def test_the_batch_archive_refuses_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exactly one of envelope_ids and result_table"):
        DocsignBatchArchiveOperator(task_id="a", destination="/tmp/x")
    with pytest.raises(ValueError, match="max_in_flight"):
        DocsignBatchArchiveOperator(task_id="a", destination="/tmp/x", envelope_ids=["e"], max_in_flight=40)

    other = tmp_path / "other.jsonl"
    other.write_text('{"id": 1}\n')
    op = DocsignBatchArchiveOperator(task_id="a", destination=str(tmp_path), result_table=str(other))
    with pytest.raises(AirflowFailException, match="not a bulk result table"):
        op.execute(ctx())


def test_the_batch_archive_applies_the_same_evidence_as_one_envelope_s_archive(
    campaign: tuple[Path, list[str]], sandbox: SandboxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TSA on the batch: every manifest gets its token and every item its long-term copy, as alone."""
    from airflow_provider_docsign.evidence.timestamps import verify_timestamp

    table, _ = campaign
    sandbox.clear_tsa()
    monkeypatch.setenv("AIRFLOW_CONN_TSA_SANDBOX", tsa_conn_json(sandbox, timeout=5))
    archive = tmp_path / "evidence"
    plain = DocsignBatchArchiveOperator(task_id="archive", result_table=str(table), destination=str(archive))
    assert plain.execute(ctx())["archived"] == 4
    # Archived without evidence: a batch that asks for a timestamp and copies does not skip them.
    op = DocsignBatchArchiveOperator(
        task_id="archive",
        result_table=str(table),
        destination=str(archive),
        tsa_conn_id="tsa_sandbox",
        ltv=True,
    )
    result = op.execute(ctx(try_number=2))
    assert (result["archived"], result["skipped"]) == (4, 0)
    for path in sorted(archive.glob("*/manifest.json")):
        manifest = json.loads(path.read_text())
        token = (path.parent / manifest["timestamp"]["token"]).read_bytes()
        assert verify_timestamp(token, path.read_bytes()).passed
        (entry,) = manifest["files"]
        assert (path.parent / entry["ltv"]["path"]).exists()
    # With the evidence in place, the same batch (or a plain one) finds them complete: no download.
    sandbox.clear_requests()
    assert op.execute(ctx(try_number=3))["skipped"] == 4
    assert plain.execute(ctx(try_number=4))["skipped"] == 4
    assert not [r for r in sandbox.requests() if r["path"].endswith("/download")]
    sandbox.clear_tsa()
