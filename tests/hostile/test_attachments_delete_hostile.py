"""DocsignDeleteAttachmentOperator fed what a careless or hostile user could give it.

Another envelope's attachment, labels that are near misses, hide text or look like a template, two
attachments with one label, ids as a careless template renders them, re-runs, a lost answer and a
completed envelope. Counted at the sandbox: the ``POST /envelope/attachment/delete`` requests and the
attachments that are left, on this envelope and on the other one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, signer
from odd_text import TEMPLATE_DATA, jinja_ids, odd

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignDeleteAttachmentOperator
from airflow_provider_docsign.sandbox import SandboxServer

DELETE = "/envelope/attachment/delete"


@dataclass
class Links:
    """A draft with a "Terms" and a "Prices" link; another draft with its own "Terms"."""

    envelope_id: str
    terms: str
    prices: str
    other_id: str
    other_terms: str


@pytest.fixture
def links(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> Links:
    pdf = make_pdf("lease.pdf")
    envelope_id = hook.create_envelope(title="Lease", files=[pdf], recipients=[signer()])
    other_id = hook.create_envelope(title="Other lease", files=[pdf], recipients=[signer()])
    made = Links(
        envelope_id,
        hook.create_attachment(envelope_id, label="Terms", url="https://example.com/terms"),
        hook.create_attachment(envelope_id, label="Prices", url="https://example.com/prices"),
        other_id,
        hook.create_attachment(other_id, label="Terms", url="https://example.com/terms"),
    )
    sandbox.clear_requests()
    return made


def deletes(sandbox: SandboxServer) -> int:
    return sum(r["path"] == DELETE for r in sandbox.requests())


def labels(hook: DocsignHook, envelope_id: str) -> list[str]:
    return sorted(a.label for a in hook.find_attachments(envelope_id))


def delete(envelope_id: str, try_number: int = 1, **kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = DocsignDeleteAttachmentOperator(
        task_id="unlink", envelope_id=envelope_id, **kwargs
    ).execute(ctx(try_number))
    return result


def test_another_envelopes_attachment_is_never_deleted(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, links: Links
) -> None:
    for try_number in (1, 2):
        result = delete(links.envelope_id, try_number, attachment_id=links.other_terms)
        assert result["deleted"] is False
    assert deletes(sandbox) == 0
    assert labels(hook, links.other_id) == ["Terms"]
    assert labels(hook, links.envelope_id) == ["Prices", "Terms"]


def test_reruns_and_retries_send_one_delete(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, links: Links
) -> None:
    assert delete(links.envelope_id, match_label="Terms")["deleted"] is True
    assert delete(links.envelope_id, 2, match_label="Terms")["deleted"] is False
    assert delete(links.envelope_id, attachment_id=links.terms)["deleted"] is False
    assert deletes(sandbox) == 1
    assert labels(hook, links.envelope_id) == ["Prices"]
    assert labels(hook, links.other_id) == ["Terms"]


def test_a_lost_answer_is_read_back_and_counts_as_deleted(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, links: Links
) -> None:
    sandbox.inject_fault("POST", DELETE, action="drop_after_commit")
    result = delete(links.envelope_id, attachment_id=links.prices)
    assert (result["attachment_id"], result["deleted"]) == (links.prices, True)
    assert deletes(sandbox) == 1
    assert labels(hook, links.envelope_id) == ["Terms"]


def test_a_label_on_two_attachments_is_refused_naming_both(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, links: Links
) -> None:
    second = hook.create_attachment(links.envelope_id, label="Terms", url="https://example.com/terms-v2")
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="2 attachments are labelled 'Terms'") as info:
        delete(links.envelope_id, match_label="Terms")
    assert links.terms in str(info.value)
    assert second in str(info.value)
    assert deletes(sandbox) == 0
    assert labels(hook, links.envelope_id) == ["Prices", "Terms", "Terms"]


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"attachment_id": "ID", "match_label": "Terms"}, {"attachment_id": "", "match_label": ""}],
    ids=["neither", "both", "empty"],
)
def test_neither_or_both_of_id_and_label_is_refused_before_any_request(
    docsign_conn: str, sandbox: SandboxServer, links: Links, kwargs: dict[str, str]
) -> None:
    given = {k: links.terms if v == "ID" else v for k, v in kwargs.items()}
    with pytest.raises(AirflowFailException, match="give exactly one of attachment_id and match_label"):
        delete(links.envelope_id, **given)
    assert sandbox.requests() == []


def test_near_miss_labels_and_careless_ids_delete_nothing(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, links: Links
) -> None:
    near = [" Terms", "Terms ", "TERMS", "terms", odd("RLO", "Terms"), odd("TAG", "Terms"), TEMPLATE_DATA]
    for label in near:
        assert delete(links.envelope_id, match_label=label)["deleted"] is False
    for wrong in jinja_ids(links.terms).values():
        result = delete(links.envelope_id, attachment_id=wrong)
        assert (result["attachment_id"], result["deleted"]) == (wrong, False)
    assert deletes(sandbox) == 0
    assert labels(hook, links.envelope_id) == ["Prices", "Terms"]


def test_a_label_that_looks_like_a_template_is_matched_literally(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, links: Links, render: Callable[..., Any]
) -> None:
    literal = hook.create_attachment(links.envelope_id, label=TEMPLATE_DATA, url="https://example.com/x")
    sandbox.clear_requests()
    op = DocsignDeleteAttachmentOperator(
        task_id="unlink", envelope_id=links.envelope_id, match_label="{{ params.label }}"
    )
    result = op.execute(render(op, label=TEMPLATE_DATA))
    assert (result["attachment_id"], result["deleted"]) == (literal, True)
    assert deletes(sandbox) == 1
    assert labels(hook, links.envelope_id) == ["Prices", "Terms"]


def test_a_completed_envelopes_attachment_is_refused_locally_and_kept(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, links: Links
) -> None:
    hook.distribute_envelope(links.envelope_id)
    sandbox.complete(links.envelope_id)
    sandbox.wait_status(links.envelope_id, "COMPLETED", timeout=20)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="refused locally") as info:
        delete(links.envelope_id, attachment_id=links.terms)
    assert "completed or rejected" in str(info.value)
    assert deletes(sandbox) == 0
    assert labels(hook, links.envelope_id) == ["Prices", "Terms"]
