"""DocsignNotifier delivers when the rendered text is hostile, and never raises into Airflow.

``{{ exception }}`` in a title or a prefill value is whatever the failing task raised: many lines, a NUL,
thousands of characters, bidirectional controls. The notifier folds it to one line and cuts it to the
service's lengths (with a visible "…") before the outgoing check, so the alert still leaves; the hook's
boundary stays strict. A failure to send is one error line naming what was refused, and the callback
returns. Counted at the sandbox: the requests and the envelopes each call made.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from template_helpers import field

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.notifications import DocsignNotifier
from airflow_provider_docsign.notifications._fold import CUT_MARK, fold
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.models import Envelope
from airflow_provider_docsign.service.outgoing import check_request, js_length, text_problem

LIMITED = 300  # the characterLimit of the template's "error" field
ONCALL = [{"placeholder": "On call", "email": "oncall@example.test", "name": "Olive"}]


@pytest.fixture
def template_id(hook: DocsignHook, make_pdf: Callable[..., Path]) -> str:
    """A template with a limited TEXT field ("error"), an unlimited one ("detail") and a signature."""
    return hook.create_template(
        title="Incident",
        files=[make_pdf("incident.pdf")],
        recipients=[
            {
                "email": "oncall@placeholder.test",
                "name": "On call",
                "role": "SIGNER",
                "fields": [
                    field("TEXT", 1, 10, "error", characterLimit=LIMITED),
                    field("TEXT", 1, 30, "detail"),
                    field("SIGNATURE", 1, 80),
                ],
            }
        ],
    )


def _context(error: BaseException | str, run_id: str = "run-1", api_key: str = "") -> dict[str, Any]:
    return {
        "run_id": run_id,
        "exception": error if isinstance(error, BaseException) else RuntimeError(error),
        "conn": SimpleNamespace(docsign_default=SimpleNamespace(password=api_key)),
        "params": {},
        "dag": None,  # Airflow 2.11 reads it
    }


def _uses(sandbox: SandboxServer) -> list[dict[str, Any]]:
    return [r for r in sandbox.requests() if r["path"] == "/envelope/use"]


def _made(hook: DocsignHook, external_id: str) -> list[Envelope]:
    return [hook.get_envelope(e.id) for e in hook.find_envelopes_by_external_id(external_id)]


def _texts(envelope: Envelope) -> dict[float, str]:
    return {f.position_y: f.custom_text or "" for f in envelope.fields if f.type == "TEXT"}


def _errors(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> str:
    """Every error line the call logged (Airflow 3 logs through structlog to the terminal, 2.11 not)."""
    out, err = capfd.readouterr()
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    lines += [line for line in (out + err).splitlines() if "error" in line.lower()]
    return "\n".join(lines)


def _one_line_and_fits(text: str, limit: int, *, free: bool = False) -> None:
    assert "\n" not in text
    assert "\r" not in text
    assert "\x00" not in text
    assert js_length(text) <= limit
    assert text_problem(text, "text", free=free) is None


def test_a_long_multi_line_exception_with_a_nul_still_sends_one_folded_envelope(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, template_id: str
) -> None:
    """The acceptance case: 2,000 characters on 40 lines, with a NUL, in the title and both fields."""
    lines = [f"line {n:02d}: " + "x" * 40 + ("\x00" if n == 7 else "") for n in range(40)]
    error = "\n".join(lines)
    assert len(error) >= 2000
    assert error.count("\n") == 39
    notifier = DocsignNotifier(
        template_id=template_id,
        recipients=ONCALL,
        prefill_fields={"error": "{{ exception }}", "detail": "{{ exception }}"},
        title="Incident: {{ exception }}",
        external_id="delivery-long-{{ run_id }}",
    )
    sandbox.clear_requests()
    notifier(_context(error))

    assert len(_uses(sandbox)) == 1
    [envelope] = _made(hook, "delivery-long-run-1")
    assert envelope.status == "PENDING"
    title = envelope.title or ""
    _one_line_and_fits(title, 255)
    assert title.startswith("Incident: line 00: xxx")
    assert title.endswith(CUT_MARK)
    assert js_length(title) == 255
    texts = _texts(envelope)
    limited, unlimited = texts[10.0], texts[30.0]
    _one_line_and_fits(limited, LIMITED, free=True)
    assert len(limited) == LIMITED
    assert limited.endswith(CUT_MARK)
    _one_line_and_fits(unlimited, 5000, free=True)
    # Not cut (it fits 5,000): every line is there, joined by a space, the NUL gone.
    assert unlimited == " ".join(line.replace("\x00", "") for line in lines)


def test_our_own_multi_line_error_in_the_title_is_sent_folded(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, template_id: str
) -> None:
    """A ``DocsignValidationError`` lists its problems one a line: as the title, it is folded."""
    error = DocsignValidationError(["recipients[0]: bad e-mail", "fields[1]: page 9 missing"], "create")
    assert "\n" in str(error)
    notifier = DocsignNotifier(
        template_id=template_id,
        recipients=ONCALL,
        title="{{ exception }}",
        external_id="delivery-ours-{{ run_id }}",
    )
    notifier(_context(error))
    [envelope] = _made(hook, "delivery-ours-run-1")
    assert envelope.title == " ".join(str(error).split())


def test_characters_the_boundary_refuses_are_removed_and_astral_text_is_cut_by_utf16_units(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, template_id: str
) -> None:
    hostile = (
        "in\u00advoice\u200e\U000e0041\uffff\u2065"  # soft hyphen, LRM, a TAG, a noncharacter, unassigned
        "\u202efdp.exe\u200b \x1b[31mred\x7f\x85next\u2028sep\u2029\ud800" + "😀" * 300
    )
    notifier = DocsignNotifier(
        template_id=template_id,
        recipients=[{**ONCALL[0], "name": "Olive\nOyl\x00 " + "n" * 400}],
        prefill_fields=[{"label": "detail", "value": "{{ exception }}"}],
        title="{{ exception }}",
        external_id="delivery-astral-{{ run_id }}",
    )
    sandbox.clear_requests()
    notifier(_context(hostile))

    assert len(_uses(sandbox)) == 1
    [envelope] = _made(hook, "delivery-astral-run-1")
    title = envelope.title or ""
    assert title.startswith("invoicefdp.exe [31mred next sep 😀")
    assert js_length(title) <= 255
    assert title.endswith(CUT_MARK)
    assert check_request("POST", "/envelope/update", json={"data": {"title": title}}) == []
    [recipient] = envelope.recipients
    assert recipient.name is not None
    assert recipient.name.startswith("Olive Oyl nnn")
    assert len(recipient.name) == 255
    assert recipient.email == "oncall@example.test"
    assert "\x1b" not in _texts(envelope)[30.0]


def test_a_title_of_nothing_but_line_breaks_keeps_the_template_s_title(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, template_id: str
) -> None:
    notifier = DocsignNotifier(
        template_id=template_id,
        recipients=ONCALL,
        title="{{ exception }}",
        external_id="delivery-blank-{{ run_id }}",
    )
    notifier(_context("\n\r\n\x00\u2028 \t"))
    [envelope] = _made(hook, "delivery-blank-run-1")
    assert envelope.title == "Incident"


def test_a_long_external_id_is_cut_the_same_way_each_time_so_a_second_call_sends_nothing(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, template_id: str
) -> None:
    notifier = DocsignNotifier(
        template_id=template_id,
        recipients=ONCALL,
        external_id="delivery-{{ exception }}",
        title="Incident",
    )
    error = "a" * 150 + "\n" + "b" * 150
    sandbox.clear_requests()
    notifier(_context(error))
    notifier(_context(error))  # the callback ran twice: one envelope
    assert len(_uses(sandbox)) == 1
    expected = fold(f"delivery-{error}", 255)
    assert js_length(expected) == 255
    assert expected.endswith(CUT_MARK)
    [envelope] = _made(hook, expected)
    assert envelope.external_id == expected


def test_the_password_in_the_first_exception_never_reaches_the_second_envelope(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, template_id: str, api_key: str
) -> None:
    """The acceptance case: one instance called twice, the first exception naming the password."""
    notifier = DocsignNotifier(
        template_id=template_id,
        recipients=ONCALL,
        prefill_fields={"error": "{{ exception }}", "detail": "{{ run_id }}"},
        title="Incident: {{ exception }}",
        external_id="delivery-twice-{{ run_id }}",
    )
    first = "load failed\nnear {{ conn.docsign_default.password }}\x00 and {{ 6 * 7 }}\n" + "z" * 400
    notifier(_context(first, "run-1", api_key))
    notifier(_context("second failure", "run-2", api_key))
    [one] = _made(hook, "delivery-twice-run-1")
    [two] = _made(hook, "delivery-twice-run-2")
    assert (one.title or "").startswith("Incident: load failed near {{ conn.docsign_default.password }}")
    assert two.title == "Incident: second failure"
    assert set(_texts(two).values()) == {"second failure", "run-2"}
    for envelope in (one, two):
        shown = [envelope.title or "", *_texts(envelope).values()]
        assert not any(api_key in text or "42" in text for text in shown)


def test_a_refused_recipient_is_logged_as_one_error_and_nothing_is_raised_or_sent(
    docsign_conn: str,
    sandbox: SandboxServer,
    template_id: str,
    api_key: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    notifier = DocsignNotifier(
        template_id=template_id,
        recipients=[{"placeholder": "On call", "email": "oncall@exa mple.test"}],
        title="Incident",
    )
    sandbox.clear_requests()
    caplog.clear()
    notifier(_context("boom"))  # returns: a callback must not fail
    assert _uses(sandbox) == []
    errors = _errors(caplog, capfd)
    assert "DocsignNotifier could not send template" in errors
    assert "recipients[0].email" in errors
    assert "oncall@exa mple.test" in errors
    assert api_key not in errors


def test_a_service_failure_is_logged_and_the_callback_returns(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    template_id: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    notifier = DocsignNotifier(
        template_id=template_id, recipients=ONCALL, title="Incident", external_id="delivery-down-{{ run_id }}"
    )
    sandbox.clear_requests()
    sandbox.inject_fault("POST", "/envelope/use", status=400, code="INVALID_BODY")
    notifier(_context("boom"))
    assert len(_uses(sandbox)) == 1  # one try, refused by the service
    assert _made(hook, "delivery-down-run-1") == []
    errors = _errors(caplog, capfd)
    assert "DocsignNotifier could not send template" in errors
    assert "400" in errors


def test_a_template_that_does_not_render_is_logged_and_nothing_is_sent(
    docsign_conn: str,
    sandbox: SandboxServer,
    template_id: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    notifier = DocsignNotifier(template_id=template_id, recipients=ONCALL, title="Incident {{ 1 / 0 }}")
    sandbox.clear_requests()
    notifier(_context("boom"))
    assert sandbox.requests() == []
    errors = _errors(caplog, capfd)
    assert "a template field did not render" in errors
    assert "title: " in errors
    assert "division by zero" in errors


def test_reminding_an_unknown_envelope_is_logged_and_the_callback_returns(
    docsign_conn: str,
    sandbox: SandboxServer,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    notifier = DocsignNotifier(envelope_id="{{ params.get('envelope', 'envelope_nosuch') }}")
    sandbox.clear_requests()
    notifier(_context("boom"))
    assert [r["path"] for r in sandbox.requests() if r["method"] == "POST"] == []
    errors = _errors(caplog, capfd)
    assert "DocsignNotifier could not remind the signers of envelope envelope_nosuch" in errors
