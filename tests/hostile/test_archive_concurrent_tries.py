"""Several tries archiving into one folder at the same moment: the same bytes are kept, others refused.

A campaign DAG triggered twice archives into one folder (docs/bulk.md: "the second archive skips
what is there"), and both runs' sensors see the completion at the same poll, so the two archive
tasks start together. Both compare before either commits; the one that commits second finds the
other's file. It is the same signed PDF, so that try succeeds. A *different* envelope's bytes at the
same names are still refused, and the first archive's files are never replaced.

Each try is a process of its own, as on a worker; all are released at one moment against the sandbox
over HTTP. The folders are a local disk and moto's S3 on 127.0.0.1. What is counted: each try's
outcome, the files in the folder (every byte the sandbox's signed item), and no temporary file left.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_envelope, tsa_conn_json

from airflow_provider_docsign.archive.evidence import PAIR_ROUNDS
from airflow_provider_docsign.evidence.ltv import verify_ltv
from airflow_provider_docsign.evidence.signatures import TrustPolicy
from airflow_provider_docsign.evidence.timestamps import verify_timestamp
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

TRIES = 4
BUCKET = "concurrent-archive"

#: One try: a process of its own, as a worker runs a task. It builds the operator, says it is ready,
#: waits for the go file, archives, and prints its outcome.
TRY = """
import json, sys, time
from pathlib import Path

cfg = json.loads(sys.argv[1])
from airflow_provider_docsign.operators.archive import (
    DocsignArchiveConflictError,
    DocsignArchiveSignedDocumentsOperator,
)

destination = cfg["destination"]
if cfg["conn_id"]:
    from airflow_provider_docsign._compat import ObjectStoragePath

    destination = ObjectStoragePath(destination, conn_id=cfg["conn_id"])
operator = DocsignArchiveSignedDocumentsOperator(
    task_id="archive",
    envelope_id=cfg["envelope_id"],
    destination=destination,
    tsa_conn_id=cfg["tsa"],
    ltv=cfg["ltv"],
)
Path(cfg["ready"]).touch()
deadline = time.monotonic() + 120
while not Path(cfg["go"]).exists():
    if time.monotonic() > deadline:
        sys.exit("no go within 120 s")
    time.sleep(0.005)
try:
    operator.execute({})
    print("OUTCOME ok")
except Exception as err:
    kind = "conflict" if isinstance(err, DocsignArchiveConflictError) else type(err).__name__
    print("OUTCOME", kind, str(err)[:300].replace(chr(10), " "))
