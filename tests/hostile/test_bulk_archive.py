"""A campaign's batch archive fed what a careless or hostile user could give it.

Result tables with rejected, cancelled and pending rows (``on_unsigned`` skip vs fail), ids the service
does not know, duplicate ids, odd ids, a table named ``.csv`` and a file that is not a result table.
Each outcome is asserted where it can be seen: the folders and manifests on disk, the requests counted
at the sandbox, the task's XCom, log and error.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_envelope, ctx, signer

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.archive.batch import BatchOutcome
from airflow_provider_docsign.exceptions import DocsignArchiveError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive_batch import (
    BatchProgress,
    DocsignBatchArchiveOperator,
    progress_line,
)
from airflow_provider_docsign.sandbox import SandboxServer

COLUMNS = ("row_key", "external_id", "envelope_id", "status", "error", "attempts", "sent_at")
#: A rejection reason that would forge a log line and reverse the text after it, if printed raw.
HOSTILE_REASON = "Not my contract\nINFO forged: all envelopes archived \u202etxt.exe"


def write_table(path: Path, rows: list[dict[str, Any]]) -> Path:
    """A result table as the bulk operator writes it (JSON Lines), whatever the file is named."""
    path.write_text("".join(json.dumps({c: row.get(c) for c in COLUMNS}) + "\n" for row in rows))
    return path


def sent(*ids: str) -> list[dict[str, Any]]:
    return [{"row_key": str(i), "envelope_id": e, "status": "sent", "attempts": 1} for i, e in enumerate(ids)]


def downloads(sandbox: SandboxServer) -> list[str]:
    return [r["path"] for r in sandbox.requests() if r["path"].endswith("/download")]


def archived_folders(destination: Path) -> list[str]:
    return sorted(p.parent.name for p in destination.glob("*/manifest.json"))


class Recorder:
    """Stands for the task's logger (structlog on Airflow 3, logging on 2.11): keeps each message."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def _keep(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.messages.append(msg % args if args else msg)

    debug = info = warning = error = exception = _keep


