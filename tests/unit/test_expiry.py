"""Pure expiry rules: the period parser, the expired-recipient rule, masking, and evaluate()."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from airflow_provider_docsign.exceptions import DocsignRecipientExpiredError, DocsignValidationError
from airflow_provider_docsign.sensors._evaluate import EnvelopeState, evaluate, snapshot
from airflow_provider_docsign.service.expiry import (
    DEFAULT,
    awaits_signature,
    expiration_period_meta,
    expired_recipients,
    mask_email,
    merge_meta,
    period_to_timedelta,
    reminded_recipients,
    reminder_settings_meta,
)
from airflow_provider_docsign.service.models import Envelope, Recipient

NOW = datetime(2026, 11, 23, 13, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("14d", {"unit": "day", "amount": 14}),
        ("2w", {"unit": "week", "amount": 2}),
        ("1m", {"unit": "month", "amount": 1}),
        (" 1Y ", {"unit": "year", "amount": 1}),
        ({"unit": "Week", "amount": 3}, {"unit": "week", "amount": 3}),
        (None, {"disabled": True}),
        ({"disabled": True}, {"disabled": True}),
        (DEFAULT, None),
    ],
)
def test_expiration_periods(value: Any, expected: Any) -> None:
    assert expiration_period_meta(value) == expected


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("14 days", "is not a period"),
        (0, "bare number"),
        (-2, "bare number"),
        (14, "bare number"),
        (1.5, "bare number"),
        (True, "bare number"),
        ("14", "is not a period"),
        ("0d", "at least 1"),
        ("-1d", "is not a period"),
        ("3h", "is not a period"),
        ({"unit": "day", "amount": 0}, "at least 1"),
        ({"unit": "day", "amount": "3"}, "whole number"),
        ({"unit": "fortnight", "amount": 1}, "not one of"),
        ({"unit": "day"}, "exactly the keys"),
        ({"disabled": False}, "must be true"),
        (["14d"], "must be a period"),
    ],
)
def test_bad_periods_name_the_parameter(value: Any, words: str) -> None:
    with pytest.raises(DocsignValidationError, match=words) as info:
        expiration_period_meta(value)
    assert "expiration_period" in str(info.value)


def test_reminders() -> None:
    assert reminder_settings_meta({"send_after": "3d", "repeat_every": "2d"}) == {
        "sendAfter": {"unit": "day", "amount": 3},
        "repeatEvery": {"unit": "day", "amount": 2},
    }
    assert reminder_settings_meta({"send_after": "1w"})["repeatEvery"] == {"disabled": True}
    assert reminder_settings_meta(None) == {
        "sendAfter": {"disabled": True},
        "repeatEvery": {"disabled": True},
    }
    assert reminder_settings_meta(DEFAULT) is None
    with pytest.raises(DocsignValidationError, match=r"reminders\['send_after'\]"):
        reminder_settings_meta({"send_after": "1y"})  # the reminder schema has no years
    with pytest.raises(DocsignValidationError, match="unknown key"):
        reminder_settings_meta({"send_after": "3d", "every": "2d"})
    with pytest.raises(DocsignValidationError, match="needs 'send_after'"):
        reminder_settings_meta({"repeat_every": "2d"})


def test_merge_meta_never_changes_the_callers_dict_and_refuses_both_ways() -> None:
    meta = {"subject": "Hi"}
    assert merge_meta(meta, "1w") == {
        "subject": "Hi",
        "envelopeExpirationPeriod": {"unit": "week", "amount": 1},
    }
    assert meta == {"subject": "Hi"}
    assert merge_meta(None) is None
    with pytest.raises(DocsignValidationError, match="not both"):
        merge_meta({"reminderSettings": {}}, reminders={"send_after": "1d"})


def test_period_to_timedelta_follows_the_real_service() -> None:
    assert period_to_timedelta({"unit": "month", "amount": 3}) == timedelta(days=90)
    assert period_to_timedelta({"unit": "year", "amount": 1}) == timedelta(days=365)
    assert period_to_timedelta({"disabled": True}) is None


def _recipient(
    rid: int, *, role: str = "SIGNER", status: str = "NOT_SIGNED", expires: str | None
) -> Recipient:
    return Recipient(
        id=rid, email=f"person{rid}@example.com", role=role, signing_status=status, expires_at=expires
    )


def test_expired_recipients_rule() -> None:
    past, future = "2026-11-23T12:02:49.855Z", "2027-02-21T13:02:49.938Z"
    recipients = [
        _recipient(1, expires=past),
        _recipient(2, expires=future),
        _recipient(3, role="CC", status="SIGNED", expires=past),
        _recipient(4, status="SIGNED", expires=past),
        _recipient(5, expires=None),
    ]
    assert [r.id for r in expired_recipients(recipients, NOW)] == [1]


@pytest.mark.parametrize(
    ("role", "status", "awaits"),
    [
        ("SIGNER", "NOT_SIGNED", True),
        ("APPROVER", "NOT_SIGNED", True),
        ("VIEWER", "NOT_SIGNED", True),
        ("signer", "not_signed", True),  # case does not matter
        ("CC", "NOT_SIGNED", False),
        ("SIGNER", "SIGNED", False),
        ("SIGNER", "REJECTED", False),
        ("SIGNER", None, False),
        (None, "NOT_SIGNED", True),
    ],
)
def test_one_awaits_a_signature_rule_for_models_and_raw_json(role: Any, status: Any, awaits: bool) -> None:
    assert awaits_signature(Recipient(id=1, email="a@b.test", role=role, signing_status=status)) is awaits
    assert awaits_signature({"id": 1, "role": role, "signingStatus": status}) is awaits


def test_the_three_callers_use_the_one_rule() -> None:
    """expired_recipients, the reminders operator's targets and the webhook events share the predicate."""
    import inspect

    from airflow_provider_docsign.operators import reminders
    from airflow_provider_docsign.service import webhook_events

    for module in (webhook_events, reminders):  # no second copy of the rule's status test
        assert "awaits_signature(" in inspect.getsource(module)
        assert '"NOT_SIGNED"' not in inspect.getsource(module), module.__name__
    # The webhook's expired recipient: the unsigned, non-CC one notified last.
    recipients = [
        {
            "id": 1,
            "role": "SIGNER",
            "signingStatus": "NOT_SIGNED",
            "expirationNotifiedAt": "2026-11-23T10:00:00Z",
        },
        {
            "id": 2,
            "role": "CC",
            "signingStatus": "NOT_SIGNED",
            "expirationNotifiedAt": "2026-11-23T12:00:00Z",
        },
        {
            "id": 3,
            "role": "SIGNER",
            "signingStatus": "SIGNED",
            "expirationNotifiedAt": "2026-11-23T13:00:00Z",
        },
    ]
    assert webhook_events._expired_recipient(recipients) == 1


