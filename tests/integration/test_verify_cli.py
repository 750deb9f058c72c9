"""``python -m airflow_provider_docsign.verify``: exit codes and the ``--manifest`` re-audit (local, S3).

Archives are written by the real operator from the sandbox over HTTP; S3 is moto on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import SPEC_DIR, completed_envelope

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.verify import main

pytestmark = pytest.mark.integration

SEALED = SPEC_DIR / "recorded" / "sealed"
BUCKET = "audit-archive"


def _archive(**kwargs: Any) -> dict[str, Any]:
    return DocsignArchiveSignedDocumentsOperator(task_id="archive", **kwargs).execute({})  # type: ignore[arg-type]


@pytest.fixture
def envelope(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> str:
    files = [make_pdf("Agreement.pdf", pages=2), make_pdf("Annex.pdf", pages=1)]
    return completed_envelope(hook, sandbox, files, title="Audited", external_id="AUDIT-1")


def test_exit_codes_on_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = str(SEALED / "29_sealed_signed.pdf")
    assert main([good]) == 0
    out = capsys.readouterr().out
    assert "signer='Documenso Peer Signing'" in out
    assert "intact=yes" in out
    assert "coverage=entire_file/none" in out

    assert main([good, str(SEALED / "30_sealed_audit_log.pdf")]) == 1
    assert "no digital signature" in capsys.readouterr().out

    flipped = tmp_path / "flipped.pdf"
    data = bytearray((SEALED / "29_sealed_signed.pdf").read_bytes())
    data[len(data) // 4] ^= 0x01
    flipped.write_bytes(bytes(data))
    assert main([str(flipped)]) == 1
    assert "intact=NO" in capsys.readouterr().out

    assert main([str(tmp_path / "missing.pdf")]) == 2
    not_pdf = tmp_path / "notes.pdf"
    not_pdf.write_text("plain text")
    assert main([str(not_pdf)]) == 2
    assert main([good, "--fingerprint", "xyz"]) == 2
    assert main([]) == 2


def test_pinning_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    good = str(SEALED / "29_sealed_signed.pdf")
    assert main([good, "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    fingerprint = result["report"]["signatures"][0]["signer"]["sha256"]
    assert main([good, "--fingerprint", fingerprint]) == 0
    assert "trusted=yes" in capsys.readouterr().out
    assert main([good, "--fingerprint", "00" * 32]) == 1
    assert "trusted=NO" in capsys.readouterr().out


def test_manifest_catches_a_file_changed_on_disk(
    sandbox: SandboxServer, envelope: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pem = tmp_path / "sandbox.pem"
    pem.write_bytes(sandbox.certificate_pem())
    manifest = _archive(envelope_id=envelope, destination=str(tmp_path / "archive"), include_audit_log=True)
    manifest_path = manifest["manifest_uri"]

    # The real command, as an auditor runs it.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_provider_docsign.verify",
            "--manifest",
            manifest_path,
            "--trust",
            str(pem),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("PASS") == 3  # two items and the (unsigned, not required) audit log
    assert "trusted=yes" in done.stdout

    changed = Path(manifest["files"][1]["uri"][len("file://") :])
    with open(changed, "ab") as fh:  # an incremental-update-sized change after archiving
        fh.write(b"\n% appended after archiving\n")
    assert main(["--manifest", manifest_path]) == 1
    out = capsys.readouterr().out
    failing = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert len(failing) == 1
    assert str(changed) in failing[0]
    assert "changed: sha256" in out


def test_manifest_catches_a_file_deleted_from_s3(
    make_s3_bucket: Callable[..., Any],
    sandbox: SandboxServer,
    envelope: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from airflow_provider_docsign._compat import ObjectStoragePath

    s3 = make_s3_bucket(BUCKET, conn_id="audit_s3")
    destination = ObjectStoragePath(f"s3://{BUCKET}/contracts", conn_id="audit_s3")
    manifest = _archive(envelope_id=envelope, destination=destination)
    manifest_uri = manifest["manifest_uri"]
    assert manifest_uri.startswith("s3://")

    assert main(["--manifest", manifest_uri, "--conn-id", "audit_s3"]) == 0
    assert capsys.readouterr().out.count("PASS") == 2

    deleted = manifest["files"][0]["uri"]
    s3.delete_object(Bucket=BUCKET, Key=deleted.removeprefix(f"s3://{BUCKET}/"))
    assert main(["--manifest", manifest_uri, "--conn-id", "audit_s3"]) == 1
    out = capsys.readouterr().out
    assert f"FAIL  {deleted}  missing" in out
    assert out.count("PASS") == 1
