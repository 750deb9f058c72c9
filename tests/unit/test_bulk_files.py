"""The campaign's files: the checkpoint (atomic, beside the table), the result table, and parse time."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign.bulk.plan import RESULT_COLUMNS
from airflow_provider_docsign.bulk.store import CHECKPOINT_SUFFIX, CheckpointFile, resolve_path, static_uri
from airflow_provider_docsign.export.store import TableFile


def test_the_checkpoint_lives_beside_the_table_and_is_replaced_whole(tmp_path: Path) -> None:
    table = resolve_path(str(tmp_path / "out" / "results.jsonl"))
    checkpoint = CheckpointFile(table)
    assert checkpoint.read() is None
    checkpoint.write(b'{"v": 1}')
    checkpoint.write(b'{"v": 2}')
    assert checkpoint.read() == b'{"v": 2}'
    assert checkpoint.uri == (tmp_path / "out" / f"results.jsonl{CHECKPOINT_SUFFIX}").as_uri()
    # Nothing but the checkpoint: no temporary file is left behind.
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"results.jsonl{CHECKPOINT_SUFFIX}"]


def test_a_failed_checkpoint_write_leaves_the_old_one(tmp_path: Path) -> None:
    table = resolve_path(str(tmp_path / "results.jsonl"))
    checkpoint = CheckpointFile(table)
    checkpoint.write(b"old")

    gone = memoryview(b"new")
    gone.release()  # writing it fails half way through the write, like a full disk
    with pytest.raises(ValueError, match="released memoryview"):
        checkpoint.write(gone)  # type: ignore[arg-type]
    assert checkpoint.read() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"results.jsonl{CHECKPOINT_SUFFIX}"]


def test_the_result_table_is_published_whole_and_a_failed_write_keeps_the_old_one(tmp_path: Path) -> None:
    target = tmp_path / "results.jsonl"
    table = TableFile(target, RESULT_COLUMNS, "jsonl", name="bulk_results", schema_version=1)
    table.write([{"status": "sent", "row_key": "a", "attempts": 1, "unknown": "dropped"}])
    assert not target.exists()  # nothing at the final name before commit
    assert table.commit() == 1
    line = json.loads(target.read_text())
    assert list(line) == [c.name for c in RESULT_COLUMNS]  # schema order, only the schema's columns
    assert line["row_key"] == "a"

    again = TableFile(target, RESULT_COLUMNS, "jsonl", name="bulk_results", schema_version=1)
    again.write([{"row_key": "b"}])
    again.abort()
    assert json.loads(target.read_text())["row_key"] == "a"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]


def test_the_parquet_result_table_has_the_documented_types(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the parquet extra)")
    import pyarrow.parquet as pq

    target = tmp_path / "results.parquet"
    table = TableFile(target, RESULT_COLUMNS, "parquet", name="bulk_results", schema_version=1)
    table.write([{"row_key": "a", "status": "sent", "attempts": 2, "sent_at": "2027-01-01T10:00:00.000Z"}])
    table.commit()
    read = pq.read_table(target)
    types = {f.name: str(f.type) for f in read.schema}
    assert types == {
        "row_key": "string",
        "external_id": "string",
        "envelope_id": "string",
        "status": "string",
        "error": "string",
        "attempts": "int64",
        "sent_at": "timestamp[ms, tz=UTC]",
    }
    assert read.schema.metadata[b"docsign_table"] == b"bulk_results"


def test_static_uris_never_carry_a_connection_id_and_templated_ones_are_unknown(tmp_path: Path) -> None:
    assert static_uri("s3://aws_legal@bucket/campaigns/r.jsonl") == "s3://bucket/campaigns/r.jsonl"
    assert static_uri("gs://bucket/r.jsonl") == "gs://bucket/r.jsonl"
    assert static_uri(str(tmp_path / "r.jsonl")) == (tmp_path / "r.jsonl").as_uri()
    assert static_uri("file:///data/r.jsonl") == "file:///data/r.jsonl"
    assert static_uri("{{ params.work_dir }}/r.jsonl") is None
    assert static_uri(None) is None


def test_the_operator_is_checked_when_the_dag_is_parsed_and_looks_nothing_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airflow_provider_docsign.operators import DocsignBulkSendOperator

    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a network connection at parse time")

    monkeypatch.setattr(socket, "create_connection", no_network)
    op = DocsignBulkSendOperator(
        task_id="send", rows="s3://aws_default@b/rows.csv", result_table="s3://aws_default@b/results.jsonl"
    )
    assert "hook" not in op.__dict__
    assert [a.uri for a in op.outlets] == ["s3://b/results.jsonl"]
    assert op.campaign_id is None  # <dag id>.<task id> when it runs: the same for every run
    assert op.default_campaign_id == f"{op.dag_id}.{op.task_id}"
    assert set(op.template_fields) == {
        "rows",
        "result_table",
        "campaign_id",
        "template_id",
        "folder_id",
        "files_root",
    }
    for bad, match in (
        ({"max_in_flight": 17}, "max_in_flight must be 1-16"),
        ({"max_in_flight": 0}, "max_in_flight must be 1-16"),
        ({"reserve_fraction": 1.0}, "reserve_fraction"),
        ({"max_invalid": -1}, "max_invalid"),
        ({"max_failures": "ten"}, "max_failures"),
        ({"input_format": "xlsx"}, "input_format"),
        ({"output_format": "csv"}, "output_format"),
        ({"expiration_period": "14 days"}, "14 days"),
    ):
        with pytest.raises(ValueError, match=match):
            DocsignBulkSendOperator(task_id="send", rows=[], result_table="/tmp/r.jsonl", **bad)
