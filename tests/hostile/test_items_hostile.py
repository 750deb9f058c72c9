"""The item operators fed what a careless or hostile user could give them.

DocsignAddEnvelopeItemsOperator gets files that are no PDF (not one, cut short, empty, a directory, a
symlink to a text file, missing), names that hide text, retries and lost answers, and retries that find
an item of the same name that was there before (from the envelope's create, an earlier run, the
moment the run started, a template's), under a service clock that differs from Airflow's;
DocsignUpdateEnvelopeItemsOperator and DocsignDeleteEnvelopeItemOperator get another envelope's item,
ids and orders as a careless template renders them, odd Unicode and template-like titles. Counted at
the sandbox: the uploads, updates and deletes each input caused, and the items that exist afterwards.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import FakeTI, ctx, sig, signer
from odd_text import ODD_TEXT, TEMPLATE_DATA, jinja_ids, odd

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignAddEnvelopeItemsOperator,
    DocsignDeleteEnvelopeItemOperator,
    DocsignUpdateEnvelopeItemsOperator,
)
from airflow_provider_docsign.sandbox import SandboxServer

UPLOAD, UPDATE, DELETE = "/envelope/item/create-many", "/envelope/item/update-many", "/envelope/item/delete"


@dataclass
class Drafts:
    """A draft with one item (``annex.pdf``, one signature field on it), and another draft's item."""

    envelope_id: str
    item_id: str
    other_id: str
    other_item_id: str
    pdf: Path


@pytest.fixture
def drafts(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> Drafts:
    pdf = make_pdf("annex.pdf")
    envelope_id = hook.create_envelope(title="Items", files=[pdf], recipients=[signer(sig())])
    other_id = hook.create_envelope(title="Other", files=[make_pdf("other.pdf")])
    [item_id] = hook.get_envelope(envelope_id).item_ids
    [other_item_id] = hook.get_envelope(other_id).item_ids
    sandbox.clear_requests()
    return Drafts(envelope_id, item_id, other_id, other_item_id, pdf)


def sent(sandbox: SandboxServer, path: str) -> int:
    return sum(r["path"] == path for r in sandbox.requests())


def writes(sandbox: SandboxServer) -> list[str]:
    return [r["path"] for r in sandbox.requests() if r["method"] != "GET"]


def titles(hook: DocsignHook, envelope_id: str) -> list[str]:
    return [i.title for i in hook.get_envelope(envelope_id).items]


class RunStarted:
    """A DAG run as Airflow passes it in the context: only its start (Airflow's clock) is read."""

    def __init__(self, seconds_ago: float) -> None:
        self.start_date = datetime.now(timezone.utc) - timedelta(seconds=seconds_ago)


def add(envelope_id: str, files: Any, try_number: int = 1, run: RunStarted | None = None) -> list[str]:
    """Add ``files`` as a task of a DAG run that started a minute ago (or ``run``)."""
    context = {"ti": FakeTI(try_number), "dag_run": run or RunStarted(seconds_ago=60)}
    result: list[str] = DocsignAddEnvelopeItemsOperator(
        task_id="add", envelope_id=envelope_id, files=files
    ).execute(context)
    return result


def refused(run: Callable[[], Any]) -> str:
    with pytest.raises(AirflowFailException) as info:
        run()
    return str(info.value)


# -- add ------------------------------------------------------------------------------------------


def _bad_file(kind: str, folder: Path, good: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{kind.replace(' ', '-')}.pdf"
    if kind == "not a PDF":
        target.write_text("Dear customer, please sign.")
    elif kind == "truncated":
        target.write_bytes(good.read_bytes()[:300])
    elif kind == "empty":
        target.write_bytes(b"")
    elif kind == "directory":
        target.mkdir()
    elif kind == "symlink to a text file":
        outside = folder.parent / "outside.txt"
        outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
        target.symlink_to(outside)
    return target  # "missing": never created


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("not a PDF", "not a PDF"),
        ("truncated", "truncated.pdf"),
        ("empty", "empty.pdf"),
        ("directory", "directory"),
        ("symlink to a text file", "not a PDF"),
        ("missing", "missing.pdf"),
    ],
)
def test_a_file_that_is_no_readable_pdf_is_refused_before_the_upload(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    drafts: Drafts,
    tmp_path: Path,
    kind: str,
    words: str,
) -> None:
    bad = _bad_file(kind, tmp_path / "bad", drafts.pdf)
    message = refused(lambda: add(drafts.envelope_id, [str(drafts.pdf), str(bad)]))
    assert words in message, message
    assert sent(sandbox, UPLOAD) == 0  # not even the good file went
    assert titles(hook, drafts.envelope_id) == ["annex.pdf"]


