"""The bulk send, tried more than once: two tries at once, another result table, a re-run, a lost lease.

Each case counts envelopes at the sandbox by externalId: whatever the tries do, every row exists once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from bulk_helpers import (
    QuietLog,
    campaign_counts,
    customers,
    lease_path,
    live_lease,
    make_template,
    operator,
    read_table,
    run_tries_together,
    use_lease_dir,
    write_csv,
    writes,
)
from helpers import ctx

from airflow_provider_docsign.archive.store import quiet_upath
from airflow_provider_docsign.bulk.lease import CampaignLease, LeaseHeldError, lease_name
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer


def test_two_tries_at_once_in_two_processes_one_sends_the_other_waits_and_adopts(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_lease_dir(monkeypatch, tmp_path / "leases", sandbox)
    template_id = make_template(hook, make_pdf("t.pdf"))
    rows = write_csv(tmp_path / "rows.csv", customers(40))
    result = tmp_path / "out" / "results.jsonl"
    # Each create is held 0.1 s: the first try is still sending when the second one starts.
    sandbox.inject_fault("POST", "/envelope/use", "delay", delay=0.1, count=40)
    sandbox.clear_requests()
    outputs = run_tries_together(tmp_path, template_id, rows, [str(result)] * 2, "twice")
    # The later try waits for the lease while the first sends (or starts after it), and sends nothing.
    assert [code for code, _ in outputs] == [0, 0], outputs
    # The later one resumed from the first's checkpoint (one table): it made one request, the listing.
    assert any("'requests': 1," in text for _, text in outputs), outputs
    counts = campaign_counts(hook, "twice")
    assert len(counts) == 40
    assert set(counts.values()) == {1}
    assert sum(1 for r in sandbox.requests() if r["path"] == "/envelope/use") == 40
    assert {r["status"] for r in read_table(result)} == {"sent"}


def test_the_same_campaign_with_another_result_table_sends_nothing_and_adopts_every_row(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    """``results/{{ run_id }}.jsonl`` with a fixed campaign_id: the second run finds everything made."""
    template_id = make_template(hook, make_pdf("t.pdf"))
    rows = customers(40)
    first = operator(template_id, rows, tmp_path / "results" / "run-1.jsonl", campaign_id="spans-runs")
    assert first.execute(ctx())["counts"]["sent"] == 40
    sandbox.clear_requests()
    second = operator(template_id, rows, tmp_path / "results" / "run-2.jsonl", campaign_id="spans-runs")
    result = second.execute(ctx())
    assert writes(sandbox) == []  # nothing sent again
    assert result["adopted"] == 40
    assert result["counts"]["sent"] == 40
    assert result["envelopes_per_minute"] == 0.0  # adopted rows are not this try's envelopes
    counts = campaign_counts(hook, "spans-runs")
    assert len(counts) == 40
    assert set(counts.values()) == {1}
    table = read_table(tmp_path / "results" / "run-2.jsonl")
    assert {r["status"] for r in table} == {"sent"}
    assert all(r["envelope_id"] for r in table)
    # The same campaign in another folder of result tables: the service still says what exists.
    sandbox.clear_requests()
    third = operator(template_id, rows, tmp_path / "elsewhere" / "r.jsonl", campaign_id="spans-runs")
    assert third.execute(ctx())["adopted"] == 40
    assert writes(sandbox) == []


def test_a_fresh_lease_of_another_try_is_waited_for_then_refused_and_a_stale_one_is_taken_over(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    leases = use_lease_dir(monkeypatch, tmp_path / "leases", sandbox)
    template_id = make_template(hook, make_pdf("t.pdf"))
    out = tmp_path / "out"
    out.mkdir()
    # Another try holds the lease (as a live worker on another machine would, beating).
    with live_lease(leases, sandbox, "held"):
        sandbox.clear_requests()
        with pytest.raises(
            LeaseHeldError, match=r"campaign 'held' is being sent by another try \(dag.send run r1"
        ):
            operator(template_id, customers(5), out / "results.jsonl", campaign_id="held").execute(ctx())
        assert sandbox.requests() == []  # waited one stale period, then failed: not even the listing
    # A dead try's lease: its last beat is older than stale_after.
    lease_path(leases, sandbox, "held").write_text(
        json.dumps({"version": 1, "owner": "dead", "describe": "a dead worker", "beat": time.time() - 3600})
    )
    result = operator(template_id, customers(5), out / "results.jsonl", campaign_id="held").execute(ctx())
    assert result["counts"]["sent"] == 5
    captured = capfd.readouterr()
    logged = caplog.text + captured.out + captured.err  # the task logger: stdlib on 2.11, structlog on 3
    assert "Taking over the lease of campaign 'held' from a dead worker" in logged
    assert json.loads(lease_path(leases, sandbox, "held").read_text())["owner"] is None  # given back


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b'{"owner": "x", "beat": Infinity}', b'{"owner": 7, "beat": 1}', b"[" * 100_000, b"\xff\xfe"],
    ids=["empty", "torn", "infinite-beat", "owner-not-text", "deep", "not-utf8"],
)
def test_a_malformed_lease_file_is_free_and_is_replaced_by_this_try(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    content: bytes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    out = tmp_path / "out"
    out.mkdir()
    leases = use_lease_dir(monkeypatch, tmp_path / "leases", sandbox)
    leases.mkdir()
    lease_path(leases, sandbox, "odd").write_bytes(content)
    result = operator(template_id, customers(2), out / "results.jsonl", campaign_id="odd").execute(ctx())
    assert result["counts"]["sent"] == 2
    assert json.loads(lease_path(leases, sandbox, "odd").read_text())["owner"] is None


def test_a_lease_file_that_is_a_symlink_is_refused_and_its_target_untouched(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    out = tmp_path / "out"
    out.mkdir()
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    leases = use_lease_dir(monkeypatch, tmp_path / "leases", sandbox)
    leases.mkdir()
    lease_path(leases, sandbox, "linked").symlink_to(precious)
    sandbox.clear_requests()
    with pytest.raises(Exception, match="symbolic link"):
        operator(template_id, customers(2), out / "results.jsonl", campaign_id="linked").execute(ctx())
    assert precious.read_text() == "keep me"
    assert writes(sandbox) == []


def test_the_lease_on_s3_uses_conditional_writes_and_refuses_a_second_owner(
    make_s3_bucket: Callable[..., object],
) -> None:
    from airflow_provider_docsign._compat import ObjectStoragePath

    make_s3_bucket("leases", conn_id="lease_s3")
    folder = ObjectStoragePath("s3://leases/campaigns/", conn_id="lease_s3")
    first = CampaignLease(folder, "s3-camp", describe="first", stale_after=3600, log=QuietLog())
    second = CampaignLease(folder, "s3-camp", describe="second", stale_after=3600, log=QuietLog(), wait=0)
    first.acquire()
    try:
        with pytest.raises(LeaseHeldError, match="another try \\(first on"):
            second.acquire()
        etag = folder.fs.info(f"leases/campaigns/{lease_name('s3-camp')}")["ETag"]
    finally:
        first.release()
    # Released: the record was replaced (If-Match on the old ETag) and names no owner.
    with quiet_upath():
        released = folder / lease_name("s3-camp")
    assert json.loads(released.read_text())["owner"] is None
    assert folder.fs.info(f"leases/campaigns/{lease_name('s3-camp')}")["ETag"] != etag
    second.acquire()  # free again
    second.release()
