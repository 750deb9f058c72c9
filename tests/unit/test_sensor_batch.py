"""Unit tests of the batch wait's rules (issue 37): settling, the allowance, the verdict, the parameters.

Pure code and construction only: what the sensor and the trigger decide before and without a request.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pendulum
import pytest

from airflow_provider_docsign._compat import AirflowFailException, AirflowSensorTimeout
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor
from airflow_provider_docsign.sensors._batch import (
    DELETED,
    EXPIRED,
    Outcome,
    allowance,
    judge,
    parse_grace,
    parse_max_unsigned,
    settle,
    settle_many,
)
from airflow_provider_docsign.sensors._campaign import OutcomeReport, read_campaign
from airflow_provider_docsign.service.models import Envelope
from airflow_provider_docsign.triggers import DocsignEnvelopeTrigger

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc)
SIGNER = {"id": 41, "email": "ezra@peer.test", "role": "SIGNER", "signingStatus": "NOT_SIGNED"}


def _envelope(eid: str, status: str, *recipients: dict[str, Any], **extra: Any) -> Envelope:
    return Envelope.from_json({"id": eid, "status": status, "recipients": list(recipients), **extra})


# ------------------------------------------------------------------------------------- max_unsigned
@pytest.mark.parametrize(("value", "expected"), [(None, None), (0, 0), (10, 10), (0.1, 0.1), (0.999, 0.999)])
def test_max_unsigned_accepts_a_count_or_a_fraction(value: Any, expected: Any) -> None:
    assert parse_max_unsigned(value) == expected


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (-1, "count >= 0"),
        (1.5, "between 0 and 1"),
        (1.0, "between 0 and 1"),
        (0.0, "between 0 and 1"),
        (float("nan"), "between 0 and 1"),
        (float("inf"), "between 0 and 1"),
        ("ten", "not str 'ten'"),
        ("10", "not str '10'"),
        (True, "not bool True"),
        (False, "not bool False"),
        ([1], "not list"),
    ],
)
def test_max_unsigned_refuses_the_rest_by_name(value: Any, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_max_unsigned(value)
    # The sensor refuses it when the DAG is parsed, naming the parameter.
    with pytest.raises(ValueError, match="max_unsigned"):
        DocsignEnvelopeSensor(task_id="wait", envelope_ids=["envelope_a"], max_unsigned=value)


@pytest.mark.parametrize(
    ("max_unsigned", "total", "allowed"),
    [(None, 100, 0), (0, 100, 0), (10, 100, 10), (10, 3, 10), (0.1, 100, 10), (0.29, 100, 29), (0.1, 9, 0)],
)
def test_the_allowance_is_a_count_or_the_fraction_rounded_down(
    max_unsigned: Any, total: int, allowed: int
) -> None:
    assert allowance(max_unsigned, total) == allowed


@pytest.mark.parametrize(
    ("value", "seconds"), [(0, 0.0), (90, 90.0), (1.5, 1.5), (timedelta(hours=1), 3600.0)]
)
def test_grace_in_seconds_or_a_timedelta(value: Any, seconds: float) -> None:
    assert parse_grace(value) == seconds
    assert parse_grace(pendulum.duration(minutes=2)) == 120.0


@pytest.mark.parametrize("value", [-1, timedelta(seconds=-1), "1h", None, True, math.inf])
def test_bad_grace_is_refused(value: Any) -> None:
    with pytest.raises(ValueError, match="expired_grace"):
        parse_grace(value)


# ------------------------------------------------------------------------------------------- settle
def test_settle_gives_each_final_status_and_a_masked_reason() -> None:
    rejecter = dict(SIGNER, signingStatus="REJECTED", rejectionReason="Wrong\nfee")
    rejected = settle(_envelope("e1", "REJECTED", rejecter, completedAt="2026-11-20T10:00:00Z"), "e1")
    assert rejected == Outcome(
        "e1",
        "REJECTED",
        "rejected by recipient 41 (SIGNER, e***@peer.test): 'Wrong\\nfee'",
        "2026-11-20T10:00:00Z",
    )
    assert "ezra@peer.test" not in str(rejected)
    assert settle(_envelope("e2", "REJECTED"), "e2") == Outcome(
        "e2", "REJECTED", "rejected; the service recorded no rejecting recipient"
    )
    assert settle(_envelope("e3", "CANCELLED"), "e3") == Outcome(
        "e3", "CANCELLED", "cancelled (the envelope's audit log holds the reason)"
    )
    # No signedAt: the last signature is the completion (turnaround.last_signature).
    assert settle(_envelope("e4", "COMPLETED", completedAt="2026-11-21T00:00:00Z"), "e4") == Outcome(
        "e4", "COMPLETED", None, "2026-11-21T00:00:00Z", "2026-11-21T00:00:00.000Z"
    )
    signers = [
        dict(SIGNER, signingStatus="SIGNED", signedAt="2026-11-20T09:00:00Z"),
        dict(SIGNER, id=42, signingStatus="SIGNED", signedAt="2026-11-20T11:30:00.250Z"),
        dict(SIGNER, id=43, role="CC", signingStatus="SIGNED", signedAt="2026-11-20T23:00:00Z"),
    ]
    both = settle(_envelope("e10", "COMPLETED", *signers, completedAt="2026-11-20T11:31:00Z"), "e10")
    assert both is not None
    assert both.signed_at == "2026-11-20T11:30:00.250Z"  # the last signer who had to act, not the CC
    assert settle(None, "e5") == Outcome(
        "e5", DELETED, "not found: deleted, or the API key cannot see it (left out of get-many)"
    )
    soft = settle(_envelope("e6", "COMPLETED", deletedAt="2026-11-22T00:00:00Z"), "e6")
    assert soft == Outcome("e6", DELETED, "deleted (deletedAt is set; it was COMPLETED)")
    assert settle(_envelope("e7", "PENDING", SIGNER), "e7") is None
    assert settle(_envelope("e8", "DRAFT", SIGNER), "e8") is None
    # Another target: COMPLETED is then terminal and not the target.
    assert settle(_envelope("e9", "COMPLETED"), "e9", target_status="PENDING") == Outcome(
        "e9", "COMPLETED", "COMPLETED is terminal, so it can never become PENDING"
    )


def test_an_expired_link_settles_only_past_the_grace_and_never_with_on_expired_wait() -> None:
    an_hour_ago = (NOW - timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    stale = _envelope(
        "e1", "PENDING", dict(SIGNER, expiresAt=an_hour_ago), {**SIGNER, "id": 42, "role": "CC"}
    )
    outcome = settle(stale, "e1", now=NOW)
    assert outcome is not None
    assert outcome.status == EXPIRED
    assert outcome.reason == f"signing link of recipient 41 (SIGNER, e***@peer.test) expired at {an_hour_ago}"
    assert settle(stale, "e1", expired_grace=3599, now=NOW) is not None
    assert settle(stale, "e1", expired_grace=3601, now=NOW) is None  # still within the grace
    assert settle(stale, "e1", on_expired="wait", now=NOW) is None
    signed = dict(SIGNER, signingStatus="SIGNED", expiresAt=an_hour_ago)
    assert settle(_envelope("e2", "PENDING", signed), "e2", now=NOW) is None  # signed: nothing expired


def test_settle_many_splits_settled_from_open_in_order() -> None:
    envelopes = [_envelope("b", "COMPLETED"), _envelope("a", "PENDING", SIGNER)]
    settled, still_open = settle_many(envelopes, ["a", "b", "c"], now=NOW)
    assert still_open == ["a"]
    assert {k: v.status for k, v in settled.items()} == {"b": "COMPLETED", "c": DELETED}


# ------------------------------------------------------------------------------------------ verdict
def _outcomes(completed: int, **others: int) -> list[Outcome]:
    found = [Outcome(f"c{i}", "COMPLETED", None, "2026-11-21T00:00:00Z") for i in range(completed)]
    for status, count in others.items():
        found += [Outcome(f"{status.lower()}{i}", status, f"{status.lower()} because") for i in range(count)]
    return found


@pytest.mark.parametrize(
    ("max_unsigned", "passed"),
    [(None, False), (0, False), (7, False), (8, True), (10, True), (0.1, True), (0.07, False)],
)
def test_the_batch_passes_unless_more_than_the_allowance_did_not_complete(
    max_unsigned: Any, passed: bool
) -> None:
    verdict = judge(_outcomes(92, REJECTED=5, EXPIRED=3), "COMPLETED", max_unsigned)
    assert verdict.passed is passed
    assert (verdict.completed, verdict.unsigned) == (92, 8)
    assert verdict.by_status() == {"COMPLETED": 92, "EXPIRED": 3, "REJECTED": 5}
    assert list(verdict.by_status()) == ["COMPLETED", "EXPIRED", "REJECTED"]  # the target first


def test_the_message_names_counts_allowance_report_and_the_first_five() -> None:
    verdict = judge(_outcomes(92, REJECTED=5, EXPIRED=3), "COMPLETED", 0)
    rows = {o.envelope_id: f"row-{o.envelope_id}" for o in verdict.outcomes}
    text = verdict.message(report="file:///t/results.jsonl.outcome.jsonl", rows=rows)
    assert text.startswith("8 of 100 envelope(s) did not reach COMPLETED (3 EXPIRED, 5 REJECTED); ")
    assert "max_unsigned allows 0: the batch fails" in text
    assert "file:///t/results.jsonl.outcome.jsonl" in text
    assert "envelope rejected0 (row row-rejected0) is REJECTED: rejected because" in text
    assert text.count("\n  - ") == 5
    assert text.endswith("... and 3 more")
    assert "c0" not in text  # completed ones are not named
    assert judge([], "COMPLETED", None).passed  # nothing to wait for
    assert judge(_outcomes(3), "COMPLETED", None).message() == (
        "0 of 3 envelope(s) did not reach COMPLETED; max_unsigned allows 0: the batch passes"
    )


# ------------------------------------------------------------------------------------- construction
def test_batch_mode_follows_the_arguments() -> None:
    assert DocsignEnvelopeSensor(task_id="w", result_table="/t/r.jsonl").batch is True
    assert DocsignEnvelopeSensor(task_id="w", envelope_ids=["e"], max_unsigned=0).batch is True
    assert DocsignEnvelopeSensor(task_id="w", envelope_ids=["e"]).batch is False
    assert DocsignEnvelopeSensor(task_id="w", envelope_id="e").batch is False
    sensor = DocsignEnvelopeSensor(
        task_id="w", result_table="/t/r", result_table_format="parquet", expired_grace=60
    )
    assert (sensor.max_unsigned, sensor.expired_grace, sensor.result_table_format) == (None, 60.0, "parquet")


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"envelope_id": "e", "max_unsigned": 1}, "not envelope_id"),
        ({"envelope_ids": ["e"], "expired_grace": 60}, "expired_grace applies to a batch wait"),
        ({"result_table": "/t/r.jsonl", "expired_grace": 60, "on_expired": "wait"}, "no effect"),
        ({"envelope_ids": ["e"], "result_table_format": "jsonl"}, "needs a result_table"),
        ({"result_table": "/t/r.csv", "result_table_format": "csv"}, "one of jsonl, parquet"),
        ({"result_table": "/t/r.jsonl", "expired_grace": "1h"}, "expired_grace"),
    ],
)
def test_batch_arguments_are_checked_at_parse_time(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        DocsignEnvelopeSensor(task_id="w", **kwargs)


# --------------------------------------------------------------------------------- events, trigger
def test_batch_timeout_and_error_events_end_the_task_without_a_request() -> None:
    sensor = DocsignEnvelopeSensor(task_id="w", envelope_ids=["a", "b"], max_unsigned=1)
    timeout = {"status": "timeout", "batch": True, "message": "1 of 2 not settled", "open": ["b"]}
    with pytest.raises(AirflowSensorTimeout, match="1 of 2 not settled; open: b"):
        sensor.execute_complete({}, timeout)  # type: ignore[arg-type]
    with pytest.raises(AirflowFailException, match="refused the API key"):
        sensor.execute_complete({}, {"status": "error", "message": "refused the API key"})  # type: ignore[arg-type]
    with pytest.raises(AirflowFailException, match="does not understand"):
        sensor.execute_complete({}, {"status": "maybe"})  # type: ignore[arg-type]


def test_a_batch_trigger_serializes_small_and_a_single_one_as_before() -> None:
    ids = [f"envelope_{i}" for i in range(3)]
    batch = DocsignEnvelopeTrigger(ids, batch=True, expired_grace=timedelta(minutes=5), deadline=1.0e9)
    _, kwargs = batch.serialize()
    assert kwargs["envelope_ids"] == ids  # once, and nothing else holds an id
    assert (kwargs["batch"], kwargs["expired_grace"]) == (True, 300.0)
    assert json.dumps(kwargs).count("envelope_0") == 1
    rebuilt = DocsignEnvelopeTrigger(**json.loads(json.dumps(kwargs)))
    assert rebuilt.serialize()[1] == kwargs
    _, single = DocsignEnvelopeTrigger(ids).serialize()
    assert set(single) == set(kwargs) - {"batch", "expired_grace"}


# ----------------------------------------------------------------------------------- table, report
def test_the_campaign_reads_sent_rows_once_each_and_the_report_lists_every_outcome(tmp_path: Path) -> None:
    table = tmp_path / "results.jsonl"
    rows = [
        {
            "row_key": "r1",
            "external_id": "c(r1)",
            "envelope_id": "e1",
            "status": "sent",
            "sent_at": "2026-11-20T00:00:00Z",
        },
        {
            "row_key": "r2",
            "external_id": "c(r2)",
            "envelope_id": "e2",
            "status": "sent",
            "sent_at": "2026-11-20T00:00:00Z",
        },
        {"row_key": "r3", "external_id": "c(r3)", "envelope_id": "e1", "status": "sent"},  # duplicate
        {"row_key": "r4", "external_id": "c(r4)", "envelope_id": "e4", "status": "created"},
        {"row_key": "r5", "external_id": "c(r5)", "envelope_id": None, "status": "invalid"},
        {"row_key": 6, "external_id": "c(6)", "envelope_id": "e6", "status": "sent"},
    ]
    table.write_text("".join(json.dumps(r) + "\n" for r in rows))
    campaign = read_campaign(str(table))
    assert campaign.envelope_ids == ["e1", "e2", "e6"]
    assert campaign.row_keys == {"e1": "r1", "e2": "r2", "e6": "6"}
    assert (campaign.duplicates, campaign.not_sent) == (1, 2)

    outcomes = [
        Outcome("e1", "COMPLETED", None, "2026-11-21T00:00:05Z", "2026-11-21T00:00:00.250Z"),
        Outcome("e2", "REJECTED", "no", None, None),
    ]
    report = OutcomeReport(campaign.path)
    assert report.write([*outcomes, Outcome("e6", DELETED, "gone")], campaign) == (
        f"file://{tmp_path}/results.jsonl.outcome.jsonl"
    )
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl.outcome.jsonl").read_text().splitlines()]
    assert lines[0] == {
        "envelope_id": "e1",
        "row_key": "r1",
        "external_id": "c(r1)",
        "status": "COMPLETED",
        "reason": None,
        "completed_at": "2026-11-21T00:00:05Z",
        "signed_at": "2026-11-21T00:00:00.250Z",
        "seconds_to_sign": 86400.25,  # from the row's sent_at to the last signature, not completed_at
    }
    # A rejection has no signature and no time to sign; a row without sent_at has no time to sign.
    assert [(x["signed_at"], x["seconds_to_sign"]) for x in lines[1:]] == [(None, None), (None, None)]
    assert [(x["row_key"], x["status"]) for x in lines] == [
        ("r1", "COMPLETED"),
        ("r2", "REJECTED"),
        ("6", DELETED),
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl", "results.jsonl.outcome.jsonl"]

    other = tmp_path / "other.jsonl"
    other.write_text('{"id": 1}\n')
    with pytest.raises(ValueError, match="not a bulk result table"):
        read_campaign(other)
    with pytest.raises(ValueError, match="cannot tell the result_table format"):
        read_campaign(tmp_path / "results.data")


def test_the_reports_time_to_sign_believes_only_a_past_sent_at_of_a_completed_envelope() -> None:
    signed = "2026-11-21T00:00:00Z"
    outcomes = [Outcome(f"e{n}", "COMPLETED", None, signed, signed) for n in range(5)]
    sent_at = {
        "e0": "2026-11-20T23:00:00+00:00",  # an hour before: believed
        "e1": "not a time",  # garbage in the table: no send time
        "e2": "2999-01-01T00:00:00Z",  # in the future: not believed
        "e3": None,  # the row has none
    }  # e4: no row value at all
    data = OutcomeReport.lines(outcomes, {}, {}, sent_at)
    lines = [json.loads(x) for x in data.decode().splitlines()]
    assert [x["seconds_to_sign"] for x in lines] == [3600.0, None, None, None, None]
    assert {x["signed_at"] for x in lines} == {signed}
    # Without a campaign's send times (an older caller), the report still has both keys.
    assert json.loads(OutcomeReport.lines(outcomes[:1], {}, {}).decode())["seconds_to_sign"] is None
