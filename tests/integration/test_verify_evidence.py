"""``docsign verify`` on timestamped archives and long-term validation copies (issue 31's acceptance).

Archives are written by the real operator with the sandbox as TSA, over HTTP on 127.0.0.1. "Three
minutes later" is ``--validation-time``: the verifier judges as of the time it is given (pyHanko's
validation context takes a moment; see tests/unit/test_validation_time.py), so nothing waits.
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_envelope, conn_json, tsa_conn_json

from airflow_provider_docsign.cli.verify import main
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

DOCSIGN = str(Path(sys.executable).with_name("docsign"))
OPENSSL = shutil.which("openssl")


def _tsa_connection(server: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AIRFLOW_CONN_TSA_SANDBOX", tsa_conn_json(server))
    return "tsa_sandbox"


def _archive(envelope_id: str, destination: Path, **kwargs: Any) -> dict[str, Any]:
    operator = DocsignArchiveSignedDocumentsOperator(
        task_id="archive", envelope_id=envelope_id, destination=str(destination), **kwargs
    )
    return operator.execute({})  # type: ignore[arg-type]


@pytest.fixture
def archived(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Path, Path]:
    """A timestamped archive made by the operator; and the sandbox TSA's certificate file."""
    files = [make_pdf("Agreement.pdf", pages=2), make_pdf("Annex.pdf")]
    envelope_id = completed_envelope(hook, sandbox, files, title="Stamped", external_id="STAMPED-1")
    _archive(envelope_id, tmp_path / "archive", tsa_conn_id=_tsa_connection(sandbox, monkeypatch))
    pem = tmp_path / "tsa.pem"
    pem.write_bytes(sandbox.tsa_certificate_pem())
    return tmp_path / "archive" / "STAMPED-1" / "manifest.json", pem


def _docsign(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DOCSIGN, "verify", *args], capture_output=True, text=True, timeout=300)


def test_an_edited_manifest_fails_on_its_timestamp_and_the_unedited_one_passes(
    archived: tuple[Path, Path],
) -> None:
    manifest, tsa_pem = archived
    ok = _docsign("--manifest", str(manifest), "--tsa-cert", str(tsa_pem), "--require-timestamp")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "manifest.json.tsr  timestamp by TSA" in ok.stdout
    assert "Docsign Sandbox TSA" in ok.stdout
    assert "genTime 20" in ok.stdout
    assert "every file in this manifest existed, unchanged, no later than genTime" in ok.stdout

    data = bytearray(manifest.read_bytes())
    data[data.index(b'"title"') + 1] ^= 0x20  # one byte: "title" -> "Title"; still valid JSON
    manifest.write_bytes(bytes(data))
    edited = _docsign("--manifest", str(manifest), "--tsa-cert", str(tsa_pem))
    assert edited.returncode == 1
    assert "FAIL" in edited.stdout
    assert "timestamp mismatch: the manifest was changed after the token was issued" in edited.stdout


def test_json_carries_the_token_and_a_missing_token_fails_when_required(
    archived: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    manifest, tsa_pem = archived
    assert main(["--manifest", str(manifest), "--tsa-cert", str(tsa_pem), "--json"]) == 0
    (token,) = [o for o in json.loads(capsys.readouterr().out) if o.get("kind") == "timestamp"]
    assert token["passed"] is True
    assert token["timestamp"]["trusted"] is True
    assert token["timestamp"]["gen_time"].endswith("Z")
    assert token["covers"] == str(manifest)

    token_file = manifest.with_name("manifest.json.tsr")
    token_file.unlink()
    # The manifest says its token was published: a deleted token fails even without the flag.
    assert main(["--manifest", str(manifest)]) == 1
    assert "no timestamp token beside the manifest" in capsys.readouterr().out

    manifest.write_text(
        json.dumps({k: v for k, v in json.loads(manifest.read_text()).items() if k != "timestamp"})
    )
    assert main(["--manifest", str(manifest)]) == 0  # no token, none declared, none required
    capsys.readouterr()
    assert main(["--manifest", str(manifest), "--require-timestamp"]) == 1
    assert "--require-timestamp was given" in capsys.readouterr().out


@pytest.mark.skipif(OPENSSL is None, reason="needs the openssl command (Debian: apt-get install openssl)")
def test_an_openssl_token_passes_and_an_unpinned_tsa_fails_require_timestamp(
    archived: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_timestamps_tsa import _openssl_tsa

    manifest, sandbox_tsa = archived
    ca = tmp_path / "openssl-tsa"
    ca.mkdir()
    config = _openssl_tsa(ca)
    query = tmp_path / "req.tsq"
    run = {"check": True, "capture_output": True, "timeout": 60}
    subprocess.run(
        [str(OPENSSL), "ts", "-query", "-data", str(manifest), "-sha256", "-cert", "-out", str(query)], **run
    )
    token = manifest.with_name("manifest.json.tsr")
    subprocess.run(
        [str(OPENSSL), "ts", "-reply", "-config", str(config), "-queryfile", str(query), "-out", str(token)],
        **run,
    )

    assert main(["--manifest", str(manifest), "--tsa-cert", str(ca / "tsa.crt"), "--require-timestamp"]) == 0
    assert "OpenSSL Test TSA" in capsys.readouterr().out

    assert main(["--manifest", str(manifest), "--tsa-cert", str(sandbox_tsa), "--require-timestamp"]) == 1
    assert "not trusted by the pinned TSA certificates" in capsys.readouterr().out


# -- long-term validation: a seal that expires two minutes after signing ------------------------------


@pytest.fixture(scope="module")
def short_lived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    with SandboxServer(
        tmp_path_factory.mktemp("verify-short-seal"), extra_args=["--seal-cert-lifetime", "120"]
    ) as s:
        yield s


def test_three_minutes_later_the_ltv_copy_validates_and_the_plain_copy_reports_the_expiry(
    short_lived: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(short_lived))
    with DocsignHook() as hook:
        envelope_id = completed_envelope(
            hook, short_lived, [make_pdf("Lease.pdf")], title="LTV", external_id="LTV-1"
        )
    manifest = _archive(
        envelope_id, tmp_path / "archive", tsa_conn_id=_tsa_connection(short_lived, monkeypatch), ltv=True
    )
    folder = tmp_path / "archive" / "LTV-1"
    entry = manifest["files"][0]
    seal = tmp_path / "seal.pem"
    seal.write_bytes(short_lived.certificate_pem())
    tsa = tmp_path / "tsa.pem"
    tsa.write_bytes(short_lived.tsa_certificate_pem())
    later = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=3)).isoformat()
    pins = ["--trust", str(seal), "--tsa-cert", str(tsa), "--validation-time", later]

    assert main([str(folder / entry["ltv"]["path"]), *pins]) == 0
    out = capsys.readouterr().out
    assert f"document timestamp {entry['ltv']['document_timestamp']}" in out
    assert "validated as of then" in out

    assert main([str(folder / entry["path"]), *pins]) == 1
    out = capsys.readouterr().out
    assert "the signer certificate expired on" in out

    # The manifest audit as of then: the token and the copy pass, the plain PDF reports the expiry.
    assert main(["--manifest", str(folder / "manifest.json"), *pins, "--json"]) == 1
    outcomes = {Path(o["file"]).name: o for o in json.loads(capsys.readouterr().out)}
    assert outcomes["manifest.json.tsr"]["passed"] is True
    copy = outcomes[Path(entry["ltv"]["path"]).name]
    assert copy["passed"] is True
    assert copy["ltv"]["validated_as_of"] == entry["ltv"]["document_timestamp"]
    plain = outcomes[Path(entry["path"]).name]
    assert plain["passed"] is False
    assert any("expired" in p for p in plain["problems"])

    # And today everything passes.
    assert (
        main(["--manifest", str(folder / "manifest.json"), "--trust", str(seal), "--tsa-cert", str(tsa)]) == 0
    )
    capsys.readouterr()

    # Unpinned, the copy's document timestamp is said not trusted; --strict fails it, and unpinned seals.
    copy = str(folder / entry["ltv"]["path"])
    assert main([copy, "--trust", str(seal)]) == 0
    assert "      not trusted: no TSA pinned: anyone can make such a token" in capsys.readouterr().out
    assert main([copy, "--trust", str(seal), "--strict"]) == 1
    assert "not trusted: no TSA pinned, and --strict was given" in capsys.readouterr().out
    assert main([copy, "--tsa-cert", str(tsa), "--strict"]) == 1
    assert "not trusted: no signer certificate pinned, and --strict was given" in capsys.readouterr().out
    assert main([copy, "--trust", str(seal), "--tsa-cert", str(tsa), "--strict"]) == 0