def _reminder(entry_id: str, rid: int, created: str, *, resending: bool = True) -> dict[str, Any]:
    data = {"recipientId": rid, "isResending": resending, "emailType": "REMINDER"}
    return {"id": entry_id, "type": "EMAIL_SENT", "createdAt": created, "data": data}


def test_reminded_recipients_stops_at_the_marker_or_the_services_moment() -> None:
    log = [  # newest first, as the service lists it
        _reminder("e5", 1, "2026-11-23T12:00:05.000Z"),
        {"id": "e4", "type": "DOCUMENT_OPENED", "createdAt": "2026-11-23T12:00:04.000Z", "data": {}},
        _reminder("e3", 2, "2026-11-23T12:00:03.000Z", resending=False),  # the first send, not a reminder
        {"id": "e2", "type": "EMAIL_SENT", "createdAt": "2026-11-23T12:00:02.000Z", "data": "garbled"},
        _reminder("e1", 2, "2026-11-23T11:00:00.000Z"),  # an hour earlier
    ]
    assert reminded_recipients(log, {1, 2}) == {1, 2}
    assert reminded_recipients(log, {1}) == {1}
    assert reminded_recipients(log, {1, 2}, stop_at="e4") == {1}
    assert reminded_recipients(log, {1, 2}, stop_at="e5") == set()
    since = datetime(2026, 11, 23, 11, 30, tzinfo=timezone.utc)  # a moment on the service's clock
    assert reminded_recipients(log, {1, 2}, since=since) == {1}
    assert reminded_recipients(log, {1, 2}, limit=4) == {1}
    assert (
        reminded_recipients([{"type": "EMAIL_SENT", "data": {"isResending": True, "recipientId": True}}], {1})
        == set()
    )


def test_mask_email() -> None:
    assert mask_email("ezra@peer.test") == "e***@peer.test"
    assert mask_email("") == "(no e-mail)"
    assert mask_email(None) == "(no e-mail)"


def _envelope(eid: str, status: str, recipients: list[dict[str, Any]]) -> Envelope:
    return Envelope.from_json({"id": eid, "status": status, "recipients": recipients})


def test_evaluate_fails_on_expiry_by_default_and_waits_when_asked() -> None:
    expired = {
        "id": 41,
        "email": "ezra@peer.test",
        "role": "SIGNER",
        "signingStatus": "NOT_SIGNED",
        "expiresAt": "2026-11-23T12:02:49.855Z",
    }
    fresh = dict(expired, id=42, expiresAt="2027-02-21T13:02:49.938Z")
    ids = ["envelope_a", "envelope_b"]
    states = snapshot(
        [_envelope("envelope_a", "PENDING", [fresh]), _envelope("envelope_b", "PENDING", [expired])],
        ids,
        now=NOW,
    )
    verdict = evaluate(states, "COMPLETED", ["REJECTED", "CANCELLED"])
    assert verdict.outcome == "failure"
    assert verdict.expired == (
        {
            "envelope_id": "envelope_b",
            "recipient_id": 41,
            "role": "SIGNER",
            "email": "e***@peer.test",
            "expires_at": "2026-11-23T12:02:49.855Z",
        },
    )
    assert "envelope_a" not in verdict.message
    assert "ezra@peer.test" not in verdict.message
    assert (
        "recipient 41 (SIGNER, e***@peer.test), link expired at 2026-11-23T12:02:49.855Z" in verdict.message
    )
    assert "DocsignRemindRecipientsOperator" in verdict.message
    assert evaluate(states, "COMPLETED", ["REJECTED"], on_expired="wait").outcome == "waiting"
    # The state survives the trigger event's JSON round trip.
    rebuilt = [EnvelopeState.from_dict(s.to_dict()) for s in states]
    assert evaluate(rebuilt, "COMPLETED", ["REJECTED"]).expired == verdict.expired
    with pytest.raises(ValueError, match="on_expired"):
        evaluate(states, "COMPLETED", [], on_expired="ignore")


def test_a_completed_envelope_is_never_expired() -> None:
    signed = {"id": 1, "role": "SIGNER", "signingStatus": "SIGNED", "expiresAt": "2026-11-23T12:00:00.000Z"}
    states = snapshot([_envelope("envelope_a", "COMPLETED", [signed])], ["envelope_a"], now=NOW)
    assert evaluate(states, "COMPLETED", []).outcome == "success"


def test_the_error_pickles_with_its_details() -> None:
    import pickle

    error = DocsignRecipientExpiredError("expired", [{"envelope_id": "envelope_b", "recipient_id": 41}])
    again = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes
    assert again.envelope_ids == ["envelope_b"]
    assert str(again) == "expired"
