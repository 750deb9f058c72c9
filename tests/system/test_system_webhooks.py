"""System tests: real webhook deliveries from the instance under test reach our listener (opt-in).

``DocsignWebhookEventTrigger`` listens on 127.0.0.1 (the instance allows it through
``NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS``); its ``run()``, the deferred wait of an ``AssetWatcher``, is
driven here in an event loop. The subscriptions are rows of the instance's ``Webhook`` table, inserted
through ``DOCSIGN_SYSTEM_DATABASE_URL`` for the API key's team (what the team settings page creates:
URL, events, secret, enabled, team and user) and deleted at the end with their delivery records. The
instance sends its secret as is in ``X-Documenso-Secret`` and records every attempt in ``WebhookCall``
(status and response code), which is how the tests see what our listener answered it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import signer
from peer import raw_envelope, reject_as, sign_as

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.service.models import EnvelopeStatus

pytestmark = pytest.mark.skipif(
    not AIRFLOW_V_3_0_PLUS, reason="the webhook trigger (an AssetWatcher trigger) needs Airflow 3"
)

NO_EMAIL = {"distributionMethod": "NONE"}
SECRET = f"docsign-system-{uuid.uuid4().hex}"
SECRET_CONN_ID = "docsign_system_webhook"
PATH = "/docsign"
#: The instance's attempts at one delivery that fails: the first and 3 retries.
ATTEMPTS = 4
#: Seconds a delivery may take to arrive after the action that causes it (sealing takes about one).
DELIVERY_TIMEOUT = 90.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Subscriptions:
    """Webhook rows this test inserted into the instance (deleted by the fixture)."""

    db: Callable[..., list[tuple[Any, ...]]]
    ids: list[str]

    def add(self, url: str, secret: str, events: list[str], *, team_id: int, user_id: int) -> str:
        webhook_id = f"docsignsystem{uuid.uuid4().hex}"
        self.ids.append(webhook_id)
        self.db(
            'INSERT INTO "Webhook" (id, "webhookUrl", "eventTriggers", secret, enabled, "createdAt", '
            '"updatedAt", "userId", "teamId") '
            'VALUES (%s, %s, %s::"WebhookTriggerEvents"[], %s, true, now(), now(), %s, %s)',
            webhook_id,
            url,
            events,
            secret,
            user_id,
            team_id,
        )
        return webhook_id

    def calls(self, webhook_id: str, envelope_id: str) -> list[tuple[str, int, str]]:
        """The instance's record of its attempts: ``(status, responseCode, event)``, oldest first."""
        rows = self.db(
            'SELECT status::text, "responseCode", event::text FROM "WebhookCall" WHERE "webhookId" = %s '
            """AND "requestBody"->'payload'->>'envelopeId' = %s ORDER BY "createdAt" """,
            webhook_id,
            envelope_id,
        )
        return [(str(s), int(c), str(e)) for s, c, e in rows]


@pytest.fixture
def subscriptions(system_db: Callable[..., list[tuple[Any, ...]]]) -> Iterator[Subscriptions]:
    subs = Subscriptions(system_db, [])
    try:
        yield subs
    finally:
        if subs.ids:  # the delivery records (WebhookCall) go with them (ON DELETE CASCADE)
            system_db('DELETE FROM "Webhook" WHERE id = ANY(%s)', subs.ids)
            left = system_db('SELECT count(*) FROM "Webhook" WHERE id = ANY(%s)', subs.ids)
            assert left == [(0,)]


@pytest.fixture
def secret_conn(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{SECRET_CONN_ID.upper()}", json.dumps({"conn_type": "generic", "password": SECRET})
    )
    return SECRET_CONN_ID


@dataclass
class Heard:
    """What one listening session saw: the envelope acted on, the trigger's events for it, and whether
    the port was closed after the trigger stopped."""

    envelope_id: str
    events: list[dict[str, Any]]
    closed_after: bool


