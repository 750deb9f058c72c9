"""DocsignDuplicateEnvelopeOperator fed what a careless or hostile user could give it.

Retries and re-runs (a lost answer, an update that fails after the copy exists), external ids that
collide with other envelopes, a source deleted while the copy is being made, odd Unicode titles, and a
template as the source. Counted at the sandbox: the ``POST /envelope/duplicate`` requests and the
copies that exist afterwards.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, signer

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignDuplicateEnvelopeOperator
from airflow_provider_docsign.sandbox import SandboxServer


def duplicates(sandbox: SandboxServer) -> int:
    return sum(r["path"] == "/envelope/duplicate" for r in sandbox.requests())


def copies_of(hook: DocsignHook, title: str) -> list[str]:
    """The service's own copies of an envelope titled ``title`` at the root (their external id unset)."""
    return [e.id for e in hook.find_envelopes(query=f"{title} (copy)") if e.title == f"{title} (copy)"]


@pytest.fixture
def source(hook: DocsignHook, make_pdf: Callable[..., Path]) -> tuple[str, str]:
    """A draft with one signer, titled uniquely; its id and title."""
    title = f"Offer {uuid.uuid4().hex[:8]}"
    envelope_id = hook.create_envelope(
        title=title, files=[make_pdf("offer.pdf")], recipients=[signer(email="buyer@example.test")]
    )
    return envelope_id, title


def duplicate(envelope_id: str, try_number: int = 1, **kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = DocsignDuplicateEnvelopeOperator(
        task_id="duplicate", envelope_id=envelope_id, **kwargs
    ).execute(ctx(try_number))
    return result


def test_a_retry_and_a_rerun_reuse_the_copy_even_once_it_was_sent(
    hook: DocsignHook, sandbox: SandboxServer, source: tuple[str, str]
) -> None:
    envelope_id, _ = source
    ext = f"resend-{uuid.uuid4().hex[:8]}"
    sandbox.clear_requests()
    first = duplicate(envelope_id, title="Offer (resent)", external_id=ext)
    assert first["reused"] is False
    assert duplicate(envelope_id, 2, title="Offer (resent)", external_id=ext) == {**first, "reused": True}
    hook.distribute_envelope(first["envelope_id"])
    rerun = duplicate(envelope_id, title="Offer (resent)", external_id=ext)  # a new DAG run, same id
    assert (rerun["envelope_id"], rerun["reused"]) == (first["envelope_id"], True)
    assert duplicates(sandbox) == 1
    assert [e.id for e in hook.find_envelopes_by_external_id(ext)] == [first["envelope_id"]]


def test_a_lost_answer_fails_without_a_retry_and_without_a_second_copy(
    hook: DocsignHook, sandbox: SandboxServer, source: tuple[str, str]
) -> None:
    envelope_id, title = source
    sandbox.clear_requests()
    sandbox.inject_fault("POST", "/envelope/duplicate", action="drop_after_commit")
    with pytest.raises(AirflowFailException, match="outcome is unknown"):
        duplicate(envelope_id, external_id=f"lost-{uuid.uuid4().hex[:8]}")
    assert duplicates(sandbox) == 1  # never repeated by the hook
    assert len(copies_of(hook, title)) == 1  # the copy the service made, named by the error


def test_an_update_that_fails_after_the_copy_exists_names_it_and_a_retry_makes_no_second_one(
    hook: DocsignHook, sandbox: SandboxServer, source: tuple[str, str]
) -> None:
    envelope_id, title = source
    ext = f"update-fails-{uuid.uuid4().hex[:8]}"
    sandbox.clear_requests()
    sandbox.inject_fault("POST", "/envelope/update", action="status", status=500, count=20)
    with pytest.raises(AirflowFailException) as failure:
        duplicate(envelope_id, title="Offer (resent)", external_id=ext)
    sandbox.clear_faults()
    [copy] = copies_of(hook, title)
    assert copy in str(failure.value)
    assert "a retry" in str(failure.value)
    assert duplicates(sandbox) == 1


def test_external_id_collisions_are_never_taken_for_the_copy(
    hook: DocsignHook, sandbox: SandboxServer, source: tuple[str, str], make_pdf: Callable[..., Path]
) -> None:
    envelope_id, _ = source
    ext = f"collide-{uuid.uuid4().hex[:8]}"
    # An unrelated envelope (other documents) that happens to carry the external id: not a copy.
    unrelated = hook.create_envelope(title="Lease", files=[make_pdf("lease.pdf")], external_id=ext)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=f"{unrelated}.*not a copy of {envelope_id}"):
        duplicate(envelope_id, external_id=ext)
    assert duplicates(sandbox) == 0
    # Two envelopes with it: refused, naming both.
    second = hook.create_envelope(title="Lease 2", files=[make_pdf("lease2.pdf")], external_id=ext)
    with pytest.raises(AirflowFailException, match="2 envelope"):
        duplicate(envelope_id, external_id=ext)
    assert duplicates(sandbox) == 0
    assert {unrelated, second} == {e.id for e in hook.find_envelopes_by_external_id(ext)}
    # A longer external id that contains this one is another envelope's: a copy is made.
    made = duplicate(envelope_id, external_id=ext[:-1])
    assert made["reused"] is False
    assert duplicates(sandbox) == 1
    # The source's own external id: the source is never taken for its copy.
    hook.update_envelope(envelope_id, external_id=f"{ext}-source")
    again = duplicate(envelope_id, external_id=f"{ext}-source")
    assert again["reused"] is False
    assert again["envelope_id"] != envelope_id


