"""Several tries archiving into one folder at the same moment: the same bytes are kept, others refused.

A campaign DAG triggered twice archives into one folder (docs/bulk.md: "the second archive skips
what is there"), and both runs' sensors see the completion at the same poll, so the two archive
tasks start together. Both compare before either commits; the one that commits second finds the
other's file. It is the same signed PDF, so that try succeeds. A *different* envelope's bytes at the
same names are still refused, and the first archive's files are never replaced.

Real threads start together at a barrier against the sandbox over HTTP; the folders are a local disk
and moto's S3 on 127.0.0.1. What is counted: each try's outcome, the files in the folder (every byte
the sandbox's signed item), and no temporary file left behind.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_envelope

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive import (
    DocsignArchiveConflictError,
    DocsignArchiveSignedDocumentsOperator,
)
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

TRIES = 6
BUCKET = "concurrent-archive"


def _together(tries: int, archive: Callable[[int], dict[str, Any]]) -> list[dict[str, Any] | Exception]:
    """Run ``archive(n)`` for each try in its own thread, released at one moment."""
    gate = threading.Barrier(tries)

    def one(n: int) -> dict[str, Any] | Exception:
        gate.wait(timeout=60)
        try:
            return archive(n)
        except Exception as err:  # each try's outcome is what the test counts
            return err

    with ThreadPoolExecutor(max_workers=tries) as pool:
        return list(pool.map(one, range(tries)))


def _operator(n: int, envelope_id: str, destination: Any, **kwargs: Any) -> dict[str, Any]:
    operator = DocsignArchiveSignedDocumentsOperator(
        task_id=f"archive_{n}", envelope_id=envelope_id, destination=destination, **kwargs
    )
    return operator.execute({})  # type: ignore[arg-type]


def _envelope(sandbox: SandboxServer, make_pdf: Callable[..., Path], key: str, title: str) -> str:
    files = [make_pdf(f"{key}-{title}/{n}.pdf", title=f"{title} {n}", pages=n + 1) for n in range(2)]
    return completed_envelope(DocsignHook(), sandbox, files, title=title, external_id=key)


def _signed(sandbox: SandboxServer, envelope_id: str) -> list[str]:
    """The SHA-256 of each item's signed bytes at the sandbox, sorted."""
    items = sandbox.get_envelope(envelope_id)["envelopeItems"]
    return sorted(hashlib.sha256(sandbox.item_bytes(i["id"], "signed")).hexdigest() for i in items)


def _local_files(folder: Path) -> list[str]:
    """The SHA-256 of each PDF in ``folder``, sorted."""
    return sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.pdf"))


def test_six_tries_archiving_one_envelope_into_one_local_folder_all_succeed(
    docsign_conn: str, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    envelope_id = _envelope(sandbox, make_pdf, "TWICE-LOCAL", "Renewal")
    destination = tmp_path / "archive"

    outcomes = _together(TRIES, lambda n: _operator(n, envelope_id, str(destination)))

    assert [type(o).__name__ for o in outcomes if isinstance(o, Exception)] == [], outcomes
    folder = destination / "TWICE-LOCAL"
    assert _local_files(folder) == _signed(sandbox, envelope_id)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["envelope_id"] == envelope_id
    assert sorted(f["sha256"] for f in manifest["files"]) == _signed(sandbox, envelope_id)
    left = [p.name for p in folder.iterdir() if p.name.endswith(".partial") or p.name.startswith(".")]
    assert left == []


def test_six_tries_archiving_one_envelope_into_one_s3_prefix_all_succeed(
    docsign_conn: str,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    make_s3_bucket: Callable[..., Any],
) -> None:
    from airflow_provider_docsign._compat import ObjectStoragePath

    s3 = make_s3_bucket(BUCKET, conn_id="concurrent_s3")
    envelope_id = _envelope(sandbox, make_pdf, "TWICE-S3", "Renewal")

    outcomes = _together(
        TRIES,
        lambda n: _operator(
            n, envelope_id, ObjectStoragePath(f"s3://{BUCKET}/contracts", conn_id="concurrent_s3")
        ),
    )

    assert [o for o in outcomes if isinstance(o, Exception)] == []
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []))
    pdfs = [k for k in keys if k.endswith(".pdf")]
    assert keys == sorted([*pdfs, "contracts/TWICE-S3/manifest.json"])
    bodies = [s3.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in pdfs]
    assert sorted(hashlib.sha256(b).hexdigest() for b in bodies) == _signed(sandbox, envelope_id)
    manifest = json.loads(s3.get_object(Bucket=BUCKET, Key="contracts/TWICE-S3/manifest.json")["Body"].read())
    assert manifest["envelope_id"] == envelope_id


def test_two_envelopes_with_one_key_racing_for_one_folder_never_publish_a_mixed_archive(
    docsign_conn: str, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    """Same external id, same titles, different signed bytes: at most one envelope's archive succeeds.

    Whichever try commits a name first keeps it; a try that meets the other envelope's bytes is
    refused. If both envelopes each placed one file first, both are refused and no manifest is
    written: a folder without a manifest is an incomplete archive (docs/archive.md), never a wrong one.
    """
    first = _envelope(sandbox, make_pdf, "SAME-KEY", "Renewal")
    second = _envelope(sandbox, make_pdf, "SAME-KEY", "Renewal")
    assert _signed(sandbox, first) != _signed(sandbox, second)
    destination = tmp_path / "archive"
    ids = [first, second] * (TRIES // 2)

    outcomes = _together(TRIES, lambda n: _operator(n, ids[n], str(destination)))

    won = {ids[n] for n, o in enumerate(outcomes) if not isinstance(o, Exception)}
    failed = [o for o in outcomes if isinstance(o, Exception)]
    assert len(won) <= 1, outcomes  # never both: they write the same names
    assert failed, outcomes
    assert all(isinstance(o, DocsignArchiveConflictError) for o in failed), failed
    folder = destination / "SAME-KEY"
    manifest_path = folder / "manifest.json"
    if won:
        (winner,) = won
        assert _local_files(folder) == _signed(sandbox, winner)
        assert json.loads(manifest_path.read_text())["envelope_id"] == winner
    else:
        assert not manifest_path.exists()
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []
