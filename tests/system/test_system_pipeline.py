"""System tests: the contract pipeline through the public operators, on a real Documenso (opt-in).

Create from two PDFs for two signers, distribute, sign as each recipient (through the web app's own
signing routes, :mod:`peer`), wait with the sensor (poke mode, and deferred: the trigger run for real to
its event, then ``execute_complete``), archive with signature verification pinned to the instance's
sealing certificate, and audit the archive with ``docsign verify --manifest`` (a tampered copy fails).
Signers use ``example.com`` addresses and ``distributionMethod: NONE``: no e-mail is sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, sig, signer
from peer import ActAfterFirstRead, patiently, raw_envelope, sign_as, wait_status

from airflow_provider_docsign._compat import AirflowFailException, TaskDeferred
from airflow_provider_docsign.exceptions import DocsignArchiveSignatureError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignArchiveSignedDocumentsOperator,
    DocsignCreateEnvelopeOperator,
    DocsignDistributeEnvelopeOperator,
)
from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor
from airflow_provider_docsign.triggers import DocsignEnvelopeTrigger

NO_EMAIL = {"distributionMethod": "NONE"}
FIRST, SECOND = "system-buyer@example.com", "system-seller@example.com"
#: The installed ``docsign`` command beside this Python, else the same CLI as a module.
CLI = (
    [str(Path(sys.executable).with_name("docsign"))]
    if Path(sys.executable).with_name("docsign").is_file()
    else [sys.executable, "-m", "airflow_provider_docsign.cli"]
)


def sign(envelope_id: str, email: str | None = None) -> list[str]:
    """Sign as a recipient through the web app's route, patient with the instance's shared per-IP limit."""
    signed: list[str] = patiently(sign_as, envelope_id, email)
    return signed


def seal_fingerprint(pem: Path) -> str:
    """The SHA-256 fingerprint of the sealing certificate, computed here with ``cryptography`` alone."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    return x509.load_pem_x509_certificate(pem.read_bytes()).fingerprint(hashes.SHA256()).hex()


def pinned_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, fingerprints: list[str]) -> str:
    """A second connection to the instance (the ``docsign_system`` shape) that pins the sealing cert."""
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}",
        json.dumps(
            {
                "conn_type": "docsign",
                "host": os.environ["DOCSIGN_SYSTEM_URL"],
                "password": os.environ["DOCSIGN_SYSTEM_API_KEY"],
                "extra": {
                    "max_retries": 3,
                    "backoff_factor": 0.5,
                    "max_retry_wait": 10,
                    "timeout": [10, 60],
                    "signing_certificate_fingerprints": fingerprints,
                },
            }
        ),
    )
    return conn_id


def two_signers() -> list[dict[str, Any]]:
    """Two SIGNERs: the first signs on page 2 of the first PDF, the second on the second PDF."""
    return [
        signer(sig(page=2), email=FIRST, name="Bea Buyer"),
        signer(sig(identifier=1, positionY=40), email=SECOND, name="Sol Seller"),
    ]