@pytest.mark.parametrize("name", ["newline", "RLO", "LRM", "ALM", "TAG", "Hangul filler", "soft hyphen"])
def test_a_file_name_that_hides_text_is_refused_before_the_upload(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, drafts: Drafts, tmp_path: Path, name: str
) -> None:
    # The service titles a new item with its file name, so the name is outgoing text like a title.
    renamed = tmp_path / "odd" / odd(name, "appendix.pdf")
    renamed.parent.mkdir()
    shutil.copyfile(drafts.pdf, renamed)
    message = refused(lambda: add(drafts.envelope_id, [renamed]))
    assert ODD_TEXT[name][1] in message, message
    assert "nothing was sent" in message
    assert sent(sandbox, UPLOAD) == 0
    assert titles(hook, drafts.envelope_id) == ["annex.pdf"]


def test_a_file_name_that_looks_like_a_template_is_uploaded_under_that_literal_name(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    drafts: Drafts,
    tmp_path: Path,
    api_key: str,
    render: Callable[..., Any],
) -> None:
    path = tmp_path / f"{TEMPLATE_DATA}.pdf"
    shutil.copyfile(drafts.pdf, path)
    op = DocsignAddEnvelopeItemsOperator(
        task_id="add", envelope_id=drafts.envelope_id, files=["{{ params.f }}"]
    )
    context = render(op, f=str(path))
    [new_item] = op.execute(context)
    assert sent(sandbox, UPLOAD) == 1
    assert titles(hook, drafts.envelope_id) == ["annex.pdf", f"{TEMPLATE_DATA}.pdf"]
    assert new_item in hook.get_envelope(drafts.envelope_id).item_ids
    assert api_key not in "".join(titles(hook, drafts.envelope_id))


def test_a_retry_and_a_lost_answer_never_upload_the_files_twice(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    drafts: Drafts,
    make_pdf: Callable[..., Path],
) -> None:
    files = [str(make_pdf("terms.pdf")), str(make_pdf("prices.pdf"))]
    first = add(drafts.envelope_id, files)
    assert add(drafts.envelope_id, files, try_number=2) == first  # the retry adopts them
    assert sent(sandbox, UPLOAD) == 1
    sandbox.clear_requests()
    sandbox.inject_fault("POST", UPLOAD, action="drop_after_commit")
    again = add(drafts.envelope_id, [str(make_pdf("annex-b.pdf"))])  # the answer is lost: read back
    assert sent(sandbox, UPLOAD) == 1
    assert titles(hook, drafts.envelope_id) == ["annex.pdf", "terms.pdf", "prices.pdf", "annex-b.pdf"]
    assert hook.get_envelope(drafts.envelope_id).item_ids[1:] == [*first, *again]


def test_a_retry_never_takes_an_item_that_was_there_before_for_the_new_file(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    drafts: Drafts,
    make_pdf: Callable[..., Path],
) -> None:
    # The first try failed before its upload (the service was down): the retry must upload. The
    # envelope's own annex.pdf came with its create (no item-created entry in the audit log).
    revised = make_pdf("revised/annex.pdf")
    [new_item] = add(drafts.envelope_id, [str(revised)], try_number=2)
    assert sent(sandbox, UPLOAD) == 1
    assert titles(hook, drafts.envelope_id) == ["annex.pdf", "annex.pdf"]
    assert hook.get_envelope(drafts.envelope_id).item_ids == [drafts.item_id, new_item]


def test_a_retry_uploads_when_the_same_name_was_added_before_the_run_started(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    drafts: Drafts,
    make_pdf: Callable[..., Path],
) -> None:
    sandbox.set_clock_offset(-3600)
    [old] = hook.add_envelope_items(drafts.envelope_id, [make_pdf("terms.pdf")])  # an hour ago, by upload
    sandbox.set_clock_offset(-600)  # and the service's clock is ten minutes behind Airflow's
    sandbox.clear_requests()
    [new_item] = add(drafts.envelope_id, [str(make_pdf("v2/terms.pdf"))], try_number=2)
    assert sent(sandbox, UPLOAD) == 1
    assert new_item != old.id
    assert titles(hook, drafts.envelope_id) == ["annex.pdf", "terms.pdf", "terms.pdf"]


@pytest.mark.parametrize("skew", [-600, 600], ids=["service-clock-behind", "service-clock-ahead"])
def test_a_retry_under_clock_skew_adopts_what_the_first_try_uploaded(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    drafts: Drafts,
    make_pdf: Callable[..., Path],
    skew: int,
) -> None:
    sandbox.set_clock_offset(skew)
    run = RunStarted(seconds_ago=60)
    files = [str(make_pdf("terms.pdf")), str(make_pdf("prices.pdf"))]
    first = add(drafts.envelope_id, files, run=run)
    assert add(drafts.envelope_id, files, try_number=2, run=run) == first
    assert sent(sandbox, UPLOAD) == 1
    assert titles(hook, drafts.envelope_id) == ["annex.pdf", "terms.pdf", "prices.pdf"]


@pytest.mark.parametrize("when", ["as the run started", "no run start in the context"])
def test_a_retry_that_cannot_tell_refuses_naming_the_item_and_uploads_nothing(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    drafts: Drafts,
    make_pdf: Callable[..., Path],
    when: str,
) -> None:
    [there] = hook.add_envelope_items(drafts.envelope_id, [make_pdf("terms.pdf")])
    sandbox.clear_requests()
    terms = str(make_pdf("v2/terms.pdf"))
    operator = DocsignAddEnvelopeItemsOperator(task_id="add", envelope_id=drafts.envelope_id, files=[terms])
    if when == "as the run started":
        context = {"ti": FakeTI(2), "dag_run": RunStarted(seconds_ago=0)}
        words = "within 5 seconds of the run's start"
    else:
        context, words = ctx(2), "no DAG run start in the context"
    message = refused(lambda: operator.execute(context))
    assert words in message, message
    assert f"{there.id} ('terms.pdf')" in message
    assert "nothing was uploaded" in message
    assert sent(sandbox, UPLOAD) == 0
    assert titles(hook, drafts.envelope_id) == ["annex.pdf", "terms.pdf"]


def test_a_retry_on_a_template_with_an_item_of_that_name_refuses(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, drafts: Drafts
) -> None:
    template_id = hook.create_template(title="Items template", files=[drafts.pdf])
    [item_id] = hook.get_envelope(template_id).item_ids
    sandbox.clear_requests()
    message = refused(lambda: add(template_id, [str(drafts.pdf)], try_number=2))
    assert f"{item_id} ('annex.pdf')" in message
    assert "a template has no audit log" in message
    assert sent(sandbox, UPLOAD) == 0
    assert titles(hook, template_id) == ["annex.pdf"]


def test_files_for_a_sent_envelope_fail_at_once_and_change_nothing(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, drafts: Drafts
) -> None:
    hook.distribute_envelope(drafts.envelope_id)
    sandbox.clear_requests()
    message = refused(lambda: add(drafts.envelope_id, [str(drafts.pdf)]))
    assert "not editable" in message
    assert sent(sandbox, UPLOAD) <= 1  # the service's refusal; never retried
    message = refused(
        lambda: DocsignDeleteEnvelopeItemOperator(
            task_id="delete", envelope_id=drafts.envelope_id, envelope_item_id=drafts.item_id
        ).execute(ctx())
    )
    assert "not editable" in message
    assert titles(hook, drafts.envelope_id) == ["annex.pdf"]