def _listen(
    port: int,
    events: list[str],
    act: Callable[[], str],
    done: Callable[[str], bool],
    *,
    expect_event: bool = True,
) -> Heard:
    """Run the trigger's deferred wait with ``act()`` (returns the envelope id) in a thread, until the
    envelope's event arrived (when ``expect_event``) and ``done(envelope_id)``, or a bound; then stop it."""
    from airflow_provider_docsign.triggers.webhook import DocsignWebhookEventTrigger

    trigger = DocsignWebhookEventTrigger(
        port=port, path=PATH, secret_conn_id=SECRET_CONN_ID, events=events, max_body_bytes=512 * 1024
    )

    async def scenario() -> Heard:
        seen: list[dict[str, Any]] = []

        async def collect() -> None:
            async for event in trigger.run():
                seen.append(event.payload)

        task = asyncio.create_task(collect())
        try:
            for _ in range(200):  # at most ~10 s for the listener to start
                if await asyncio.to_thread(_port_open, port):
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"the listener did not open port {port}")
            envelope_id = await asyncio.to_thread(act)
            deadline = time.monotonic() + DELIVERY_TIMEOUT
            while time.monotonic() < deadline and not task.done():
                arrived = any(e["envelope_id"] == envelope_id for e in seen)
                if (arrived or not expect_event) and await asyncio.to_thread(done, envelope_id):
                    break
                await asyncio.sleep(0.3)
            if task.done():
                task.result()  # the trigger failed: say why
            mine = [e for e in seen if e["envelope_id"] == envelope_id]
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        closed = not await asyncio.to_thread(_port_open, port)
        return Heard(envelope_id, mine, closed)

    return asyncio.run(asyncio.wait_for(scenario(), DELIVERY_TIMEOUT + 60))


def _sent_envelope(hook: DocsignHook, run: Any, pdf: Path, name: str, email: str) -> tuple[str, int, int]:
    """A PENDING envelope (no e-mail) in the run's folder; and its team and owner."""
    envelope_id = hook.create_envelope(
        title=f"{run.prefix} {name}",
        files=[pdf],
        recipients=[signer(email=email, name="Wendy Webhook")],
        folder_id=run.folder_id,
        external_id=run.external_id(name),
    )
    run.envelope_ids.append(envelope_id)
    hook.distribute_envelope(envelope_id, meta=NO_EMAIL)
    raw = raw_envelope(envelope_id)
    return envelope_id, int(raw["teamId"]), int(raw["userId"])


def test_a_real_completion_delivery_ends_the_deferred_wait_and_a_wrong_secret_is_refused(
    system_hook: DocsignHook,
    system_run: Any,
    subscriptions: Subscriptions,
    secret_conn: str,
    pdf: Callable[..., Path],
) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}{PATH}"
    hooks: dict[str, str] = {}

    def act() -> str:
        envelope_id, team_id, user_id = _sent_envelope(
            system_hook, system_run, pdf("hooked.pdf"), "webhook-completed", "system-webhook@example.com"
        )
        events = ["DOCUMENT_COMPLETED"]
        hooks["good"] = subscriptions.add(url, SECRET, events, team_id=team_id, user_id=user_id)
        hooks["bad"] = subscriptions.add(url, "not-the-secret", events, team_id=team_id, user_id=user_id)
        assert sign_as(envelope_id) == ["system-webhook@example.com"]
        return envelope_id

    def done(envelope_id: str) -> bool:  # both subscriptions delivered, the refused one with its retries
        return bool(subscriptions.calls(hooks["good"], envelope_id)) and (
            len(subscriptions.calls(hooks["bad"], envelope_id)) >= ATTEMPTS
        )

    heard = _listen(port, ["DOCUMENT_COMPLETED"], act, done)

    (event,) = heard.events  # one event: the delivery with the wrong secret triggered nothing
    envelope_id = heard.envelope_id
    assert event["envelope_id"] == envelope_id
    assert event["event"] == "DOCUMENT_COMPLETED"
    assert event["status"] == "COMPLETED"
    assert event["rejection_reason"] is None
    assert str(event["time"]).endswith("Z")
    assert set(event) == {"envelope_id", "event", "status", "time", "rejection_reason", "recipient_id"}
    assert system_hook.get_envelope(envelope_id).status == EnvelopeStatus.COMPLETED
    assert subscriptions.calls(hooks["good"], envelope_id) == [("SUCCESS", 200, "DOCUMENT_COMPLETED")]
    assert (
        subscriptions.calls(hooks["bad"], envelope_id) == [("FAILED", 401, "DOCUMENT_COMPLETED")] * ATTEMPTS
    )
    assert heard.closed_after  # the listener stopped with its trigger


def test_a_real_rejection_delivery_carries_the_reason(
    system_hook: DocsignHook,
    system_run: Any,
    subscriptions: Subscriptions,
    secret_conn: str,
    pdf: Callable[..., Path],
) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}{PATH}"
    reason = "Clause 4 is not what we agreed"
    hooks: dict[str, str] = {}

    def act() -> str:
        envelope_id, team_id, user_id = _sent_envelope(
            system_hook, system_run, pdf("rejected.pdf"), "webhook-rejected", "system-webhook-no@example.com"
        )
        events = ["DOCUMENT_REJECTED", "DOCUMENT_COMPLETED"]
        hooks["good"] = subscriptions.add(url, SECRET, events, team_id=team_id, user_id=user_id)
        reject_as(envelope_id, "system-webhook-no@example.com", reason)
        return envelope_id

    heard = _listen(port, ["DOCUMENT_REJECTED"], act, lambda e: bool(subscriptions.calls(hooks["good"], e)))

    (event,) = heard.events
    assert event["event"] == "DOCUMENT_REJECTED"
    assert event["status"] == "REJECTED"
    assert event["rejection_reason"] == reason
    assert subscriptions.calls(hooks["good"], event["envelope_id"]) == [("SUCCESS", 200, "DOCUMENT_REJECTED")]
    assert heard.closed_after


def test_a_real_cancellation_delivery_ends_the_wait(
    system_hook: DocsignHook,
    system_run: Any,
    subscriptions: Subscriptions,
    secret_conn: str,
    pdf: Callable[..., Path],
) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}{PATH}"
    hooks: dict[str, str] = {}

    def act() -> str:
        envelope_id, team_id, user_id = _sent_envelope(
            system_hook,
            system_run,
            pdf("cancelled.pdf"),
            "webhook-cancelled",
            "system-webhook-cx@example.com",
        )
        hooks["cancelled"] = subscriptions.add(
            url, SECRET, ["DOCUMENT_CANCELLED"], team_id=team_id, user_id=user_id
        )
        system_hook.cancel_envelope(envelope_id, reason="system test")
        return envelope_id

    heard = _listen(
        port, ["DOCUMENT_CANCELLED"], act, lambda e: bool(subscriptions.calls(hooks["cancelled"], e))
    )

    (event,) = heard.events
    assert event["event"] == "DOCUMENT_CANCELLED"
    assert event["status"] == "CANCELLED"
    assert subscriptions.calls(hooks["cancelled"], event["envelope_id"]) == [
        ("SUCCESS", 200, "DOCUMENT_CANCELLED")
    ]
    assert heard.closed_after


def test_a_real_delivery_of_an_event_the_trigger_does_not_accept_is_refused_and_triggers_nothing(
    system_hook: DocsignHook,
    system_run: Any,
    subscriptions: Subscriptions,
    secret_conn: str,
    pdf: Callable[..., Path],
) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}{PATH}"
    hooks: dict[str, str] = {}

    def act() -> str:
        envelope_id, team_id, user_id = _sent_envelope(
            system_hook, system_run, pdf("ignored.pdf"), "webhook-ignored", "system-webhook-ig@example.com"
        )
        hooks["cancelled"] = subscriptions.add(
            url, SECRET, ["DOCUMENT_CANCELLED"], team_id=team_id, user_id=user_id
        )
        system_hook.cancel_envelope(envelope_id, reason="system test")
        return envelope_id

    heard = _listen(
        port,
        ["DOCUMENT_COMPLETED"],  # a wait for completions only
        act,
        lambda e: len(subscriptions.calls(hooks["cancelled"], e)) >= ATTEMPTS,
        expect_event=False,
    )

    assert heard.events == []
    calls = subscriptions.calls(hooks["cancelled"], heard.envelope_id)
    assert calls == [("FAILED", 400, "DOCUMENT_CANCELLED")] * ATTEMPTS
    assert heard.closed_after
