"""DocsignBulkSendOperator against the sandbox: templates and PDFs, validation first, exactly once."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bulk_helpers import customers, make_template, read_table, write_csv
from helpers import conn_json, ctx, signer

from airflow_provider_docsign.bulk.state import STOPPED_XCOM_KEY
from airflow_provider_docsign.bulk.store import CHECKPOINT_SUFFIX
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.bulk import DocsignBulkSendOperator
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


def envelopes_by_external_id(hook: DocsignHook, prefix: str) -> Counter[str]:
    """How many envelopes the sandbox holds per external id of a campaign (listing the root)."""
    return Counter(
        e.external_id for e in hook.find_envelopes(query=prefix) if (e.external_id or "").startswith(prefix)
    )


def template_operator(template_id: str, rows: Any, result: Path, **kwargs: Any) -> DocsignBulkSendOperator:
    kwargs.setdefault("campaign_id", "renewals-2027")
    return DocsignBulkSendOperator(
        task_id="bulk",
        rows=rows,
        result_table=str(result),
        template_id=template_id,
        recipients=[{"placeholder": "Customer", "email": "{email}", "name": "{name}"}],
        prefill_fields={"company": "{company}"},
        title="Renewal for {name}",
        **kwargs,
    )


def test_a_template_campaign_from_csv_sends_each_row_once_with_one_request(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    template_id = make_template(hook, make_pdf("template.pdf"))
    rows = customers(30)
    source = write_csv(tmp_path / "customers.csv", rows)
    sandbox.clear_requests()

    op = template_operator(template_id, str(source), tmp_path / "out" / "results.jsonl")
    result = op.execute(ctx())
    calls = Counter((r["method"], r["path"]) for r in sandbox.requests())

    assert result["counts"] == {"sent": 30, "created": 0, "invalid": 0, "failed": 0}
    assert result["result_table"] == (tmp_path / "out" / "results.jsonl").as_uri()
    table = read_table(tmp_path / "out" / "results.jsonl")
    assert [r["row_key"] for r in table] == [r["row_key"] for r in rows]  # input order: joins back
    assert {r["status"] for r in table} == {"sent"}
    assert all(r["attempts"] == 1 and r["error"] is None and r["sent_at"] for r in table)
    assert [r["external_id"] for r in table] == [f"renewals-2027({r['row_key']})" for r in rows]
    # At the sandbox: one envelope per external id, sent, with the row's recipient and prefill.
    counts = envelopes_by_external_id(hook, "renewals-2027(")
    assert counts == Counter({r["external_id"]: 1 for r in table})
    first = hook.get_envelope(table[0]["envelope_id"])
    assert first.status.value == "PENDING"
    assert first.title == "Renewal for Customer 0"
    assert [r.email for r in first.recipients] == ["c0@example.test"]
    # Requests: the template read once, then exactly one POST /envelope/use per row.
    assert calls[("POST", "/envelope/use")] == 30
    assert calls[("GET", f"/envelope/{template_id}")] == 1
    assert calls[("GET", "/envelope")] == 1  # the campaign listed once at the service: nothing yet
    assert sum(calls.values()) == 32
    assert result["requests"] == 32
    assert result["adopted"] == 0
    # XCom holds counts and URIs, never the ids.
    assert len(json.dumps(result)) < 1000
    assert (tmp_path / "out" / f"results.jsonl{CHECKPOINT_SUFFIX}").exists()


def test_a_pdf_campaign_from_xcom_rows_creates_and_distributes_with_two_requests(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    pytest.importorskip("pyarrow", reason="the parquet result table needs pyarrow (the parquet extra)")
    import pyarrow.parquet as pq

    pdfs = [make_pdf(f"contract-{i}.pdf") for i in range(6)]
    rows = [
        {"id": i, "files": [str(pdf)], "recipients": [signer(email=f"p{i}@example.test")]}
        for i, pdf in enumerate(pdfs)
    ]
    op = DocsignBulkSendOperator(
        task_id="bulk",
        rows=rows,
        key_column="id",
        result_table=str(tmp_path / "results.parquet"),
        campaign_id="pdf-campaign",
        title="Contract {id}",
        meta={"subject": "Please sign"},
        files_root=str(pdfs[0].parent),
    )
    result = op.execute(ctx())
    calls = Counter((r["method"], r["path"]) for r in sandbox.requests())

    assert result["counts"]["sent"] == 6
    assert result["format"] == "parquet"
    table = pq.read_table(tmp_path / "results.parquet").to_pylist()
    assert [r["row_key"] for r in table] == [str(i) for i in range(6)]
    assert {r["status"] for r in table} == {"sent"}
    assert {r["attempts"] for r in table} == {2}
    assert calls[("POST", "/envelope/create")] == 6
    assert calls[("POST", "/envelope/distribute")] == 6
    assert envelopes_by_external_id(hook, "pdf-campaign(") == Counter(
        {f"pdf-campaign({i})": 1 for i in range(6)}
    )


def ten_bad_rows(rows: list[dict[str, Any]]) -> list[int]:
    bad = list(range(3, 100, 10))  # ten rows spread over the hundred
    for n, index in enumerate(bad):
        row = rows[index]
        if n % 3 == 0:
            row["email"] = "not-an-email"
        elif n % 3 == 1:
            row["row_key"] = rows[index - 1]["row_key"]  # a repeated key
        else:
            row["company"] = "Bell\x07Co"  # a control character, which the service would store
    return bad


def test_ten_invalid_rows_of_a_hundred_are_reported_and_never_sent(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    template_id = make_template(hook, make_pdf("template.pdf"))
    rows = customers(100)
    bad = ten_bad_rows(rows)
    sandbox.clear_requests()
    op = template_operator(
        template_id, rows, tmp_path / "results.jsonl", campaign_id="invalid-10", max_invalid=10
    )
    result = op.execute(ctx())
    uses = sum(1 for r in sandbox.requests() if r["path"] == "/envelope/use")

    assert result["counts"] == {"sent": 90, "created": 0, "invalid": 10, "failed": 0}
    table = read_table(tmp_path / "results.jsonl")
    invalid = [i for i, r in enumerate(table) if r["status"] == "invalid"]
    assert invalid == bad
    for index in invalid:
        row = table[index]
        assert row["envelope_id"] is None
        assert row["attempts"] == 0
        assert row["error"]
    assert "not-an-email" in table[bad[0]]["error"]
    assert "repeats the key of rows[12]" in table[bad[1]]["error"]  # a list: its index
    assert uses == 90
    # Nothing at the sandbox for the invalid rows (the repeated key's first row was sent, once).
    counts = envelopes_by_external_id(hook, "invalid-10(")
    assert sum(counts.values()) == 90
    assert all(n == 1 for n in counts.values())
    for index in (bad[0], bad[2]):
        assert counts[f"invalid-10({rows[index]['row_key']})"] == 0


def test_with_max_invalid_0_the_campaign_fails_before_any_envelope_is_sent(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    from airflow_provider_docsign._compat import AirflowFailException

    template_id = make_template(hook, make_pdf("template.pdf"))
    rows = customers(100)
    ten_bad_rows(rows)
    sandbox.clear_requests()
    op = template_operator(template_id, rows, tmp_path / "results.jsonl", campaign_id="invalid-0")
    with pytest.raises(AirflowFailException) as info:
        op.execute(ctx())
    message = str(info.value)
    assert "10 of 100 rows are invalid" in message
    assert "rows[3] ('C-0003')" in message  # rows given as a list: the item's index
    # The campaign was listed (nothing made yet) and the template read to check the rows against it.
    assert [(r["method"], r["path"]) for r in sandbox.requests()] == [
        ("GET", "/envelope"),
        ("GET", f"/envelope/{template_id}"),
    ]
    assert not (tmp_path / "results.jsonl").exists()
    assert not (tmp_path / f"results.jsonl{CHECKPOINT_SUFFIX}").exists()

    # PDF rows need no template: not a single request.
    pdf_rows = [{"row_key": "a", "files": [str(tmp_path / "missing.pdf")], "recipients": [signer()]}]
    op = DocsignBulkSendOperator(
        task_id="bulk",
        rows=pdf_rows,
        result_table=str(tmp_path / "pdf.jsonl"),
        campaign_id="c",
        title="T",
        files_root=str(tmp_path),
    )
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="does not exist"):
        op.execute(ctx())
    assert [(r["method"], r["path"]) for r in sandbox.requests()] == [("GET", "/envelope")]


def test_a_lost_answer_is_looked_up_and_adopted_never_sent_twice(
    sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A short read timeout: a row whose answer was lost is looked up that long after.
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox, timeout=[5, 2]))
    with DocsignHook() as hook:
        template_id = make_template(hook, make_pdf("template.pdf"))
        sandbox.clear_requests()
        sandbox.inject_fault("POST", "/envelope/use", "drop_after_commit", count=2)
        op = template_operator(template_id, customers(12), tmp_path / "results.jsonl", campaign_id="lost")
        result = op.execute(ctx())
        calls = Counter((r["method"], r["path"]) for r in sandbox.requests())
        assert result["counts"]["sent"] == 12
        counts = envelopes_by_external_id(hook, "lost(")
    assert sorted(counts.values()) == [1] * 12
    # The two dropped answers were committed: each row was looked up (GET /envelope?query=), not sent again.
    assert calls[("POST", "/envelope/use")] == 12
    assert calls[("GET", "/envelope")] == 1 + 2  # the campaign's listing, then one look-up per lost answer
    assert result["adopted"] == 2


def test_the_pool_keeps_to_the_real_window_shape_without_a_429(
    make_pdf: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, api_key: str
) -> None:
    """40 requests per 6-second window, enforced as the real service does: 60 rows, 8 threads, no 429."""
    with SandboxServer(tmp_path / "limited", api_key=api_key, rate_limit=40, rate_window=6) as limited:
        monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(limited))
        with DocsignHook() as hook:
            template_id = make_template(hook, make_pdf("template.pdf"))
        limited.clear_requests()
        op = template_operator(template_id, customers(60), tmp_path / "results.jsonl", campaign_id="window")
        result = op.execute(ctx())
        statuses = [r["status"] for r in limited.requests()]
    assert result["counts"]["sent"] == 60
    assert 429 not in statuses
    assert result["answered_429"] == 0
    assert len(statuses) == 62  # the listing, the template read, one use per row: no retries were needed


def test_a_429_pauses_the_pool_and_every_row_is_still_sent_once(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    template_id = make_template(hook, make_pdf("template.pdf"))
    sandbox.clear_requests()
    sandbox.inject_fault("POST", "/envelope/use", "status", status=429, retry_after=1, count=3)
    op = template_operator(template_id, customers(20), tmp_path / "results.jsonl", campaign_id="throttled")
    result = op.execute(ctx())
    uses = [r["status"] for r in sandbox.requests() if r["path"] == "/envelope/use"]
    assert result["answered_429"] == 3
    assert sorted(uses) == [200] * 20 + [429] * 3
    assert result["counts"]["sent"] == 20
    assert envelopes_by_external_id(hook, "throttled(") == Counter(
        {f"throttled(C-{i:04d})": 1 for i in range(20)}
    )
    table = read_table(tmp_path / "results.jsonl")
    assert sum(r["attempts"] for r in table) == 20  # a refused request created nothing: not an attempt


def test_past_max_failures_the_task_stops_and_the_next_try_resumes(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    from airflow_provider_docsign.operators._bulk import BulkStopped

    template_id = make_template(hook, make_pdf("template.pdf"))
    rows = customers(40)
    sandbox.clear_requests()
    # The service refuses 3 uses with a permanent error: past max_failures=2 the campaign stops.
    sandbox.inject_fault("POST", "/envelope/use", "status", status=400, count=3)
    op = template_operator(template_id, rows, tmp_path / "results.jsonl", campaign_id="stops", max_failures=2)
    stopped = ctx()
    with pytest.raises(BulkStopped, match="max_failures=2"):
        op.execute(stopped)
    assert not (tmp_path / "results.jsonl").exists()
    # What the Contracts page lists the stopped campaign by (no return_value, no result table).
    pushed = stopped["ti"].pushed[STOPPED_XCOM_KEY]
    assert (pushed["campaign_id"], pushed["rows"], pushed["counts"]["failed"]) == ("stops", 40, 3)
    assert "max_failures=2" in pushed["stopped"]
    assert pushed["checkpoint"] == (tmp_path / f"results.jsonl{CHECKPOINT_SUFFIX}").as_uri()
    checkpoint = json.loads((tmp_path / f"results.jsonl{CHECKPOINT_SUFFIX}").read_text())
    states = Counter(entry[1] for entry in checkpoint["rows"])
    assert states["failed"] == 3
    # No row is left leased for nothing: only rows whose request went out are recorded.
    assert states["in_flight"] == 0
    # The next try: the failed rows are looked up (not found), then sent; the others are not sent again.
    sandbox.clear_requests()
    result = op.execute(ctx(try_number=2))
    assert result["counts"]["sent"] == 40
    assert envelopes_by_external_id(hook, "stops(") == Counter({f"stops(C-{i:04d})": 1 for i in range(40)})
    table = read_table(tmp_path / "results.jsonl")
    assert sorted(r["attempts"] for r in table) == [1] * 37 + [2] * 3
    # And a third run of a finished campaign sends nothing at all and writes the same table.
    before = (tmp_path / "results.jsonl").read_bytes()
    sandbox.clear_requests()
    again = op.execute(ctx(try_number=3))
    assert again["counts"]["sent"] == 40
    assert [r for r in sandbox.requests() if r["method"] == "POST"] == []
    assert (tmp_path / "results.jsonl").read_bytes() == before
