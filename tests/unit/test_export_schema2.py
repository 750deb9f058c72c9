"""Schema 2's turnaround and funnel columns: the same numbers as service/turnaround, rows that never fail."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_provider_docsign.export.audit import AUDIT_SCAN_LIMIT, AuditTimes, audit_times
from airflow_provider_docsign.export.rows import (
    SCHEMA_VERSION,
    TABLES,
    PiiPolicy,
    envelope_rows,
    jsonl_line,
    sent_time,
)
from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.service.models import Envelope

UTC = timezone.utc
SENT = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
END = datetime(2026, 11, 3, 0, 0, tzinfo=UTC)  # the export's interval end


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _rec(rid: int, **kw: Any) -> dict[str, Any]:
    return {"id": rid, "role": "SIGNER", "signingStatus": "NOT_SIGNED", "sendStatus": "SENT", **kw}


def _env(status: str, *recipients: dict[str, Any], completed: datetime | None = None) -> Envelope:
    return Envelope.from_json(
        {
            "id": f"envelope_{status.lower()}",
            "status": status,
            "title": "NDA",
            "createdAt": _iso(SENT - timedelta(minutes=5)),
            "updatedAt": _iso(completed or SENT),
            "completedAt": _iso(completed) if completed else None,
            "recipients": list(recipients),
        }
    )


def _rows(env: Envelope, sent: datetime | None = None, opened: datetime | None = None) -> dict[str, Any]:
    return envelope_rows(env, PiiPolicy("keep"), sent, first_opened_at=opened, now=END)


def test_schema_2_adds_the_columns_and_every_row_follows_it() -> None:
    assert SCHEMA_VERSION == 2
    names = {t: [c.name for c in cols] for t, cols in TABLES.items()}
    assert names["envelopes"][-5:] == [
        "sent_source",
        "last_signed_at",
        "seconds_to_sign",
        "first_opened_at",
        "seconds_to_first_open",
    ]
    assert "hours_sent_to_completed" in names["envelopes"]  # kept for existing dashboards
    assert names["recipients"][-1] == "funnel_stage"
    rows = _rows(_env("PENDING", _rec(1)), SENT)
    for table, table_rows in rows.items():
        for row in table_rows:
            assert list(row) == names[table]
            assert row["schema_version"] == 2
            jsonl_line(row, table)  # JSON-safe


def test_several_signers_and_a_cc_time_to_sign_from_the_last_acting_signature() -> None:
    done = SENT + timedelta(hours=5)
    env = _env(
        "COMPLETED",
        _rec(1, readStatus="OPENED", signingStatus="SIGNED", signedAt=_iso(SENT + timedelta(hours=2))),
        _rec(2, readStatus="OPENED", signingStatus="SIGNED", signedAt=_iso(SENT + timedelta(hours=4))),
        _rec(3, role="CC", signingStatus="SIGNED", signedAt=_iso(done)),
        completed=done + timedelta(seconds=3),
    )
    opened = SENT + timedelta(minutes=30)
    rows = _rows(env, SENT, opened)
    row = rows["envelopes"][0]
    assert row["sent_at"] == "2026-11-02T09:00:00.000Z"
    assert row["sent_source"] == "audit"
    assert row["last_signed_at"] == "2026-11-02T13:00:00.000Z"
    assert row["seconds_to_sign"] == 4 * 3600.0
    assert row["seconds_to_sign"] == turnaround.seconds_to_sign(env, turnaround.sent(audit=SENT))
    assert row["first_opened_at"] == "2026-11-02T09:30:00.000Z"
    assert row["seconds_to_first_open"] == 1800.0
    assert [r["funnel_stage"] for r in rows["recipients"]] == ["signed", "signed", None]


def test_an_envelope_sent_by_a_person_has_its_send_time_only_from_the_audit_log() -> None:
    done = SENT + timedelta(hours=1)
    env = _env("COMPLETED", _rec(1, signingStatus="SIGNED", signedAt=_iso(done)), completed=done)
    unread = _rows(env)["envelopes"][0]  # read_sent_times off: nothing is guessed
    assert unread["sent_at"] is None
    assert unread["sent_source"] is None
    assert unread["seconds_to_sign"] is None
    assert unread["seconds_to_first_open"] is None
    assert unread["last_signed_at"] == _iso(done)  # known without the audit log
    entries = [
        {"type": "DOCUMENT_CREATED", "createdAt": _iso(SENT - timedelta(minutes=5))},
        {"type": "DOCUMENT_SENT", "createdAt": _iso(SENT)},
        {"type": "DOCUMENT_OPENED", "createdAt": _iso(SENT + timedelta(minutes=7))},
    ]
    times = audit_times(entries)
    assert times == AuditTimes(SENT, SENT + timedelta(minutes=7))
    assert sent_time(entries) == SENT  # the old name, now turnaround.audit_time
    read = _rows(env, times.sent, times.first_opened)["envelopes"][0]
    assert read["seconds_to_sign"] == 3600.0
    assert read["seconds_to_first_open"] == 420.0


def test_a_rejection_has_no_time_to_sign_and_its_signed_at_is_never_a_signature() -> None:
    at = SENT + timedelta(hours=3)
    env = _env(
        "REJECTED",
        _rec(1, readStatus="OPENED", signingStatus="SIGNED", signedAt=_iso(SENT + timedelta(hours=1))),
        _rec(2, readStatus="OPENED", signingStatus="REJECTED", signedAt=_iso(at), rejectionReason="no"),
        _rec(3),
        completed=at,
    )
    rows = _rows(env, SENT)
    row = rows["envelopes"][0]
    assert row["rejected_at"] == _iso(at)
    assert row["last_signed_at"] is None
    assert row["seconds_to_sign"] is None
    assert row["sent_source"] == "audit"
    assert [r["funnel_stage"] for r in rows["recipients"]] == ["signed", "rejected", "sent"]


def test_expiry_is_judged_at_the_interval_end_never_the_clock() -> None:
    before_end, after_end = _iso(END - timedelta(hours=1)), _iso(END + timedelta(hours=1))
    env = _env(
        "PENDING",
        _rec(1, expiresAt=before_end),
        _rec(2, readStatus="OPENED", expiresAt=before_end),
        _rec(3, expiresAt=after_end),  # expired by now on the wall clock, not at the interval's end
        _rec(4, readStatus="OPENED"),
    )
    rows = _rows(env, SENT)
    assert [r["funnel_stage"] for r in rows["recipients"]] == ["expired", "expired", "sent", "opened"]
    assert _rows(env, SENT) == rows  # same interval, same rows
    later = envelope_rows(env, PiiPolicy("keep"), SENT, now=END + timedelta(days=1))
    assert [r["funnel_stage"] for r in later["recipients"]][2] == "expired"
    default = envelope_rows(env, PiiPolicy("keep"), SENT)  # no interval: the envelope's own updatedAt
    assert [r["funnel_stage"] for r in default["recipients"]] == ["sent", "opened", "sent", "opened"]


def test_a_draft_and_a_sequential_order_not_yet_sent_are_outside_the_funnel() -> None:
    draft = _rows(_env("DRAFT", _rec(1, sendStatus="NOT_SENT")))
    assert draft["recipients"][0]["funnel_stage"] is None
    assert draft["envelopes"][0]["sent_source"] is None
    assert draft["envelopes"][0]["seconds_to_sign"] is None
    ordered = _env(
        "PENDING",
        _rec(1, signingOrder=1, readStatus="OPENED"),
        _rec(2, signingOrder=2, sendStatus="NOT_SENT"),
    )
    assert [r["funnel_stage"] for r in _rows(ordered, SENT)["recipients"]] == ["opened", None]


def test_audit_times_stop_once_both_are_found_and_at_the_scan_limit() -> None:
    consumed = 0

    def oldest_first(count: int) -> Any:
        nonlocal consumed
        yield {"type": "DOCUMENT_SENT", "createdAt": _iso(SENT)}
        for n in range(count):
            consumed += 1
            yield {"type": "EMAIL_SENT", "createdAt": _iso(SENT + timedelta(seconds=n))}
        yield {"type": "DOCUMENT_OPENED", "createdAt": _iso(SENT + timedelta(hours=1))}
        yield {"type": "DOCUMENT_OPENED", "createdAt": _iso(SENT + timedelta(hours=2))}
        consumed += 1000  # never reached: reading stopped at the first opening

    assert audit_times(oldest_first(10)) == AuditTimes(SENT, SENT + timedelta(hours=1))
    assert consumed == 10
    consumed = 0
    assert audit_times(oldest_first(5 * AUDIT_SCAN_LIMIT)) == AuditTimes(SENT, None)
    assert consumed == AUDIT_SCAN_LIMIT - 1  # the limit counts every entry read, the sending too


def test_clock_skew_and_garbage_give_nulls_or_zero_never_a_failed_row() -> None:
    env = Envelope.from_json(
        {
            "id": "envelope_odd",
            "status": "COMPLETED",
            "createdAt": "not a time",
            "updatedAt": "2026-13-45T99:00:00Z",
            "completedAt": _iso(SENT - timedelta(hours=1)),
            "recipients": [
                _rec(1, signingStatus="SIGNED", signedAt=_iso(SENT - timedelta(hours=2))),  # before sent
                _rec(2, signingStatus="SIGNED", signedAt="yesterday", expiresAt="soon"),
            ],
        }
    )
    rows = envelope_rows(env, PiiPolicy("keep"), SENT, first_opened_at=SENT - timedelta(minutes=1), now=END)
    row = rows["envelopes"][0]
    assert row["created_at"] is None
    assert row["updated_at"] is None
    assert row["seconds_to_sign"] == 0.0  # a signature before the send: 0, never negative
    assert row["seconds_to_first_open"] == 0.0
    assert row["hours_created_to_completed"] is None
    assert [r["signed_at"] for r in rows["recipients"]] == [_iso(SENT - timedelta(hours=2)), None]
    assert [r["expires_at"] for r in rows["recipients"]] == [None, None]
    assert [r["funnel_stage"] for r in rows["recipients"]] == ["signed", "signed"]


def test_a_listed_time_that_is_no_time_neither_selects_nor_stops_the_listing() -> None:
    from airflow_provider_docsign.export.rows import Window, select
    from airflow_provider_docsign.service.models import EnvelopeSummary

    window = Window(SENT - timedelta(hours=9), END, timedelta(days=1))
    listing = [
        EnvelopeSummary.from_json({"id": "envelope_a", "status": "PENDING", "createdAt": "garbage"}),
        EnvelopeSummary.from_json(
            {"id": "envelope_b", "status": "PENDING", "createdAt": "nope", "updatedAt": _iso(SENT)}
        ),
        EnvelopeSummary.from_json({"id": "envelope_c", "status": "PENDING", "createdAt": _iso(SENT)}),
    ]
    assert list(select(listing, window)) == [("", "envelope_b"), (_iso(SENT), "envelope_c")]
