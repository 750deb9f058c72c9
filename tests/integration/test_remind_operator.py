"""DocsignRemindRecipientsOperator against the sandbox over real HTTP: resolving recipients, refusing
locally, renewing an expired link (after which signing and a new wait succeed), and retries that
never send the reminder twice."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeTI, ctx, numbered_signers, signer

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignRemindRecipientsOperator
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

pytestmark = pytest.mark.integration

REDISTRIBUTE = "/envelope/redistribute"


def _pending(hook: DocsignHook, pdf: Path, recipients: list[dict[str, Any]] | None = None) -> str:
    envelope_id = hook.create_envelope(
        title="Remind", files=[pdf], recipients=recipients or numbered_signers(2)
    )
    hook.distribute_envelope(envelope_id)
    return envelope_id


def _redistributes(sandbox: SandboxServer) -> list[dict[str, Any]]:
    return [r for r in sandbox.requests(bodies=True) if r["path"] == REDISTRIBUTE]


class _Run:
    start_date = datetime.now(timezone.utc) - timedelta(minutes=5)


def _ctx(try_number: int = 1) -> dict[str, Any]:
    return {"ti": FakeTI(try_number), "dag_run": _Run()}


def test_renews_an_expired_link_then_signing_and_a_new_wait_succeed(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _pending(hook, make_pdf())
    first, second = hook.get_envelope(envelope_id).recipients
    sandbox.expire(envelope_id, first.id)
    with pytest.raises(AirflowFailException):  # the wait fails: DocsignRecipientExpiredError
        DocsignEnvelopeSensor(task_id="wait", envelope_id=envelope_id).poke({})  # type: ignore[arg-type]
    sandbox.clear_requests()

    result = DocsignRemindRecipientsOperator(
        task_id="remind", envelope_id={"envelope_id": envelope_id}, only_expired=True
    ).execute(ctx())

    assert result == {"envelope_id": envelope_id, "reminded": [first.id], "renewed": [first.id]}
    assert [r["body"] for r in _redistributes(sandbox)] == [
        {"envelopeId": envelope_id, "recipients": [first.id]}
    ]
    assert sandbox.reminders(envelope_id)["total"] == 1
    sandbox.complete(envelope_id)  # every signer signs: the renewed link works
    sandbox.wait_status(envelope_id, "COMPLETED", timeout=10)
    done = DocsignEnvelopeSensor(task_id="wait", envelope_id=envelope_id).poke({})  # type: ignore[arg-type]
    assert getattr(done, "is_done", False)
    assert second.id != first.id


def test_unsigned_by_default_and_by_id_or_email(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    recipients = [*numbered_signers(2), {"email": "cc@example.test", "name": "Copy", "role": "CC"}]
    envelope_id = _pending(hook, make_pdf(), recipients)
    first, second, cc = hook.get_envelope(envelope_id).recipients
    sandbox.sign(envelope_id, second.id)

    everyone = DocsignRemindRecipientsOperator(task_id="r", envelope_id=envelope_id).execute(ctx())
    assert everyone["reminded"] == [first.id]  # not the signed one, not CC
    assert everyone["renewed"] == [first.id]
    by_email = DocsignRemindRecipientsOperator(
        task_id="r", envelope_id=envelope_id, recipients=["SIGNER0@example.test"]
    ).execute(ctx())
    assert by_email["reminded"] == [first.id]
    none_expired = DocsignRemindRecipientsOperator(
        task_id="r", envelope_id=envelope_id, only_expired=True
    ).execute(ctx())
    assert none_expired == {"envelope_id": envelope_id, "reminded": [], "renewed": []}

    sandbox.clear_requests()
    for named, words in (
        ([cc.id], "is CC"),
        ([second.id], "has already signed"),
        ([999999], "not a recipient"),
    ):
        with pytest.raises(AirflowFailException, match=words) as info:
            DocsignRemindRecipientsOperator(task_id="r", envelope_id=envelope_id, recipients=named).execute(
                ctx()
            )
        assert "nothing was sent" in str(info.value)
    assert _redistributes(sandbox) == []


def test_refuses_draft_and_terminal_envelopes_locally(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    draft = hook.create_envelope(title="Draft", files=[make_pdf()], recipients=[signer()])
    cancelled = _pending(hook, make_pdf("b.pdf"))
    hook.cancel_envelope(cancelled, reason="Deal off")
    sandbox.clear_requests()
    for envelope_id, status in ((draft, "DRAFT"), (cancelled, "CANCELLED")):
        with pytest.raises(AirflowFailException, match=f"is {status}: only a PENDING envelope"):
            DocsignRemindRecipientsOperator(task_id="r", envelope_id=envelope_id).execute(ctx())
    assert _redistributes(sandbox) == []


def test_lost_answer_is_checked_by_reading_not_repeated(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _pending(hook, make_pdf())
    first = hook.get_envelope(envelope_id).recipients[0]
    sandbox.expire(envelope_id, first.id)
    # The service renews the link and sends the e-mail, but the client never hears back.
    sandbox.inject_fault(method="POST", path=REDISTRIBUTE, action="drop_after_commit", count=1)
    sandbox.clear_requests()

    result = DocsignRemindRecipientsOperator(
        task_id="r", envelope_id=envelope_id, recipients=[first.id]
    ).execute(ctx())

    assert result["renewed"] == [first.id]
    assert len(_redistributes(sandbox)) == 1  # never sent twice
    assert sandbox.reminders(envelope_id)["total"] == 1


def test_a_5xx_that_changed_nothing_fails_without_repeating(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _pending(hook, make_pdf())
    sandbox.inject_fault(method="POST", path=REDISTRIBUTE, action="status", status=503, count=5)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="was not repeated"):
        DocsignRemindRecipientsOperator(task_id="r", envelope_id=envelope_id).execute(ctx())
    assert len(_redistributes(sandbox)) == 1
    sandbox.clear_faults()


def test_a_retried_task_does_not_email_again(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _pending(hook, make_pdf())
    operator = DocsignRemindRecipientsOperator(task_id="r", envelope_id=envelope_id)
    first_try = operator.execute(_ctx(1))
    sandbox.clear_requests()

    second_try = DocsignRemindRecipientsOperator(task_id="r", envelope_id=envelope_id).execute(_ctx(2))

    assert second_try["reminded"] == first_try["reminded"]
    assert _redistributes(sandbox) == []  # the audit log showed the reminders already went out
    assert sandbox.reminders(envelope_id)["total"] == 2  # one per signer, from the first try only


class _RunStarted:
    """A DAG run as Airflow passes it in the context: only its start (Airflow's clock) is read."""

    def __init__(self, seconds_ago: float) -> None:
        self.start_date = datetime.now(timezone.utc) - timedelta(seconds=seconds_ago)


def _run_ctx(try_number: int, run: _RunStarted) -> dict[str, Any]:
    return {"ti": FakeTI(try_number), "dag_run": run}


@pytest.mark.parametrize("skew", [-600, 600], ids=["service-clock-behind", "service-clock-ahead"])
def test_a_retry_under_clock_skew_does_not_email_again(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path], skew: int
) -> None:
    """The service's clock is ten minutes off Airflow's: the retry still sees the first try's e-mails."""
    hook = DocsignHook()
    envelope_id = _pending(hook, make_pdf())
    sandbox.set_clock_offset(skew)
    run = _RunStarted(seconds_ago=30)
    first_try = DocsignRemindRecipientsOperator(task_id="r", envelope_id=envelope_id).execute(
        _run_ctx(1, run)
    )
    assert len(first_try["reminded"]) == 2
    sandbox.clear_requests()

    second_try = DocsignRemindRecipientsOperator(task_id="r", envelope_id=envelope_id).execute(
        _run_ctx(2, run)
    )

    assert second_try["reminded"] == first_try["reminded"]
    assert _redistributes(sandbox) == []
    assert sandbox.reminders(envelope_id)["total"] == 2  # one per signer: nobody got it twice


def test_a_retry_still_reminds_when_the_last_reminder_is_from_an_earlier_run(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    """A reminder sent an hour before this run started (by the service's clock) is not this run's."""
    hook = DocsignHook()
    envelope_id = _pending(hook, make_pdf())
    first, second = (r.id for r in hook.get_envelope(envelope_id).recipients)
    sandbox.set_clock_offset(-3600)
    hook.redistribute_envelope(envelope_id, [first, second])  # an earlier run, an hour ago
    sandbox.set_clock_offset(-600)  # and the service's clock is ten minutes behind Airflow's
    sandbox.clear_requests()

    retried = DocsignRemindRecipientsOperator(task_id="r", envelope_id=envelope_id).execute(
        _run_ctx(2, _RunStarted(seconds_ago=30))  # the first try failed before it sent anything
    )

    assert retried["reminded"] == [first, second]
    assert [r["body"] for r in _redistributes(sandbox)] == [
        {"envelopeId": envelope_id, "recipients": [first, second]}
    ]
    assert sandbox.reminders(envelope_id)["total"] == 4


def test_a_lost_answer_after_the_emails_went_out_succeeds_when_links_never_expire(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    """No renewal to read (links never expire): the audit log above the marker shows the e-mails."""
    hook = DocsignHook()
    envelope_id = hook.create_envelope(
        title="Remind", files=[make_pdf()], recipients=numbered_signers(2), expiration_period=None
    )
    hook.distribute_envelope(envelope_id)
    assert [r.expires_at for r in hook.get_envelope(envelope_id).recipients] == [None, None]
    sandbox.set_clock_offset(-600)  # no clock is involved in this decision at all
    sandbox.inject_fault(method="POST", path=REDISTRIBUTE, action="drop_after_commit", count=1)
    sandbox.clear_requests()

    result = DocsignRemindRecipientsOperator(task_id="r", envelope_id=envelope_id).execute(
        _run_ctx(1, _RunStarted(seconds_ago=30))
    )

    assert len(result["reminded"]) == 2
    assert result["renewed"] == []
    assert len(_redistributes(sandbox)) == 1  # never sent twice
    assert sandbox.reminders(envelope_id)["total"] == 2


def test_a_lost_answer_with_no_email_sent_still_fails_without_repeating(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    """The connection drops before the service acts: nothing renewed, no e-mail; not repeated."""
    hook = DocsignHook()
    envelope_id = hook.create_envelope(
        title="Remind", files=[make_pdf()], recipients=numbered_signers(1), expiration_period=None
    )
    hook.distribute_envelope(envelope_id)
    hook.redistribute_envelope(envelope_id, [hook.get_envelope(envelope_id).recipients[0].id])  # older
    sandbox.inject_fault(method="POST", path=REDISTRIBUTE, action="drop_before", count=1)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="no renewed link and no reminder e-mail"):
        DocsignRemindRecipientsOperator(task_id="r", envelope_id=envelope_id).execute(ctx())
    assert len(_redistributes(sandbox)) == 1
    assert sandbox.reminders(envelope_id)["total"] == 1  # only the older one
