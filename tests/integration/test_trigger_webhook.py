"""DocsignWebhookEventTrigger over real HTTP on 127.0.0.1, with the recorded Documenso deliveries.

Bad input (wrong secret, malformed JSON, an event not accepted, an oversized body, a GET) gets a 4xx and
triggers nothing; a real delivery is answered 200 and yields one event with only the five allowed
facts; two triggers on one port share one listener; the listener stops with its last trigger. On
Airflow 2.11 the module refuses to import, saying it needs Airflow 3.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import socket
from typing import Any

import httpx
import pytest
from helpers import SPEC_DIR

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS

pytestmark = pytest.mark.integration

RECORDED = SPEC_DIR / "recorded" / "webhooks"
SECRET = "peer-webhook-secret"  # what the recorded deliveries were sent with


def _body(event: str) -> bytes:
    return (RECORDED / f"webhook_{event}.json").read_bytes()


def _tokens(event: str) -> list[str]:
    payload = json.loads(_body(event))["payload"]
    return [r["token"] for r in payload["recipients"]]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_import_matches_the_airflow_version() -> None:
    """Airflow 3: an event trigger an AssetWatcher accepts. Airflow 2.11: an ImportError that says why."""
    if not AIRFLOW_V_3_0_PLUS:
        with pytest.raises(ImportError, match=r"needs Airflow 3\.0 or later.*DocsignEnvelopeSensor"):
            importlib.import_module("airflow_provider_docsign.triggers.webhook")
        return
    from airflow_provider_docsign._compat import BaseEventTrigger

    module = importlib.import_module("airflow_provider_docsign.triggers.webhook")
    assert issubclass(module.DocsignWebhookEventTrigger, BaseEventTrigger)


@pytest.mark.skipif(not AIRFLOW_V_3_0_PLUS, reason="AssetWatcher triggers exist from Airflow 3.0")
def test_webhook_trigger_refuses_bad_input_and_yields_real_deliveries(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from airflow_provider_docsign.triggers.webhook import DocsignWebhookEventTrigger

    monkeypatch.setenv(
        "AIRFLOW_CONN_DOCSIGN_WEBHOOK", json.dumps({"conn_type": "generic", "password": SECRET})
    )
    port = _free_port()
    url = f"http://127.0.0.1:{port}/hook"
    completed = DocsignWebhookEventTrigger(port=port, max_body_bytes=64 * 1024)
    rejections_only = DocsignWebhookEventTrigger(port=port, events=["DOCUMENT_REJECTED"])
    # The secret is not among the serialized arguments (they are stored with the trigger).
    assert SECRET not in json.dumps(completed.serialize()[1])
    caplog.set_level(logging.DEBUG)

    async def scenario() -> tuple[dict[str, int], list[Any], list[Any], bool]:
        seen_a: list[Any] = []
        seen_b: list[Any] = []

        async def collect(trigger: DocsignWebhookEventTrigger, into: list[Any]) -> None:
            async for event in trigger.run():
                into.append(event.payload)

        tasks = [
            asyncio.create_task(collect(completed, seen_a)),
            asyncio.create_task(collect(rejections_only, seen_b)),
        ]
        for _ in range(200):  # bounded: at most ~10 s for the listener to start
            if await asyncio.to_thread(_port_open, port):
                break
            await asyncio.sleep(0.05)
        good = {"content-type": "application/json", "x-documenso-secret": SECRET}
        statuses: dict[str, int] = {}
        async with httpx.AsyncClient(timeout=10) as client:

            async def post(name: str, body: bytes, headers: dict[str, str]) -> None:
                statuses[name] = (await client.post(url, content=body, headers=headers)).status_code

            await post("wrong secret", _body("DOCUMENT_COMPLETED"), {**good, "x-documenso-secret": "nope"})
            await post("no secret", _body("DOCUMENT_COMPLETED"), {"content-type": "application/json"})
            await post("malformed JSON", b'{"event": "DOCUMENT_COMPLETED", "payload": ', good)
            await post(
                "no envelope id", json.dumps({"event": "DOCUMENT_COMPLETED", "payload": {}}).encode(), good
            )
            await post("event not accepted", _body("DOCUMENT_SIGNED"), good)
            oversized = json.dumps({"event": "DOCUMENT_COMPLETED", "pad": "x" * (1024 * 1024 + 10)})
            await post("oversized", oversized.encode(), good)
            statuses["GET"] = (await client.get(url, headers=good)).status_code
            await asyncio.sleep(0.2)
            nothing_yet = (list(seen_a), list(seen_b))
            await post("completed", _body("DOCUMENT_COMPLETED"), good)
            await post("rejected", _body("DOCUMENT_REJECTED"), good)
        for _ in range(200):  # bounded
            if len(seen_a) >= 2 and len(seen_b) >= 1:
                break
            await asyncio.sleep(0.05)
        assert nothing_yet == ([], [])
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        still_open = await asyncio.to_thread(_port_open, port)
        return statuses, seen_a, seen_b, still_open

    statuses, seen_a, seen_b, still_open = asyncio.run(scenario())

    assert statuses == {
        "wrong secret": 401,
        "no secret": 401,
        "malformed JSON": 400,
        "no envelope id": 400,
        "event not accepted": 400,
        "oversized": 413,
        "GET": 405,
        "completed": 200,
        "rejected": 200,
    }
    completed_body = json.loads(_body("DOCUMENT_COMPLETED"))
    rejected_body = json.loads(_body("DOCUMENT_REJECTED"))
    assert seen_a == [
        {
            "envelope_id": completed_body["payload"]["envelopeId"],
            "event": "DOCUMENT_COMPLETED",
            "status": "COMPLETED",
            "time": completed_body["createdAt"],
            "rejection_reason": None,
            "recipient_id": None,
        },
        {
            "envelope_id": rejected_body["payload"]["envelopeId"],
            "event": "DOCUMENT_REJECTED",
            "status": "REJECTED",
            "time": rejected_body["createdAt"],
            "rejection_reason": "Terms not acceptable",
            "recipient_id": None,
        },
    ]
    # The second trigger shares the listener and accepts rejections only.
    assert seen_b == seen_a[1:]
    # The last trigger to stop closed the shared listener.
    assert not still_open
    # No signing token (nor the secret) reached a log record.
    text = caplog.text
    for token in _tokens("DOCUMENT_COMPLETED") + _tokens("DOCUMENT_REJECTED"):
        assert token not in text
    assert SECRET not in text


@pytest.mark.skipif(not AIRFLOW_V_3_0_PLUS, reason="AssetWatcher triggers exist from Airflow 3.0")
def test_sandbox_webhooks_reach_the_trigger(
    sandbox: Any, docsign_conn: str, make_pdf: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers import numbered_signers

    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.triggers.webhook import DocsignWebhookEventTrigger

    monkeypatch.setenv(
        "AIRFLOW_CONN_DOCSIGN_WEBHOOK", json.dumps({"conn_type": "generic", "password": SECRET})
    )
    port = _free_port()
    trigger = DocsignWebhookEventTrigger(port=port)
    hook = DocsignHook()
    ids = []
    for title in ("completed", "rejected"):
        envelope_id = hook.create_envelope(title=title, files=[make_pdf()], recipients=numbered_signers(1))
        hook.distribute_envelope(envelope_id)
        ids.append(envelope_id)
    sandbox.add_webhook(f"http://127.0.0.1:{port}/hook", SECRET)

    async def scenario() -> list[Any]:
        seen: list[Any] = []

        async def collect() -> None:
            async for event in trigger.run():
                seen.append(event.payload)

        task = asyncio.create_task(collect())
        for _ in range(200):  # bounded
            if await asyncio.to_thread(_port_open, port):
                break
            await asyncio.sleep(0.05)
        await asyncio.to_thread(sandbox.complete, ids[0])
        recipient = (await asyncio.to_thread(hook.get_envelope, ids[1])).recipients[0]
        await asyncio.to_thread(sandbox.reject, ids[1], recipient.id, "Wrong price")
        for _ in range(400):  # bounded: ~20 s
            if len(seen) >= 2:
                break
            await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return seen

    try:
        seen = asyncio.run(scenario())
    finally:
        sandbox.clear_webhooks()
    by_id = {event["envelope_id"]: event for event in seen}
    assert len(seen) == 2
    assert by_id[ids[0]]["event"] == "DOCUMENT_COMPLETED"
    assert by_id[ids[0]]["status"] == "COMPLETED"
    assert by_id[ids[1]]["event"] == "DOCUMENT_REJECTED"
    assert by_id[ids[1]]["rejection_reason"] == "Wrong price"
    keys = {"envelope_id", "event", "status", "time", "rejection_reason", "recipient_id"}
    assert all(set(event) == keys for event in seen)
