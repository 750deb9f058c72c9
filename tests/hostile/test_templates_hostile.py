"""DocsignCreateTemplateOperator and DocsignDuplicateTemplateOperator fed what a careless or hostile
user could give them.

Re-runs and retries of a setup task, two runs at the same time, titles that hide text or look like
a template, two templates with one title, a document given as a template, and a lost answer. Counted
at the sandbox: the ``POST /envelope/create`` and ``POST /envelope/duplicate`` requests, and the
templates that exist afterwards.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, race_a_delayed_create, sig, signer
from odd_text import ODD_TEXT, TEMPLATE_DATA, odd

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignCreateTemplateOperator, DocsignDuplicateTemplateOperator
from airflow_provider_docsign.sandbox import SandboxServer

CREATE, DUPLICATE = "/envelope/create", "/envelope/duplicate"
ROLES = [signer(sig(), email="customer@placeholder.test", name="Customer")]


def sent(sandbox: SandboxServer, path: str) -> int:
    return sum(r["path"] == path for r in sandbox.requests())


def titled(hook: DocsignHook, title: str) -> list[str]:
    return [t.id for t in hook.find_templates_by_title(title)]


def unique(prefix: str = "Onboarding") -> str:
    return f"{prefix} {uuid.uuid4().hex[:8]}"


def create(title: str, pdf: Path, try_number: int = 1, **kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = DocsignCreateTemplateOperator(
        task_id="template", title=title, files=[str(pdf)], recipients=ROLES, **kwargs
    ).execute(ctx(try_number))
    return result


def duplicate(template_id: str, try_number: int = 1, **kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = DocsignDuplicateTemplateOperator(
        task_id="copy", template_id=template_id, **kwargs
    ).execute(ctx(try_number))
    return result


@pytest.fixture
def pdf(make_pdf: Callable[..., Path]) -> Path:
    return make_pdf("onboarding.pdf")


# -- create ---------------------------------------------------------------------------------------


def test_reruns_and_retries_of_a_setup_task_reuse_the_one_template(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, pdf: Path
) -> None:
    title = unique()
    first = create(title, pdf)
    assert create(title, pdf, try_number=2)["template_id"] == first["template_id"]
    assert create(title, pdf)["template_id"] == first["template_id"]
    assert sent(sandbox, CREATE) == 1
    assert titled(hook, title) == [first["template_id"]]


def test_two_runs_at_the_same_time_leave_one_template_and_return_it(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, pdf: Path
) -> None:
    title = unique("Race")
    other = DocsignHook(docsign_conn)  # the other run, in another worker
    assert other.settings.api_key  # its connection is looked up here: Airflow 2.11 cannot in a thread
    # This run's create waits 3 s at the service; the other run searches (nothing yet) and creates its
    # own in that time, as two runs of a setup task in a backfill do. The other run's is the older one.
    made: list[str] = []

    def other_run() -> None:
        if not other.find_templates_by_title(title):
            made.append(other.create_template(title=title, files=[pdf], recipients=ROLES))

    try:
        first = race_a_delayed_create(sandbox, CREATE, lambda: create(title, pdf), other_run)
    finally:
        other.close()
    assert sent(sandbox, CREATE) == 2  # both did create
    assert [first["template_id"]] == made  # this run returns the other run's (older) template...
    assert first["envelope_id"] == made[0]
    assert titled(hook, title) == made  # ...and deleted its own
    assert sent(sandbox, "/envelope/delete") == 1
    assert create(title, pdf)["template_id"] == made[0]  # every later run finds the one left


@pytest.mark.parametrize("name", ODD_TEXT)
def test_a_title_that_hides_text_makes_no_template(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, pdf: Path, name: str
) -> None:
    title = odd(name, unique())
    with pytest.raises((AirflowFailException, DocsignValidationError)) as info:
        create(title, pdf)
    assert ODD_TEXT[name][1] in str(info.value), str(info.value)
    assert "nothing was sent" in str(info.value)
    assert sent(sandbox, CREATE) == 0
    assert [r for r in sandbox.requests() if r["method"] != "GET"] == []


def test_a_title_that_hides_text_fails_at_once_naming_the_title(
    docsign_conn: str, sandbox: SandboxServer, pdf: Path
) -> None:
    with pytest.raises(
        AirflowFailException, match=re.escape("title contains the bidirectional control U+202E")
    ):
        create(odd("RLO", unique()), pdf)
    assert sandbox.requests() == []


@pytest.mark.parametrize("reuse_by_title", [True, False])
def test_a_title_over_the_services_length_fails_at_once_naming_the_title(
    docsign_conn: str, sandbox: SandboxServer, pdf: Path, reuse_by_title: bool
) -> None:
    with pytest.raises(AirflowFailException, match="title is 256 characters long; the maximum is 255"):
        create("x" * 256, pdf, reuse_by_title=reuse_by_title)
    assert sandbox.requests() == []


def test_two_templates_with_the_title_are_refused_naming_both(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, pdf: Path
) -> None:
    title = unique()
    both = [hook.create_template(title=title, files=[pdf], recipients=ROLES) for _ in range(2)]
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=f"2 templates are titled '{title}'") as info:
        create(title, pdf)
    assert all(template_id in str(info.value) for template_id in both)
    assert sent(sandbox, CREATE) == 0
    assert sorted(titled(hook, title)) == sorted(both)


def test_a_title_that_looks_like_a_template_is_made_and_found_literally(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    pdf: Path,
    api_key: str,
    render: Callable[..., Any],
) -> None:
    title = f"{unique()} {TEMPLATE_DATA}"
    runs = []
    for _ in range(2):  # the second run must find the first one's template by its literal title
        op = DocsignCreateTemplateOperator(
            task_id="template", title="{{ params.title }}", files=[str(pdf)], recipients=ROLES
        )
        runs.append(op.execute(render(op, title=title))["template_id"])
    assert runs[0] == runs[1]
    assert hook.get_template(runs[0]).title == title
    assert api_key not in hook.get_template(runs[0]).title
    assert sent(sandbox, CREATE) == 1


def test_files_that_are_no_pdf_make_no_template(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    letter = tmp_path / "letter.pdf"
    letter.write_text("Dear customer")
    title = unique()
    with pytest.raises(AirflowFailException, match=re.escape("letter.pdf")):
        create(title, letter)
    assert sent(sandbox, CREATE) == 0
    assert titled(hook, title) == []


# -- duplicate ------------------------------------------------------------------------------------


@pytest.fixture
def source(hook: DocsignHook, sandbox: SandboxServer, pdf: Path) -> tuple[str, str]:
    title = unique("Source")
    template_id = hook.create_template(title=title, files=[pdf], recipients=ROLES)
    sandbox.clear_requests()
    return template_id, title


def test_a_lost_answer_fails_without_a_retry_and_without_a_second_copy(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, source: tuple[str, str]
) -> None:
    template_id, title = source
    sandbox.inject_fault("POST", DUPLICATE, action="drop_after_commit")
    with pytest.raises(AirflowFailException, match="outcome is unknown"):
        duplicate(template_id)
    assert sent(sandbox, DUPLICATE) == 1
    assert len(titled(hook, f"{title} (copy)")) == 1


def test_a_document_given_as_the_template_is_refused_before_any_copy(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, pdf: Path
) -> None:
    document = hook.create_envelope(title="Signed offer", files=[pdf], recipients=ROLES)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=f"{document} is a DOCUMENT, not a TEMPLATE"):
        duplicate(document)
    assert sent(sandbox, DUPLICATE) == 0


def test_each_run_makes_its_own_copy_and_names_it(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, source: tuple[str, str]
) -> None:
    # Not idempotent, as documented: a re-run copies again, and each run's XCom names its own copy.
    template_id, title = source
    first = duplicate(template_id, title=f"{title} v2")
    second = duplicate(template_id, title=f"{title} v2")
    assert first["template_id"] != second["template_id"]
    assert sent(sandbox, DUPLICATE) == 2
    assert sorted(titled(hook, f"{title} v2")) == sorted([first["template_id"], second["template_id"]])


def test_a_title_that_looks_like_a_template_is_given_to_the_copy_literally(
    docsign_conn: str,
    hook: DocsignHook,
    source: tuple[str, str],
    api_key: str,
    render: Callable[..., Any],
) -> None:
    template_id, title = source
    op = DocsignDuplicateTemplateOperator(task_id="copy", template_id=template_id, title="{{ params.t }}")
    made = op.execute(render(op, t=f"{title} {TEMPLATE_DATA}"))
    assert made["title"] == f"{title} {TEMPLATE_DATA}"
    assert hook.get_template(made["template_id"]).title == f"{title} {TEMPLATE_DATA}"
    assert api_key not in made["title"]


@pytest.mark.parametrize("name", ["NUL", "RLO", "too long", "blank"])
def test_a_title_the_service_would_refuse_is_refused_before_anything_is_copied(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, source: tuple[str, str], name: str
) -> None:
    template_id, title = source
    bad, words = {
        "too long": ("x" * 256, "data.title is 256 characters long; the maximum is 255"),
        "blank": ("   ", "title must not be empty"),
    }.get(name) or (odd(name, f"{title} v2"), f"data.title contains the {ODD_TEXT[name][1]}")
    for try_number in (1, 2):  # a retry refuses it again: no try leaves a copy
        with pytest.raises(AirflowFailException) as info:
            duplicate(template_id, try_number=try_number, title=bad)
        assert words in str(info.value), str(info.value)
        assert "nothing was sent" in str(info.value)
    assert sent(sandbox, DUPLICATE) == 0
    assert titled(hook, f"{title} (copy)") == []


def test_an_update_that_fails_after_the_copy_names_the_copy_and_is_not_retried(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, source: tuple[str, str]
) -> None:
    template_id, title = source
    sandbox.inject_fault("POST", "/envelope/update", action="status", status=400, code="INVALID_BODY")
    with pytest.raises(AirflowFailException) as info:
        duplicate(template_id, title=f"{title} v2")
    [copy] = titled(hook, f"{title} (copy)")
    assert f"was duplicated as {copy}, but setting its title failed" in str(info.value)
    assert sent(sandbox, DUPLICATE) == 1
    assert titled(hook, f"{title} v2") == []