def create_and_distribute(
    conn: str, run: Any, name: str, files: list[Path]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The create and distribute operators as a DAG's first two tasks run them (the id kept for cleanup)."""
    created = DocsignCreateEnvelopeOperator(
        task_id="create",
        docsign_conn_id=conn,
        title=f"{run.prefix} {name}",
        files=[str(f) for f in files],
        recipients=two_signers(),
        external_id=run.external_id(name),
        folder_id=run.folder_id,
        meta=NO_EMAIL,
    ).execute(ctx())
    run.envelope_ids.append(created["envelope_id"])
    sent = DocsignDistributeEnvelopeOperator(
        task_id="send", docsign_conn_id=conn, envelope_id=created["envelope_id"], meta=NO_EMAIL
    ).execute(ctx())
    return created, sent


@pytest.fixture(scope="module")
def contract(system_conn: str, system_run: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The pipeline up to COMPLETED: create, distribute, then the poke sensor waits while both sign."""
    folder = tmp_path_factory.mktemp("contract")
    files = [
        write_sample_pdf(folder / "agreement.pdf", pages=2, title="agreement"),
        write_sample_pdf(folder / "annex.pdf", title="annex"),
    ]
    created, sent = create_and_distribute(system_conn, system_run, "pipeline", files)
    sensor = DocsignEnvelopeSensor(
        task_id="wait",
        envelope_id=created,
        docsign_conn_id=system_conn,
        mode="poke",
        poke_interval=1,
        timeout=180,
    )
    envelope_id = created["envelope_id"]
    with ActAfterFirstRead(
        sensor.hook, lambda: sign(envelope_id, FIRST) + sign(envelope_id, SECOND)
    ) as signing:
        waited = sensor.execute(ctx())
    return {
        "files": files,
        "created": created,
        "sent": sent,
        "waited": waited,
        "polls": signing.reads,
        "signed": signing.result,
    }


def test_create_distribute_then_the_poke_sensor_waits_until_both_have_signed(
    contract: dict[str, Any], system_hook: DocsignHook, system_run: Any
) -> None:
    created, sent, waited = contract["created"], contract["sent"], contract["waited"]
    assert created["status"] == "DRAFT"
    assert len(created["item_ids"]) == 2
    assert created["external_id"].startswith(f"{system_run.prefix}-pipeline-")
    assert sent["status"] == "PENDING"
    assert sorted(r["email"] for r in sent["recipients"]) == sorted([FIRST, SECOND])
    assert contract["signed"] == [FIRST, SECOND]
    assert contract["polls"] >= 2  # it saw the envelope PENDING, then COMPLETED

    envelope = system_hook.get_envelope(created["envelope_id"])
    assert envelope.status == "COMPLETED"
    assert waited == [
        {
            "envelope_id": created["envelope_id"],
            "status": "COMPLETED",
            "completed_at": envelope.completed_at,
            "item_ids": created["item_ids"],
        }
    ]
    assert envelope.completed_at
    assert {r.email: r.signing_status for r in envelope.recipients} == {FIRST: "SIGNED", SECOND: "SIGNED"}


def test_distribute_leaves_a_completed_envelope_alone_and_refuses_it(
    contract: dict[str, Any], system_conn: str, system_hook: DocsignHook
) -> None:
    envelope_id = contract["created"]["envelope_id"]
    operator = DocsignDistributeEnvelopeOperator(
        task_id="send_again", docsign_conn_id=system_conn, envelope_id=envelope_id
    )
    with pytest.raises(AirflowFailException, match=f"{envelope_id} is COMPLETED: only a DRAFT"):
        operator.execute(ctx())
    assert system_hook.get_envelope(envelope_id).status == "COMPLETED"


def test_archive_pinned_to_the_sealing_certificate_and_docsign_verify_agrees(
    contract: dict[str, Any],
    seal_cert_pem: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    fingerprint = seal_fingerprint(seal_cert_pem)
    conn = pinned_connection(monkeypatch, "docsign_system_pinned", [fingerprint])
    envelope_id = contract["created"]["envelope_id"]
    destination = tmp_path / "archive"
    manifest = DocsignArchiveSignedDocumentsOperator(
        task_id="archive", docsign_conn_id=conn, envelope_id=envelope_id, destination=str(destination)
    ).execute(ctx())

    assert (manifest["envelope_id"], manifest["status"]) == (envelope_id, "COMPLETED")
    assert [f["item_id"] for f in manifest["files"]] == contract["created"]["item_ids"]
    # One folder per envelope (named by its externalId), the manifest beside the files.
    folder = destination / contract["created"]["external_id"]
    manifest_file = folder / "manifest.json"
    assert manifest["manifest_uri"] == manifest_file.as_uri()
    assert json.loads(manifest_file.read_text())["files"] == manifest["files"]
    uploaded = {f.read_bytes() for f in contract["files"]}
    for entry in manifest["files"]:
        data = (folder / entry["path"]).read_bytes()
        assert data.startswith(b"%PDF-")
        assert data not in uploaded  # sealed by the service, not the bytes that were sent
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        check = entry["signature"]
        assert (check["signed"], check["passed"], check["trust_policy"]) == (True, True, True), check
        (seal,) = check["signatures"]
        assert seal["signer"]["sha256"] == fingerprint  # the instance's own sealing certificate
        assert (seal["intact"], seal["valid"], seal["trusted"]) == (True, True, True)
        assert seal["coverage"] == "entire_file"

    def verify(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, "verify", "--manifest", str(path), *extra],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )

    passed = verify(manifest_file, "--fingerprint", fingerprint)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.stdout.count("PASS ") == 2
    assert verify(manifest_file).returncode == 0  # without a pin: intact and valid
    other_pin = verify(manifest_file, "--fingerprint", "ab" * 32)
    assert other_pin.returncode == 1, other_pin.stdout + other_pin.stderr
    assert "is not trusted by the policy" in other_pin.stdout

    # A copy with one byte of the first signed PDF changed fails the audit; the other file still passes.
    copy = tmp_path / "tampered"
    shutil.copytree(folder, copy)
    first, second = (e["path"] for e in manifest["files"])
    victim = copy / first
    data = bytearray(victim.read_bytes())
    middle = len(data) // 2
    data[middle] = (data[middle] + 1) % 256
    victim.write_bytes(bytes(data))
    tampered = verify(copy / "manifest.json", "--fingerprint", fingerprint)
    assert tampered.returncode == 1, tampered.stdout + tampered.stderr
    assert f"FAIL  {copy / first}" in tampered.stdout
    assert f"PASS  {copy / second}" in tampered.stdout
    assert "the signed bytes were changed" in tampered.stdout


def test_an_archive_pinned_to_another_certificate_is_refused_and_writes_no_pdf(
    contract: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    conn = pinned_connection(monkeypatch, "docsign_system_wrong_pin", ["ab" * 32])
    destination = tmp_path / "archive"
    operator = DocsignArchiveSignedDocumentsOperator(
        task_id="archive",
        docsign_conn_id=conn,
        envelope_id=contract["created"]["envelope_id"],
        destination=str(destination),
    )
    with pytest.raises(DocsignArchiveSignatureError) as refused:
        operator.execute(ctx())
    assert isinstance(refused.value, AirflowFailException)  # no retry: the same bytes would fail again
    assert len(refused.value.failures) == 2
    assert list(destination.rglob("*.pdf")) == []
    assert list(destination.rglob("manifest.json")) == []


def test_the_deferred_sensor_runs_the_trigger_to_completion(
    system_conn: str, system_run: Any, pdf: Callable[..., Path]
) -> None:
    created, _ = create_and_distribute(
        system_conn, system_run, "deferred", [pdf("deferred.pdf", pages=2), pdf("deferred-annex.pdf")]
    )
    envelope_id = created["envelope_id"]
    assert sign(envelope_id, FIRST) == [FIRST]  # one signed: the envelope stays PENDING
    sensor = DocsignEnvelopeSensor(
        task_id="wait",
        envelope_id=envelope_id,
        docsign_conn_id=system_conn,
        deferrable=True,
        poke_interval=1,
        timeout=180,
    )
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(ctx())
    path, kwargs = deferred.value.trigger.serialize()
    assert path.endswith("DocsignEnvelopeTrigger")
    assert (kwargs["envelope_ids"], kwargs["docsign_conn_id"]) == ([envelope_id], system_conn)
    assert kwargs["deadline"] > time.time() + 100
    assert raw_envelope(envelope_id)["status"] == "PENDING"

    # The triggerer rebuilds the trigger from its serialized form; the second signer signs meanwhile.
    trigger = DocsignEnvelopeTrigger(**json.loads(json.dumps(kwargs)))

    async def run() -> list[dict[str, Any]]:
        async def events() -> list[dict[str, Any]]:
            return [event.payload async for event in trigger.run()]

        waiting = asyncio.ensure_future(events())
        await asyncio.sleep(1.5)  # let the trigger poll the PENDING envelope first
        assert not waiting.done()
        signed = await asyncio.get_running_loop().run_in_executor(None, sign, envelope_id, SECOND)
        assert signed == [SECOND]
        return await asyncio.wait_for(waiting, timeout=150)

    events = asyncio.run(run())
    assert [e["status"] for e in events] == ["success"]
    result = sensor.execute_complete(ctx(), events[0])
    final = wait_status(envelope_id, "COMPLETED")
    assert result == [
        {
            "envelope_id": envelope_id,
            "status": "COMPLETED",
            "completed_at": final["completedAt"],
            "item_ids": created["item_ids"],
        }
    ]
