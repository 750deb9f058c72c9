"""The auditor's command reads only regular files inside the manifest's folder, audits each entry on its
own, trusts no other ``.json`` beside the manifest, and stands alone: no Airflow for local files.

Archives are written by hand here (the sealed PDFs recorded from the real service, and a manifest with
their SHA-256), so that every case runs without Airflow or a sandbox; the operator-written archives are
audited in ``tests/integration/test_verify_cli.py``. The command runs in a subprocess wherever a
regression would hang: the subprocess's timeout turns a hang into a failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import SPEC_DIR

from airflow_provider_docsign.archive.auditor import audit_manifest, audit_manifests

SEALED = SPEC_DIR / "recorded" / "sealed" / "29_sealed_signed.pdf"
AUDIT_LOG = SPEC_DIR / "recorded" / "sealed" / "30_sealed_audit_log.pdf"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _entry(path: str, sha256: str) -> dict[str, Any]:
    return {
        "name": f"ACME-1/{path}",
        "path": path,
        "uri": f"file:///original/ACME-1/{path}",
        "sha256": sha256,
    }


def _archive(folder: Path, *names: str, manifest: str = "manifest.json", **extra: Any) -> Path:
    """A folder holding the sealed PDF under each name, and a manifest listing them."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(SEALED, folder / name)
    path = folder / manifest
    files = [_entry(name, _sha256(SEALED)) for name in names]
    path.write_text(json.dumps({"version": "signed", "files": files, **extra}))
    return path


def _add_entries(manifest: Path, *entries: Any) -> None:
    data = json.loads(manifest.read_text())
    data["files"].extend(entries)
    manifest.write_text(json.dumps(data))


def _docsign(*args: Any, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_provider_docsign.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def _lines(outcomes: list[Any]) -> dict[str, list[str]]:
    return {o.file: o.problems for o in outcomes}


def test_a_hostile_folder_fails_each_entry_by_name_and_finishes(tmp_path: Path) -> None:
    """The acceptance case: a FIFO, a /dev/zero link, a link leading out and an extra .json."""
    folder = tmp_path / "ACME-1"
    manifest = _archive(folder, "01-contract.pdf")
    os.mkfifo(folder / "02-fifo.pdf")
    (folder / "03-zero.pdf").symlink_to("/dev/zero")
    outside = tmp_path / "outside.pdf"
    shutil.copy(SEALED, outside)  # a valid sealed PDF with the right hash: only the link is wrong
    (folder / "04-outside.pdf").symlink_to(outside)
    _add_entries(
        manifest,
        _entry("02-fifo.pdf", "0" * 64),
        _entry("03-zero.pdf", "0" * 64),
        _entry("04-outside.pdf", _sha256(SEALED)),
    )
    shutil.copy(SEALED, folder / "05-injected.pdf")
    (folder / "extra.json").write_text(json.dumps({"files": [_entry("05-injected.pdf", _sha256(SEALED))]}))

    done = _docsign("verify", "--manifest", manifest)

    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    out = done.stdout
    assert f"PASS  {folder / '01-contract.pdf'}  signer=" in out
    assert f"FAIL  {folder / '02-fifo.pdf'}  refused: it is a FIFO (named pipe), not a regular file" in out
    leads_out = "refused: a symbolic link leading outside the manifest's folder"
    assert f"FAIL  {folder / '03-zero.pdf'}  {leads_out} (to /dev/zero)" in out
    assert f"FAIL  {folder / '04-outside.pdf'}  {leads_out} (to {outside})" in out
    assert f"FAIL  {folder / '05-injected.pdf'}  unlisted" in out
    assert f"FAIL  {folder / 'extra.json'}  unexpected: a .json beside the manifest" in out
    assert out.count("FAIL  ") == 5


def test_a_link_that_stays_inside_the_folder_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "ACME-1"
    manifest = _archive(folder, "01-contract.pdf")
    (folder / "02-alias.pdf").symlink_to("01-contract.pdf")
    _add_entries(manifest, _entry("02-alias.pdf", _sha256(SEALED)))
    outcomes = audit_manifest(str(manifest), None)
    assert [(o.file, o.status) for o in outcomes] == [
        (str(folder / "01-contract.pdf"), "PASS"),
        (str(folder / "02-alias.pdf"), "PASS"),
    ]


def test_malformed_entries_fail_alone_and_the_rest_are_audited(tmp_path: Path) -> None:
    folder = tmp_path / "ACME-1"
    manifest = _archive(folder, "01-contract.pdf")
    _add_entries(
        manifest,
        _entry("a\x00b.pdf", "0" * 64),  # a NUL in a path
        "not an object",
        {"path": 42, "sha256": "0" * 64},
        {"name": "..", "sha256": "0" * 64},  # an old-style entry naming no file
    )
    data = json.loads(manifest.read_text())
    data["audit_log"] = ["not", "an", "object"]
    data["certificate"] = {**_entry("01-contract.pdf", _sha256(SEALED)), "signature": "signed"}
    manifest.write_text(json.dumps(data))

    outcomes = _lines(audit_manifest(str(manifest), None))

    assert outcomes.pop(str(folder / "01-contract.pdf")) == []
    assert outcomes == {
        f"{manifest}#files[1]": [
            "malformed entry: manifest entry path 'a\\x00b.pdf' is not a plain relative path"
        ],
        f"{manifest}#files[2]": ["malformed entry: not an object (str)"],
        f"{manifest}#files[3]": ["malformed entry: manifest entry path 42 is not a string"],
        f"{manifest}#files[4]": ["malformed entry: manifest entry names no file (name '..')"],
        f"{manifest}#audit_log": ["malformed entry: not an object (list)"],
        f"{manifest}#certificate": ["malformed entry: its 'signature' is not an object"],
    }


def test_an_extra_json_cannot_hide_an_injected_pdf(tmp_path: Path) -> None:
    folder = tmp_path / "ACME-1"
    manifest = _archive(folder, "01-contract.pdf")
    shutil.copy(SEALED, folder / "99-injected.pdf")
    (folder / "decoy.json").write_text(json.dumps({"files": [_entry("99-injected.pdf", _sha256(SEALED))]}))
    outcomes = _lines(audit_manifest(str(manifest), None))
    assert outcomes[str(folder / "99-injected.pdf")] == [
        "unlisted: a PDF beside the manifest that no audited manifest lists"
    ]
    assert outcomes[str(folder / "decoy.json")][0].startswith("unexpected: a .json beside the manifest")
    # A non-regular unlisted PDF is reported too, and never opened.
    os.mkfifo(folder / "98-pipe.PDF")
    outcomes = _lines(audit_manifest(str(manifest), None))
    assert outcomes[str(folder / "98-pipe.PDF")] == [
        "unlisted: a PDF beside the manifest that no audited manifest lists (and it is not a regular file)"
    ]


def test_envelopes_sharing_a_folder_are_audited_together(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    first = _archive(folder, "A-01.pdf", manifest="A.manifest.json")
    second = _archive(folder, "B-01.pdf", manifest="B.manifest.json")

    together = audit_manifests([str(first), str(second)], None)
    assert [(o.file, o.status) for o in together] == [
        (str(folder / "A-01.pdf"), "PASS"),
        (str(folder / "B-01.pdf"), "PASS"),
    ]
    alone = _lines(audit_manifest(str(first), None))
    assert alone[str(folder / "A-01.pdf")] == []
    assert alone[str(folder / "B-01.pdf")][0].startswith("unlisted")
    assert alone[str(folder / "B.manifest.json")][0].startswith("unexpected: a .json")


def test_a_manifest_or_trust_file_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "manifest.json")
    os.mkfifo(tmp_path / "trust.pem")
    done = _docsign("verify", "--manifest", tmp_path / "manifest.json")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"docsign verify: error: manifest {tmp_path / 'manifest.json'}: it is a FIFO (named pipe), not a "
        "regular file; it was not read"
    ]
    done = _docsign("verify", "--trust", tmp_path / "trust.pem", SEALED)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"docsign verify: error: --trust {tmp_path / 'trust.pem'}: ")
    assert "is a FIFO (named pipe), not a regular file" in line
    assert line.endswith("give the PEM file of a certificate")