def test_a_source_deleted_while_the_copy_is_made_fails_at_once_with_no_copy(
    hook: DocsignHook, sandbox: SandboxServer, source: tuple[str, str], docsign_conn: str
) -> None:
    envelope_id, title = source
    deleter = DocsignHook(docsign_conn)
    deleter.list_folders()  # the connection is looked up on this thread
    sandbox.clear_requests()
    fault = sandbox.inject_fault("POST", "/envelope/duplicate", action="delay", delay=3)
    done: list[bool] = []

    def delete_the_source() -> None:
        deadline = time.monotonic() + 20
        while fault in {f["id"] for f in sandbox.faults()} and time.monotonic() < deadline:
            time.sleep(0.05)
        if time.monotonic() < deadline:
            deleter.delete_envelope(envelope_id)
            done.append(True)

    thread = threading.Thread(target=delete_the_source)
    thread.start()
    try:
        with pytest.raises(AirflowFailException, match="NotFound"):
            duplicate(envelope_id, title="Offer (resent)", external_id=f"gone-{uuid.uuid4().hex[:8]}")
    finally:
        thread.join(timeout=30)
        sandbox.clear_faults()
        deleter.close()
    assert done
    assert duplicates(sandbox) == 1
    assert copies_of(hook, title) == []
    # Already gone before the task: the same, and no duplicate is sent again.
    with pytest.raises(AirflowFailException, match="NotFound"):
        duplicate(envelope_id)
    assert duplicates(sandbox) == 2


@pytest.mark.parametrize(
    "title",
    [
        "Offer\x00 signed",
        "Offer \u202etxt.exe",
        "Offer\nINFO forged log line",
        "O" * 256,
        "   ",
    ],
    ids=["nul", "rlo", "newline", "too-long", "blank"],
)
def test_an_odd_title_is_refused_before_anything_is_copied(
    hook: DocsignHook, sandbox: SandboxServer, source: tuple[str, str], title: str
) -> None:
    envelope_id, original = source
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="title"):
        duplicate(envelope_id, title=title)
    assert duplicates(sandbox) == 0
    assert [r for r in sandbox.requests() if r["method"] == "POST"] == []
    assert copies_of(hook, original) == []


def test_well_formed_unicode_titles_are_kept_exactly(
    hook: DocsignHook, sandbox: SandboxServer, source: tuple[str, str]
) -> None:
    envelope_id, _ = source
    for title in (
        "Contrat de bail — Zoë Ångström",
        "賃貸借契約書 ✍️",
        "عقد الإيجار",
        "Cafe\u0301 {{ run_id }}",
    ):
        made = duplicate(envelope_id, title=title)
        assert made["title"] == title
        assert hook.get_envelope(made["envelope_id"]).title == title


def test_a_template_as_the_source_is_copied_as_a_template_and_a_document_folder_is_refused_first(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    title = f"Template {uuid.uuid4().hex[:8]}"
    template_id = hook.create_template(
        title=title,
        files=[make_pdf("t.pdf")],
        recipients=[signer(email="c@placeholder.test", name="Customer")],
    )
    made = duplicate(template_id, title=f"{title} v2")
    assert (made["type"], made["title"]) == ("TEMPLATE", f"{title} v2")
    documents = hook.create_folder(f"documents-{uuid.uuid4().hex[:6]}").id
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=f"folder_id {documents!r} is a DOCUMENT folder"):
        duplicate(template_id, folder_id=documents)
    assert duplicates(sandbox) == 0
    assert copies_of(hook, title) == []
