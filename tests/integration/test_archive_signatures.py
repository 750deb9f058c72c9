"""The archive operator verifies digital signatures before it commits, over real HTTP to the sandbox.

The sandbox seals completed PDFs with PAdES like the real service; its download faults serve a
tampered, an unsigned and a modified-after-signing PDF. Nothing of the provider is mocked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from helpers import completed_envelope, conn_json, self_signed_certificate

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignSignatureError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

DOWNLOAD = "/envelope/item/*/download"


def _fingerprint(pem: bytes) -> str:
    der = x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)
    return hashlib.sha256(der).hexdigest()


def _archive(**kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("task_id", "archive")
    return DocsignArchiveSignedDocumentsOperator(**kwargs).execute({})  # type: ignore[arg-type]


def _files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.fixture
def envelope(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> str:
    files = [make_pdf("Agreement.pdf", pages=2), make_pdf("Annex.pdf", pages=1)]
    return completed_envelope(hook, sandbox, files, title="Sealed contract", external_id="SEAL-1")


def test_completed_envelope_is_archived_with_verified_signatures(
    sandbox: SandboxServer, envelope: str, tmp_path: Path
) -> None:
    fingerprint = _fingerprint(sandbox.certificate_pem())
    dest = tmp_path / "archive"

    manifest = _archive(
        envelope_id=envelope,
        destination=str(dest),
        verify_signatures="require",
        include_audit_log=True,
        include_certificate=True,
    )

    assert len(manifest["files"]) == 2
    for entry in manifest["files"]:
        signature = entry["signature"]
        assert signature["signed"] is True
        assert signature["passed"] is True
        (check,) = signature["signatures"]
        assert check["intact"] is True
        assert check["valid"] is True
        assert check["coverage"] == "entire_file"
        assert check["modification_level"] == "none"
        assert check["subfilter"] == "ETSI.CAdES.detached"
        assert check["signer"]["sha256"] == fingerprint
        assert check["signer"]["common_name"] == "Docsign Sandbox Signing"
        assert check["trusted"] is None  # no policy set
        assert check["signing_time"] is not None
    # The audit log and certificate carry no signature: recorded, not an error.
    for report in (manifest["audit_log"], manifest["certificate"]):
        assert report["signature"]["signed"] is False
    assert (dest / "SEAL-1" / "manifest.json").is_file()


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("tamper_signed", "digest over /ByteRange does not match"),
        ("unsigned", "no digital signature"),
        ("modified_after_signing", "changed after signing (modification level other)"),
    ],
)
def test_each_signature_fault_fails_the_task_and_leaves_nothing(
    sandbox: SandboxServer, envelope: str, tmp_path: Path, fault: str, reason: str
) -> None:
    dest = tmp_path / "archive"
    sandbox.inject_fault(method="GET", path=DOWNLOAD, action=fault, count=1)

    with pytest.raises(DocsignSignatureError) as info:
        _archive(envelope_id=envelope, destination=str(dest))

    message = str(info.value)
    assert reason in message
    assert "01-Agreement.pdf" in message  # the file is named
    # A retry downloads the same bytes: the task fails at once, without spending its retries.
    assert isinstance(info.value, AirflowFailException)
    assert len(info.value.failures) == 1  # only the first download was broken
    assert _files_under(dest) == []  # no file at a final name, no manifest, no temporary left


def test_record_mode_records_the_failure_and_goes_on(
    sandbox: SandboxServer, envelope: str, tmp_path: Path
) -> None:
    sandbox.inject_fault(method="GET", path=DOWNLOAD, action="tamper_signed", count=1)

    manifest = _archive(envelope_id=envelope, destination=str(tmp_path / "a"), verify_signatures="record")

    first, second = manifest["files"]
    assert first["signature"]["passed"] is False
    assert first["signature"]["signatures"][0]["intact"] is False
    assert second["signature"]["passed"] is True
    assert Path(first["uri"][len("file://") :]).is_file()


def test_off_mode_records_nothing(envelope: str, tmp_path: Path, sandbox: SandboxServer) -> None:
    sandbox.inject_fault(method="GET", path=DOWNLOAD, action="unsigned", count=1)
    manifest = _archive(envelope_id=envelope, destination=str(tmp_path / "a"), verify_signatures="off")
    assert all("signature" not in entry for entry in manifest["files"])


def test_pinned_fingerprint_in_the_connection_extra(
    sandbox: SandboxServer, envelope: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    right = _fingerprint(sandbox.certificate_pem())
    wrong = hashlib.sha256(b"another instance").hexdigest()

    monkeypatch.setenv(
        "AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox, signing_certificate_fingerprints=[wrong])
    )
    with pytest.raises(DocsignSignatureError, match="not trusted by the policy"):
        _archive(envelope_id=envelope, destination=str(tmp_path / "wrong"))
    assert _files_under(tmp_path / "wrong") == []

    # Written as `openssl x509 -fingerprint -sha256` prints it, in a comma-separated string.
    colons = ":".join(right[i : i + 2] for i in range(0, 64, 2)).upper()
    monkeypatch.setenv(
        "AIRFLOW_CONN_DOCSIGN_DEFAULT",
        conn_json(sandbox, signing_certificate_fingerprints=f"{wrong}, {colons}"),
    )
    manifest = _archive(envelope_id=envelope, destination=str(tmp_path / "right"))
    assert all(e["signature"]["signatures"][0]["trusted"] is True for e in manifest["files"])


def test_trusted_certificates_from_a_pem_file(sandbox: SandboxServer, envelope: str, tmp_path: Path) -> None:
    pem = tmp_path / "sandbox.pem"
    pem.write_bytes(sandbox.certificate_pem())
    manifest = _archive(envelope_id=envelope, destination=str(tmp_path / "a"), trusted_certificates=[pem])
    assert all(e["signature"]["signatures"][0]["trusted"] is True for e in manifest["files"])

    other = tmp_path / "other.pem"
    other.write_bytes(_other_certificate_pem())
    with pytest.raises(DocsignSignatureError, match="not trusted"):
        _archive(envelope_id=envelope, destination=str(tmp_path / "b"), trusted_certificates=[str(other)])
    assert _files_under(tmp_path / "b") == []


def _other_certificate_pem() -> bytes:
    _key, cert = self_signed_certificate("Not the sandbox", serial=7)
    return bytes(cert.public_bytes(serialization.Encoding.PEM))
