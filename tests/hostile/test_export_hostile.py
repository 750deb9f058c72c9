"""DocsignExportEnvelopesOperator fed what a careless or hostile user could give it.

A destination that is a file, lies below one or does not exist yet; symlinks planted where the
partition goes; re-runs of one interval; interval bounds that are no time (unrendered, "yesterday",
reversed); and data at the service that looks like a template or hides text, which must be exported
as data. Counted: the files on disk (written, replaced, untouched) and the requests at a sandbox of the
module's own (the session one holds every other test's envelopes).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import conn_json, ctx
from odd_text import TEMPLATE_DATA

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.operators import DocsignExportEnvelopesOperator
from airflow_provider_docsign.sandbox import SandboxServer

HASH_KEY = "hostile-export-hash-key-0123456789"
DAY, START, END = "2026-11-02", "2026-11-02T00:00:00+00:00", "2026-11-03T00:00:00+00:00"
TABLES = ("envelopes", "recipients", "field_values")
#: Titles as anyone may type them in the web app: the export writes them as data.
TITLES = [f"Lease {TEMPLATE_DATA}", "Lease \u202etxt.exe", "Lease {{ 6 * 7 }}", "Plain lease"]


def _spec(n: int, title: str) -> dict[str, Any]:
    at = f"{DAY}T{9 + n:02d}:00:00.000Z"
    return {
        "title": title,
        "externalId": f"hostile-{n}",
        "status": "PENDING",
        "createdAt": at,
        "updatedAt": at,
        "sentAt": at,
        "recipients": [
            {
                "email": f"tenant{n}@example.test",
                "name": f"Tenant {n} {TEMPLATE_DATA}",
                "role": "SIGNER",
                "sendStatus": "SENT",
                "fields": [{"type": "SIGNATURE", "page": 1}],
            }
        ],
    }


@pytest.fixture(scope="module")
def own_sandbox(tmp_path_factory: pytest.TempPathFactory, api_key: str) -> Iterator[SandboxServer]:
    """A sandbox of this module's own with four envelopes on DAY, stopped at the module's end."""
    with SandboxServer(tmp_path_factory.mktemp("export-hostile"), api_key=api_key) as server:
        server.seed([_spec(n, title) for n, title in enumerate(TITLES)])
        yield server


@pytest.fixture
def export_conn(own_sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> SandboxServer:
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(own_sandbox, pii_hash_key=HASH_KEY))
    own_sandbox.clear_requests()
    return own_sandbox


def export(destination: Any, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("start", START)
    kwargs.setdefault("end", END)
    result: dict[str, Any] = DocsignExportEnvelopesOperator(
        task_id="export", destination=str(destination), **kwargs
    ).execute(ctx())
    return result


def rows(root: Path, table: str) -> list[dict[str, Any]]:
    text = (root / table / f"date={DAY}" / "part-0000.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines()]


def everything(root: Path) -> dict[str, bytes]:
    """Every path below ``root`` (hidden ones too) and its bytes (``b""`` for a directory)."""
    return {str(p.relative_to(root)): b"" if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


def refused(run: Callable[[], Any]) -> str:
    with pytest.raises(AirflowFailException) as info:
        run()
    return str(info.value)


def test_a_destination_that_is_a_file_or_lies_below_one_is_refused_before_any_request(
    export_conn: SandboxServer, tmp_path: Path
) -> None:
    report = tmp_path / "report.csv"
    report.write_text("id,total\n1,100\n")
    for destination in (report, report / "contracts"):
        message = refused(lambda destination=destination: export(destination))
        assert "is a file, not a directory" in message, message
        assert "report.csv" in message
    assert report.read_text() == "id,total\n1,100\n"
    assert sorted(os.listdir(tmp_path)) == ["report.csv"]
    assert export_conn.requests() == []


def test_a_missing_destination_is_made_and_a_rerun_replaces_the_partition_exactly(
    export_conn: SandboxServer, tmp_path: Path
) -> None:
    root = tmp_path / "lake" / "contracts"
    first = export(root, pii="keep")
    assert first["rows"] == {"envelopes": 4, "recipients": 4, "field_values": 4}
    before = everything(root)
    second = export(root, pii="keep")
    assert second["rows"] == first["rows"]
    assert everything(root) == before  # no duplicate rows, no staging or lock file left behind
    assert not [name for name in before if any(part.startswith(".") for part in Path(name).parts)]


def test_symlinks_planted_in_the_destination_are_replaced_never_followed(
    export_conn: SandboxServer, tmp_path: Path
) -> None:
    root = tmp_path / "shared"
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch")
    (outside / "keep.txt").write_text("do not touch either")
    # The envelopes partition is a symlink to a directory elsewhere; the recipients part file is a
    # symlink to a file elsewhere.
    (root / "envelopes").mkdir(parents=True)
    (root / "envelopes" / f"date={DAY}").symlink_to(outside)
    (root / "recipients" / f"date={DAY}").mkdir(parents=True)
    (root / "recipients" / f"date={DAY}" / "part-0000.jsonl").symlink_to(victim)
    export(root, pii="keep")
    assert victim.read_text() == "do not touch"
    assert sorted(os.listdir(outside)) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "do not touch either"
    for table in TABLES:
        partition = root / table / f"date={DAY}"
        assert partition.is_dir()
        assert not partition.is_symlink()
        assert not (partition / "part-0000.jsonl").is_symlink()
    assert len(rows(root, "recipients")) == 4


@pytest.mark.parametrize(
    ("bounds", "words"),
    [
        ({"start": "{{ data_interval_start }}"}, "start must be an ISO 8601 time"),
        ({"start": "yesterday"}, "not 'yesterday'"),
        ({"end": "2026-13-01"}, "end must be an ISO 8601 time"),
        ({"start": "1e2"}, "not '1e2'"),
        ({"start": END, "end": START}, "must be before end"),
        ({"end": START}, "must be before end"),
        ({"start": ""}, "must be before end"),
        ({"start": None}, "must be before end"),
    ],
    ids=["unrendered", "yesterday", "month 13", "1e2", "reversed", "empty interval", "empty", "None"],
)
def test_bounds_that_are_no_interval_fail_at_once_before_any_request(
    export_conn: SandboxServer, tmp_path: Path, bounds: dict[str, Any], words: str
) -> None:
    message = refused(lambda: export(tmp_path / "out", **bounds))
    assert words in message, message
    assert "Invalid isoformat" not in message
    assert export_conn.requests() == []
    assert not (tmp_path / "out").exists()


def test_text_that_looks_like_a_template_or_hides_text_is_exported_as_data(
    export_conn: SandboxServer, tmp_path: Path, api_key: str, task_log: Callable[[], str]
) -> None:
    export(tmp_path / "keep", pii="keep")
    assert sorted(r["title"] for r in rows(tmp_path / "keep", "envelopes")) == sorted(TITLES)
    names = {r["name"] for r in rows(tmp_path / "keep", "recipients")}
    assert names == {f"Tenant {n} {TEMPLATE_DATA}" for n in range(4)}
    export(tmp_path / "hashed")  # the default: personal columns hashed with the connection's key
    hashed = everything(tmp_path / "hashed")
    for text in (TEMPLATE_DATA, "tenant0@example.test", "Lease"):
        assert not any(text.encode() in data for data in hashed.values())
    for files in (everything(tmp_path / "keep"), hashed):
        assert not any(api_key.encode() in data or HASH_KEY.encode() in data for data in files.values())
    log = task_log()
    assert api_key not in log
    assert HASH_KEY not in log
