"""The export's turnaround and funnel columns (schema 2) fed what a careless or hostile service state holds.

A signature before the send (clocks apart), timestamps missing or not times at all, a recipient with a
``signedAt`` who rejected, an audit log of thousands of entries, titles that look like a template and odd
Unicode. Each asserts the safe outcome where it shows: the values in the files (0, never negative; null,
never guessed; never a failed export), the audit-log requests counted at a sandbox of the module's own,
and what reached the task log.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import conn_json, ctx
from odd_text import ODD_TEXT, TEMPLATE_DATA

from airflow_provider_docsign.export.audit import AUDIT_SCAN_LIMIT
from airflow_provider_docsign.hooks._endpoints import PAGE_SIZE
from airflow_provider_docsign.operators import DocsignExportEnvelopesOperator
from airflow_provider_docsign.sandbox import SandboxServer

HASH_KEY = "hostile-turnaround-hash-key-0123456789"
DAY = datetime(2026, 11, 2, tzinfo=timezone.utc)
START, END = DAY.isoformat(), (DAY + timedelta(days=1)).isoformat()
#: Titles that look like a template or hide text: exported as data, never rendered, never logged.
TITLES = {
    "template": "NDA {{ ti }} {{ 6 * 7 }} " + TEMPLATE_DATA,
    "rtl": "NDA \u202etxt.exe",
    "zero width": "N\u200bD\u200dA \U0001f58a\ufe0f",
    "tag": "NDA" + ODD_TEXT["TAG"][0],
}
FILLER = 3 * AUDIT_SCAN_LIMIT // 2  # audit entries between the sending and the first opening


def _at(hours: float) -> str:
    return (DAY + timedelta(hours=hours)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _completed(title: str, *recipients: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {
        "title": title,
        "status": "COMPLETED",
        "createdAt": _at(1),
        "sentAt": _at(2),
        "completedAt": _at(5),
        "recipients": list(recipients),
        **kw,
    }


def _signer(signed: str | None, **kw: Any) -> dict[str, Any]:
    state = {"sendStatus": "SENT", "readStatus": "OPENED", "signingStatus": "SIGNED"}
    return {"email": "s@example.test", "name": "S", **state, "signedAt": signed, **kw}


def _specs() -> list[dict[str, Any]]:
    filler = [{"type": "EMAIL_SENT", "createdAt": _at(2 + n / 10_000)} for n in range(FILLER)]
    return [
        _completed("skewed", _signer(_at(1.5))),  # signed half an hour before the send
        _completed(
            "garbage",
            _signer("notaTime", expiresAt="neverTever"),
            _signer(None),
            audit=[{"type": "DOCUMENT_OPENED", "createdAt": "yesterdayTnoon"}],
        ),
        _completed(
            "rejected signedAt",
            _signer(_at(3)),
            _signer(_at(9), signingStatus="REJECTED", rejectionReason="no"),  # later: never a signature
        ),
        {
            "title": "rejected envelope",
            "status": "REJECTED",
            "createdAt": _at(1),
            "sentAt": _at(2),
            "completedAt": _at(6),
            "recipients": [_signer(_at(6), signingStatus="REJECTED")],
        },
        _completed(  # the first opening lies beyond the scan limit: read no further than the limit
            "long log",
            _signer(_at(4)),
            audit=[*filler, {"type": "DOCUMENT_OPENED", "createdAt": _at(3)}],
        ),
        _completed(  # the first opening comes early in a long log: one page is enough
            "long log, early open",
            _signer(_at(4)),
            audit=[{"type": "DOCUMENT_OPENED", "createdAt": _at(2.00001)}, *filler],  # 36 ms after
        ),
        _completed(  # types that only look like the sending and the opening
            "look-alike events",
            _signer(_at(4)),
            sentAt=None,
            audit=[
                {"type": "DOCUMENT_SENT\u200b", "createdAt": _at(2)},
                {"type": "document_opened", "createdAt": _at(2.5)},
            ],
        ),
        *(_completed(title, _signer(_at(4), name=title)) for title in TITLES.values()),
    ]


@pytest.fixture(scope="module")
def own_sandbox(tmp_path_factory: pytest.TempPathFactory, api_key: str) -> Iterator[SandboxServer]:
    """A sandbox of this module's own, stopped at the module's end."""
    with SandboxServer(tmp_path_factory.mktemp("export-turnaround-hostile"), api_key=api_key) as server:
        ids = server.seed(_specs())
        server.ids = dict(zip([s["title"] for s in _specs()], ids, strict=True))  # type: ignore[attr-defined]
        yield server


@pytest.fixture
def export_conn(own_sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> SandboxServer:
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(own_sandbox, pii_hash_key=HASH_KEY))
    own_sandbox.clear_requests()
    return own_sandbox


def _export(destination: Path, **kwargs: Any) -> dict[str, Any]:
    op = DocsignExportEnvelopesOperator(
        task_id="export",
        destination=str(destination),
        start=START,
        end=END,
        folder_ids=[None],
        read_sent_times=True,
        **kwargs,
    )
    result: dict[str, Any] = op.execute(ctx())
    return result


def _rows(root: Path, table: str) -> list[dict[str, Any]]:
    text = (root / table / "date=2026-11-02" / "part-0000.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def exported(export_conn: SandboxServer, tmp_path: Path) -> dict[str, dict[str, Any]]:
    _export(tmp_path, pii="keep")
    return {r["title"]: r for r in _rows(tmp_path, "envelopes")}


def test_a_signature_before_the_send_is_zero_seconds_never_negative(exported: dict[str, Any]) -> None:
    row = exported["skewed"]
    assert row["sent_at"] == _at(2)
    assert row["last_signed_at"] == _at(1.5)
    assert row["seconds_to_sign"] == 0.0


def test_timestamps_that_are_missing_or_no_time_are_null_and_the_export_completes(
    export_conn: SandboxServer, exported: dict[str, Any], tmp_path: Path
) -> None:
    row = exported["garbage"]
    assert row["last_signed_at"] == _at(5)  # no signer's signedAt is a time: completedAt stands in
    assert row["seconds_to_sign"] == 3 * 3600.0
    assert row["first_opened_at"] is None  # the only opening's time is no time
    assert row["seconds_to_first_open"] is None
    recipients = [r for r in _rows(tmp_path, "recipients") if r["envelope_id"] == row["envelope_id"]]
    assert [(r["signed_at"], r["expires_at"]) for r in recipients] == [(None, None), (None, None)]
    assert [r["funnel_stage"] for r in recipients] == ["signed", "signed"]


def test_a_rejections_signed_at_is_never_read_as_a_signature(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    assert exported["rejected signedAt"]["last_signed_at"] == _at(3)
    assert exported["rejected signedAt"]["seconds_to_sign"] == 3600.0
    rejected = exported["rejected envelope"]
    assert rejected["last_signed_at"] is None
    assert rejected["seconds_to_sign"] is None
    stages = {r["envelope_id"]: r["funnel_stage"] for r in _rows(tmp_path, "recipients")}
    assert stages[rejected["envelope_id"]] == "rejected"


def test_thousands_of_audit_entries_cost_a_bounded_number_of_requests(
    export_conn: SandboxServer, exported: dict[str, Any]
) -> None:
    ids: dict[str, str] = export_conn.ids  # type: ignore[attr-defined]
    reads: dict[str, int] = {}
    for request in export_conn.requests():
        if request["path"].endswith("/audit-log"):
            envelope_id = request["path"].split("/")[2]
            reads[envelope_id] = reads.get(envelope_id, 0) + 1
    assert reads[ids["long log"]] == AUDIT_SCAN_LIMIT // PAGE_SIZE  # stopped at the limit
    assert exported["long log"]["sent_at"] == _at(2)
    assert exported["long log"]["first_opened_at"] is None  # beyond the limit: unknown, not guessed
    assert reads[ids["long log, early open"]] == 1  # both found on the first page
    assert exported["long log, early open"]["seconds_to_first_open"] == 0.036
    assert all(count == 1 for envelope_id, count in reads.items() if envelope_id != ids["long log"])


def test_event_types_that_only_look_like_sending_or_opening_are_not_read_as_them(
    exported: dict[str, Any],
) -> None:
    row = exported["look-alike events"]
    assert row["sent_at"] is None
    assert row["sent_source"] is None
    assert row["seconds_to_sign"] is None
    assert row["first_opened_at"] is None


def test_titles_that_look_like_a_template_or_hide_text_are_data_never_rendered_nor_logged(
    export_conn: SandboxServer, tmp_path: Path, api_key: str, task_log: Callable[[], str]
) -> None:
    _export(tmp_path / "keep", pii="keep")
    kept = {r["title"]: r for r in _rows(tmp_path / "keep", "envelopes")}
    for title in TITLES.values():
        assert kept[title]["seconds_to_sign"] == 2 * 3600.0
    _export(tmp_path / "hashed")
    files = b"".join(p.read_bytes() for p in sorted((tmp_path / "hashed").rglob("*")) if p.is_file())
    for title in TITLES.values():
        assert title.encode("utf-8", "surrogatepass") not in files
    assert b"{{" not in files
    assert api_key.encode() not in files
    log = task_log()
    for title in TITLES.values():
        assert title not in log
    assert api_key not in log
    assert HASH_KEY not in log
