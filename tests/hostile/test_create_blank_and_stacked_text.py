"""Text that renders blank or spills over lines, sent through the create operator, the hook and a folder.

A title of braille blanks (U+2800) looks empty in the service's list and in every e-mail, and a name
with 200 combining marks on one letter covers the lines around it. Each is refused locally with the
reason, and the sandbox counts 0 requests; names whose writing needs marks (Vietnamese, Devanagari,
Thai) reach the service as typed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import ctx, sig, signer
from odd_text import BLANK_OR_STACKED, MARKED_NAMES

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignCreateEnvelopeOperator
from airflow_provider_docsign.sandbox import SandboxServer


def create(pdf: Path, *, title: str = "NDA", name: str = "Sam", task_id: str = "create") -> dict[str, object]:
    result: dict[str, object] = DocsignCreateEnvelopeOperator(
        task_id=task_id,
        title=title,
        files=[str(pdf)],
        recipients=[signer(sig(), email="sam@example.test", name=name)],
        if_exists="fail",
    ).execute(ctx())
    return result


@pytest.mark.parametrize("odd", BLANK_OR_STACKED)
def test_a_title_that_renders_blank_or_overflows_sends_nothing(
    docsign_conn: str, sandbox: SandboxServer, make_pdf: Callable[..., Path], odd: str
) -> None:
    text, words = BLANK_OR_STACKED[odd]
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException) as info:
        create(make_pdf("nda.pdf"), title=text)
    assert words in str(info.value), str(info.value)
    assert "title" in str(info.value)
    assert sandbox.requests() == []


@pytest.mark.parametrize("odd", BLANK_OR_STACKED)
def test_a_signer_name_that_renders_blank_or_overflows_sends_nothing(
    docsign_conn: str, sandbox: SandboxServer, make_pdf: Callable[..., Path], odd: str
) -> None:
    text, words = BLANK_OR_STACKED[odd]
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException) as info:
        create(make_pdf("nda.pdf"), name=f"Sam {text}")
    assert words in str(info.value), str(info.value)
    assert "recipients[0].name" in str(info.value)
    assert sandbox.requests() == []


@pytest.mark.parametrize("odd", BLANK_OR_STACKED)
def test_the_hook_refuses_them_where_every_request_leaves(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], odd: str
) -> None:
    text, words = BLANK_OR_STACKED[odd]
    pdf = make_pdf("nda.pdf")
    sandbox.clear_requests()
    with pytest.raises(DocsignError) as info:
        hook.create_envelope(title=f"NDA {text}", files=[pdf], recipients=[signer(sig())])
    assert words in str(info.value)
    with pytest.raises(DocsignError) as info:
        hook.create_folder(f"Legal {text[:41]}")  # a folder name holds 100 characters at most
    assert (words if "blank" in words else "has 40 combining marks in a row") in str(info.value)
    assert sandbox.requests() == []


def test_names_whose_writing_needs_marks_reach_the_service_as_typed(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf("nda.pdf")
    for index, (script, name) in enumerate(MARKED_NAMES.items()):
        result = create(pdf, title=f"NDA {name}", name=name, task_id=f"create_{index}")
        envelope = hook.get_envelope(str(result["envelope_id"]))
        assert envelope.title == f"NDA {name}", script
        assert [r.name for r in envelope.recipients] == [name], script
