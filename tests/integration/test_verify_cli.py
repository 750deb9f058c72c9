"""``docsign verify`` (and ``python -m airflow_provider_docsign.verify``): exit codes, hostile PDFs and
the ``--manifest`` re-audit of an archive and of a copy of it (local, S3).

Archives are written by the real operator from the sandbox over HTTP; S3 is moto on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import SPEC_DIR, completed_envelope
from hostile_pdfs import add_annotation, deeply_nested_pdf

from airflow_provider_docsign.cli.verify import main
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator
from airflow_provider_docsign.sandbox import SandboxServer

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
    assert f"FAIL  {deleted}  missing" in out, out
    assert out.count("PASS") == 1


def test_an_unreadable_pdf_is_reported_and_the_next_file_still_audited(tmp_path: Path) -> None:
    deep = deeply_nested_pdf(tmp_path / "deep.pdf")
    good = str(SEALED / "29_sealed_signed.pdf")
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_docsign.cli", "verify", str(deep), good],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stdout + done.stderr
    (passed,) = done.stdout.splitlines()  # the result: the file that could be audited
    assert passed.startswith(f"PASS  {good}")
    error, summary = done.stderr.splitlines()  # the file that could not: one error line
    assert error.startswith(f"docsign verify: error: {deep}: ")
    assert "nested too deeply" in error
    assert summary == f"2 file(s) audited; 1 unreadable: {deep}"


def test_json_on_a_sealed_pdf_with_an_added_annotation_is_only_json(tmp_path: Path) -> None:
    annotated = add_annotation(SEALED / "29_sealed_signed.pdf", tmp_path / "annotated.pdf")
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_docsign.cli", "verify", "--json", str(annotated)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    (result,) = json.loads(done.stdout)
    assert result["status"] == "FAIL"
    (check,) = result["report"]["signatures"]
    assert check["intact"] is True
    assert check["valid"] is True
    assert check["modification_level"] == "other"
    assert "modification level other" in check["problems"][0]


def test_missing_file_is_one_line_and_leaves_home_empty(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}  # a user's shell
    env["HOME"] = str(home)
    docsign = Path(sys.executable).with_name("docsign")
    done = subprocess.run(
        [str(docsign), "verify", "missing.pdf"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == ["docsign verify: error: missing.pdf: the file does not exist"]
    assert list(home.iterdir()) == []


def test_auditing_a_copy_audits_the_copy(
    sandbox: SandboxServer, envelope: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = tmp_path / "archive"
    manifest = _archive(envelope_id=envelope, destination=str(original), include_audit_log=True)
    manifest_path = Path(manifest["manifest_uri"][len("file://") :])
    folder = manifest_path.parent
    assert [entry["path"] for entry in manifest["files"]] == [
        "01-Agreement.pdf",
        "02-Annex.pdf",
    ], manifest["files"]
    assert manifest["audit_log"]["path"] == "audit-log.pdf"

    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    copied_manifest = copy / manifest_path.relative_to(original)
    tampered = copied_manifest.parent / manifest["files"][0]["path"]
    deleted = copied_manifest.parent / manifest["files"][1]["path"]
    data = bytearray(tampered.read_bytes())
    data[len(data) // 3] ^= 0x01
    tampered.write_bytes(bytes(data))
    deleted.unlink()
    capsys.readouterr()  # the operator's log

    assert main(["--manifest", str(copied_manifest)]) == 1
    out = capsys.readouterr().out
    assert f"manifest {copied_manifest}: checking the files beside it" in out
    failing = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert any(line.startswith(f"FAIL  {tampered}") for line in failing), out
    assert f"FAIL  {deleted}  missing" in out, out
    assert "changed: sha256" in out
    assert str(original) not in out  # the original (where the URIs point) was not what was checked

    # The recorded URIs point at the untouched original: --by-uri checks those.
    assert main(["--manifest", str(copied_manifest), "--by-uri"]) == 0
    assert "the URIs it records (--by-uri)" in capsys.readouterr().out
    assert main(["--manifest", str(manifest_path)]) == 0
    capsys.readouterr()

    # A PDF beside the manifest that it does not list fails, named.
    extra = folder / "99-smuggled.pdf"
    shutil.copy(SEALED / "29_sealed_signed.pdf", extra)
    assert main(["--manifest", str(manifest_path)]) == 1
    assert f"FAIL  {extra}  unlisted" in capsys.readouterr().out


def test_an_old_manifest_without_relative_paths_is_read_by_name(
    sandbox: SandboxServer, envelope: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = _archive(envelope_id=envelope, destination=str(tmp_path / "archive"))
    manifest_path = Path(manifest["manifest_uri"][len("file://") :])
    old = json.loads(manifest_path.read_text())
    for entry in old["files"]:
        del entry["path"]
    manifest_path.write_text(json.dumps(old))
    copy = tmp_path / "copy"
    shutil.copytree(manifest_path.parent, copy)
    (copy / manifest["files"][1]["path"]).unlink()
    assert main(["--manifest", str(copy / manifest_path.name)]) == 1
    out = capsys.readouterr().out
    assert "records no relative paths" in out
    assert f"FAIL  {copy / manifest['files'][1]['path']}  missing" in out
    assert f"PASS  {copy / manifest['files'][0]['path']}" in out


def test_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "docsign verify --manifest copy-of-archive/env_123/manifest.json" in out
    assert "--by-uri" in out


def test_a_manifest_path_climbing_out_fails_that_entry(
    sandbox: SandboxServer, envelope: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = _archive(envelope_id=envelope, destination=str(tmp_path / "archive"))
    manifest_path = Path(manifest["manifest_uri"][len("file://") :])
    tampered = json.loads(manifest_path.read_text())
    tampered["files"][0]["path"] = "../../outside.pdf"
    manifest_path.write_text(json.dumps(tampered))
    capsys.readouterr()
    assert main(["--manifest", str(manifest_path)]) == 1
    out = capsys.readouterr().out
    assert "'../../outside.pdf' is not a plain relative path" in out
    assert out.count("PASS") == 1  # the other file is still audited
