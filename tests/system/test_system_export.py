"""System tests: the contract-data export over envelopes of the instance under test (opt-in).

Three envelopes are made for the module, in the run's folder and at the root: one signed through the
service's own signing path and sealed (COMPLETED), one sent and left alone (PENDING), one rejected by
its recipient through the web app's reject route (REJECTED). ``DocsignExportEnvelopesOperator`` then
exports the interval in which they were made, with ``pii="hash"``. Every recipient uses an
``example.com`` address and ``distributionMethod: NONE``, so no e-mail is sent.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, sig, signer
from peer import reject_as, sign_as, wait_status

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.export import DocsignExportEnvelopesOperator
from airflow_provider_docsign.samples import write_sample_pdf

NO_EMAIL = {"distributionMethod": "NONE"}
HASH_KEY = "system-export-hash-key-0001"
REASON = "The annex names the wrong company"
TEXT_VALUE = "ACME Widgets Ltd"


def _hmac(value: str) -> str:
    return hmac.new(HASH_KEY.encode(), value.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Made:
    """The module's envelopes by status, what they were made with, and the interval they fall in."""

    ids: dict[str, str]
    titles: dict[str, str]
    emails: dict[str, str]
    external_ids: dict[str, str]
    start: datetime
    end: datetime


def _text_field(y: float) -> dict[str, Any]:
    return {
        "identifier": 0,
        "type": "TEXT",
        "page": 1,
        "positionX": 10,
        "positionY": y,
        "width": 30,
        "height": 5,
        "fieldMeta": {"type": "text", "label": "Company", "text": TEXT_VALUE},
    }


@pytest.fixture(scope="module")
def made(system_hook: DocsignHook, system_run: Any, tmp_path_factory: pytest.TempPathFactory) -> Made:
    """COMPLETED and REJECTED in the run's folder, PENDING at the root, all made just now."""
    folder = tmp_path_factory.mktemp("export-pdfs")
    start = datetime.now(timezone.utc) - timedelta(seconds=2)
    ids: dict[str, str] = {}
    titles: dict[str, str] = {}
    emails: dict[str, str] = {}
    external_ids: dict[str, str] = {}
    for status, where in (
        ("COMPLETED", system_run.folder_id),
        ("PENDING", None),
        ("REJECTED", system_run.folder_id),
    ):
        name = status.lower()
        titles[status] = f"{system_run.prefix} export {name}"
        # mixed case: the export lower-cases e-mails before hashing them
        emails[status] = f"System-Export-{name.title()}@Example.com"
        external_ids[status] = system_run.external_id(f"export-{name}")
        fields = [sig(), _text_field(30)] if status == "COMPLETED" else [sig()]
        ids[status] = system_hook.create_envelope(
            title=titles[status],
            files=[write_sample_pdf(folder / f"{name}.pdf", title=name)],
            recipients=[signer(*fields, email=emails[status], name=f"Export {name.title()}")],
            folder_id=where,
            external_id=external_ids[status],
        )
        system_run.envelope_ids.append(ids[status])
        system_hook.distribute_envelope(ids[status], meta=NO_EMAIL)
    sign_as(ids["COMPLETED"])
    reject_as(ids["REJECTED"], emails["REJECTED"].lower(), REASON)
    wait_status(ids["COMPLETED"], "COMPLETED", timeout=90)
    wait_status(ids["REJECTED"], "REJECTED", timeout=60)
    return Made(ids, titles, emails, external_ids, start, datetime.now(timezone.utc) + timedelta(seconds=1))


