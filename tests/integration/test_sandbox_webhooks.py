"""The sandbox sends webhooks like the real service: body and header shape, retries, the drop fault.

A small receiver runs in a thread on 127.0.0.1 (stopped by each test); it answers with the statuses
the test scripts and records what it got.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import SPEC_DIR, conn_json, numbered_signers

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

RECORDED = SPEC_DIR / "recorded" / "webhooks"


class Receiver:
    """Records deliveries; answers the scripted statuses first, then 200."""

    def __init__(self, statuses: list[int], host: str = "127.0.0.1") -> None:
        self.statuses = list(statuses)
        self.got: list[tuple[dict[str, str], dict[str, Any], int]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body, status))
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:  # bodies hold signing tokens: never logged
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.port = int(self.server.server_address[1])
        self.url = f"http://{host}:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def receiver_factory(sandbox: SandboxServer) -> Iterator[Callable[..., Receiver]]:
    made: list[Receiver] = []

    def make(statuses: list[int], host: str = "127.0.0.1") -> Receiver:
        receiver = Receiver(statuses, host)
        receiver.thread.start()
        made.append(receiver)
        return receiver

    try:
        yield make
    finally:
        sandbox.clear_webhooks()
        for receiver in made:
            receiver.server.shutdown()
            receiver.server.server_close()


def _sent(hook: DocsignHook, pdf: Path, title: str) -> str:
    envelope_id = hook.create_envelope(title=title, files=[pdf], recipients=numbered_signers(1))
    hook.distribute_envelope(envelope_id)
    return envelope_id


def _deliveries(sandbox: SandboxServer, count: int, done: Callable[[dict[str, Any]], bool]) -> list[Any]:
    for _ in range(400):  # bounded: ~20 s
        log = sandbox.webhooks()["deliveries"]
        if len(log) >= count and all(done(d) for d in log):
            return list(log)
        time.sleep(0.05)
    raise AssertionError(f"deliveries did not settle: {sandbox.webhooks()['deliveries']}")


def test_completion_is_delivered_with_the_real_shape_and_retried_like_the_service(
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    receiver_factory: Callable[[list[int]], Receiver],
) -> None:
    receiver = receiver_factory([500, 503])  # two failed attempts, then 200
    sandbox.add_webhook(receiver.url, "s3cret-webhook", ["DOCUMENT_COMPLETED"])
    hook = DocsignHook()
    envelope_id = _sent(hook, make_pdf(), "Webhook completed")
    sandbox.complete(envelope_id)

    log = _deliveries(sandbox, 1, lambda d: 200 in d["attempts"])
    assert log == [
        {
            "event": "DOCUMENT_COMPLETED",
            "envelopeId": envelope_id,
            "url": receiver.url,
            "address": "127.0.0.1",
            "attempts": [500, 503, 200],
        }
    ]
    assert [status for _, _, status in receiver.got] == [500, 503, 200]
    headers, body, _ = receiver.got[-1]
    assert headers["x-documenso-secret"] == "s3cret-webhook"
    assert headers["content-type"] == "application/json"
    recorded = json.loads((RECORDED / "webhook_DOCUMENT_COMPLETED.json").read_text())
    assert set(body) == set(recorded)
    assert set(body["payload"]) == set(recorded["payload"])
    assert set(body["payload"]["recipients"][0]) == set(recorded["payload"]["recipients"][0])
    assert isinstance(body["payload"]["id"], int)
    assert body["event"] == "DOCUMENT_COMPLETED"
    assert body["payload"]["envelopeId"] == envelope_id
    assert body["payload"]["status"] == "COMPLETED"
    assert body["webhookEndpoint"] == receiver.url
    # The control API never shows the secret.
    assert "s3cret-webhook" not in json.dumps(sandbox.webhooks())


def test_failing_receiver_gets_four_attempts_and_a_dropped_webhook_is_never_sent(
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    receiver_factory: Callable[[list[int]], Receiver],
) -> None:
    receiver = receiver_factory([500] * 10)
    sandbox.add_webhook(receiver.url, "s3cret-webhook")  # completed, rejected, cancelled
    hook = DocsignHook()
    cancelled = _sent(hook, make_pdf(), "Webhook cancelled")
    hook.cancel_envelope(cancelled, reason="Deal off")
    log = _deliveries(sandbox, 1, lambda d: len(d["attempts"]) == 4)
    assert log[0]["event"] == "DOCUMENT_CANCELLED"
    assert log[0]["attempts"] == [500, 500, 500, 500]

    sandbox.drop_webhooks(1)
    dropped = _sent(hook, make_pdf(), "Webhook dropped")
    sandbox.complete(dropped)
    sandbox.wait_status(dropped, "COMPLETED", timeout=30)
    log = _deliveries(sandbox, 2, lambda d: d.get("dropped") or len(d["attempts"]) == 4)
    assert log[1] == {
        "event": "DOCUMENT_COMPLETED",
        "envelopeId": dropped,
        "url": receiver.url,
        "attempts": [],
        "dropped": True,
    }
    assert len(receiver.got) == 4  # only the cancelled one's attempts reached the receiver


def test_a_private_subscription_is_refused_until_the_instance_lists_its_host(
    tmp_path: Path, make_pdf: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Documenso v2.17: 127.0.0.1 is refused (status 0, no request) until the host is listed."""
    receiver = Receiver([])
    receiver.thread.start()
    data = tmp_path / "instance"
    try:
        with SandboxServer(data, api_key="api_privatewebhooks01") as strict:
            monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(strict))
            strict.add_webhook(receiver.url, "s3cret-webhook", ["DOCUMENT_COMPLETED"])
            refused_id = _sent(DocsignHook(), make_pdf(), "Private webhook")
            strict.complete(refused_id)
            refused = _deliveries(strict, 1, lambda d: len(d["attempts"]) == 4)
            assert strict.webhooks()["ssrfBypassHosts"] == []
        # The instance restarted with the host listed (its subscriptions are configured again). The
        # conftest's sandbox gets the list through the environment variable; this one, the option.
        bypass = ["--webhook-ssrf-bypass-hosts", "127.0.0.1"]
        with SandboxServer(data, api_key="api_privatewebhooks01", extra_args=bypass) as listed:
            monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(listed))
            listed.add_webhook(receiver.url, "s3cret-webhook", ["DOCUMENT_COMPLETED"])
            allowed_id = _sent(DocsignHook(), make_pdf(), "Listed webhook")
            listed.complete(allowed_id)
            allowed = _deliveries(listed, 1, lambda d: 200 in d["attempts"])
            assert listed.webhooks()["ssrfBypassHosts"] == ["127.0.0.1"]
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()

    assert refused == [
        {
            "event": "DOCUMENT_COMPLETED",
            "envelopeId": refused_id,
            "url": receiver.url,
            "attempts": [0, 0, 0, 0],
            "refused": "127.0.0.1 is a loopback address; add 127.0.0.1 to the Documenso instance's "
            "NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS (comma-separated) and restart it",
        }
    ]
    assert allowed == [
        {
            "event": "DOCUMENT_COMPLETED",
            "envelopeId": allowed_id,
            "url": receiver.url,
            "address": "127.0.0.1",
            "attempts": [200],
        }
    ]
    # The refused delivery made no request at all; the allowed one arrived.
    assert [body["payload"]["envelopeId"] for _, body, _ in receiver.got] == [allowed_id]