@pytest.fixture
def messages(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """The batch archive's log messages so far."""
    recorder = Recorder()
    monkeypatch.setattr(DocsignBatchArchiveOperator, "log", property(lambda self: recorder))
    return lambda: list(recorder.messages)


@pytest.fixture
def mixed(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> dict[str, str]:
    """Two COMPLETED envelopes, one REJECTED (with a hostile reason), one CANCELLED, one PENDING."""
    envelopes = {
        f"done{i}": completed_envelope(
            hook, sandbox, [make_pdf(f"done{i}.pdf")], title=f"Done {i}", external_id=f"hostile-archive({i})"
        )
        for i in range(2)
    }
    for name in ("rejected", "cancelled", "pending"):
        envelope_id = hook.create_envelope(
            title=name, files=[make_pdf(f"{name}.pdf")], recipients=[signer()], external_id=f"hostile-{name}"
        )
        hook.distribute_envelope(envelope_id)
        envelopes[name] = envelope_id
    (recipient,) = hook.get_envelope(envelopes["rejected"]).recipients
    sandbox.reject(envelopes["rejected"], recipient.id, HOSTILE_REASON)
    sandbox.wait_status(envelopes["rejected"], "REJECTED", timeout=20)
    hook.cancel_envelope(envelopes["cancelled"], reason="changed our mind")
    sandbox.wait_status(envelopes["cancelled"], "CANCELLED", timeout=20)
    return envelopes


def test_skip_archives_the_completed_ones_and_lists_each_unsigned_once(
    mixed: dict[str, str],
    hook: DocsignHook,
    sandbox: SandboxServer,
    tmp_path: Path,
    messages: Callable[[], list[str]],
) -> None:
    table = write_table(tmp_path / "results.jsonl", sent(*mixed.values()))
    destination = tmp_path / "archive"
    op = DocsignBatchArchiveOperator(
        task_id="archive", result_table=str(table), destination=str(destination), on_unsigned="skip"
    )
    sandbox.clear_requests()
    result = op.execute(ctx())

    assert (result["envelopes"], result["archived"], result["not_signed"], result["failed"]) == (5, 2, 3, 0)
    by_id = {e["envelope_id"]: e for e in result["not_signed_envelopes"]}
    assert {k: by_id[mixed[k]]["status"] for k in ("rejected", "cancelled", "pending")} == {
        "rejected": "REJECTED",
        "cancelled": "CANCELLED",
        "pending": "PENDING",
    }
    reason = by_id[mixed["rejected"]]["reason"]
    assert "Not my contract" in reason
    assert "\n" not in reason  # one line, whatever the signer typed
    assert by_id[mixed["cancelled"]]["reason"] is None
    assert by_id[mixed["pending"]]["reason"] is None
    json.dumps(result)  # the XCom is JSON-safe

    # On disk: the two completed envelopes, nothing of the others.
    assert archived_folders(destination) == ["hostile-archive(0)", "hostile-archive(1)"]
    assert not any(
        name.startswith("hostile-") and "archive" not in name for name in archived_folders(destination)
    )
    assert sorted(p.name for p in destination.iterdir()) == ["hostile-archive(0)", "hostile-archive(1)"]
    # At the sandbox: one read of the five, and downloads of the completed envelopes' items only.
    done_items = {i.id for k in ("done0", "done1") for i in hook.get_envelope(mixed[k]).items}
    assert sorted(downloads(sandbox)) == sorted(f"/envelope/item/{i}/download" for i in done_items)
    assert Counter(r["path"] for r in sandbox.requests())["/envelope/get-many"] == 1

    # The log: each unsigned envelope named once, on one line, the reason's control characters escaped.
    logged = [m for m in messages() if m.startswith("Not archived (on_unsigned='skip')")]
    assert sorted(next(k for k, v in mixed.items() if v in m) for m in logged) == [
        "cancelled",
        "pending",
        "rejected",
    ]
    (rejected_line,) = [m for m in logged if mixed["rejected"] in m]
    assert "REJECTED" in rejected_line
    assert "Not my contract" in rejected_line
    assert "\n" not in rejected_line
    assert "\u202e" not in rejected_line
    assert not any(m.startswith("INFO forged") for m in messages())


def test_fail_archives_the_completed_ones_then_fails_naming_the_others(
    mixed: dict[str, str], sandbox: SandboxServer, tmp_path: Path
) -> None:
    table = write_table(tmp_path / "results.jsonl", sent(*mixed.values()))
    destination = tmp_path / "archive"
    op = DocsignBatchArchiveOperator(task_id="archive", result_table=str(table), destination=str(destination))
    assert op.on_unsigned == "fail"  # the default
    sandbox.clear_requests()
    # A PENDING envelope may still be signed: the task fails so that a retry can archive it.
    with pytest.raises(DocsignArchiveError) as failed:
        op.execute(ctx())
    message = str(failed.value)
    assert message.startswith("3 of 5 envelope(s) could not be archived (the others were)")
    for name, status in (("rejected", "REJECTED"), ("cancelled", "CANCELLED"), ("pending", "PENDING")):
        assert f"{mixed[name]}: envelope {mixed[name]} is {status}" in message
    assert "\u202e" not in message
    assert archived_folders(destination) == ["hostile-archive(0)", "hostile-archive(1)"]
    assert len(downloads(sandbox)) == 2

    # Without the pending one, nothing can change by retrying: the task fails for good.
    table = write_table(tmp_path / "final.jsonl", sent(mixed["done0"], mixed["rejected"], mixed["cancelled"]))
    op = DocsignBatchArchiveOperator(task_id="archive", result_table=str(table), destination=str(destination))
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="2 of 3 envelope"):
        op.execute(ctx(try_number=2))
    assert downloads(sandbox) == []  # done0 was archived already: skipped, nothing downloaded


def test_an_id_the_service_does_not_know_is_deleted_with_skip_and_fails_the_task_otherwise(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    messages: Callable[[], list[str]],
) -> None:
    """A foreign (or deleted) id counts as the batch wait counts it: DELETED, one that did not complete."""
    done = completed_envelope(hook, sandbox, [make_pdf("a.pdf")], title="A", external_id="known(1)")
    foreign = "envelope_belongstoanotherteam"
    table = write_table(tmp_path / "results.jsonl", sent(done, foreign))

    strict = DocsignBatchArchiveOperator(
        task_id="archive", result_table=str(table), destination=str(tmp_path / "strict")
    )
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=f"{foreign}: not found"):
        strict.execute(ctx())
    assert archived_folders(tmp_path / "strict") == ["known(1)"]  # the known one is archived all the same
    assert len(downloads(sandbox)) == 1

    lenient = DocsignBatchArchiveOperator(
        task_id="archive", result_table=str(table), destination=str(tmp_path / "lenient"), on_unsigned="skip"
    )
    sandbox.clear_requests()
    result = lenient.execute(ctx())
    assert (result["archived"], result["not_signed"], result["failed"]) == (1, 1, 0)
    assert result["not_signed_envelopes"] == [
        {
            "envelope_id": foreign,
            "status": "DELETED",
            "reason": "not found: deleted, or not the API key's team",
        }
    ]
    assert archived_folders(tmp_path / "lenient") == ["known(1)"]
    assert len(downloads(sandbox)) == 1
    assert [m for m in messages() if foreign in m] == [
        f"Not archived (on_unsigned='skip'): envelope {foreign} is DELETED "
        "(not found: deleted, or not the API key's team)"
    ]


def test_not_one_envelope_found_is_never_a_success(
    sandbox: SandboxServer, docsign_conn: str, tmp_path: Path
) -> None:
    """Every id unknown (a key of another team, most likely): the task fails even with skip."""
    table = write_table(tmp_path / "results.jsonl", sent("envelope_foreign1", "envelope_foreign2"))
    op = DocsignBatchArchiveOperator(
        task_id="archive", result_table=str(table), destination=str(tmp_path / "archive"), on_unsigned="skip"
    )
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="none of the 2 envelope\\(s\\) was found"):
        op.execute(ctx())
    assert [r["path"] for r in sandbox.requests()] == ["/envelope/get-many"]
    assert not (tmp_path / "archive").exists()  # nothing written


def test_duplicate_ids_are_archived_once(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    done = completed_envelope(hook, sandbox, [make_pdf("a.pdf")], title="A", external_id="dup(1)")
    rows = sent(done, done, done)
    rows.append({"row_key": "again", "envelope_id": done, "status": "sent"})
    table = write_table(tmp_path / "results.jsonl", rows)
    destination = tmp_path / "archive"
    op = DocsignBatchArchiveOperator(task_id="archive", result_table=str(table), destination=str(destination))
    sandbox.clear_requests()
    result = op.execute(ctx())
    assert (result["envelopes"], result["archived"], result["skipped"]) == (1, 1, 0)
    assert archived_folders(destination) == ["dup(1)"]
    assert len(downloads(sandbox)) == 1
    assert Counter(r["path"] for r in sandbox.requests())["/envelope/get-many"] == 1


@pytest.mark.parametrize("name", ["results.csv", "results.out", "results"])
def test_a_table_whose_name_does_not_say_its_format_is_refused_before_any_request(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path, name: str
) -> None:
    done = completed_envelope(hook, sandbox, [make_pdf("a.pdf")], title="A", external_id="named(1)")
    table = write_table(tmp_path / name, sent(done))
    destination = tmp_path / "archive"
    op = DocsignBatchArchiveOperator(task_id="archive", result_table=str(table), destination=str(destination))
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="give result_table_format"):
        op.execute(ctx())
    assert sandbox.requests() == []
    assert not destination.exists()

    # Told the format, the same table is read.
    op = DocsignBatchArchiveOperator(
        task_id="archive", result_table=str(table), destination=str(destination), result_table_format="jsonl"
    )
    assert op.execute(ctx(try_number=2))["archived"] == 1
    assert archived_folders(destination) == ["named(1)"]


