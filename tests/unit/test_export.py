"""The export's pure rules: PII policy, selection window, rows, and the parquet refusal without pyarrow."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone

import pytest

from airflow_provider_docsign.export.rows import (
    DEFAULT_PII_COLUMNS,
    TABLES,
    ExportConfigError,
    PiiPolicy,
    Window,
    envelope_rows,
    jsonl_line,
    pii_columns,
    select,
)
from airflow_provider_docsign.service.models import Envelope, EnvelopeSummary

UTC = timezone.utc


def test_hash_mode_needs_a_key_and_never_hashes_unkeyed() -> None:
    with pytest.raises(ExportConfigError, match="pii_hash_key"):
        PiiPolicy("hash", None)
    with pytest.raises(ExportConfigError, match="pii must be one of"):
        PiiPolicy("mask", b"k")


def test_hash_is_keyed_and_case_insensitive_for_emails() -> None:
    a, b = PiiPolicy("hash", b"key-1"), PiiPolicy("hash", b"key-2")
    assert a.apply("Ann@Example.test", email=True) == a.apply(" ann@example.test", email=True)
    assert a.apply("ann@example.test", email=True) != b.apply("ann@example.test", email=True)
    assert "key-1" not in repr(a)
    assert PiiPolicy("drop").apply("x") is None
    assert PiiPolicy("keep").apply("x") == "x"


def _summary(created: str, updated: str | None = None, completed: str | None = None) -> EnvelopeSummary:
    return EnvelopeSummary.from_json(
        {
            "id": f"envelope_{created}",
            "status": "PENDING",
            "createdAt": created,
            "updatedAt": updated or created,
            "completedAt": completed,
        }
    )


def test_select_takes_changes_in_the_window_and_stops_at_the_floor() -> None:
    window = Window(datetime(2026, 11, 2, tzinfo=UTC), datetime(2026, 11, 3, tzinfo=UTC), timedelta(days=1))
    consumed: list[str] = []

    def listing():  # newest created first, as the service lists
        for s in [
            _summary("2026-11-03T01:00:00.000Z"),  # after the window
            _summary("2026-11-02T05:00:00.000Z"),  # created in it
            _summary("2026-11-01T05:00:00.000Z", completed="2026-11-02T01:00:00.000Z"),  # completed in it
            _summary("2026-11-01T04:00:00.000Z"),  # before it, unchanged
            _summary("2026-10-31T23:00:00.000Z"),  # below the floor: listing stops here
            _summary("2026-10-30T23:00:00.000Z"),
        ]:
            consumed.append(s.id)
            yield s

    picked = [envelope_id for _, envelope_id in select(listing(), window)]
    assert picked == ["envelope_2026-11-02T05:00:00.000Z", "envelope_2026-11-01T05:00:00.000Z"]
    assert len(consumed) == 5


def test_rows_follow_the_schema_and_never_carry_tokens() -> None:
    env = Envelope.from_json(
        {
            "id": "envelope_x",
            "status": "REJECTED",
            "createdAt": "2026-11-02T00:00:00Z",
            "updatedAt": "2026-11-02T01:00:00Z",
            "completedAt": "2026-11-02T02:00:00Z",
            "templateId": 7,
            "recipients": [
                {
                    "id": 1,
                    "email": "a@b.test",
                    "name": "A",
                    "token": "tok_secret_123",
                    "signingStatus": "REJECTED",
                    "rejectionReason": "no",
                }
            ],
            "fields": [{"id": 3, "type": "TEXT", "inserted": True, "customText": "Acme", "recipientId": 1}],
        }
    )
    rows = envelope_rows(env, PiiPolicy("keep"))
    for table, table_rows in rows.items():
        for row in table_rows:
            assert list(row) == [c.name for c in TABLES[table]]
            assert "tok_secret_123" not in jsonl_line(row, table).decode()
    assert rows["envelopes"][0]["rejected_at"] == "2026-11-02T02:00:00.000Z"
    assert rows["envelopes"][0]["completed_at"] is None
    assert rows["envelopes"][0]["template_id"] == 7
    assert rows["field_values"][0]["value"] == "Acme"


def _nda() -> Envelope:
    return Envelope.from_json(
        {
            "id": "envelope_nda",
            "status": "PENDING",
            "title": "NDA Jane Doe",
            "externalId": "crm-jane.doe@example.test",
            "createdAt": "2026-11-02T00:00:00Z",
            "recipients": [{"id": 1, "email": "jane@example.test", "name": "Jane Doe"}],
            "fields": [
                {
                    "id": 3,
                    "type": "TEXT",
                    "inserted": True,
                    "customText": "Doe Ltd",
                    "fieldMeta": {"label": "Jane's company"},
                }
            ],
        }
    )


def test_hash_mode_hashes_titles_and_external_ids_by_default() -> None:
    """'NDA Jane Doe' is a title, and a name: a hashed export must not carry it in plain text."""
    policy = PiiPolicy("hash", b"key")
    rows = envelope_rows(_nda(), policy)
    envelope = rows["envelopes"][0]
    assert envelope["title"] == policy.apply("NDA Jane Doe")
    assert envelope["external_id"] == policy.apply("crm-jane.doe@example.test")
    assert len(envelope["title"]) == len(envelope["external_id"]) == 64
    text = "".join(jsonl_line(r, t).decode() for t, table_rows in rows.items() for r in table_rows)
    for plain in ("Jane Doe", "jane.doe", "jane@example.test", "Doe Ltd"):
        assert plain not in text
    assert "Jane's company" in text  # the sender's label is kept unless pii_columns names it
    dropped = envelope_rows(_nda(), PiiPolicy("drop"))["envelopes"][0]
    assert (dropped["title"], dropped["external_id"]) == (None, None)
    assert {"envelopes.title", "envelopes.external_id"} <= DEFAULT_PII_COLUMNS
    assert {c.name for c in TABLES["envelopes"] if c.pii} == {"title", "external_id", "rejection_reason"}


def test_pii_columns_choose_the_columns_the_mode_applies_to() -> None:
    opaque_keys = pii_columns(DEFAULT_PII_COLUMNS - {"envelopes.external_id"} | {"field_values.label"})
    policy = PiiPolicy("hash", b"key", opaque_keys)
    rows = envelope_rows(_nda(), policy)
    assert rows["envelopes"][0]["external_id"] == "crm-jane.doe@example.test"  # the team joins on it
    assert rows["envelopes"][0]["title"] == policy.apply("NDA Jane Doe")
    assert rows["field_values"][0]["label"] == policy.apply("Jane's company")
    with pytest.raises(ExportConfigError, match=r"'envelopes\.status' cannot be chosen"):
        pii_columns(["envelopes.status"])
    with pytest.raises(ExportConfigError, match=r"a list of 'table\.column' names"):
        pii_columns("envelopes.title")
    assert pii_columns(None) == DEFAULT_PII_COLUMNS


def test_parquet_is_refused_at_parse_time_without_pyarrow_naming_the_extra() -> None:
    code = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "pyarrow" or name.startswith("pyarrow."):
                    raise ImportError("blocked for the test")
        sys.meta_path.insert(0, Block())
        from airflow_provider_docsign.operators.export import DocsignExportEnvelopesOperator
        DocsignExportEnvelopesOperator(task_id="jsonl", destination="/tmp/x")  # fine without pyarrow
        try:
            DocsignExportEnvelopesOperator(task_id="p", destination="/tmp/x", format="parquet")
        except Exception as err:
            print(type(err).__name__, err)
        else:
            print("ACCEPTED")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert "ExportConfigError" in out.stdout, out.stdout + out.stderr
    assert "'parquet' extra" in out.stdout
