"""The bulk send against a failing service: every create answered 500, lost answers, a refused key.

The task stops within the documented bound (three rounds of create-then-look-up per row), never makes
a row twice, and the next try resumes from the checkpoint.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from bulk_helpers import campaign_counts, customers, make_template, operator, read_table
from helpers import conn_json, ctx

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators._bulk import MAX_TRANSIENT, BulkStopped
from airflow_provider_docsign.sandbox import SandboxServer


def test_a_500_on_every_create_stops_after_three_rounds_and_the_next_try_sends_each_row_once(
    sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read timeout of 1 s: a row is looked up 1 s after its failed create.
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox, timeout=[5, 1]))
    with DocsignHook() as hook:
        template_id = make_template(hook, make_pdf("t.pdf"))
        sandbox.inject_fault("POST", "/envelope/use", "status", status=500, count=10_000)
        sandbox.clear_requests()
        with pytest.raises(BulkStopped, match=r"3 rounds of create, then look-up, found nothing made"):
            operator(template_id, customers(3), tmp_path / "r.jsonl", campaign_id="five-hundred").execute(
                ctx()
            )
        calls = Counter((r["method"], r["path"]) for r in sandbox.requests())
        # At most three rounds a row: 3 rows x 3 creates, 3 x 3 look-ups, and the campaign's listing.
        assert 3 <= calls[("POST", "/envelope/use")] <= 3 * MAX_TRANSIENT
        assert calls[("GET", "/envelope")] <= 1 + 3 * MAX_TRANSIENT
        assert campaign_counts(hook, "five-hundred") == Counter()

        sandbox.clear_faults()
        result = operator(
            template_id, customers(3), tmp_path / "r.jsonl", campaign_id="five-hundred"
        ).execute(ctx(try_number=2))
        assert result["counts"]["sent"] == 3
        counts = campaign_counts(hook, "five-hundred")
    assert len(counts) == 3
    assert set(counts.values()) == {1}


def test_a_500_after_the_create_took_effect_is_adopted_never_sent_twice(
    sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service made the envelope and then failed: the look-up finds it, no second create."""
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox, timeout=[5, 1]))
    with DocsignHook() as hook:
        template_id = make_template(hook, make_pdf("t.pdf"))
        sandbox.inject_fault("POST", "/envelope/use", "drop_after_commit", count=5)
        sandbox.clear_requests()
        result = operator(template_id, customers(5), tmp_path / "r.jsonl", campaign_id="committed").execute(
            ctx()
        )
        uses = sum(1 for r in sandbox.requests() if r["path"] == "/envelope/use")
        counts = campaign_counts(hook, "committed")
    assert result["counts"]["sent"] == 5
    assert result["adopted"] == 5
    assert uses == 5
    assert set(counts.values()) == {1}
    assert {r["attempts"] for r in read_table(tmp_path / "r.jsonl")} == {1}


def test_a_refused_key_fails_at_once_without_retries_and_leaves_the_lease_free(
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    api_key: str,
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox, password="api_wrongkey0000001"))
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException) as info:
        operator("envelope_x", customers(3), tmp_path / "r.jsonl", campaign_id="refused").execute(ctx())
    assert api_key not in str(info.value)
    assert "api_wrongkey0000001" not in str(info.value)
    assert [r for r in sandbox.requests() if r["method"] == "POST"] == []
    # The lease was given back: a try with the right key goes at once.
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox))
    with DocsignHook() as hook:
        template_id = make_template(hook, make_pdf("t.pdf"))
    assert (
        operator(template_id, customers(3), tmp_path / "r.jsonl", campaign_id="refused").execute(ctx())[
            "counts"
        ]["sent"]
        == 3
    )