# -- update ---------------------------------------------------------------------------------------


def update(envelope_id: str, items: Any) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = DocsignUpdateEnvelopeItemsOperator(
        task_id="update", envelope_id=envelope_id, items=items
    ).execute(ctx())
    return result


@pytest.mark.parametrize("name", ODD_TEXT)
def test_an_odd_title_is_refused_before_any_write(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, drafts: Drafts, name: str
) -> None:
    message = refused(
        lambda: update(drafts.envelope_id, [{"envelopeItemId": drafts.item_id, "title": odd(name)}])
    )
    assert ODD_TEXT[name][1] in message, message
    assert writes(sandbox) == []
    assert titles(hook, drafts.envelope_id) == ["annex.pdf"]


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"title": "Annex"}, "envelopeItemId must be a non-empty string"),
        ({"envelopeItemId": "ITEM", "order": "2"}, "order must be an integer >= 1, not '2'"),
        ({"envelopeItemId": "ITEM", "order": "1e0"}, "not '1e0'"),
        ({"envelopeItemId": "ITEM", "order": 0}, "not 0"),
        ({"envelopeItemId": "ITEM", "order": -1}, "not -1"),
        ({"envelopeItemId": "ITEM", "order": True}, "not True"),
        ({"envelopeItemId": "ITEM", "order": 1.0}, "not 1.0"),
        ({"envelopeItemId": "ITEM", "title": "x" * 256}, "1-255 characters"),
        ({"envelopeItemId": "ITEM", "title": "   "}, "1-255 characters"),
        ({"envelopeItemId": "ITEM"}, "give a title, an order, or both"),
        (
            {"envelopeItemId": "ITEM", "title": "A", "documentDataId": "x"},
            "unknown key(s) ['documentDataId']",
        ),
    ],
)
def test_a_malformed_entry_is_refused_before_the_envelope_is_read(
    docsign_conn: str, sandbox: SandboxServer, drafts: Drafts, entry: dict[str, Any], words: str
) -> None:
    items = [{k: drafts.item_id if v == "ITEM" else v for k, v in entry.items()}]
    message = refused(lambda: update(drafts.envelope_id, items))
    assert words in message, message
    assert sandbox.requests() == []


def test_another_envelopes_item_and_careless_ids_are_refused_before_any_write(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, drafts: Drafts
) -> None:
    for wrong in [drafts.other_item_id, *jinja_ids(drafts.item_id).values()]:
        message = refused(
            lambda wrong=wrong: update(drafts.envelope_id, [{"envelopeItemId": wrong, "title": "Mine now"}])
        )
        assert "is not an item of envelope" in message or "envelopeItemId" in message, message
    message = refused(
        lambda: update(
            drafts.envelope_id,
            [
                {"envelopeItemId": drafts.item_id, "order": 1},
                {"envelopeItemId": drafts.item_id, "title": "B"},
            ],
        )
    )
    assert "listed twice" in message
    assert writes(sandbox) == []
    assert titles(hook, drafts.other_id) == ["other.pdf"]
    assert titles(hook, drafts.envelope_id) == ["annex.pdf"]


def test_a_title_that_looks_like_a_template_reaches_the_service_literally(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    drafts: Drafts,
    api_key: str,
    render: Callable[..., Any],
) -> None:
    op = DocsignUpdateEnvelopeItemsOperator(
        task_id="update",
        envelope_id=drafts.envelope_id,
        items=[{"envelopeItemId": drafts.item_id, "title": "{{ params.title }}"}],
    )
    [item] = op.execute(render(op, title=f"Annex {TEMPLATE_DATA}"))
    assert item["title"] == f"Annex {TEMPLATE_DATA}"
    assert titles(hook, drafts.envelope_id) == [f"Annex {TEMPLATE_DATA}"]
    assert sent(sandbox, UPDATE) == 1
    assert api_key not in item["title"]