@pytest.mark.parametrize(
    ("content", "fmt", "error"),
    [
        ('{"name": "Sam", "email": "sam@example.test"}\n', None, "not a bulk result table"),
        ("row_key,envelope_id,status\n1,envelope_x,sent\n", None, "JSON"),
        ('{"row_key": "1", "envelope_id": "envelope_x", "status": "sent"}\n', "parquet", "arquet"),
        (
            '{"row_key": "1", "envelope_id": "envelope x\\nINFO forged", "status": "sent"}\n',
            None,
            "bad envelope id",
        ),
        ('{"row_key": "1", "envelope_id": "../../etc/passwd", "status": "sent"}\n', None, "bad envelope id"),
    ],
    ids=["other-rows", "csv-inside", "json-as-parquet", "newline-id", "path-id"],
)
def test_a_file_that_is_not_a_result_table_fails_clearly_before_any_request(
    sandbox: SandboxServer, docsign_conn: str, tmp_path: Path, content: str, fmt: str | None, error: str
) -> None:
    table = tmp_path / "results.jsonl"
    table.write_text(content)
    destination = tmp_path / "archive"
    op = DocsignBatchArchiveOperator(
        task_id="archive", result_table=str(table), destination=str(destination), result_table_format=fmt
    )
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=error) as failed:
        op.execute(ctx())
    assert str(failed.value).startswith("archive: ")
    assert "\n" not in str(failed.value)  # one line: nothing from the file forges a log line
    assert sandbox.requests() == []
    assert not destination.exists()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"on_unsigned": "ignore"}, "on_unsigned must be 'fail' or 'skip'"),
        ({"on_unsigned": "SKIP"}, "on_unsigned must be 'fail' or 'skip'"),
        ({"on_unsigned": None}, "on_unsigned must be 'fail' or 'skip'"),
        ({"result_table_format": "csv"}, "result_table_format must be one of jsonl, parquet"),
        ({"result_table_format": "json"}, "result_table_format must be one of jsonl, parquet"),
        ({"progress_every": 0}, "progress_every must be a whole number >= 1"),
        ({"progress_every": True}, "progress_every must be a whole number >= 1"),
        ({"progress_every": 2.5}, "progress_every must be a whole number >= 1"),
        ({"progress_seconds": 0}, "progress_seconds must be a number > 0"),
        ({"progress_seconds": "30"}, "progress_seconds must be a number > 0"),
        ({"progress_seconds": float("nan")}, "progress_seconds must be a number > 0"),
    ],
)
def test_bad_arguments_are_refused_at_parse_time(kwargs: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        DocsignBatchArchiveOperator(task_id="a", destination="/tmp/x", result_table="r.jsonl", **kwargs)


def test_a_result_table_format_without_a_result_table_is_refused() -> None:
    with pytest.raises(ValueError, match="result_table_format applies to a result_table"):
        DocsignBatchArchiveOperator(
            task_id="a", destination="/tmp/x", envelope_ids=["envelope_a"], result_table_format="jsonl"
        )


def test_one_progress_line_per_envelope_with_progress_every_1(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    messages: Callable[[], list[str]],
) -> None:
    ids = [
        completed_envelope(
            hook, sandbox, [make_pdf(f"p{i}.pdf")], title=f"P {i}", external_id=f"progress({i})"
        )
        for i in range(3)
    ]
    pending = hook.create_envelope(title="open", files=[make_pdf("open.pdf")], recipients=[signer()])
    hook.distribute_envelope(pending)
    op = DocsignBatchArchiveOperator(
        task_id="archive",
        envelope_ids=[*ids, pending, "envelope_unknownbyanyone"],
        destination=str(tmp_path / "archive"),
        on_unsigned="skip",
        progress_every=1,
        progress_seconds=3600,
    )
    op.execute(ctx())
    lines = [m for m in messages() if m.startswith("Batch archive: ")]
    assert len(lines) == 5, lines
    assert lines[-1].startswith(
        "Batch archive: 5/5 envelopes done (archived 3, already archived 0, not signed 2, failed 0); "
    )
    assert "ETA" not in lines[-1]  # nothing left


def test_the_progress_line_reads_a_fake_clock() -> None:
    outcome = BatchOutcome(destination="file:///archive", archived=1_150, skipped=47, not_signed=3)
    assert progress_line(outcome, 10_000, 1_800.0) == (
        "Batch archive: 1,200/10,000 envelopes done (archived 1,150, already archived 47, not signed 3, "
        "failed 0); 40.0 envelopes/min; ETA 3h40m"
    )
    now = [0.0]
    logged: list[str] = []

    class Log:
        def info(self, fmt: str, *args: Any) -> None:
            logged.append(fmt % args)

    empty = BatchOutcome(destination="file:///archive")
    progress = BatchProgress(empty, 10, every=100, seconds=30, log=Log(), clock=lambda: now[0])
    empty.archived = 1
    now[0] = 29.0
    progress.tick()
    assert logged == []  # neither 100 envelopes nor 30 seconds yet
    now[0] = 30.0
    progress.tick()
    assert logged == [
        "Batch archive: 1/10 envelopes done (archived 1, already archived 0, not signed 0, "
        "failed 0); 2.0 envelopes/min; ETA 4m30s"
    ]
    now[0] = 45.0
    progress.tick()
    assert len(logged) == 1  # 15 seconds since the last line
    now[0] = 61.0
    progress.tick()  # nothing more done, but 30 seconds: a line all the same (the task is alive)
    assert len(logged) == 2