def test_the_evidence_beside_a_manifest_is_read_under_the_same_rules(tmp_path: Path) -> None:
    """A FIFO as the timestamp token, an LTV copy or a pinned TSA certificate is refused, never waited on."""
    folder = tmp_path / "ACME-1"
    manifest = _archive(folder, "01-contract.pdf")
    data = json.loads(manifest.read_text())
    data["files"][0]["ltv"] = {"path": "01-contract.ltv.pdf", "sha256": "0" * 64, "derived_from": "x"}
    manifest.write_text(json.dumps(data))
    os.mkfifo(folder / "manifest.json.tsr")
    os.mkfifo(folder / "01-contract.ltv.pdf")
    done = _docsign("verify", "--manifest", manifest)
    assert done.returncode == 1, done.stderr
    problems = {line.split("  ")[1]: line for line in done.stdout.splitlines() if line.startswith("FAIL")}
    assert "it is a FIFO (named pipe), not a regular file" in problems[str(folder / "01-contract.ltv.pdf")]
    assert "FIFO" in problems[str(folder / "manifest.json.tsr")]
    os.mkfifo(tmp_path / "tsa.pem")
    done = _docsign("verify", "--tsa-cert", tmp_path / "tsa.pem", SEALED)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"docsign verify: error: --tsa-cert {tmp_path / 'tsa.pem'}: ")
    assert "is a FIFO (named pipe), not a regular file" in line


def test_files_that_cannot_be_read_are_error_lines_and_the_rest_is_audited(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.pdf")
    done = _docsign("verify", tmp_path / "pipe.pdf", "/dev/zero", tmp_path / "missing.pdf", SEALED)
    assert done.returncode == 2
    (passed,) = done.stdout.splitlines()
    assert passed.startswith(f"PASS  {SEALED}  signer=")
    assert done.stderr.splitlines() == [
        f"docsign verify: error: {tmp_path / 'pipe.pdf'}: it is a FIFO (named pipe), not a regular file; "
        "it was not read",
        "docsign verify: error: /dev/zero: it is a character device, not a regular file; it was not read",
        f"docsign verify: error: {tmp_path / 'missing.pdf'}: the file does not exist",
        f"4 file(s) audited; 3 unreadable: {tmp_path / 'pipe.pdf'}, /dev/zero, {tmp_path / 'missing.pdf'}",
    ]


def test_a_local_audit_imports_no_airflow(tmp_path: Path) -> None:
    """``docsign verify`` on local files (a PDF, a manifest, a trust certificate) never imports Airflow."""
    manifest = _archive(tmp_path / "ACME-1", "01-contract.pdf")
    script = (
        "import json, sys\n"
        "from airflow_provider_docsign.cli import main\n"
        "status = main(sys.argv[1:])\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'airflow')\n"
        "print(json.dumps({'status': status, 'airflow': loaded}))\n"
    )

    def run(*args: Any) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-c", script, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert "Traceback" not in done.stderr, done.stderr
        result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
        return result

    fingerprint = json.loads(_docsign("verify", "--json", SEALED).stdout)[0]["report"]["signatures"][0]
    pinned = fingerprint["signer"]["sha256"]
    assert run("verify", "--manifest", manifest, "--fingerprint", pinned, SEALED) == {
        "status": 0,
        "airflow": [],
    }
    assert run("verify", tmp_path / "missing.pdf") == {"status": 2, "airflow": []}
    assert run("verify", "--json", AUDIT_LOG) == {"status": 1, "airflow": []}


def test_a_missing_file_is_one_error_line_on_stderr(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    done = subprocess.run(
        [str(Path(sys.executable).with_name("docsign")), "verify", "missing.pdf"],
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


@pytest.mark.parametrize(
    "argv",
    [
        ["preview", "{fifo}", "{pdf}", "-o", "{out}"],
        ["preview", "{payload}", "{fifo}", "-o", "{out}"],
        ["preview", "{payload}", "{pdf}", "-o", "{fifo}"],
        ["sandbox", "--data-dir", "{fifo}", "--api-key", "api_x"],
    ],
    ids=["preview-payload", "preview-pdf", "preview-output", "sandbox-data-dir"],
)
def test_no_subcommand_hangs_on_a_fifo(tmp_path: Path, argv: list[str]) -> None:
    """Every path argument of every subcommand (templates and webhooks take none) refuses a FIFO."""
    os.mkfifo(tmp_path / "pipe")
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps({"recipients": []}))
    names = {"fifo": tmp_path / "pipe", "pdf": SEALED, "out": tmp_path / "out", "payload": payload}
    done = _docsign(*(arg.format(**names) for arg in argv))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"docsign {argv[0]}: error: ")
    assert "a FIFO (named pipe)" in line, line
    assert not (tmp_path / "out").exists()
