"""DocsignAddRecipientsOperator fed what a careless or hostile user could give it.

Names that hide text or look like a template, e-mails that smuggle a header or a look-alike letter,
shapes a careless template renders (a JSON string, one object, an id), retries, a lost answer, a
re-run, and a completed envelope. Counted at the sandbox: the ``POST /envelope/recipient/create-many``
requests and the recipients on the envelope afterwards.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, signer
from odd_text import ODD_TEXT, TEMPLATE_DATA, odd

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignAddRecipientsOperator
from airflow_provider_docsign.sandbox import SandboxServer

ADD = "/envelope/recipient/create-many"


def cc(email: str = "archive@example.test", **overrides: Any) -> dict[str, Any]:
    return {"email": email, "name": "Archive", "role": "CC", **overrides}


def sent(sandbox: SandboxServer) -> int:
    return sum(r["path"] == ADD for r in sandbox.requests())


def people(hook: DocsignHook, envelope_id: str) -> list[tuple[str, str]]:
    return sorted((r.email, str(r.role)) for r in hook.get_envelope(envelope_id).recipients)


def add(envelope_id: str, recipients: Any, try_number: int = 1) -> list[int]:
    result: list[int] = DocsignAddRecipientsOperator(
        task_id="add_cc", envelope_id=envelope_id, recipients=recipients
    ).execute(ctx(try_number))
    return result


@pytest.fixture
def draft(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> str:
    envelope_id = hook.create_envelope(
        title="Lease", files=[make_pdf("lease.pdf")], recipients=[signer(email="tenant@example.test")]
    )
    sandbox.clear_requests()
    return envelope_id


ORIGINAL = [("tenant@example.test", "SIGNER")]


@pytest.mark.parametrize("name", ODD_TEXT)
def test_a_name_that_hides_text_adds_nobody(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, draft: str, name: str
) -> None:
    with pytest.raises(AirflowFailException) as info:
        add(draft, [cc(name=odd(name, "Archive"))])
    assert ODD_TEXT[name][1] in str(info.value), str(info.value)
    assert sent(sandbox) == 0
    assert people(hook, draft) == ORIGINAL


@pytest.mark.parametrize(
    ("recipients", "words"),
    [
        ([cc("archive@example.test\r\nBcc: all@evil.test")], "email must be an e-mail address"),
        ([cc("archive@ex\u0430mple.test")], "is not ASCII"),  # a Cyrillic a
        ([cc("archive@@example.test")], "email must be an e-mail address"),
        ([cc("archive")], "email must be an e-mail address"),
        ([cc(role="cc")], "role 'cc' is not one of"),
        ([cc(role="OWNER")], "role 'OWNER' is not one of"),
        ([cc(name="A" * 256)], "name must be a string of at most 255 characters"),
        ([cc(id=5)], "unknown key(s) ['id']"),
        ([cc(signingOrder="1")], "signingOrder must be a non-negative integer"),
        ([cc(signingOrder=-1)], "signingOrder must be a non-negative integer"),
        (cc(), "recipients: must be a non-empty list"),
        ('[{"email": "archive@example.test", "role": "CC"}]', "recipients: must be a non-empty list"),
        ([], "recipients: must be a non-empty list"),
        (None, "recipients: must be a non-empty list"),
    ],
    ids=[
        "header injection",
        "look-alike letter",
        "two @",
        "no domain",
        "lower-case role",
        "unknown role",
        "long name",
        "an id",
        "order as text",
        "negative order",
        "one object",
        "a JSON string",
        "empty",
        "None",
    ],
)
def test_malformed_recipients_are_refused_before_any_request(
    docsign_conn: str, sandbox: SandboxServer, draft: str, recipients: Any, words: str
) -> None:
    with pytest.raises(AirflowFailException, match="nothing was sent") as info:
        add(draft, recipients)
    assert words in str(info.value), str(info.value)
    assert "\r" not in str(info.value)  # the injected header is shown escaped, on one line
    assert sandbox.requests() == []


def test_a_retry_and_a_lost_answer_add_nobody_twice(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, draft: str
) -> None:
    first = add(draft, [cc()])
    assert add(draft, [cc()], try_number=2) == first
    assert add(draft, [cc("ARCHIVE@Example.test")], try_number=2) == first  # e-mails compare lower-cased
    assert sent(sandbox) == 1
    sandbox.inject_fault("POST", ADD, action="drop_after_commit")
    with pytest.raises(Exception, match="may or may not have taken effect"):
        add(draft, [cc("legal@example.test")])
    [legal] = add(draft, [cc("legal@example.test")], try_number=2)  # the retry finds it
    assert sent(sandbox) == 2
    assert people(hook, draft) == sorted(
        [*ORIGINAL, ("archive@example.test", "CC"), ("legal@example.test", "CC")]
    )
    assert legal in {r.id for r in hook.get_envelope(draft).recipients}


def test_a_rerun_or_a_person_listed_twice_adds_nobody_twice(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    draft: str,
    task_log: Callable[[], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    first = add(draft, [cc()])
    assert add(draft, [cc("Archive@Example.test")]) == first  # the next DAG run: try 1 again
    log = task_log()
    assert "recipients[0] (CC) is already on envelope" in log
    # No error or warning line: structlog's (Airflow 3, on the terminal) or logging's (2.11).
    assert [line for line in log.splitlines() if "[error" in line or "[warning" in line] == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="nothing was sent") as info:
        add(
            draft,
            [cc("legal@example.test"), cc("archive@example.test"), cc("LEGAL@example.test", role="VIEWER")],
        )
    assert "recipients[0] and recipients[2] have the same e-mail 'legal@example.test'" in str(info.value)
    assert sandbox.requests() == []
    legal, archive = add(draft, [cc("legal@example.test"), cc("archive@example.test")])  # one new, one there
    assert archive == first[0]
    assert sent(sandbox) == 1
    assert legal in {r.id for r in hook.get_envelope(draft).recipients}
    assert people(hook, draft) == sorted(
        [*ORIGINAL, ("archive@example.test", "CC"), ("legal@example.test", "CC")]
    )


def test_a_name_that_looks_like_a_template_is_added_literally(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    draft: str,
    api_key: str,
    render: Callable[..., Any],
) -> None:
    op = DocsignAddRecipientsOperator(
        task_id="add_cc", envelope_id=draft, recipients=[cc(name="{{ params.name }}")]
    )
    [new_id] = op.execute(render(op, name=f"Archive {TEMPLATE_DATA}"))
    [added] = [r for r in hook.get_envelope(draft).recipients if r.id == new_id]
    assert added.name == f"Archive {TEMPLATE_DATA}"
    assert api_key not in (added.name or "")
    assert sent(sandbox) == 1


def test_a_completed_envelope_fails_at_once_and_keeps_its_recipients(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, draft: str
) -> None:
    hook.distribute_envelope(draft)
    sandbox.complete(draft)
    sandbox.wait_status(draft, "COMPLETED", timeout=20)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="Envelope already complete"):
        add(draft, [cc()])
    assert sent(sandbox) <= 1  # the service's refusal, never repeated
    assert people(hook, draft) == ORIGINAL