def test_the_sandbox_judges_the_host_it_connects_to(
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    receiver_factory: Callable[..., Receiver],
) -> None:
    """Issue 29: ``http://127.0.0.2:P\\@8.8.8.8/`` was checked as 8.8.8.8 (urllib) and sent to 127.0.0.2.

    The WHATWG parser (the service's) reads host 127.0.0.2, which this instance does not list (it
    lists 127.0.0.1): refused, and no request reaches the receiver listening on 127.0.0.2.
    """
    receiver = receiver_factory([], host="127.0.0.2")
    url = f"http://127.0.0.2:{receiver.port}\\@8.8.8.8/hook"
    sandbox.add_webhook(url, "s3cret-webhook", ["DOCUMENT_COMPLETED"])
    envelope_id = _sent(DocsignHook(), make_pdf(), "Backslash webhook")
    sandbox.complete(envelope_id)
    log = _deliveries(sandbox, 1, lambda d: len(d["attempts"]) == 4)
    assert log == [
        {
            "event": "DOCUMENT_COMPLETED",
            "envelopeId": envelope_id,
            "url": url,
            "attempts": [0, 0, 0, 0],
            "refused": "127.0.0.2 is a loopback address; add 127.0.0.2 to the Documenso instance's "
            "NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS (comma-separated) and restart it",
        }
    ]
    assert receiver.got == []


