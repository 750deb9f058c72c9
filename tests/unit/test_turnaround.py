"""Every definition of service/turnaround: sent, last signature, time to sign, funnel, percentiles, share."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.service.models import Envelope

UTC = timezone.utc
SENT = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
NOW = datetime(2026, 11, 10, 0, 0, tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _rec(rid: int, **kw: Any) -> dict[str, Any]:
    return {"id": rid, "role": "SIGNER", "signingStatus": "NOT_SIGNED", "sendStatus": "SENT", **kw}


def _env(status: str, *recipients: dict[str, Any], completed: datetime | None = None) -> Envelope:
    return Envelope.from_json(
        {
            "id": "envelope_t",
            "status": status,
            "createdAt": _iso(SENT - timedelta(minutes=5)),
            "completedAt": _iso(completed) if completed else None,
            "recipients": list(recipients),
        }
    )


# -- sent -----------------------------------------------------------------------------------------


def test_sent_takes_the_most_trusted_source_given() -> None:
    audit, campaign, task = SENT, SENT + timedelta(seconds=1), SENT + timedelta(seconds=2)
    assert turnaround.sent(audit=audit, campaign=campaign, task=task) == turnaround.Sent(audit, "audit")
    assert turnaround.sent(campaign=campaign, task=task) == turnaround.Sent(campaign, "campaign")
    assert turnaround.sent(task=_iso(task)) == turnaround.Sent(task, "task")
    assert turnaround.sent() is None
    assert turnaround.SENT_SOURCES == ("audit", "campaign", "task")


def test_sent_reads_text_naive_times_as_utc_and_skips_what_is_not_a_time() -> None:
    assert turnaround.sent(audit="not a time", task="2026-11-02T09:00:00Z") == turnaround.Sent(SENT, "task")
    assert turnaround.sent(campaign=datetime(2026, 11, 2, 9, 0)) == turnaround.Sent(SENT, "campaign")
    assert turnaround.Sent(SENT, "audit").to_dict() == {"at": "2026-11-02T09:00:00.000Z", "source": "audit"}
    assert turnaround.iso(None) is None


def test_audit_time_is_the_earliest_entry_of_the_type_in_any_order() -> None:
    entries: list[Any] = [
        {"type": "DOCUMENT_OPENED", "createdAt": "2026-11-02T08:00:00.000Z"},
        {"type": "DOCUMENT_SENT", "createdAt": "2026-11-02T10:00:00.000Z"},
        {"type": "DOCUMENT_SENT", "createdAt": "2026-11-02T09:00:00.000Z"},
        {"type": "DOCUMENT_SENT", "createdAt": "garbage"},
        {"type": "DOCUMENT_SENT"},
        "not an entry",
    ]
    assert turnaround.audit_time(entries, "DOCUMENT_SENT") == SENT
    assert turnaround.audit_time(entries, "DOCUMENT_COMPLETED") is None
    assert turnaround.audit_time([], "DOCUMENT_SENT") is None


# -- last signature and time to sign ---------------------------------------------------------------


def test_last_signature_is_the_latest_signature_of_those_who_had_to_act() -> None:
    at = [SENT + timedelta(hours=h) for h in (1, 2, 3, 4)]
    env = _env(
        "COMPLETED",
        _rec(1, signingStatus="SIGNED", signedAt=_iso(at[0])),
        _rec(2, role="APPROVER", signingStatus="SIGNED", signedAt=_iso(at[1])),
        _rec(3, role="VIEWER", signingStatus="SIGNED", signedAt=_iso(at[2])),
        _rec(4, role="CC", signingStatus="SIGNED", signedAt=_iso(at[3])),  # CC never counts
        completed=at[3] + timedelta(minutes=1),
    )
    assert turnaround.last_signature(env) == at[2]
    assert turnaround.seconds_to_sign(env, turnaround.Sent(SENT, "audit")) == 3 * 3600.0
    assert turnaround.seconds_to_sign(env, SENT) == 3 * 3600.0
    assert turnaround.seconds_to_sign(env, None) is None


def test_a_signer_without_signed_at_is_skipped_and_completed_at_stands_in_only_for_none() -> None:
    done = SENT + timedelta(hours=5)
    one = _env(
        "COMPLETED",
        _rec(1, signingStatus="SIGNED", signedAt=_iso(SENT + timedelta(hours=1))),
        _rec(2, signingStatus="SIGNED"),
        completed=done,
    )
    assert turnaround.last_signature(one) == SENT + timedelta(hours=1)
    none = _env("COMPLETED", _rec(1, signingStatus="SIGNED"), completed=done)
    assert turnaround.last_signature(none) == done


def test_a_rejections_signed_at_is_never_a_signature() -> None:
    late = SENT + timedelta(hours=9)
    env = _env(
        "COMPLETED",
        _rec(1, signingStatus="SIGNED", signedAt=_iso(SENT + timedelta(hours=1))),
        _rec(2, signingStatus="REJECTED", signedAt=_iso(late)),
        completed=late,
    )
    assert turnaround.last_signature(env) == SENT + timedelta(hours=1)
    rejected = _env("REJECTED", _rec(1, signingStatus="REJECTED", signedAt=_iso(late)), completed=late)
    assert turnaround.last_signature(rejected) is None
    assert turnaround.seconds_to_sign(rejected, SENT) is None


@pytest.mark.parametrize("status", ["DRAFT", "PENDING", "REJECTED", "CANCELLED"])
def test_only_a_completed_envelope_has_a_last_signature(status: str) -> None:
    env = _env(status, _rec(1, signingStatus="SIGNED", signedAt=_iso(SENT)), completed=SENT)
    assert turnaround.last_signature(env) is None


def test_seconds_between_keeps_milliseconds_and_never_goes_negative() -> None:
    later = SENT + timedelta(seconds=90, milliseconds=250)
    assert turnaround.seconds_between(SENT, later) == 90.25
    assert turnaround.seconds_between(later, SENT) == 0.0  # clocks apart: 0, never negative
    assert turnaround.seconds_between(None, later) is None
    assert turnaround.seconds_between(SENT, None) is None


# -- funnel ---------------------------------------------------------------------------------------


def _stage(status: str = "PENDING", **kw: Any) -> str | None:
    rec = _env(status, _rec(1, **kw)).recipients[0]
    return turnaround.recipient_stage(rec, status, NOW)


def test_each_recipient_in_its_furthest_stage() -> None:
    past, future = _iso(NOW - timedelta(hours=1)), _iso(NOW + timedelta(hours=1))
    assert _stage() == "sent"
    assert _stage(readStatus="OPENED") == "opened"
    assert _stage(readStatus="OPENED", signingStatus="SIGNED") == "signed"
    assert _stage(readStatus="OPENED", signingStatus="REJECTED", signedAt=past) == "rejected"
    assert _stage(expiresAt=past) == "expired"
    assert _stage(readStatus="OPENED", expiresAt=past) == "expired"
    assert _stage(readStatus="OPENED", expiresAt=future) == "opened"
    assert _stage(expiresAt=_iso(NOW)) == "expired"  # expiry at the instant judged: expired
    assert _stage(signingStatus="SIGNED", expiresAt=past) == "signed"  # signed in time


def test_cc_draft_and_not_yet_sent_recipients_are_not_in_the_funnel() -> None:
    assert _stage(role="CC") is None
    assert _stage("DRAFT") is None
    assert _stage("DRAFT", signingStatus="SIGNED") is None
    # The real service marks nobody SENT with distributionMethod NONE (recorded against v2.17.0 in
    # tests/system/test_system_export.py): NOT_SENT alone does not leave the funnel.
    assert _stage(sendStatus="NOT_SENT") == "sent"
    assert _stage(sendStatus="NOT_SENT", readStatus="OPENED") == "opened"


def test_a_recipient_waiting_for_its_turn_in_a_sequential_order_is_not_in_the_funnel() -> None:
    first = Envelope.from_json({"id": "e", "status": "PENDING", "recipients": [_rec(1, signingOrder=1)]})
    waiting = _rec(2, signingOrder=2, sendStatus="NOT_SENT")
    ordered = _env("PENDING", _rec(1, signingOrder=1), waiting, _rec(3, signingOrder=3, role="CC"))
    everyone = ordered.recipients
    assert turnaround.waits_for_turn(everyone[1], everyone)
    assert turnaround.recipient_stage(everyone[1], "PENDING", NOW, everyone) is None
    assert turnaround.recipient_stage(everyone[1], "PENDING", NOW) == "sent"  # nobody else known
    # Once the first signed, the second's turn has come (sent or not, it is in the funnel).
    signed_first = _env("PENDING", _rec(1, signingOrder=1, signingStatus="SIGNED"), waiting)
    assert (
        turnaround.recipient_stage(signed_first.recipients[1], "PENDING", NOW, signed_first.recipients)
        == "sent"
    )
    # A CC earlier in the order holds nobody's turn; nor does a parallel order (no signingOrder).
    cc_first = _env("PENDING", _rec(1, signingOrder=1, role="CC"), waiting)
    assert not turnaround.waits_for_turn(cc_first.recipients[1], cc_first.recipients)
    parallel = _env("PENDING", _rec(1), _rec(2, sendStatus="NOT_SENT"))
    assert turnaround.funnel([parallel], NOW)["sent"] == 2
    assert turnaround.funnel([ordered], NOW)["sent"] == 1
    assert first.recipients[0].signing_order == 1


def test_funnel_counts_are_cumulative() -> None:
    past = _iso(NOW - timedelta(hours=1))
    envelopes = [
        _env(
            "PENDING",
            _rec(1),
            _rec(2, readStatus="OPENED"),
            _rec(3, readStatus="OPENED", signingStatus="SIGNED"),
            _rec(4, signingStatus="REJECTED"),
            _rec(5, expiresAt=past),
            _rec(6, readStatus="OPENED", expiresAt=past),
            _rec(7, role="CC"),
            _rec(8, signingOrder=2, sendStatus="NOT_SENT"),  # waits for 9, earlier in the order
            _rec(9, signingOrder=1, readStatus="OPENED"),
        ),
        _env("DRAFT", _rec(1)),
    ]
    assert turnaround.funnel(envelopes, NOW) == {
        "sent": 7,
        "opened": 5,  # 2, 3, 4 (rejecting needs it open), 6 (opened, then expired) and 9
        "signed": 1,
        "rejected": 1,
        "expired": 2,
    }


# -- percentiles, summary, histogram --------------------------------------------------------------


def test_percentiles_are_nearest_rank() -> None:
    assert turnaround.percentile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.0  # even: the lower middle
    assert turnaround.percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert turnaround.percentile([7.0], 0.5) == 7.0
    assert turnaround.percentile([7.0], 0.9) == 7.0
    assert turnaround.percentile([], 0.5) is None
    assert turnaround.percentile([float(v) for v in range(1, 11)], 0.9) == 9.0
    assert turnaround.percentile([float(v) for v in range(1, 101)], 0.9) == 90.0
    assert turnaround.percentile([1.0, 2.0], 1) == 2.0
    for q in (0, -0.1, 1.5):
        with pytest.raises(ValueError, match="q must be"):
            turnaround.percentile([1.0], q)


def test_summarize_counts_completed_envelopes_without_a_send_time() -> None:
    def done(hours: float) -> Envelope:
        return _env(
            "COMPLETED",
            _rec(1, signingStatus="SIGNED", signedAt=_iso(SENT + timedelta(hours=hours))),
            completed=SENT + timedelta(hours=hours),
        )

    pairs = [(done(1), SENT), (done(2), SENT), (done(4), SENT), (done(8), None), (_env("PENDING"), SENT)]
    summary = turnaround.summarize(pairs)
    assert summary == turnaround.Summary(3, 7200.0, 14400.0, 1)
    assert summary.to_dict()["completed_without_sent"] == 1


def test_histogram_bins_with_a_value_on_a_bound_in_the_lower_bin() -> None:
    bins = turnaround.histogram([0.0, 3600.0, 3601.0, 86400.0, 14 * 86400.0, 15 * 86400.0])
    assert [b["label"] for b in bins] == [
        "up to 1 h",
        "1 h to 6 h",
        "6 h to 1 d",
        "1 d to 3 d",
        "3 d to 7 d",
        "7 d to 14 d",
        "> 14 d",
    ]
    assert [b["count"] for b in bins] == [2, 1, 1, 0, 0, 1, 1]
    assert bins[0]["from_hours"] == 0.0
    assert bins[-1]["to_hours"] is None
    assert sum(b["count"] for b in turnaround.histogram([])) == 0


# -- signed share ---------------------------------------------------------------------------------


def test_signed_share_counts_only_envelopes_sent_long_enough_ago() -> None:
    now = SENT + timedelta(hours=30)
    pairs = [
        (turnaround.Sent(SENT, "audit"), SENT + timedelta(hours=1)),  # on the bound: within 1 h
        (SENT, SENT + timedelta(hours=20)),
        (SENT, None),  # never signed
        (now - timedelta(hours=2), now - timedelta(hours=1, minutes=30)),  # too fresh for 24 h and 72 h
        (None, SENT),  # no send time: left out
    ]
    points = {p["hours"]: p for p in turnaround.signed_share(pairs, now, (1.0, 24.0, 72.0))}
    assert points[1.0] == {"hours": 1.0, "eligible": 4, "signed": 2, "share": 0.5}
    assert points[24.0] == {"hours": 24.0, "eligible": 3, "signed": 2, "share": 0.6667}
    assert points[72.0] == {"hours": 72.0, "eligible": 0, "signed": 0, "share": None}


def test_share_hours_spreads_at_most_the_points_asked_up_to_the_oldest_send() -> None:
    assert turnaround.share_hours(None) == []
    assert turnaround.share_hours(0) == []
    assert turnaround.share_hours(-5) == []
    assert turnaround.share_hours(60) == [0.25]
    ten_hours = turnaround.share_hours(10 * 3600)
    assert ten_hours[0] == 0.25
    assert ten_hours[-1] == 10.0
    assert len(ten_hours) == 40
    for span in (3600, 86400, 30 * 86400, 400 * 86400, 10_000 * 86400):
        points = turnaround.share_hours(span, most=48)
        assert 1 <= len(points) <= 48
        assert points == sorted(points)
        assert points[-1] <= span / 3600 + 1e-3


def test_chart_hours_end_at_the_median_send_age_so_each_point_counts_half_the_campaign() -> None:
    now = SENT + timedelta(hours=100)
    # Ages 100 h, 10 h and 2 h: the median age is 10 h; the 100 h send alone is not charted past it.
    sent = [SENT, now - timedelta(hours=10), now - timedelta(hours=2)]
    points = turnaround.chart_hours(sent, now)
    assert points[-1] == 10.0
    share = turnaround.signed_share([(s, None) for s in sent], now, points)
    assert all(p["eligible"] >= 2 for p in share)
    assert turnaround.chart_hours([], now) == []


def test_funnel_shares_are_of_sent_and_none_when_nobody_was_sent_to() -> None:
    stages = {"sent": 8, "opened": 6, "signed": 4, "rejected": 1, "expired": 2}
    assert turnaround.funnel_shares(stages) == {
        "sent": 1.0,
        "opened": 0.75,
        "signed": 0.5,
        "rejected": 0.125,
        "expired": 0.25,
    }
    assert set(turnaround.funnel_shares(dict.fromkeys(turnaround.STAGES, 0)).values()) == {None}