def test_a_title_with_outer_spaces_is_trimmed_as_the_service_does_without_an_error_line(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, drafts: Drafts, task_log: Callable[[], str]
) -> None:
    # Documenso v2.17.0 trims an item title on update (ZDocumentTitleSchema: trim, then 1-255).
    [item] = update(drafts.envelope_id, [{"envelopeItemId": drafts.item_id, "title": " Annex A "}])
    assert item["title"] == "Annex A"
    assert titles(hook, drafts.envelope_id) == ["Annex A"]
    assert sent(sandbox, UPDATE) == 1
    log = task_log()
    assert "did not apply" not in log
    assert "NOT_APPLIED" not in log


# -- delete ---------------------------------------------------------------------------------------


def delete(envelope_id: str, item_id: str, try_number: int = 1, **kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = DocsignDeleteEnvelopeItemOperator(
        task_id="delete", envelope_id=envelope_id, envelope_item_id=item_id, **kwargs
    ).execute(ctx(try_number))
    return result


def test_another_envelopes_item_is_never_deleted_on_a_first_try_or_a_retry(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, drafts: Drafts
) -> None:
    message = refused(lambda: delete(drafts.envelope_id, drafts.other_item_id))
    assert f"{drafts.other_item_id} is not an item of envelope {drafts.envelope_id}" in message
    retried = delete(drafts.envelope_id, drafts.other_item_id, try_number=2)  # "deleted by a previous try"
    assert retried["deleted_field_ids"] == []
    for wrong in jinja_ids(drafts.item_id).values():
        with pytest.raises(AirflowFailException):
            delete(drafts.envelope_id, wrong)
    assert writes(sandbox) == []
    assert titles(hook, drafts.other_id) == ["other.pdf"]
    assert titles(hook, drafts.envelope_id) == ["annex.pdf"]


def test_a_retry_and_a_lost_answer_send_one_delete(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    drafts: Drafts,
    make_pdf: Callable[..., Path],
) -> None:
    [field] = hook.get_envelope(drafts.envelope_id).fields
    first = delete(drafts.envelope_id, drafts.item_id)
    assert first["deleted_field_ids"] == [field.id]
    assert delete(drafts.envelope_id, drafts.item_id, try_number=2)["envelope_item_id"] == drafts.item_id
    assert sent(sandbox, DELETE) == 1
    [second] = add(drafts.envelope_id, [str(make_pdf("second.pdf"))])
    sandbox.clear_requests()
    sandbox.inject_fault("POST", DELETE, action="drop_after_commit")
    assert delete(drafts.envelope_id, second)["envelope_item_id"] == second
    assert sent(sandbox, DELETE) == 1
    assert hook.get_envelope(drafts.envelope_id).item_ids == []


def test_fail_if_fields_keeps_the_item_and_its_fields(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, drafts: Drafts
) -> None:
    [field] = hook.get_envelope(drafts.envelope_id).fields
    message = refused(lambda: delete(drafts.envelope_id, drafts.item_id, fail_if_fields=True))
    assert f"has 1 field(s) ([{field.id}])" in message
    assert writes(sandbox) == []
    assert [f.id for f in hook.get_envelope(drafts.envelope_id).fields] == [field.id]


def test_no_error_names_the_api_key(
    docsign_conn: str, sandbox: SandboxServer, drafts: Drafts, api_key: str, task_log: Callable[[], str]
) -> None:
    sandbox.inject_fault("POST", UPDATE, action="status", status=401, count=5)
    message = refused(lambda: update(drafts.envelope_id, [{"envelopeItemId": drafts.item_id, "title": "B"}]))
    assert "401" in message
    assert api_key not in message
    assert api_key not in task_log()
    assert os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"].count(api_key) == 1  # the test did give it the key
