"""The export's time to sign, time to first open and funnel against the sandbox, checked from its own data.

The expected numbers are computed here from what the sandbox answers (each recipient's ``signedAt``, the
audit log's ``DOCUMENT_SENT`` and ``DOCUMENT_OPENED``), not from the export's code.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import conn_json, ctx

from airflow_provider_docsign.export.rows import SCHEMA_VERSION
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.export import DocsignExportEnvelopesOperator
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service import turnaround

DAY = datetime(2026, 11, 2, tzinfo=timezone.utc)
START, END = DAY.isoformat(), (DAY + timedelta(days=1)).isoformat()


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _at(hours: float) -> str:
    return _iso(DAY + timedelta(hours=hours))


def _signed(hours: float, **kw: Any) -> dict[str, Any]:
    state = {"readStatus": "OPENED", "sendStatus": "SENT", "signingStatus": "SIGNED"}
    return {**state, "signedAt": _at(hours), **kw}


def _specs() -> list[dict[str, Any]]:
    base: dict[str, Any] = {"createdAt": _at(1)}
    return [
        {  # two signers and a CC; opened by both, the first opening counts
            **base,
            "title": "Two signers",
            "status": "COMPLETED",
            "sentAt": _at(1.5),
            "completedAt": _at(9.01),
            "updatedAt": _at(9.01),
            "recipients": [
                _signed(3.25, email="a@example.test", name="A"),
                _signed(9.0, email="b@example.test", name="B", role="APPROVER"),
                _signed(10.0, email="c@example.test", name="C", role="CC"),
            ],
            "audit": [
                {"type": "DOCUMENT_OPENED", "createdAt": _at(2.75)},
                {"type": "DOCUMENT_OPENED", "createdAt": _at(2.0)},
            ],
        },
        {  # sent in the web app: the audit log is the only record of the send
            **base,
            "title": "Sent by a person",
            "status": "COMPLETED",
            "sentAt": _at(4.0),
            "completedAt": _at(4.5),
            "recipients": [_signed(4.5, email="d@example.test", name="D")],
        },
        {  # pending: one link expired before the interval's end, one opened, one not yet sent
            **base,
            "title": "Pending",
            "status": "PENDING",
            "sentAt": _at(2.0),
            "recipients": [
                # A sequential order: G waits for E and F, who come first and have not signed.
                {
                    "email": "e@example.test",
                    "name": "E",
                    "sendStatus": "SENT",
                    "expiresAt": _at(20),
                    "signingOrder": 1,
                },
                {
                    "email": "f@example.test",
                    "name": "F",
                    "sendStatus": "SENT",
                    "readStatus": "OPENED",
                    "signingOrder": 1,
                },
                {"email": "g@example.test", "name": "G", "sendStatus": "NOT_SENT", "signingOrder": 2},
            ],
            "audit": [{"type": "DOCUMENT_OPENED", "createdAt": _at(3.0)}],
        },
        {
            **base,
            "title": "Rejected",
            "status": "REJECTED",
            "sentAt": _at(2.0),
            "completedAt": _at(6.0),
            "recipients": [
                {
                    "email": "h@example.test",
                    "name": "H",
                    "readStatus": "OPENED",
                    "signingStatus": "REJECTED",
                    "signedAt": _at(6.0),
                    "rejectionReason": "no",
                }
            ],
        },
        {**base, "title": "Draft", "status": "DRAFT", "recipients": [{"email": "i@example.test"}]},
    ]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory, api_key: str) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("export-turnaround"), api_key=api_key) as server:
        server.seed(_specs())
        yield server


def _export(server: SandboxServer, destination: Path, **kw: Any) -> dict[str, Any]:
    op = DocsignExportEnvelopesOperator(
        task_id="export",
        destination=str(destination),
        start=START,
        end=END,
        folder_ids=[None],
        read_sent_times=True,
        pii="keep",
        **kw,
    )
    result: dict[str, Any] = op.execute(ctx())
    return result


def _rows(root: Path, table: str) -> list[dict[str, Any]]:
    text = (root / table / "date=2026-11-02" / "part-0000.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_exported_turnaround_equals_what_the_sandbox_data_says(
    sandbox: SandboxServer, api_key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox))
    sandbox.clear_requests()
    result = _export(sandbox, tmp_path)
    audit_reads = [r for r in sandbox.requests() if r["path"].endswith("/audit-log")]
    assert result["rows"]["envelopes"] == 5
    assert len(audit_reads) == 5  # one page each: the log is read oldest first and stops early

    hook = DocsignHook(base_url=sandbox.base_url, api_key=api_key)
    envelopes = {r["envelope_id"]: r for r in _rows(tmp_path, "envelopes")}
    assert {r["schema_version"] for r in envelopes.values()} == {SCHEMA_VERSION}
    completed = 0
    for envelope_id, row in envelopes.items():
        data = hook.get_envelope(envelope_id).raw
        log = list(hook.get_audit_log(envelope_id))  # newest first, every page: the test's own read
        sent = [_ts(e["createdAt"]) for e in log if e["type"] == "DOCUMENT_SENT"]
        opened = [_ts(e["createdAt"]) for e in log if e["type"] == "DOCUMENT_OPENED"]
        assert row["sent_at"] == (_iso(min(sent)) if sent else None)
        assert row["sent_source"] == ("audit" if sent else None)
        assert row["first_opened_at"] == (_iso(min(opened)) if opened else None)
        if sent and opened:
            assert row["seconds_to_first_open"] == (min(opened) - min(sent)).total_seconds()
        else:
            assert row["seconds_to_first_open"] is None
        if data["status"] != "COMPLETED":
            assert row["seconds_to_sign"] is None
            assert row["last_signed_at"] is None
            continue
        completed += 1
        last = max(
            _ts(r["signedAt"])
            for r in data["recipients"]
            if r["role"] != "CC" and r["signingStatus"] == "SIGNED" and r["signedAt"]
        )
        assert row["last_signed_at"] == _iso(last)
        assert row["seconds_to_sign"] == (last - min(sent)).total_seconds()
    assert completed == 2
    by_title = {hook.get_envelope(i).title: r for i, r in envelopes.items()}
    assert by_title["Two signers"]["seconds_to_sign"] == 7.5 * 3600  # 01:30 to the approver at 09:00
    assert by_title["Two signers"]["seconds_to_first_open"] == 0.5 * 3600


def test_the_funnel_stage_is_turnarounds_at_the_interval_end_and_reruns_are_identical(
    sandbox: SandboxServer, api_key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox))
    _export(sandbox, tmp_path / "a")
    _export(sandbox, tmp_path / "b")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()

    hook = DocsignHook(base_url=sandbox.base_url, api_key=api_key)
    end = _ts(END.replace("+00:00", "Z"))
    stages: dict[str, list[Any]] = {}
    for row in _rows(tmp_path / "a", "recipients"):
        envelope = hook.get_envelope(row["envelope_id"])
        recipient = next(r for r in envelope.recipients if r.id == row["recipient_id"])
        status = str(getattr(envelope.status, "value", envelope.status))
        assert row["funnel_stage"] == turnaround.recipient_stage(recipient, status, end, envelope.recipients)
        stages.setdefault(envelope.title or "", []).append(row["funnel_stage"])
    assert stages == {
        "Two signers": ["signed", "signed", None],
        "Sent by a person": ["signed"],
        "Pending": ["expired", "opened", None],
        "Rejected": ["rejected"],
        "Draft": [None],
    }
