"""Evidence that lasts, end to end: the archive operator with the sandbox as its TSA, over real HTTP.

The TSA is an Airflow connection as a user configures it (URL, pinned certificate); every TSA
failure comes from the sandbox's own faults. ``openssl ts -verify`` checks an archive the operator
made, independently of our code.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_envelope, conn_json, tsa_conn_json

from airflow_provider_docsign.evidence.ltv import verify_ltv
from airflow_provider_docsign.evidence.signatures import TrustPolicy
from airflow_provider_docsign.evidence.timestamps import verify_timestamp
from airflow_provider_docsign.exceptions import DocsignArchiveEvidenceError, DocsignArchiveTimestampError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

OPENSSL = shutil.which("openssl")


@pytest.fixture
def tsa_conn(sandbox: SandboxServer, docsign_conn: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``tsa_sandbox``: the sandbox's TSA, its certificate pinned inline, a 2-second timeout."""
    sandbox.clear_tsa()
    monkeypatch.setenv("AIRFLOW_CONN_TSA_SANDBOX", tsa_conn_json(sandbox, timeout=2))
    yield "tsa_sandbox"
    sandbox.clear_tsa()


@pytest.fixture
def envelope(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> str:
    files = [
        make_pdf("ev/Agreement.pdf", title="Agreement"),
        make_pdf("ev/Annex.pdf", title="Annex", pages=2),
    ]
    return completed_envelope(hook, sandbox, files, title="Evidence", external_id="EVIDENCE-1")


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    """The archive destination (tmp_path also holds the uploaded PDFs)."""
    return tmp_path / "archive"


def _archive(envelope_id: str, destination: Any, **kwargs: Any) -> dict[str, Any]:
    operator = DocsignArchiveSignedDocumentsOperator(
        task_id="archive", envelope_id=envelope_id, destination=destination, **kwargs
    )
    return operator.execute({})  # type: ignore[arg-type]


def _tsa_pins(sandbox: SandboxServer) -> TrustPolicy | None:
    return TrustPolicy.build(pem=[sandbox.tsa_certificate_pem()])


def test_every_manifest_gets_a_token_that_openssl_verifies(
    envelope: str, tsa_conn: str, sandbox: SandboxServer, dest: Path
) -> None:
    manifest = _archive(envelope, dest, tsa_conn_id=tsa_conn)

    folder = dest / "EVIDENCE-1"
    body = (folder / "manifest.json").read_bytes()
    token = (folder / "manifest.json.tsr").read_bytes()
    assert json.loads(body) == manifest
    assert manifest["timestamp"] == {
        "token": "manifest.json.tsr",
        "hash_algorithm": "sha256",
        "tsa_url": sandbox.tsa_url,
    }
    report = verify_timestamp(token, body, trust=_tsa_pins(sandbox))
    assert report.passed
    assert report.trusted is True
    assert [e["outcome"] for e in sandbox.tsa_requests()] == ["granted"]

    if OPENSSL is None:
        pytest.skip("needs the openssl command (Debian: apt-get install openssl) for the independent check")
    ca = dest.parent / "tsa.pem"
    ca.write_bytes(sandbox.tsa_certificate_pem())
    command = [OPENSSL, "ts", "-verify", "-data", str(folder / "manifest.json")]
    result = subprocess.run(
        [*command, "-in", str(folder / "manifest.json.tsr"), "-CAfile", str(ca)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "Verification: OK" in result.stdout


@pytest.mark.parametrize(("fault", "extra"), [("wrong_nonce", {}), ("delay", {"delay": 5})])
def test_a_failing_tsa_fails_the_task_publishes_nothing_and_the_next_try_completes(
    envelope: str, tsa_conn: str, sandbox: SandboxServer, dest: Path, fault: str, extra: dict[str, Any]
) -> None:
    sandbox.tsa_fault(fault, **extra)
    with pytest.raises(DocsignArchiveTimestampError, match="Nothing was published as complete"):
        _archive(envelope, dest, tsa_conn_id=tsa_conn)
    leftovers = sorted(p.name for p in dest.rglob("*") if p.is_file())
    assert leftovers == []  # no manifest, no PDF at a final name, no temporary file

    manifest = _archive(envelope, dest, tsa_conn_id=tsa_conn)  # the next try
    folder = dest / "EVIDENCE-1"
    assert (folder / "manifest.json").exists()
    token = (folder / "manifest.json.tsr").read_bytes()
    assert verify_timestamp(token, (folder / "manifest.json").read_bytes(), trust=_tsa_pins(sandbox)).passed
    assert [f["outcome"] for f in manifest["files"]] == ["created", "created"]


def test_a_complete_archive_with_a_valid_token_is_not_timestamped_again(
    envelope: str, tsa_conn: str, sandbox: SandboxServer, dest: Path
) -> None:
    first = _archive(envelope, dest, tsa_conn_id=tsa_conn)
    folder = dest / "EVIDENCE-1"
    body, token = (folder / "manifest.json").read_bytes(), (folder / "manifest.json.tsr").read_bytes()

    again = _archive(envelope, dest, tsa_conn_id=tsa_conn)

    assert again == first
    assert (folder / "manifest.json").read_bytes() == body
    assert (folder / "manifest.json.tsr").read_bytes() == token
    assert len(sandbox.tsa_requests()) == 1  # only the first run asked the TSA


def test_best_effort_archives_without_a_token_and_warns(
    envelope: str,
    tsa_conn: str,
    sandbox: SandboxServer,
    dest: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    sandbox.tsa_fault("http_status", count=10, status=503)
    with caplog.at_level(logging.WARNING):
        manifest = _archive(envelope, dest, tsa_conn_id=tsa_conn, timestamp="best_effort", ltv=True)
    logs = caplog.text + capfd.readouterr().out  # the task logger writes to stdout on Airflow 3
    folder = dest / "EVIDENCE-1"
    assert (folder / "manifest.json").exists()
    assert not (folder / "manifest.json.tsr").exists()
    assert "timestamp" not in manifest
    assert not list(folder.glob("*.ltv.pdf"))  # nor copies: their document timestamps failed too
    assert all("ltv" not in entry for entry in manifest["files"])
    assert "No long-term validation copy of" in logs
    assert "without a timestamp (timestamp='best_effort')" in logs
    assert "answered HTTP 503" in logs


def test_the_docsign_connection_names_the_tsa(
    envelope: str, tsa_conn: str, sandbox: SandboxServer, dest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox, tsa_conn_id=tsa_conn))
    _archive(envelope, dest)
    assert (dest / "EVIDENCE-1" / "manifest.json.tsr").exists()


def test_ltv_copies_beside_each_signed_pdf(
    envelope: str, tsa_conn: str, sandbox: SandboxServer, dest: Path
) -> None:
    manifest = _archive(envelope, dest, tsa_conn_id=tsa_conn, ltv=True)

    folder = dest / "EVIDENCE-1"
    assert sorted(p.name for p in folder.iterdir()) == [
        "01-Agreement.ltv.pdf",
        "01-Agreement.pdf",
        "02-Annex.ltv.pdf",
        "02-Annex.pdf",
        "manifest.json",
        "manifest.json.tsr",
    ]
    trust = TrustPolicy.build(pem=[sandbox.certificate_pem()])
    for entry in manifest["files"]:
        signed = (folder / entry["path"]).read_bytes()
        assert signed == sandbox.item_bytes(entry["item_id"], "signed")  # kept byte for byte
        ltv = entry["ltv"]
        assert ltv["derived_from"] == entry["name"]
        copy = (folder / ltv["path"]).read_bytes()
        assert copy.startswith(signed)
        assert ltv["sha256"] == hashlib.sha256(copy).hexdigest()
        assert ltv["size"] == len(copy)
        assert any("self-signed" in m for m in ltv["validation_material"]["missing"])
        report = verify_ltv(folder / ltv["path"], trust=trust, tsa_trust=_tsa_pins(sandbox))
        assert report.passed, report.problems
        assert report.timestamp is not None
        assert report.timestamp.gen_time == ltv["document_timestamp"]
    requests = len(sandbox.tsa_requests())
    assert requests == 4  # one sizing token, a document timestamp per copy, the manifest's token

    again = _archive(envelope, dest, tsa_conn_id=tsa_conn, ltv=True)
    assert again == manifest
    assert len(sandbox.tsa_requests()) == requests  # kept copies and a valid token: no TSA request


def test_ltv_without_a_tsa_and_retention_on_a_local_disk_are_refused_before_any_download(
    envelope: str, sandbox: SandboxServer, dest: Path
) -> None:
    sandbox.clear_requests()
    with pytest.raises(DocsignArchiveEvidenceError, match="needs a TSA"):
        _archive(envelope, dest, ltv=True)
    with pytest.raises(DocsignArchiveEvidenceError, match="not on S3"):
        _archive(envelope, dest, retention={"mode": "GOVERNANCE", "days": 1})
    assert not [r for r in sandbox.requests() if r["path"].endswith("/download")]
    assert not dest.exists() or not any(dest.rglob("*"))
