"""DocsignCancelEnvelopeOperator fed what a careless or hostile user could give it.

Re-runs, two runs cancelling the same envelope at once, a lost answer, envelopes that are not PENDING
(a draft, a completed one, a template), reasons that hide text or look like a template, and ids as a
careless template renders them. Counted at the sandbox: the ``POST /envelope/cancel`` requests, what
they carried, and the envelope's status afterwards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, signer
from odd_text import ODD_TEXT, TEMPLATE_DATA, jinja_ids, odd

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignCancelEnvelopeOperator
from airflow_provider_docsign.sandbox import SandboxServer

CANCEL = "/envelope/cancel"


def cancels(sandbox: SandboxServer) -> list[dict[str, Any]]:
    return [r for r in sandbox.requests(bodies=True) if r["path"] == CANCEL]


def status(hook: DocsignHook, envelope_id: str) -> str:
    return str(hook.get_envelope(envelope_id).status.value)


def cancel(envelope_id: str, try_number: int = 1, **kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = DocsignCancelEnvelopeOperator(
        task_id="cancel", envelope_id=envelope_id, **kwargs
    ).execute(ctx(try_number))
    return result


@pytest.fixture
def make_envelope(hook: DocsignHook, make_pdf: Callable[..., Path]) -> Callable[[bool], str]:
    """``make_envelope(sent)``: a draft, or (``sent=True``) a PENDING envelope for one signer."""

    def _make(sent: bool = True) -> str:
        envelope_id = hook.create_envelope(
            title="Lease", files=[make_pdf("lease.pdf")], recipients=[signer(email="tenant@example.test")]
        )
        if sent:
            hook.distribute_envelope(envelope_id)
        return envelope_id

    return _make


def test_reruns_and_retries_send_one_cancel(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, make_envelope: Callable[[bool], str]
) -> None:
    envelope_id = make_envelope(True)
    sandbox.clear_requests()
    assert cancel(envelope_id, reason="Sent by mistake")["status"] == "CANCELLED"
    assert cancel(envelope_id, try_number=2, reason="Sent by mistake")["status"] == "CANCELLED"
    assert cancel(envelope_id, reason="another reason, next run")["status"] == "CANCELLED"
    assert [r["body"].get("reason") for r in cancels(sandbox)] == ["Sent by mistake"]


def test_two_runs_cancelling_at_once_both_succeed(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, make_envelope: Callable[[bool], str]
) -> None:
    envelope_id = make_envelope(True)
    other = DocsignHook(docsign_conn)  # the other run, in another worker
    assert other.settings.api_key  # its connection is looked up here: Airflow 2.11 cannot in a thread
    sandbox.clear_requests()
    # This run's cancel waits 3 s at the service; the other run reads the envelope (PENDING) and
    # cancels it in that time, so this run's cancel is refused: "only pending envelopes".
    fault = sandbox.inject_fault("POST", CANCEL, action="delay", delay=3)
    done: list[Any] = []

    def other_run() -> None:
        deadline = time.monotonic() + 20
        while fault in {f["id"] for f in sandbox.faults()} and time.monotonic() < deadline:
            time.sleep(0.02)  # until this run's cancel has reached the service
        if other.get_envelope(envelope_id).status.value == "PENDING":
            other.cancel_envelope(envelope_id, reason="the other run")
            done.append(True)

    thread = threading.Thread(target=other_run)
    thread.start()
    try:
        result = cancel(envelope_id)  # on Airflow 2.11 an operator runs on the main thread only
    finally:
        thread.join(timeout=30)
        other.close()
    assert done == [True]
    assert result["status"] == "CANCELLED"
    assert [r["status"] for r in cancels(sandbox)] == [200, 400]  # the service cancelled once
    assert cancel(envelope_id)["status"] == "CANCELLED"  # and the other run, if it came later
    assert status(hook, envelope_id) == "CANCELLED"


def test_a_lost_answer_is_read_back_and_not_repeated(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, make_envelope: Callable[[bool], str]
) -> None:
    envelope_id = make_envelope(True)
    sandbox.clear_requests()
    sandbox.inject_fault("POST", CANCEL, action="drop_after_commit")
    assert cancel(envelope_id)["status"] == "CANCELLED"
    assert len(cancels(sandbox)) == 1


def test_an_envelope_that_is_not_pending_is_refused_without_a_cancel(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_envelope: Callable[[bool], str],
    make_pdf: Callable[..., Path],
) -> None:
    draft = make_envelope(False)
    completed = make_envelope(True)
    sandbox.complete(completed)
    sandbox.wait_status(completed, "COMPLETED", timeout=20)
    template = hook.create_template(
        title="Lease template", files=[make_pdf("t.pdf")], recipients=[signer(email="t@placeholder.test")]
    )
    sandbox.clear_requests()
    for envelope_id, now in ((draft, "DRAFT"), (completed, "COMPLETED"), (template, "DRAFT")):
        with pytest.raises(AirflowFailException, match=f"is {now}: only a PENDING envelope can be cancelled"):
            cancel(envelope_id)
    assert cancels(sandbox) == []
    assert [status(hook, e) for e in (draft, completed)] == ["DRAFT", "COMPLETED"]


@pytest.mark.parametrize("name", ODD_TEXT)
def test_a_reason_that_hides_text_is_refused_and_the_envelope_stays_pending(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_envelope: Callable[[bool], str],
    name: str,
) -> None:
    envelope_id = make_envelope(True)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException) as info:
        cancel(envelope_id, reason=odd(name, "Sent by mistake"))
    assert ODD_TEXT[name][1] in str(info.value), str(info.value)
    assert "nothing was sent" in str(info.value)
    assert cancels(sandbox) == []
    assert status(hook, envelope_id) == "PENDING"


def test_a_reason_that_looks_like_a_template_is_sent_literally(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_envelope: Callable[[bool], str],
    api_key: str,
    render: Callable[..., Any],
) -> None:
    envelope_id = make_envelope(True)
    sandbox.clear_requests()
    op = DocsignCancelEnvelopeOperator(task_id="cancel", envelope_id=envelope_id, reason="{{ params.why }}")
    reason = f"Customer wrote: {TEMPLATE_DATA}"
    assert op.execute(render(op, why=reason))["status"] == "CANCELLED"
    [sent] = cancels(sandbox)
    assert sent["body"]["reason"] == reason
    assert api_key not in str(sent["body"])


def test_careless_ids_cancel_nothing(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, make_envelope: Callable[[bool], str]
) -> None:
    envelope_id = make_envelope(True)
    other = make_envelope(True)
    sandbox.clear_requests()
    for wrong in jinja_ids(envelope_id).values():
        with pytest.raises(AirflowFailException):
            cancel(wrong)
    assert cancels(sandbox) == []
    assert [status(hook, e) for e in (envelope_id, other)] == ["PENDING", "PENDING"]
