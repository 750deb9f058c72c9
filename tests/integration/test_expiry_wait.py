"""Expired signing links against the sandbox over real HTTP: the sandbox behaves like the real service,
and every kind of wait (poke, deferred trigger, batch) fails at once with DocsignRecipientExpiredError.

No timers: "at once" is asserted as a count of polls in the sandbox's request log after the link
expired, never as wall time.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import numbered_signers

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignRecipientExpiredError, DocsignServerError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor
from airflow_provider_docsign.triggers import DocsignEnvelopeTrigger

pytestmark = pytest.mark.integration

GET_MANY = "/envelope/get-many"


def _pending(hook: DocsignHook, pdf: Path, *, signers: int = 1, **create: Any) -> str:
    envelope_id = hook.create_envelope(
        title="Expiry test", files=[pdf], recipients=numbered_signers(signers), **create
    )
    hook.distribute_envelope(envelope_id)
    return envelope_id


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _sign_raw(sandbox: SandboxServer, envelope_id: str, recipient_id: int) -> requests.Response:
    return requests.post(
        sandbox.root_url + "/_sandbox/sign",
        json={"envelopeId": envelope_id, "recipientId": recipient_id},
        headers={"Authorization": f"Bearer {sandbox.api_key}"},
        timeout=30,
    )


# ------------------------------------------------------------------------------------------ sandbox
def test_sandbox_expiry_lifecycle_matches_the_real_service(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _pending(hook, make_pdf(), signers=2)
    recipients = hook.get_envelope(envelope_id).recipients
    first, second = recipients[0], recipients[1]
    # Default period: 3 months, which the real service counts as 90 days.
    ahead = _parse(first.expires_at or "") - datetime.now(timezone.utc)
    assert timedelta(days=89) < ahead <= timedelta(days=90)

    assert sandbox.expire(envelope_id, first.id) == [first.id]
    envelope = hook.get_envelope(envelope_id)
    assert envelope.status == "PENDING"  # expiry never changes the envelope's status
    expired = next(r for r in envelope.recipients if r.id == first.id)
    assert _parse(expired.expires_at or "") < datetime.now(timezone.utc)
    assert expired.expiration_notified_at is not None
    other = next(r for r in envelope.recipients if r.id == second.id)
    assert _parse(other.expires_at or "") > datetime.now(timezone.utc)

    # Find: hasExpiredRecipients=true lists it. "false" is no filter on the real service (v2.17
    # find-envelopes.ts applies the filter only when it is true), so it lists it too.
    def find(flag: str) -> list[str]:
        answer = requests.get(
            sandbox.base_url + "/envelope",
            params={"hasExpiredRecipients": flag, "perPage": 100},
            headers={"Authorization": sandbox.api_key},
            timeout=30,
        )
        assert answer.status_code == 200
        return [e["id"] for e in answer.json()["data"]]

    assert envelope_id in find("true")
    assert envelope_id in find("false")

    # Signing the expired recipient is refused with the real error; the other one may sign.
    refused = _sign_raw(sandbox, envelope_id, first.id)
    assert refused.status_code == 400
    error = refused.json()["error"]["json"]
    assert error["data"]["code"] == "RECIPIENT_EXPIRED"
    assert error["data"]["appError"] == {
        "code": "RECIPIENT_EXPIRED",
        "message": "Recipient signing window has expired",
    }
    assert sandbox.sign(envelope_id, second.id) == [second.id]

    # Redistribute renews the link (and counts one reminder e-mail); then signing works.
    sandbox.clear_requests()
    answer = hook.redistribute_envelope(envelope_id, [first.id])
    assert answer["success"] is True
    assert answer["id"] == envelope_id
    renewed = next(r for r in hook.get_envelope(envelope_id).recipients if r.id == first.id)
    assert _parse(renewed.expires_at or "") > datetime.now(timezone.utc) + timedelta(days=89)
    assert renewed.expiration_notified_at is None
    assert envelope_id not in find("true")
    counted = sandbox.reminders(envelope_id)
    assert counted == {"data": [{"envelopeId": envelope_id, "recipientId": first.id, "count": 1}], "total": 1}
    log = [r for r in sandbox.requests(bodies=True) if r["path"] == "/envelope/redistribute"]
    assert log[0]["body"] == {"envelopeId": envelope_id, "recipients": [first.id]}
    assert sandbox.sign(envelope_id, first.id) == [first.id]
    sandbox.wait_status(envelope_id, "COMPLETED", timeout=10)

    # Redistribute on a terminal envelope, and on a draft: 500 as on the real service.
    with pytest.raises(DocsignServerError) as done:
        hook.redistribute_envelope(envelope_id, [first.id])
    assert done.value.status_code == 500
    draft = hook.create_envelope(title="Draft", files=[make_pdf("d.pdf")], recipients=numbered_signers(1))
    draft_recipient = hook.get_envelope(draft).recipients[0].id
    with pytest.raises(DocsignServerError, match="Can not send draft document") as info:
        hook.redistribute_envelope(draft, [draft_recipient])
    assert info.value.status_code == 500


def test_disabled_and_custom_periods_set_expires_at(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    never = _pending(hook, make_pdf(), meta={"envelopeExpirationPeriod": {"disabled": True}})
    assert hook.get_envelope(never).recipients[0].expires_at is None
    two_weeks = _pending(
        hook, make_pdf("b.pdf"), meta={"envelopeExpirationPeriod": {"unit": "week", "amount": 2}}
    )
    ahead = _parse(hook.get_envelope(two_weeks).recipients[0].expires_at or "") - datetime.now(timezone.utc)
    assert timedelta(days=13) < ahead <= timedelta(days=14)


# --------------------------------------------------------------------------------------------- waits
def test_poke_fails_at_once_naming_the_recipient(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _pending(hook, make_pdf(), signers=2)
    recipient = hook.get_envelope(envelope_id).recipients[1]
    sensor = DocsignEnvelopeSensor(task_id="wait", envelope_id=envelope_id, timeout=600)
    assert sensor.poke({}) is False  # type: ignore[arg-type]
    sandbox.expire(envelope_id, recipient.id)

    with pytest.raises(DocsignRecipientExpiredError) as info:
        sensor.poke({})  # type: ignore[arg-type]
    error = info.value
    assert isinstance(error, AirflowFailException)  # no retry: a retry would find the same link
    text = str(error)
    assert envelope_id in text
    assert f"recipient {recipient.id} (SIGNER, s***@example.test)" in text
    assert recipient.email not in text  # masked
    assert "DocsignRemindRecipientsOperator" in text
    assert error.envelope_ids == [envelope_id]
    assert error.expired[0]["recipient_id"] == recipient.id
    assert error.expired[0]["expires_at"] == next(
        r.expires_at for r in hook.get_envelope(envelope_id).recipients if r.id == recipient.id
    )

    # on_expired="wait" keeps waiting instead.
    patient = DocsignEnvelopeSensor(task_id="wait", envelope_id=envelope_id, on_expired="wait")
    assert patient.poke({}) is False  # type: ignore[arg-type]


class _ExpireAfterFirstPoll:
    """Expire a recipient in a thread once the trigger's first poll reached the sandbox; remember
    where the request log stood at that moment."""

    def __init__(self, sandbox: SandboxServer, envelope_id: str, recipient_id: int) -> None:
        self.sandbox, self.envelope_id, self.recipient_id = sandbox, envelope_id, recipient_id
        self.log_length: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for _ in range(600):  # bounded
            log = self.sandbox.requests(bodies=True)
            if any(r["path"] == GET_MANY for r in log):
                self.sandbox.expire(self.envelope_id, self.recipient_id)
                self.log_length = len(self.sandbox.requests(bodies=True))
                return
            time.sleep(0.05)

    def __enter__(self) -> _ExpireAfterFirstPoll:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(timeout=120)


def _defer(sensor: DocsignEnvelopeSensor) -> Any:
    from airflow_provider_docsign._compat import TaskDeferred

    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})  # type: ignore[arg-type]
    return deferred.value.trigger


def _run_trigger(trigger: Any) -> list[dict[str, Any]]:
    async def run() -> list[dict[str, Any]]:
        return [event.payload async for event in trigger.run()]

    return asyncio.run(run())


def test_deferred_sensor_fails_within_two_polls_of_expiry(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _pending(hook, make_pdf())
    recipient = hook.get_envelope(envelope_id).recipients[0]
    sensor = DocsignEnvelopeSensor(
        task_id="wait", envelope_id=envelope_id, deferrable=True, timeout=600, poke_interval=0.5
    )
    trigger = _defer(sensor)
    assert trigger.serialize()[1]["on_expired"] == "fail"
    sandbox.clear_requests()

    with _ExpireAfterFirstPoll(sandbox, envelope_id, recipient.id) as expiry:
        events = _run_trigger(trigger)

    assert expiry.log_length is not None
    polls_after = [r for r in sandbox.requests(bodies=True)[expiry.log_length :] if r["path"] == GET_MANY]
    assert 1 <= len(polls_after) <= 2
    assert len(events) == 1
    assert events[0]["status"] == "failure"
    with pytest.raises(DocsignRecipientExpiredError, match=f"recipient {recipient.id} \\(SIGNER"):
        sensor.execute_complete({}, events[0])  # type: ignore[arg-type]


def test_batch_of_twenty_names_only_the_expired_one(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    pdf = make_pdf()
    ids = [_pending(hook, pdf) for _ in range(20)]
    stale = ids[13]
    recipient = hook.get_envelope(stale).recipients[0]
    sensor = DocsignEnvelopeSensor(
        task_id="wait", envelope_ids=ids, deferrable=True, timeout=600, poke_interval=0.5
    )
    trigger = _defer(sensor)
    sandbox.clear_requests()

    with _ExpireAfterFirstPoll(sandbox, stale, recipient.id) as expiry:
        events = _run_trigger(trigger)

    assert expiry.log_length is not None
    polls_after = [r for r in sandbox.requests(bodies=True)[expiry.log_length :] if r["path"] == GET_MANY]
    assert 1 <= len(polls_after) <= 2  # 20 envelopes: one get-many per poll
    with pytest.raises(DocsignRecipientExpiredError) as info:
        sensor.execute_complete({}, events[0])  # type: ignore[arg-type]
    assert info.value.envelope_ids == [stale]
    text = str(info.value)
    assert f"envelope {stale}" in text
    assert "1 of 20 envelope(s)" in text
    assert all(other not in text for other in ids if other != stale)

    # Poke mode says the same.
    with pytest.raises(DocsignRecipientExpiredError) as poked:
        DocsignEnvelopeSensor(task_id="wait", envelope_ids=ids).poke({})  # type: ignore[arg-type]
    assert poked.value.envelope_ids == [stale]


# ------------------------------------------------------------------- batch waits (issue 37)
def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_a_batch_wait_gives_an_expired_link_its_grace_then_counts_it_expired(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    stale, signed = _pending(hook, make_pdf()), _pending(hook, make_pdf("b.pdf"))
    sandbox.complete(signed)
    sandbox.wait_status(signed, "COMPLETED", timeout=20)
    recipient = hook.get_envelope(stale).recipients[0]
    expired_at = _iso(datetime.now(timezone.utc) - timedelta(hours=2))  # the link expired two hours ago
    sandbox.set_times(stale, recipients=[{"id": recipient.id, "expiresAt": expired_at}])

    def batch(**kwargs: Any) -> DocsignEnvelopeSensor:
        return DocsignEnvelopeSensor(task_id="wait", envelope_ids=[stale, signed], max_unsigned=1, **kwargs)

    # Within its grace, or with on_expired="wait", the expired link keeps the wait open.
    assert batch(expired_grace=timedelta(hours=3)).poke({}) is False  # type: ignore[arg-type]
    assert batch(on_expired="wait").poke({}) is False  # type: ignore[arg-type]
    # Past its grace, it is settled as EXPIRED and counted (one allowed: the batch passes).
    result = batch(expired_grace=3600).poke({})  # type: ignore[arg-type]
    value = getattr(result, "xcom_value", None)
    assert value is not None
    assert value["by_status"] == {"COMPLETED": 1, "EXPIRED": 1}
    (entry,) = value["not_completed"]
    assert entry["envelope_id"] == stale
    assert entry["status"] == "EXPIRED"
    assert entry["reason"] == (
        f"signing link of recipient {recipient.id} (SIGNER, s***@example.test) expired at {expired_at}"
    )
    assert recipient.email not in json.dumps(value)

    # Deferred: the trigger applies the same grace (its deadline is past, so it polls exactly once).
    def trigger_event(grace: float) -> dict[str, Any]:
        trigger = DocsignEnvelopeTrigger(
            [stale], batch=True, expired_grace=grace, poll_interval=0.5, deadline=time.time() - 1
        )
        (event,) = _run_trigger(trigger)
        return event

    assert trigger_event(3 * 3600)["status"] == "timeout"
    settled = trigger_event(3600)
    assert (settled["status"], settled["by_status"]) == ("settled", {"EXPIRED": 1})

    # A renewed link reopens the envelope: a wait that reads afresh waits on.
    hook.redistribute_envelope(stale, [recipient.id])
    assert batch(expired_grace=3600).poke({}) is False  # type: ignore[arg-type]
