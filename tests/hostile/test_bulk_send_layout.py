"""One campaign whatever the layout: per-run folders, object stores, repeated keys, a lost checkpoint.

Every case counts what reached the sandbox (envelopes per externalId, create requests) and, for the
lease, the bytes of the files around it. Leases live in ``[docsign] campaign_lease_dir``, set to the
test's own folder; the heartbeat is short (``campaign_lease_heartbeat``) and so is the connection's
read timeout, so that a stale period is a few seconds.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bulk_helpers import (
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
from template_helpers import field

from airflow_provider_docsign.bulk.store import CHECKPOINT_SUFFIX, service_identity
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer


@pytest.fixture
def leases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: SandboxServer, docsign_conn: str
) -> Path:
    """This test's lease folder, a 0.2 s heartbeat and a 1 s read timeout: a stale period of 3.4 s."""
    return use_lease_dir(monkeypatch, tmp_path / "leases", sandbox)


def _lease_path(folder: Path, sandbox: SandboxServer, campaign: str) -> Path:
    return lease_path(folder, sandbox, campaign)


def _one_sends(outputs: list[tuple[int, str]]) -> None:
    """Every try green, or failed naming the owner; at least one finished."""
    assert any(code == 0 for code, _ in outputs), outputs
    for code, text in outputs:
        assert code == 0 or "is being sent by another try" in text, text[-3000:]


@pytest.mark.parametrize("store", ["local", "s3"])
def test_two_tries_with_result_tables_in_two_run_folders_started_together_send_each_row_once(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    make_s3_bucket: Callable[..., Any],
    tmp_path: Path,
    leases: Path,
    store: str,
) -> None:
    """``results/{{ run_id }}/results.jsonl``: 30 rows, two tries at once, 30 envelopes (not 60)."""
    template_id = make_template(hook, make_pdf("t.pdf"))
    rows = write_csv(tmp_path / "rows.csv", customers(30))
    if store == "s3":
        bucket = f"runs-{uuid.uuid4().hex[:12]}"
        make_s3_bucket(bucket, conn_id="runs_s3")
        results = [f"s3://runs_s3@{bucket}/results/run-{n}/results.jsonl" for n in (1, 2)]
    else:
        results = [str(tmp_path / "results" / f"run-{n}" / "results.jsonl") for n in (1, 2)]
    sandbox.inject_fault("POST", "/envelope/use", "delay", delay=0.05, count=30)
    sandbox.clear_requests()
    campaign = f"per-run-{store}"
    outputs = run_tries_together(tmp_path, template_id, rows, results, campaign)
    _one_sends(outputs)
    counts = campaign_counts(hook, campaign)
    assert len(counts) == 30
    assert set(counts.values()) == {1}
    assert sum(1 for r in sandbox.requests() if r["path"] == "/envelope/use") == 30
    # One try sent all 30; a later one waited for the lease (in any folder, any store) and adopted
    # them, or, when the owner was still sending after one stale period (a busy machine), failed
    # naming it (checked by _one_sends). Which of the two happens depends on the machine's speed.
    green = [text for code, text in outputs if code == 0]
    assert all("'sent': 30" in text for text in green), outputs  # every row reported sent
    assert sum("'adopted': 0," in text for text in green) == 1, outputs  # by one sender
    assert all("'adopted': 0," in text or "'adopted': 30," in text for text in green), outputs


def test_a_live_owner_is_waited_for_one_stale_period_then_named_and_nothing_is_sent(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    leases: Path,
    task_log: Callable[[], str],
) -> None:
    from airflow_provider_docsign.bulk.lease import LeaseHeldError

    template_id = make_template(hook, make_pdf("t.pdf"))
    with live_lease(leases, sandbox, "alive"):
        sandbox.clear_requests()
        with pytest.raises(LeaseHeldError, match=r"campaign 'alive' is being sent by another try \(dag.send"):
            operator(template_id, customers(3), tmp_path / "r.jsonl", campaign_id="alive").execute(ctx())
        assert sandbox.requests() == []
    assert "Waiting up to 3s for the lease of campaign 'alive'" in task_log()
    # Given back: the next try takes it at once.
    assert (
        operator(template_id, customers(3), tmp_path / "r.jsonl", campaign_id="alive").execute(ctx())[
            "counts"
        ]["sent"]
        == 3
    )


def test_a_repeated_key_is_invalid_on_every_try_and_the_first_rows_record_is_untouched(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path, leases: Path
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    rows = customers(4)
    rows.insert(3, {**rows[2], "email": "someone.else@example.test", "name": "Someone Else"})  # K-2 twice
    source = write_csv(tmp_path / "rows.csv", rows)
    result = tmp_path / "out" / "results.jsonl"
    checkpoint = Path(f"{result}{CHECKPOINT_SUFFIX}")
    verdicts, firsts = [], []
    for _ in range(3):  # a retry, a second trigger, the docs' "run again"
        out = operator(template_id, str(source), result, campaign_id="repeat", max_invalid=1).execute(ctx())
        assert out["counts"] == {"sent": 4, "created": 0, "invalid": 1, "failed": 0}
        table = read_table(result)
        verdicts.append((table[3]["status"], table[3]["envelope_id"], table[3]["error"]))
        firsts.append(table[2])
        keys = [entry[0] for entry in json.loads(checkpoint.read_text())["rows"]]
        assert sorted(keys) == sorted({r["row_key"] for r in rows})  # each key once
    assert verdicts == [("invalid", None, "row_key 'C-0002' repeats the key of line 4")] * 3
    assert firsts[0] == firsts[1] == firsts[2]  # envelope, attempts, sent_at: untouched
    assert firsts[0]["attempts"] == 1
    # The fourth try reads the checkpoint the third wrote.
    operator(template_id, str(source), result, campaign_id="repeat", max_invalid=1).execute(ctx())
    counts = campaign_counts(hook, "repeat")
    assert counts == {f"repeat(C-000{n})": 1 for n in range(4)}
    # The checkpoint lost: rebuilt from the service alone, the repeat is invalid, never "sent".
    checkpoint.unlink()
    sandbox.clear_requests()
    out = operator(template_id, str(source), result, campaign_id="repeat", max_invalid=1).execute(ctx())
    assert out["counts"] == {"sent": 4, "created": 0, "invalid": 1, "failed": 0}
    table = read_table(result)
    assert table[3]["status"] == "invalid"
    assert table[3]["envelope_id"] is None
    assert table[2]["envelope_id"] == firsts[0]["envelope_id"]
    assert writes(sandbox) == []


def test_an_amendment_whose_new_row_repeats_a_sent_key_is_invalid_naming_its_line(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path, leases: Path
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    rows = customers(3)
    source = write_csv(tmp_path / "rows.csv", rows)
    result = tmp_path / "results.jsonl"
    operator(template_id, str(source), result, campaign_id="amend-typo").execute(ctx())
    sent = read_table(result)
    amended = [*rows, {**rows[1], "email": "new.customer@example.test", "name": "New Customer"}]
    write_csv(source, amended)
    sandbox.clear_requests()
    out = operator(template_id, str(source), result, campaign_id="amend-typo", max_invalid=1).execute(ctx())
    table = read_table(result)
    assert table[3] == {**table[3], "status": "invalid", "envelope_id": None}
    assert table[3]["error"] == "row_key 'C-0001' repeats the key of line 3"
    assert table[:3] == sent  # the customer who holds the key keeps its envelope and record
    assert out["counts"]["invalid"] == 1
    assert writes(sandbox) == []
    assert campaign_counts(hook, "amend-typo") == {f"amend-typo(C-000{n})": 1 for n in range(3)}


def test_a_checkpoint_refused_says_what_to_do(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path, leases: Path
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    result = tmp_path / "results.jsonl"
    broken = b'{"version": 2, "campaign_id": "refused", "rows": "torn'
    Path(f"{result}{CHECKPOINT_SUFFIX}").write_bytes(broken)
    sandbox.clear_requests()
    with pytest.raises(Exception, match=r"move it aside .* run the task again: the next try rebuilds"):
        operator(template_id, customers(2), result, campaign_id="refused").execute(ctx())
    assert Path(f"{result}{CHECKPOINT_SUFFIX}").read_bytes() == broken
    assert writes(sandbox) == []


def test_a_hard_link_at_the_lease_path_is_refused_and_the_linked_file_is_byte_identical(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path, leases: Path
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    precious = tmp_path / "another-campaign.checkpoint.json"
    precious.write_bytes(b'{"version": 2, "precious": true}\n')
    before = precious.read_bytes()
    leases.mkdir()
    os.link(precious, _lease_path(leases, sandbox, "linked"))
    sandbox.clear_requests()
    with pytest.raises(Exception, match=r"LeaseRefusedError: the lease of campaign 'linked' .* has 2 links"):
        operator(template_id, customers(2), tmp_path / "r.jsonl", campaign_id="linked").execute(ctx())
    assert precious.read_bytes() == before
    assert sandbox.requests() == []


def test_a_heartbeat_ten_years_ahead_is_taken_over_with_a_warning_naming_the_skew(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    leases: Path,
    task_log: Callable[[], str],
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    leases.mkdir()
    ahead = time.time() + 10 * 365 * 86400
    record = {"version": 1, "owner": "skewed", "describe": "a skewed worker", "beat": ahead}
    _lease_path(leases, sandbox, "future").write_text(json.dumps(record))
    out = operator(template_id, customers(2), tmp_path / "r.jsonl", campaign_id="future").execute(ctx())
    assert out["counts"]["sent"] == 2
    logged = task_log()
    assert "names a skewed worker with a heartbeat 315360000s in the future" in logged
    assert "a clock problem" in logged
    assert "Waiting up to" not in logged  # never believed fresh: taken over at once
    assert campaign_counts(hook, "future") == {"future(C-0000)": 1, "future(C-0001)": 1}


def test_the_lease_is_one_per_campaign_and_service_whatever_the_result_tables_folder(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path, leases: Path
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    for n in (1, 2):
        operator(template_id, customers(2), tmp_path / f"run-{n}" / "r.jsonl", campaign_id="one").execute(
            ctx()
        )
    (lease,) = leases.iterdir()
    assert lease == _lease_path(leases, sandbox, "one")
    body = json.loads(lease.read_text())
    assert body["owner"] is None
    assert body["service"] == service_identity(sandbox.base_url)
    assert sandbox.api_key not in lease.read_text()
    assert not list(tmp_path.glob("run-*/.docsign-campaign-*"))  # nothing beside the result tables


def test_a_row_folder_swapped_for_a_link_out_of_files_root_never_reaches_the_sandbox(
    docsign_conn: str, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    import threading

    from airflow_provider_docsign.operators.bulk import DocsignBulkSendOperator

    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    inside_a = make_pdf("a.pdf", title="inside a").read_bytes()
    (root / "a" / "c.pdf").write_bytes(inside_a)
    (root / "b" / "c.pdf").write_bytes(make_pdf("b.pdf", title="inside b").read_bytes())
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = make_pdf("secret.pdf", title="outside files_root").read_bytes()
    (outside / "c.pdf").write_bytes(secret)
    rows = [
        {"row_key": "a", "email": "a@example.test", "name": "A", "files": "a/c.pdf"},
        {"row_key": "b", "email": "b@example.test", "name": "B", "files": "b/c.pdf"},
    ]
    op = DocsignBulkSendOperator(
        task_id="bulk",
        rows=rows,
        result_table=str(tmp_path / "r.jsonl"),
        campaign_id=f"swapped-{uuid.uuid4().hex[:8]}",
        title="Contract {name}",
        recipients=[
            {"email": "{email}", "name": "{name}", "role": "SIGNER", "fields": [field("SIGNATURE", 1, 80)]}
        ],
        files_root=str(root),
        max_in_flight=1,
        max_failures=5,
    )
    # Row a's distribute is held 2 s at the sandbox; once its create is answered (every row was checked
    # before it, and row b is sent only after row a), row b's folder is swapped for a link out of files_root.
    sandbox.inject_fault("POST", "/envelope/distribute", "delay", delay=2.0, count=1)
    sandbox.clear_requests()

    def swap() -> None:
        deadline = time.monotonic() + 60
        while not any(r["path"] == "/envelope/create" for r in sandbox.requests()):
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        (root / "b").rename(tmp_path / "b-moved")
        (root / "b").symlink_to(outside, target_is_directory=True)

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        out = op.execute(ctx())
    finally:
        swapper.join()
    assert (root / "b").is_symlink()  # the swap happened while the campaign ran
    table = {r["row_key"]: r for r in read_table(tmp_path / "r.jsonl")}
    assert table["a"]["status"] == "sent"
    assert table["b"]["status"] == "failed"
    assert "lies outside files_root" in table["b"]["error"]
    assert out["counts"]["failed"] == 1
    assert sum(1 for r in sandbox.requests() if r["path"] == "/envelope/create") == 1
    uploaded = [sandbox.item_bytes(i, "original") for i in _item_ids(sandbox, op.campaign_id)]
    assert uploaded == [inside_a]  # the outside file's bytes never reached the sandbox
    assert secret not in uploaded


def _item_ids(sandbox: SandboxServer, campaign: str) -> list[str]:
    with DocsignHook(base_url=sandbox.base_url, api_key=sandbox.api_key) as h:
        return [
            item.id for e in h.find_envelopes(query=f"{campaign}(") for item in h.get_envelope(e.id).items
        ]


def test_open_confined_refuses_a_link_swapped_in_after_the_check(tmp_path: Path) -> None:
    from airflow_provider_docsign._sources import OutsideFolderError, open_confined

    root = tmp_path / "root"
    (root / "row").mkdir(parents=True)
    (root / "row" / "f.pdf").write_bytes(b"%PDF-inside")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.pdf").write_bytes(b"%PDF-outside")
    checked = os.path.realpath(root / "row" / "f.pdf")  # what the check found, inside
    with open_confined(root, checked) as fh:
        assert fh.read() == b"%PDF-inside"
    (root / "row").rename(tmp_path / "row-moved")
    (root / "row").symlink_to(outside, target_is_directory=True)  # swapped after the check
    with pytest.raises(OutsideFolderError, match="a symbolic link now"):
        open_confined(root, checked)
    os.unlink(root / "row")
    (root / "row").mkdir()
    (root / "row" / "f.pdf").symlink_to(outside / "f.pdf")  # the file itself a link
    with pytest.raises(OutsideFolderError):
        open_confined(root, checked)
    with pytest.raises(OutsideFolderError):
        open_confined(root, outside / "f.pdf")
    assert (outside / "f.pdf").read_bytes() == b"%PDF-outside"
