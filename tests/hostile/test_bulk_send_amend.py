"""The bulk send, amended and attacked through its checkpoint: fixed rows, changed rows, forged entries.

Whatever is written beside the result table, the service says what exists: a forged entry never makes
the campaign act on an envelope that is not the row's, and a malformed checkpoint fails in one line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from bulk_helpers import campaign_counts, customers, make_template, operator, read_table, write_csv, writes
from helpers import ctx, signer

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.bulk.store import CHECKPOINT_SUFFIX
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer


def test_fixing_two_invalid_rows_and_running_again_sends_only_them(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    rows = customers(50)
    good = [dict(rows[7]), dict(rows[31])]
    rows[7]["email"] = "not-an-email"
    rows[31]["company"] = "Bell\x07Co"
    source = write_csv(tmp_path / "rows.csv", rows)
    result = tmp_path / "out" / "results.jsonl"
    first = operator(template_id, str(source), result, campaign_id="amend", max_invalid=5).execute(ctx())
    assert first["counts"] == {"sent": 48, "created": 0, "invalid": 2, "failed": 0}
    invalid = [r for r in read_table(result) if r["status"] == "invalid"]
    assert [r["row_key"] for r in invalid] == ["C-0007", "C-0031"]

    rows[7], rows[31] = good  # the user fixes the two rows in the CSV and runs the same campaign again
    write_csv(source, rows)
    sandbox.clear_requests()
    second = operator(template_id, str(source), result, campaign_id="amend", max_invalid=5).execute(ctx())
    assert second["counts"] == {"sent": 50, "created": 0, "invalid": 0, "failed": 0}
    assert [p for m, p in writes(sandbox)] == ["/envelope/use", "/envelope/use"]
    counts = campaign_counts(hook, "amend")
    assert len(counts) == 50
    assert set(counts.values()) == {1}

    # New keys are added, and a sent row is edited: the new ones are sent, the edited one only noted.
    rows[3]["company"] = "Renamed Co"
    rows += customers(52)[50:]
    write_csv(source, rows)
    sandbox.clear_requests()
    third = operator(template_id, str(source), result, campaign_id="amend", max_invalid=5).execute(ctx())
    assert third["counts"]["sent"] == 52
    assert third["amended"] == 1
    assert len(writes(sandbox)) == 2
    (noted,) = [r for r in read_table(result) if r["error"]]
    assert noted["row_key"] == "C-0003"
    assert noted["status"] == "sent"
    assert "changed after its envelope was made" in noted["error"]
    assert set(campaign_counts(hook, "amend").values()) == {1}


def test_a_forged_checkpoint_row_never_touches_another_envelope(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    """``created`` with another team's draft id: the resume must not distribute that draft."""
    template_id = make_template(hook, make_pdf("t.pdf"))
    theirs = hook.create_envelope(title="Not yours", files=[make_pdf("x.pdf")], recipients=[signer()])
    result = tmp_path / "out" / "results.jsonl"
    result.parent.mkdir()
    forged = {
        "version": 2,
        "campaign_id": "forged",
        "rows_total": 3,
        "updated_at": 1.0,
        "rows": [
            ["C-0000", "created", theirs, None, 1, None, None],
            ["C-0001", "sent", theirs, None, 1, None, None],
        ],
    }
    Path(f"{result}{CHECKPOINT_SUFFIX}").write_text(json.dumps(forged))
    sandbox.clear_requests()
    out = operator(template_id, customers(3), result, campaign_id="forged").execute(ctx())
    assert out["counts"]["sent"] == 3
    touched = [
        r for r in sandbox.requests() if theirs in r["path"] or theirs in json.dumps(r.get("json") or {})
    ]
    assert touched == []
    assert hook.get_envelope(theirs).status.value == "DRAFT"
    table = read_table(result)
    assert theirs not in {r["envelope_id"] for r in table}
    assert set(campaign_counts(hook, "forged").values()) == {1}
    assert len(campaign_counts(hook, "forged")) == 3


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"version": 2, "campaign_id": "bad", "updated_at": Infinity, "rows": []}', "Infinity"),
        (b'{"version": 2, "campaign_id": "bad", "updated_at": NaN, "rows": []}', "NaN"),
        (b'{"version": 2, "campaign_id": "bad", "updated_at": 1e400, "rows": []}', "updated_at"),
        (b'{"version": 2, "campaign_id": "bad", "updated_at": 4102444800, "rows": []}', "updated_at"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (b"{torn", "not JSON"),
        (b'{"version": 2, "campaign_id": "bad", "updated_at": 1, "rows": [["C-0000"]]}', "6 or 7"),
        (
            b'{"version": 2, "campaign_id": "bad", "updated_at": 1, "rows": [[1,"sent",null,null,1,null]]}',
            "key",
        ),
        (
            b'{"version": 2, "campaign_id": "bad", "updated_at": 1, '
            b'"rows": [["C-0000","sent",null,null,1e9,null]]}',
            "attempts",
        ),
        (
            b'{"version": 2, "campaign_id": "bad", "updated_at": 1, '
            b'"rows": [["C-0000","done",null,null,1,null]]}',
            "state",
        ),
        (b'{"version": 2, "campaign_id": "bad", "updated_at": 1, "rows": {}}', "no campaign_id or no rows"),
        (b'{"version": 2, "campaign_id": "other", "updated_at": 1, "rows": []}', "belongs to campaign"),
        (b'"just a string"', "unknown version"),
    ],
    ids=[
        "inf",
        "nan",
        "overflow",
        "future",
        "deep",
        "torn",
        "short-row",
        "key-not-text",
        "huge-attempts",
        "unknown-state",
        "rows-not-list",
        "other-campaign",
        "string",
    ],
)
def test_a_malformed_checkpoint_fails_in_one_line_without_a_request(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    content: bytes,
    expected: str,
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    result = tmp_path / "out" / "results.jsonl"
    result.parent.mkdir()
    Path(f"{result}{CHECKPOINT_SUFFIX}").write_bytes(content)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException) as info:  # fails without retries: a retry reads it again
        operator(template_id, customers(2), result, campaign_id="bad").execute(ctx())
    message = str(info.value)
    assert "\n" not in message
    assert expected in message
    assert "checkpoint" in message
    assert sandbox.requests() == []
    assert Path(f"{result}{CHECKPOINT_SUFFIX}").read_bytes() == content  # left as found, for a person