def test_a_delivery_resolves_once_and_connects_to_the_address_it_checked(
    tmp_path: Path, make_pdf: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that answers 127.0.0.1 once, then 127.0.0.3 (rebinding): every attempt goes to 127.0.0.1.

    Had any attempt looked the name up again it would have connected to 127.0.0.3, where nothing
    listens (status 0). The Host header is the URL's. A name that resolves to loopback and is not
    listed is refused by its address.
    """
    receiver = Receiver([500, 503])
    receiver.thread.start()
    bypass = ["--webhook-ssrf-bypass-hosts", "hooks.test"]
    try:
        with SandboxServer(tmp_path / "dns", api_key="api_webhookdns0001", extra_args=bypass) as instance:
            monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(instance))
            instance.set_webhook_dns(
                {"hooks.test": [["127.0.0.1"], ["127.0.0.3"]], "rebind.test": [["127.0.0.1"]]}
            )
            pinned_url = f"http://hooks.test:{receiver.port}/hook"
            refused_url = f"http://rebind.test:{receiver.port}/hook"
            instance.add_webhook(pinned_url, "s3cret-webhook", ["DOCUMENT_COMPLETED"])
            instance.add_webhook(refused_url, "s3cret-webhook", ["DOCUMENT_COMPLETED"])
            envelope_id = _sent(DocsignHook(), make_pdf(), "Pinned webhook")
            instance.complete(envelope_id)
            log = _deliveries(instance, 2, lambda d: 200 in d["attempts"] or len(d["attempts"]) == 4)
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()

    by_url = {d["url"]: d for d in log}
    assert by_url[pinned_url]["address"] == "127.0.0.1"
    assert by_url[pinned_url]["attempts"] == [500, 503, 200]
    assert [headers["host"] for headers, _, _ in receiver.got] == [f"hooks.test:{receiver.port}"] * 3
    assert by_url[refused_url]["refused"].startswith("rebind.test resolves to 127.0.0.1, a loopback address")
    assert "address" not in by_url[refused_url]


def test_expiry_and_reminder_webhooks_in_the_recorded_shape(
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    receiver_factory: Callable[[list[int]], Receiver],
) -> None:
    from airflow_provider_docsign.service.webhook_events import parse_webhook

    receiver = receiver_factory([])
    sandbox.add_webhook(receiver.url, "s3cret-webhook", ["RECIPIENT_EXPIRED", "DOCUMENT_REMINDER_SENT"])
    hook = DocsignHook()
    envelope_id = hook.create_envelope(title="Expiring", files=[make_pdf()], recipients=numbered_signers(2))
    hook.distribute_envelope(envelope_id)
    second = hook.get_envelope(envelope_id).recipients[1].id
    sandbox.expire(envelope_id, second)
    hook.redistribute_envelope(envelope_id, [second])

    log = _deliveries(sandbox, 2, lambda d: 200 in d["attempts"])
    assert [d["event"] for d in log] == ["RECIPIENT_EXPIRED", "DOCUMENT_REMINDER_SENT"]
    # The real service sends the whole document for both (no recording of these two events exists;
    # the shape is the one every recorded delivery has).
    recorded = json.loads((RECORDED / "webhook_DOCUMENT_SIGNED.json").read_text())
    by_event = {body["event"]: body for _, body, _ in receiver.got}
    for body in by_event.values():
        assert set(body) == set(recorded)
        assert set(body["payload"]) == set(recorded["payload"])
        assert set(body["payload"]["recipients"][0]) == set(recorded["payload"]["recipients"][0])
        assert body["payload"]["status"] == "PENDING"  # expiry never changes the status
    expired = parse_webhook(json.dumps(by_event["RECIPIENT_EXPIRED"]).encode())
    assert expired.recipient_id == second
    assert expired.to_dict()["recipient_id"] == second
    reminded = parse_webhook(json.dumps(by_event["DOCUMENT_REMINDER_SENT"]).encode())
    assert reminded.event == "DOCUMENT_REMINDER_SENT"
    assert reminded.recipient_id is None