"""


def _together(
    tmp_path: Path,
    envelope_ids: list[str],
    destination: str,
    conn_id: str | None = None,
    tsa: str | None = None,
    ltv: bool = False,
) -> list[str]:
    """One process per envelope id, released at one moment; each try's outcome line (``ok`` or the error)."""
    script = tmp_path / "archive_try.py"
    script.write_text(textwrap.dedent(TRY))
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{n}" for n in range(len(envelope_ids))]
    procs = [
        subprocess.Popen(  # this interpreter, and a script the test wrote
            [
                sys.executable,
                str(script),
                json.dumps(
                    {
                        "envelope_id": envelope_id,
                        "destination": destination,
                        "conn_id": conn_id,
                        "tsa": tsa,
                        "ltv": ltv,
                        "ready": str(ready[n]),
                        "go": str(go),
                    }
                ),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for n, envelope_id in enumerate(envelope_ids)
    ]
    try:
        deadline = time.monotonic() + 180
        while not all(r.exists() for r in ready):
            assert time.monotonic() < deadline, "the tries were not ready within 180 s"
            assert all(p.poll() is None for p in procs), [p.communicate()[0][-2000:] for p in procs]
            time.sleep(0.05)
        go.touch()
        outputs = [p.communicate(timeout=180)[0] for p in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
    outcomes = []
    for output in outputs:
        lines = [line for line in output.splitlines() if line.startswith("OUTCOME ")]
        assert len(lines) == 1, output[-3000:]
        outcomes.append(lines[0].removeprefix("OUTCOME "))
    return outcomes


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


def test_four_tries_archiving_one_envelope_into_one_local_folder_all_succeed(
    docsign_conn: str, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    envelope_id = _envelope(sandbox, make_pdf, "TWICE-LOCAL", "Renewal")
    destination = tmp_path / "archive"

    outcomes = _together(tmp_path, [envelope_id] * TRIES, str(destination))

    assert outcomes == ["ok"] * TRIES
    folder = destination / "TWICE-LOCAL"
    assert _local_files(folder) == _signed(sandbox, envelope_id)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["envelope_id"] == envelope_id
    assert sorted(f["sha256"] for f in manifest["files"]) == _signed(sandbox, envelope_id)
    left = [p.name for p in folder.iterdir() if p.name.endswith(".partial") or p.name.startswith(".")]
    assert left == []


def test_four_tries_archiving_one_envelope_into_one_s3_prefix_all_succeed(
    docsign_conn: str,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    make_s3_bucket: Callable[..., Any],
    tmp_path: Path,
) -> None:
    s3 = make_s3_bucket(BUCKET, conn_id="concurrent_s3")
    envelope_id = _envelope(sandbox, make_pdf, "TWICE-S3", "Renewal")

    outcomes = _together(tmp_path, [envelope_id] * TRIES, f"s3://{BUCKET}/contracts", "concurrent_s3")

    assert outcomes == ["ok"] * TRIES
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []))
    pdfs = [k for k in keys if k.endswith(".pdf")]
    assert keys == sorted([*pdfs, "contracts/TWICE-S3/manifest.json"])
    bodies = [s3.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in pdfs]
    assert sorted(hashlib.sha256(b).hexdigest() for b in bodies) == _signed(sandbox, envelope_id)
    manifest = json.loads(s3.get_object(Bucket=BUCKET, Key="contracts/TWICE-S3/manifest.json")["Body"].read())
    assert manifest["envelope_id"] == envelope_id


def test_four_tries_with_a_timestamp_authority_leave_one_manifest_and_its_own_token(
    docsign_conn: str,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    make_s3_bucket: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each try publishes a token, then a manifest: interleaved, a token could end beside another
    try's manifest. Each try reads the pair back and publishes its own again if so: the token in place
    covers the manifest in place, and the manifest lists the signed bytes."""
    monkeypatch.setenv("AIRFLOW_CONN_TSA_CONCURRENT", tsa_conn_json(sandbox, timeout=10))  # tries inherit it
    sandbox.clear_tsa()
    s3 = make_s3_bucket(BUCKET, conn_id="concurrent_s3")
    envelope_id = _envelope(sandbox, make_pdf, "TWICE-TSA", "Renewal")

    outcomes = _together(
        tmp_path, [envelope_id] * TRIES, f"s3://{BUCKET}/stamped", "concurrent_s3", "tsa_concurrent"
    )

    assert outcomes == ["ok"] * TRIES
    prefix = "stamped/TWICE-TSA/"
    body = s3.get_object(Bucket=BUCKET, Key=prefix + "manifest.json")["Body"].read()
    token = s3.get_object(Bucket=BUCKET, Key=prefix + "manifest.json.tsr")["Body"].read()
    pins = TrustPolicy.build(pem=[sandbox.tsa_certificate_pem()])
    assert verify_timestamp(token, body, trust=pins).passed
    assert sorted(f["sha256"] for f in json.loads(body)["files"]) == _signed(sandbox, envelope_id)
    # A token for each try that published (a try that found the pair complete asks none), and one
    # more for each time a try found its pair crossed: bounded.
    assert 1 <= len(sandbox.tsa_requests()) <= TRIES * (1 + PAIR_ROUNDS)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])]
    assert not [k for k in keys if k.endswith(".partial") or "/." in k], keys


def test_four_tries_with_long_term_validation_copies_keep_one_valid_copy_each(
    docsign_conn: str,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each try's copy has a document timestamp of its own, so the copies differ: a try that finds
    another's valid copy of the same signed bytes keeps it and stages its manifest again; the
    manifest in place lists the copies in place, and its token covers it."""
    pem = sandbox.tsa_certificate_pem()
    monkeypatch.setenv("AIRFLOW_CONN_TSA_LTV", tsa_conn_json(sandbox))
    envelope_id = _envelope(sandbox, make_pdf, "TWICE-LTV", "Renewal")
    destination = tmp_path / "archive"

    outcomes = _together(tmp_path, [envelope_id] * TRIES, str(destination), None, "tsa_ltv", ltv=True)

    assert outcomes == ["ok"] * TRIES
    folder = destination / "TWICE-LTV"
    body = (folder / "manifest.json").read_bytes()
    pins = TrustPolicy.build(pem=[pem])
    assert verify_timestamp((folder / "manifest.json.tsr").read_bytes(), body, trust=pins).passed
    manifest = json.loads(body)
    assert sorted(f["sha256"] for f in manifest["files"]) == _signed(sandbox, envelope_id)
    seal = TrustPolicy.build(pem=[sandbox.certificate_pem()])
    for entry in manifest["files"]:
        copy = folder / entry["ltv"]["path"]
        assert hashlib.sha256(copy.read_bytes()).hexdigest() == entry["ltv"]["sha256"]
        report = verify_ltv(copy, trust=seal, tsa_trust=pins)
        assert report.passed, report.problems
    left = [p.name for p in folder.iterdir() if p.name.endswith(".partial") or p.name.startswith(".")]
    assert left == []


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

    outcomes = _together(tmp_path, ids, str(destination))

    won = {ids[n] for n, o in enumerate(outcomes) if o == "ok"}
    failed = [o for o in outcomes if o != "ok"]
    assert len(won) <= 1, outcomes  # never both: they write the same names
    assert failed, outcomes
    assert all(o.startswith("conflict ") for o in failed), failed
    folder = destination / "SAME-KEY"
    manifest_path = folder / "manifest.json"
    if won:
        (winner,) = won
        assert _local_files(folder) == _signed(sandbox, winner)
        assert json.loads(manifest_path.read_text())["envelope_id"] == winner
    else:
        assert not manifest_path.exists()
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []
