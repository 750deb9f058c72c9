"""DocsignEnvelopeTrigger.run() driven directly with asyncio against the sandbox over real HTTP.

Each test lets the trigger run to its single event: completion after the sandbox's simulated signers
sign, a rejection with its reason, survival of injected 503 and 429 answers, the timeout at the
deadline, a refused API key, and cancellation that leaves the envelope untouched.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import conn_json, numbered_signers

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.expiry import mask_email
from airflow_provider_docsign.triggers import DocsignEnvelopeTrigger

pytestmark = pytest.mark.integration


def _create_pending(hook: DocsignHook, pdf: Path, *, title: str = "Trigger test", signers: int = 1) -> str:
    envelope_id = hook.create_envelope(title=title, files=[pdf], recipients=numbered_signers(signers))
    hook.distribute_envelope(envelope_id)
    return envelope_id


async def _events(trigger: DocsignEnvelopeTrigger) -> list[dict[str, Any]]:
    """Every event the trigger yields (bounded: the trigger has a deadline in every test)."""
    return [event.payload async for event in trigger.run()]


def _trigger(envelope_ids: list[str], *, seconds: float = 30, poll: float = 0.3) -> DocsignEnvelopeTrigger:
    return DocsignEnvelopeTrigger(envelope_ids, poll_interval=poll, deadline=time.time() + seconds)


@pytest.fixture(scope="module")
def autosign_server(tmp_path_factory: pytest.TempPathFactory, api_key: str) -> Iterator[SandboxServer]:
    """A second sandbox whose simulated signers all sign 2 seconds after distribution."""
    with SandboxServer(tmp_path_factory.mktemp("autosign"), api_key=api_key, auto_sign_after=2) as server:
        yield server


@pytest.fixture
def autosign_conn(autosign_server: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> SandboxServer:
    autosign_server.clear_faults()
    autosign_server.clear_requests()
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(autosign_server))
    return autosign_server


def test_completes_after_auto_sign(autosign_conn: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    hook = DocsignHook()
    first = _create_pending(hook, make_pdf("a.pdf", pages=2), signers=2)
    second = _create_pending(hook, make_pdf("b.pdf"))
    assert hook.get_envelope(first).status == "PENDING"

    events = asyncio.run(_events(_trigger([first, second])))

    assert len(events) == 1  # exactly one event
    event = events[0]
    assert event["status"] == "success", event
    assert event["envelope_ids"] == [first, second]
    states = {s["envelope_id"]: s for s in event["envelopes"]}
    for envelope_id in (first, second):
        envelope = hook.get_envelope(envelope_id)
        assert envelope.status == "COMPLETED"
        assert states[envelope_id]["status"] == "COMPLETED"
        assert states[envelope_id]["completed_at"] == envelope.completed_at
        assert states[envelope_id]["item_ids"] == [item.id for item in envelope.items]
    json.dumps(event)  # the event is JSON-safe
    # The trigger polled through get-many only, one request per poll for two envelopes.
    paths = {r["path"] for r in autosign_conn.requests() if r["method"] == "POST"}
    assert "/envelope/get-many" in paths


def test_failure_event_on_rejection_with_reason(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _create_pending(hook, make_pdf(), signers=2)
    recipient = hook.get_envelope(envelope_id).recipients[1]
    sandbox.reject(envelope_id, recipient.id, "The salary figure is wrong")

    events = asyncio.run(_events(_trigger([envelope_id])))

    assert len(events) == 1
    event = events[0]
    assert event["status"] == "failure", event
    assert f"envelope {envelope_id} is REJECTED" in event["message"]
    assert "The salary figure is wrong" in event["message"]
    masked = mask_email(recipient.email)  # the event and the error carry the masked address only
    assert f"({recipient.role}, {masked})" in event["message"]
    assert recipient.email not in json.dumps(event)
    assert event["envelopes"][0]["rejections"] == [
        {
            "recipient_id": recipient.id,
            "name": recipient.name,
            "email": masked,
            "reason": "The salary figure is wrong",
            "role": recipient.role,
        }
    ]


def test_survives_injected_503_and_429_then_completes(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _create_pending(hook, make_pdf())
    sandbox.complete(envelope_id)
    sandbox.wait_status(envelope_id, "COMPLETED", timeout=10)
    sandbox.clear_requests()
    # More 503s than the hook's own retries (max_retries=3), so one whole poll fails and the trigger
    # must carry on to the next poll; then 429s with Retry-After, which the hook honours.
    sandbox.inject_fault(method="POST", path="/envelope/get-many", action="status", status=503, count=5)
    sandbox.inject_fault(
        method="POST", path="/envelope/get-many", action="status", status=429, retry_after=1, count=2
    )

    events = asyncio.run(_events(_trigger([envelope_id])))

    assert [e["status"] for e in events] == ["success"]
    statuses = [r["status"] for r in sandbox.requests() if r["path"] == "/envelope/get-many"]
    assert statuses.count(503) == 5
    assert statuses.count(429) == 2
    assert statuses[-1] == 200


def test_timeout_event_at_the_deadline(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _create_pending(hook, make_pdf())
    deadline = time.time() + 1.5
    trigger = DocsignEnvelopeTrigger([envelope_id], poll_interval=0.4, deadline=deadline)

    events = asyncio.run(_events(trigger))

    assert len(events) == 1
    event = events[0]
    assert event["status"] == "timeout", event
    assert time.time() >= deadline  # not before its deadline
    assert event["envelopes"][0]["status"] == "PENDING"
    assert hook.get_envelope(envelope_id).status == "PENDING"


def test_deadline_already_past_after_a_restart_polls_once_then_times_out(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _create_pending(hook, make_pdf())
    # A triggerer that comes back after the deadline re-creates the trigger from serialize().
    _classpath, kwargs = DocsignEnvelopeTrigger([envelope_id], deadline=time.time() - 5).serialize()
    sandbox.clear_requests()

    events = asyncio.run(_events(DocsignEnvelopeTrigger(**json.loads(json.dumps(kwargs)))))

    assert [e["status"] for e in events] == ["timeout"]
    assert [r["path"] for r in sandbox.requests()] == ["/envelope/get-many"]


def test_refused_api_key_is_an_error_event_without_the_key(
    sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch, make_pdf: Callable[..., Path]
) -> None:
    wrong_key = "api_wrongkey_never_valid_123"
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox, password=wrong_key))

    events = asyncio.run(_events(_trigger(["envelope_doesnotmatter"])))

    assert len(events) == 1
    event = events[0]
    assert event["status"] == "error"
    assert event["error_type"] == "auth"
    assert "401" in event["message"]
    # The same message poke mode raises, naming the connection to fix.
    assert "refused the API key of connection 'docsign_default'" in event["message"]
    assert wrong_key not in json.dumps(event)
    assert sandbox.api_key not in json.dumps(event)


def test_cancelling_the_trigger_leaves_the_envelope_alone(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _create_pending(hook, make_pdf())
    sandbox.clear_requests()

    async def kill_after_first_poll() -> None:
        task = asyncio.ensure_future(_events(_trigger([envelope_id], poll=0.2)))
        for _ in range(200):  # bounded: at most ~10 s
            if any(r["path"] == "/envelope/get-many" for r in sandbox.requests()):
                break
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(kill_after_first_poll())

    seen = sandbox.requests()
    assert hook.get_envelope(envelope_id).status == "PENDING"
    assert any(r["path"] == "/envelope/get-many" for r in seen)
    assert all(r["method"] == "POST" and r["path"] == "/envelope/get-many" for r in seen), seen


# ---------------------------------------------------------------------- batch waits (issue 37)
def _rejected(hook: DocsignHook, sandbox: SandboxServer, pdf: Path, reason: str) -> str:
    envelope_id = _create_pending(hook, pdf)
    sandbox.reject(envelope_id, hook.get_envelope(envelope_id).recipients[0].id, reason)
    sandbox.wait_status(envelope_id, "REJECTED")
    return envelope_id


def test_a_batch_trigger_waits_past_a_rejection_until_every_envelope_is_settled(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    rejected = _rejected(hook, sandbox, make_pdf("r.pdf"), "No")
    signed, cancelled = _create_pending(hook, make_pdf("s.pdf")), _create_pending(hook, make_pdf("c.pdf"))
    deadline = time.time() + 60
    trigger = DocsignEnvelopeTrigger(
        [rejected, signed, cancelled], batch=True, poll_interval=0.2, deadline=deadline
    )
    sandbox.clear_requests()

    async def scenario() -> list[dict[str, Any]]:
        run = asyncio.ensure_future(_events(trigger))
        for _ in range(400):  # bounded: until the trigger's first poll saw the rejection
            if any(r["path"] == "/envelope/get-many" for r in sandbox.requests()):
                break
            await asyncio.sleep(0.05)
        assert not run.done()  # a rejection does not end a batch wait
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sandbox.complete, signed)
        await loop.run_in_executor(None, lambda: hook.cancel_envelope(cancelled, reason="Deal off"))
        return await asyncio.wait_for(run, timeout=60)

    events = asyncio.run(scenario())

    assert events == [
        {
            "status": "settled",
            "message": "all 3 envelope(s) settled (1 CANCELLED, 1 COMPLETED, 1 REJECTED)",
            "batch": True,
            "envelopes": 3,
            "deadline": deadline,
            "by_status": {"REJECTED": 1, "COMPLETED": 1, "CANCELLED": 1},
        }
    ]
    assert hook.get_envelope(signed).status == "COMPLETED"


def test_a_batch_trigger_times_out_naming_only_what_is_still_open(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    rejected = _rejected(hook, sandbox, make_pdf("r.pdf"), "No")
    pending = _create_pending(hook, make_pdf("p.pdf"))
    trigger = DocsignEnvelopeTrigger(
        [rejected, pending], batch=True, poll_interval=0.3, deadline=time.time() + 1.5
    )

    events = asyncio.run(_events(trigger))

    (event,) = events
    assert event["status"] == "timeout", event
    assert event["open"] == [pending]
    assert event["by_status"] == {"REJECTED": 1}
    assert event["message"].startswith("1 of 2 envelope(s) were not settled before the sensor's timeout")
    assert "envelopes" in event
    assert "envelope_ids" not in event
