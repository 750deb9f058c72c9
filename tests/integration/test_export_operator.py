"""The contract-data export against a sandbox holding 1,000 envelopes spread over three days."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import conn_json, ctx

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.export import DocsignExportEnvelopesOperator
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sandbox.synthetic import FREE_TEXT_PREFIX, day_of, synthetic_envelopes

HASH_KEY = "export-test-hash-key-0123456789"
DAY = "2026-11-02"
START, END = "2026-11-02T00:00:00+00:00", "2026-11-03T00:00:00+00:00"


@pytest.fixture(scope="module")
def seeded(
    tmp_path_factory: pytest.TempPathFactory, api_key: str
) -> Iterator[tuple[SandboxServer, list[dict[str, Any]]]]:
    """A sandbox of its own (the session one stays small) with 1,000 envelopes, a fifth in a folder."""
    with SandboxServer(tmp_path_factory.mktemp("export-sandbox"), api_key=api_key) as server:
        hook = DocsignHook(base_url=server.base_url, api_key=api_key)
        folder = hook.create_folder("Contracts 2026").id
        specs = synthetic_envelopes(1000, days=3, folder_ids=(None, None, None, None, folder))
        ids = server.seed(specs)
        for spec, envelope_id in zip(specs, ids, strict=True):
            spec["id"] = envelope_id
        yield server, specs


@pytest.fixture
def conn(seeded: tuple[SandboxServer, Any], monkeypatch: pytest.MonkeyPatch) -> SandboxServer:
    server = seeded[0]
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(server, pii_hash_key=HASH_KEY))
    server.clear_requests()
    return server


def run_export(destination: Path, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("start", START)
    kwargs.setdefault("end", END)
    op = DocsignExportEnvelopesOperator(task_id="export", destination=str(destination), **kwargs)
    result: dict[str, Any] = op.execute(ctx())
    return result


def read_rows(root: Path, table: str, day: str = DAY) -> list[dict[str, Any]]:
    text = (root / table / f"date={day}" / "part-0000.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines()]


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_one_day_exports_exactly_that_days_rows_within_the_request_bound(
    conn: SandboxServer, seeded: tuple[SandboxServer, list[dict[str, Any]]], tmp_path: Path
) -> None:
    specs = seeded[1]
    expected = {s["id"] for s in specs if day_of(s) == DAY}
    result = run_export(tmp_path, pii="keep")

    envelopes = read_rows(tmp_path, "envelopes")
    assert {r["envelope_id"] for r in envelopes} == expected
    assert len(envelopes) == len(expected)
    recipients = read_rows(tmp_path, "recipients")
    fields = read_rows(tmp_path, "field_values")
    assert len(recipients) == 2 * len(expected)
    assert {r["envelope_id"] for r in recipients} == expected
    assert len(fields) == 6 * len(expected)
    assert {r["envelope_id"] for r in fields} == expected
    assert result["rows"] == {
        "envelopes": len(expected),
        "recipients": 2 * len(expected),
        "field_values": 6 * len(expected),
    }
    success = json.loads((tmp_path / "envelopes" / f"date={DAY}" / "_SUCCESS").read_text())
    assert success["rows"] == result["rows"]

    by_id = {s["id"]: s for s in specs}
    row = next(r for r in envelopes if r["status"] == "COMPLETED")
    spec = by_id[row["envelope_id"]]
    assert row["completed_at"] == spec["completedAt"]
    assert row["created_at"] == spec["createdAt"]
    assert row["hours_created_to_completed"] > 0
    assert next(r["value"] for r in fields if r["type"] == "CHECKBOX") in ("Basic", "Premium")

    # Cost: one page per 100 listed (plus one partial page per folder), one get-many per 20 exported,
    # and the folder list. Listing stops at the lookback floor, so at most all 1,000 are listed.
    log = conn.requests()
    lists = [r for r in log if r["method"] == "GET" and r["path"] == "/envelope"]
    many = [r for r in log if r["path"] == "/envelope/get-many"]
    assert len(many) == math.ceil(len(expected) / 20)
    assert len(log) <= math.ceil(1000 / 100) + math.ceil(len(expected) / 20) + 3
    assert len(lists) <= math.ceil(1000 / 100) + 2
    assert all(r["method"] != "GET" or not r["path"].startswith("/envelope/envelope_") for r in log)


def test_a_rerun_replaces_the_partition_with_byte_identical_files(
    conn: SandboxServer, tmp_path: Path
) -> None:
    run_export(tmp_path)
    first = snapshot(tmp_path)
    (tmp_path / "envelopes" / f"date={DAY}" / "stale-from-an-old-run.jsonl").write_text("{}\n")
    run_export(tmp_path)
    assert snapshot(tmp_path) == first
    assert not [p for p in tmp_path.rglob("*") if ".tmp-" in p.name or ".old-" in p.name]


def test_hash_mode_leaves_no_email_name_or_free_text_and_hashes_people_stably(
    conn: SandboxServer, seeded: tuple[SandboxServer, list[dict[str, Any]]], tmp_path: Path, api_key: str
) -> None:
    specs = seeded[1]
    run_export(tmp_path / "a")
    run_export(tmp_path / "b", start="2026-11-03T00:00:00Z", end="2026-11-04T00:00:00Z")
    text = "\n".join(
        b.decode("utf-8") for b in {**snapshot(tmp_path / "a"), **snapshot(tmp_path / "b")}.values()
    )
    secrets = set()
    for spec in specs:
        secrets |= {spec["title"], spec["externalId"]}  # titles often name people: hashed too
        for rec in spec["recipients"]:
            secrets |= {rec["email"], rec["name"]}
            secrets |= {
                f["customText"] for f in rec["fields"] if f["type"] != "CHECKBOX" and "customText" in f
            }
            if rec.get("rejectionReason"):
                secrets.add(rec["rejectionReason"])
    assert any(s.startswith(FREE_TEXT_PREFIX) for s in secrets)
    leaked = sorted(s for s in secrets if s in text)
    assert leaked == []
    assert api_key not in text
    assert HASH_KEY not in text

    # The same person (same e-mail) on two days, exported by two runs, has one hash.
    def hashes(root: Path, day: str) -> dict[int, set[str]]:
        ids = {s["id"]: s for s in specs}
        out: dict[int, set[str]] = {}
        for row in read_rows(root, "recipients", day):
            spec = ids[row["envelope_id"]]
            email = next(r["email"] for r in spec["recipients"] if r["signingOrder"] == row["signing_order"])
            out.setdefault(int(email.split("@")[0][6:]), set()).add(row["email"])
        return out

    a, b = hashes(tmp_path / "a", DAY), hashes(tmp_path / "b", "2026-11-03")
    shared = set(a) & set(b)
    assert shared
    for person in shared:
        assert len(a[person]) == 1
        assert a[person] == b[person]
        assert len(next(iter(a[person]))) == 64


def test_pii_columns_keep_an_opaque_external_id_for_joins(
    conn: SandboxServer, seeded: tuple[SandboxServer, list[dict[str, Any]]], tmp_path: Path
) -> None:
    from airflow_provider_docsign.export.rows import DEFAULT_PII_COLUMNS

    with pytest.raises(ValueError, match="cannot be chosen"):  # refused when the DAG is parsed
        DocsignExportEnvelopesOperator(
            task_id="x", destination=str(tmp_path), pii_columns=["recipients.role"]
        )
    run_export(tmp_path, pii_columns=sorted(DEFAULT_PII_COLUMNS - {"envelopes.external_id"}))
    by_id = {s["id"]: s for s in seeded[1]}
    rows = read_rows(tmp_path, "envelopes")
    assert rows
    for row in rows:
        assert row["external_id"] == by_id[row["envelope_id"]]["externalId"]  # plain: chosen so
        assert row["title"] != by_id[row["envelope_id"]]["title"]  # hashed: the default
        assert len(row["title"]) == 64


def test_drop_mode_nulls_personal_columns(conn: SandboxServer, tmp_path: Path) -> None:
    run_export(tmp_path, pii="drop")
    assert {(r["title"], r["external_id"]) for r in read_rows(tmp_path, "envelopes")} == {(None, None)}
    recipients = read_rows(tmp_path, "recipients")
    assert {r["email"] for r in recipients} == {None}
    assert {r["name"] for r in recipients} == {None}
    values = {r["type"]: r["value"] for r in read_rows(tmp_path, "field_values")}
    assert values["TEXT"] is None
    assert values["CHECKBOX"] in ("Basic", "Premium")


def test_hash_mode_without_a_key_fails_before_listing(
    seeded: tuple[SandboxServer, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from airflow_provider_docsign._compat import AirflowFailException

    server = seeded[0]
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(server))
    server.clear_requests()
    with pytest.raises(AirflowFailException, match="pii_hash_key"):
        run_export(tmp_path)
    assert server.requests() == []
    assert not any(tmp_path.iterdir())


def test_given_folders_only_and_sent_times_from_the_audit_log(
    conn: SandboxServer, seeded: tuple[SandboxServer, list[dict[str, Any]]], tmp_path: Path
) -> None:
    specs = seeded[1]
    folder = next(s["folderId"] for s in specs if s["folderId"])
    run_export(tmp_path, folder_ids=[folder], read_sent_times=True, pii="drop")
    rows = read_rows(tmp_path, "envelopes")
    assert {r["envelope_id"] for r in rows} == {
        s["id"] for s in specs if day_of(s) == DAY and s["folderId"] == folder
    }
    done = [r for r in rows if r["status"] == "COMPLETED"]
    assert done
    assert all(r["sent_at"] is not None for r in done)
    assert all(
        abs(r["hours_created_to_completed"] - r["hours_sent_to_completed"] - 5 / 60) < 1e-6 for r in done
    )


def test_parquet_has_the_documented_types(conn: SandboxServer, tmp_path: Path) -> None:
    import pyarrow as pa  # a test tool: installed in the test venvs
    import pyarrow.parquet as pq

    from airflow_provider_docsign.export.rows import TABLES

    run_export(tmp_path, format="parquet", pii="keep")
    first = snapshot(tmp_path)
    run_export(tmp_path, format="parquet", pii="keep")
    assert snapshot(tmp_path) == first  # Parquet re-runs are byte-identical too
    expected = {
        "string": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("ms", tz="UTC"),
    }
    for table, columns in TABLES.items():
        path = tmp_path / table / f"date={DAY}" / "part-0000.parquet"
        schema = pq.read_schema(path)
        assert [(f.name, f.type) for f in schema] == [(c.name, expected[c.type]) for c in columns]
    envelopes = pq.read_table(tmp_path / "envelopes" / f"date={DAY}" / "part-0000.parquet")
    assert (
        envelopes.num_rows
        == json.loads((tmp_path / "envelopes" / f"date={DAY}" / "_SUCCESS").read_text())["rows"]["envelopes"]
    )
    assert envelopes.column("created_at")[0].as_py().tzinfo is not None
    assert envelopes.column("created_at")[0].as_py() >= datetime(2026, 11, 2, tzinfo=timezone.utc)


def test_export_to_s3_replaces_the_partition_objects(
    conn: SandboxServer, make_s3_bucket: Any, tmp_path: Path
) -> None:
    from airflow_provider_docsign._compat import ObjectStoragePath

    s3 = make_s3_bucket("contract-data", conn_id="export_s3")
    local = tmp_path / "local"
    run_export(local)
    destination = ObjectStoragePath("s3://contract-data/docsign", conn_id="export_s3")
    prefix = f"docsign/envelopes/date={DAY}/"
    s3.put_object(Bucket="contract-data", Key=prefix + "part-0000.parquet", Body=b"stale")
    op = DocsignExportEnvelopesOperator(task_id="export", destination=destination, start=START, end=END)
    result = op.execute(ctx())
    assert result["partitions"]["envelopes"] == f"s3://contract-data/{prefix.rstrip('/')}"
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="contract-data")["Contents"])
    assert [k for k in keys if k.startswith(prefix)] == [prefix + "_SUCCESS", prefix + "part-0000.jsonl"]
    assert len(keys) == 6
    for key in keys:
        body = s3.get_object(Bucket="contract-data", Key=key)["Body"].read()
        assert body == (local / key.removeprefix("docsign/")).read_bytes()
    assert op.outlets[0].uri == "s3://contract-data/docsign"


def test_export_paces_itself_on_rate_limit_headers_before_any_429(
    tmp_path: Path, api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandbox allowing 10 requests a window; the export needs about 16: it waits, never gets a 429.

    The window is 6 s, not the real service's 60: the pacing reads the same ``X-RateLimit-*`` headers
    either way, and the test waits one short window instead of most of a minute.
    """
    with SandboxServer(tmp_path / "limited", api_key=api_key, rate_limit=10, rate_window=6) as limited:
        monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(limited, pii_hash_key=HASH_KEY))
        limited.seed(synthetic_envelopes(12, days=1, first_day=datetime(2026, 11, 2, tzinfo=timezone.utc)))
        result = run_export(tmp_path / "out", read_sent_times=True, folder_ids=[None])
        statuses = [r["status"] for r in limited.requests()]
    assert result["rows"]["envelopes"] == 12
    assert len(statuses) > 10  # more than one window's worth
    assert 429 not in statuses


def test_a_failed_export_leaves_the_previous_partition_untouched(conn: SandboxServer, tmp_path: Path) -> None:
    from airflow_provider_docsign._compat import AirflowFailException

    run_export(tmp_path)
    before = snapshot(tmp_path)
    conn.inject_fault(method="POST", path="/envelope/get-many", action="status", status=400, count=1)
    with pytest.raises(AirflowFailException):
        run_export(tmp_path, pii="keep")  # would change every e-mail column
    conn.clear_faults()
    assert snapshot(tmp_path) == before
    assert [p.name for p in tmp_path.rglob("*") if ".tmp-" in p.name] == []
