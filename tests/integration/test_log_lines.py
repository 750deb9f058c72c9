"""No log line (or failure message) the provider writes can be broken or forged by text from outside.

The outgoing check keeps such text from being created through the provider, but the service holds what
anyone typed in its web app: here the sandbox is seeded directly (bypassing the provider) with a title,
a recipient e-mail and a rejection reason that hold NEL (U+0085), U+2028 and U+2029, on which Python's
own ``str.splitlines`` (and many log viewers) break lines. Every record the provider logs while reading
and judging that envelope, at DEBUG, must stay one line.
"""

from __future__ import annotations

import logging

import pytest

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks._http import Redactor, api_error
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

pytestmark = pytest.mark.integration

#: Characters on which str.splitlines splits, besides "\n" (which the old check already refused).
BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _lines(text: str) -> int:
    return len(text.splitlines())


def test_seeded_hostile_text_never_breaks_a_log_line(
    hook: DocsignHook, sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    (envelope_id,) = sandbox.seed(
        [
            {
                "title": "Q3 contract\u2028INFO forged: archive complete",
                "status": "REJECTED",
                "recipients": [
                    {
                        "email": "sam\u2028forged@example.com",
                        "name": "Sam\x85Signer",
                        "role": "SIGNER",
                        "signingStatus": "REJECTED",
                        "rejectionReason": "no\u2029INFO forged: signed",
                    }
                ],
            }
        ]
    )
    caplog.set_level(logging.DEBUG, logger="airflow_provider_docsign")
    envelope = hook.get_envelope(envelope_id)
    assert "\u2028" in envelope.title  # the hostile text did come back from the service
    sensor = DocsignEnvelopeSensor(task_id="wait", envelope_id=envelope_id)
    with pytest.raises(AirflowFailException) as info:
        sensor.poke({})  # type: ignore[arg-type]
    message = str(info.value)
    assert "rejected by recipient" in message
    # The message lists problems one per line, by design; nothing from outside adds a line.
    assert not any(ch in message for ch in BREAKS), message
    assert _lines(message) == message.count("\n") + 1
    records = [r for r in caplog.records if r.name.startswith("airflow_provider_docsign")]
    assert any("body:" in r.getMessage() for r in records), "the DEBUG body log was not captured"
    for record in records:
        text = record.getMessage()
        assert not any(ch in text for ch in BREAKS), text
        assert _lines(text) == 1, text


def test_a_service_error_message_is_one_line() -> None:
    body = (
        b'{"message": "Title \\u2028INFO forged\\u0085 and \\r\\nmore", "code": "BAD_REQUEST", '
        b'"data": {"code": "X\\u2029"}}'
    )
    error = api_error(
        status=400,
        headers={"content-type": "application/json"},
        body=body,
        method="POST",
        path="/envelope/update",
        redact=Redactor(None),
    )
    assert _lines(str(error)) == 1
    assert "\\u2028" in str(error)
    assert "\\x85" in str(error)
    assert error.error_code == "X\\u2029"