@pytest.fixture
def export_conn(system_conn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The system connection with the HMAC key of ``pii="hash"`` in its extra."""
    conn = json.loads(os.environ[f"AIRFLOW_CONN_{system_conn.upper()}"])
    conn["extra"] = {**conn.get("extra", {}), "pii_hash_key": HASH_KEY}
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_SYSTEM_EXPORT", json.dumps(conn))
    return "docsign_system_export"


def _export(conn_id: str, made: Made, system_run: Any, destination: Path, **kwargs: Any) -> dict[str, Any]:
    operator = DocsignExportEnvelopesOperator(
        task_id="export",
        destination=str(destination),
        start=made.start.isoformat(),
        end=made.end.isoformat(),
        lookback=timedelta(0),
        folder_ids=[system_run.folder_id, None],
        pii="hash",
        docsign_conn_id=conn_id,
        **kwargs,
    )
    result: dict[str, Any] = operator.execute(ctx())
    return result


def _rows(destination: Path, table: str, date: str) -> list[dict[str, Any]]:
    part = destination / table / f"date={date}" / "part-0000.jsonl"
    return [json.loads(line) for line in part.read_text().splitlines()]


def _mine(rows: list[dict[str, Any]], made: Made) -> dict[str, list[dict[str, Any]]]:
    by_id = {v: k for k, v in made.ids.items()}
    out: dict[str, list[dict[str, Any]]] = {status: [] for status in made.ids}
    for row in rows:
        if row["envelope_id"] in by_id:
            out[by_id[row["envelope_id"]]].append(row)
    return out


def _files(destination: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(destination)): p.read_bytes() for p in sorted(destination.rglob("*")) if p.is_file()
    }


def test_export_of_completed_pending_and_rejected_envelopes_with_hashed_personal_data(
    export_conn: str, made: Made, system_run: Any, tmp_path: Path
) -> None:
    destination = tmp_path / "contracts"
    result = _export(export_conn, made, system_run, destination)
    date = made.start.strftime("%Y-%m-%d")
    assert result["date"] == date
    assert result["format"] == "jsonl"

    envelopes = _mine(_rows(destination, "envelopes", date), made)
    assert {status: len(rows) for status, rows in envelopes.items()} == {
        "COMPLETED": 1,
        "PENDING": 1,
        "REJECTED": 1,
    }
    completed, pending, rejected = (envelopes[s][0] for s in ("COMPLETED", "PENDING", "REJECTED"))
    assert (completed["status"], pending["status"], rejected["status"]) == (
        "COMPLETED",
        "PENDING",
        "REJECTED",
    )
    assert completed["folder_id"] == rejected["folder_id"] == system_run.folder_id
    assert pending["folder_id"] is None  # the root
    assert completed["completed_at"] is not None
    assert completed["hours_created_to_completed"] >= 0
    assert pending["completed_at"] is None
    assert pending["rejected_at"] is None
    assert rejected["rejected_at"] is not None
    assert rejected["completed_at"] is None
    assert rejected["rejection_reason"] == _hmac(REASON)
    assert pending["rejection_reason"] is None
    for status, row in (("COMPLETED", completed), ("PENDING", pending), ("REJECTED", rejected)):
        assert row["title"] == _hmac(made.titles[status])
        assert row["external_id"] == _hmac(made.external_ids[status])

    recipients = _mine(_rows(destination, "recipients", date), made)
    signing = {s: [(r["role"], r["signing_status"]) for r in rows] for s, rows in recipients.items()}
    assert signing == {
        "COMPLETED": [("SIGNER", "SIGNED")],
        "PENDING": [("SIGNER", "NOT_SIGNED")],
        "REJECTED": [("SIGNER", "REJECTED")],
    }
    for status, (row,) in recipients.items():
        assert row["email"] == _hmac(made.emails[status].lower())  # lower-cased, then hashed
        assert row["name"] == _hmac(f"Export {status.lower().title()}")
        # distributionMethod NONE and no link opened: the real service marks nobody SENT, even once
        # signed or rejected (only opening the link, or a next signer's turn, sets it)
        assert (row["send_status"], row["read_status"]) == ("NOT_SENT", "NOT_OPENED")
    assert recipients["COMPLETED"][0]["signed_at"] is not None
    assert recipients["PENDING"][0]["signed_at"] is None
    mine_text = json.dumps([r for rows in recipients.values() for r in rows]).lower()
    assert "@" not in mine_text
    assert "example.com" not in mine_text

    fields = _mine(_rows(destination, "field_values", date), made)
    by_type = {f["type"]: f for f in fields["COMPLETED"]}
    assert sorted(by_type) == ["SIGNATURE", "TEXT"]
    assert by_type["TEXT"]["inserted"] is True
    assert by_type["TEXT"]["value"] == _hmac(TEXT_VALUE)
    assert by_type["TEXT"]["label"] == "Company"  # not a personal-data column unless asked
    assert by_type["SIGNATURE"]["inserted"] is True
    assert [f["inserted"] for f in fields["PENDING"]] == [False]
    assert [f["value"] for f in fields["PENDING"]] == [None]
    assert result["rows"]["envelopes"] >= 3


def test_a_second_export_of_the_same_interval_is_byte_identical(
    export_conn: str, made: Made, system_run: Any, tmp_path: Path
) -> None:
    destination = tmp_path / "contracts"
    first = _export(export_conn, made, system_run, destination)
    written = _files(destination)
    assert any(name.endswith("_SUCCESS") for name in written)
    assert sum(1 for name in written if name.endswith("part-0000.jsonl")) == 3

    second = _export(export_conn, made, system_run, destination)
    assert second == first
    assert _files(destination) == written  # same names, same bytes

    elsewhere = tmp_path / "again"
    _export(export_conn, made, system_run, elsewhere)
    assert _files(elsewhere) == written


def test_pii_hash_without_a_key_fails_before_anything_is_written(
    system_conn: str, made: Made, system_run: Any, tmp_path: Path
) -> None:
    with pytest.raises(AirflowFailException, match="pii='hash' needs a key: set the 'pii_hash_key' extra"):
        _export(system_conn, made, system_run, tmp_path / "contracts")
    assert not (tmp_path / "contracts").exists() or not any(
        p.is_file() for p in (tmp_path / "contracts").rglob("*")
    )


def test_turnaround_columns_from_the_real_audit_log_and_the_funnel_without_sent_marks(
    export_conn: str, made: Made, system_run: Any, system_hook: DocsignHook, tmp_path: Path
) -> None:
    """Schema 2 against the real service: the send time is its DOCUMENT_SENT, the time to sign runs to
    the signer's ``signedAt``, and the funnel holds recipients the service never marked SENT
    (``distributionMethod`` NONE: nobody is e-mailed, so ``sendStatus`` stays NOT_SENT)."""
    from airflow_provider_docsign.service import turnaround
    from airflow_provider_docsign.service.expiry import parse_timestamp

    destination = tmp_path / "contracts"
    _export(export_conn, made, system_run, destination, read_sent_times=True)
    date = made.start.strftime("%Y-%m-%d")
    envelopes = {s: rows[0] for s, rows in _mine(_rows(destination, "envelopes", date), made).items()}
    for status, row in envelopes.items():
        log = list(system_hook.get_audit_log(made.ids[status], oldest_first=True))
        sent = turnaround.audit_time(log, "DOCUMENT_SENT")
        assert sent is not None, [e.get("type") for e in log]  # the real service writes it at distribute
        assert (row["sent_source"], row["sent_at"]) == ("audit", turnaround.iso(sent))
    completed = envelopes["COMPLETED"]
    envelope = system_hook.get_envelope(made.ids["COMPLETED"])
    (signer_,) = envelope.recipients
    signed_at = parse_timestamp(signer_.signed_at)
    sent_at = turnaround.audit_time(
        system_hook.get_audit_log(envelope.id, oldest_first=True), "DOCUMENT_SENT"
    )
    assert signed_at is not None
    assert sent_at is not None
    assert completed["last_signed_at"] == turnaround.iso(signed_at)
    assert completed["seconds_to_sign"] == round((signed_at - sent_at).total_seconds(), 3) >= 0
    # The rejection's signedAt is never a signature; nothing pending has a time to sign.
    assert envelopes["REJECTED"]["seconds_to_sign"] is None
    assert envelopes["PENDING"]["seconds_to_sign"] is None
    stages = {
        s: [r["funnel_stage"] for r in rows]
        for s, rows in _mine(_rows(destination, "recipients", date), made).items()
    }
    assert stages == {"COMPLETED": ["signed"], "PENDING": ["sent"], "REJECTED": ["rejected"]}
