"""DocsignArchiveSignedDocumentsOperator against the sandbox over real HTTP on 127.0.0.1.

Faults (wrong content type, truncated body) come from the sandbox's fault injection; nothing of the
provider is mocked. Envelopes are made COMPLETED the way a real one gets there: created through the
hook, distributed, then signed by the sandbox's simulated signers.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import signer

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS, AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive import (
    DocsignArchiveConflictError,
    DocsignArchiveError,
    DocsignArchiveEscapeError,
    DocsignArchiveSignedDocumentsOperator,
    DocsignEnvelopeFailedError,
    DocsignEnvelopeNotReadyError,
)
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

SIGNER = signer(email="signer@example.test", name="Sam Signer")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.fixture
def make_envelope(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> Callable[..., str]:
    """Factory: an envelope with ``n`` PDFs in the wanted status (DRAFT, PENDING, COMPLETED, REJECTED)."""
    counter = iter(range(1_000_000))

    def _make(
        status: str = "COMPLETED",
        *,
        n: int = 3,
        external_id: str | None = "ACME-42",
        titles: list[str] | None = None,
    ) -> str:
        number = next(counter)
        names = ["Service agreement", "Annex A", "Price list", "Annex B", "Annex C"]
        files = [make_pdf(f"{number}/{names[i]}.pdf", title=names[i], pages=i + 1) for i in range(n)]
        envelope_id = hook.create_envelope(
            title=f"Contract {number}", files=files, recipients=[SIGNER], external_id=external_id
        )
        if titles is not None:
            # Titles as another client of the service (its web app) may set them: the hook refuses
            # control characters wherever a request leaves it, so they are sent with plain requests.
            items = hook.get_envelope(envelope_id).items
            data = [{"envelopeItemId": item.id, "title": t} for item, t in zip(items, titles, strict=True)]
            answer = requests.post(
                f"{sandbox.base_url}/envelope/item/update-many",
                json={"envelopeId": envelope_id, "data": data},
                headers={"Authorization": sandbox.api_key},
                timeout=30,
            )
            assert answer.status_code == 200, answer.text
        if status == "DRAFT":
            return envelope_id
        hook.distribute_envelope(envelope_id)
        if status == "PENDING":
            return envelope_id
        if status == "COMPLETED":
            sandbox.complete(envelope_id)
        elif status == "REJECTED":
            recipient = hook.get_envelope(envelope_id).recipients[0]
            sandbox.reject(envelope_id, recipient.id, "Wrong price on page 2")
        sandbox.wait_status(envelope_id, status, timeout=20)
        return envelope_id

    return _make


def _archive(**kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("task_id", "archive")
    operator = DocsignArchiveSignedDocumentsOperator(**kwargs)
    return operator.execute({})  # type: ignore[arg-type]


def _assert_matches_sandbox(
    sandbox: SandboxServer, manifest: dict[str, Any], version: str = "signed"
) -> None:
    for entry in manifest["files"]:
        assert entry["uri"].startswith("file://")
        data = Path(entry["uri"][len("file://") :]).read_bytes()
        expected = _sha(sandbox.item_bytes(entry["item_id"], version))
        assert _sha(data) == expected == entry["sha256"]
        assert entry["size"] == len(data)


def test_three_item_completed_envelope_is_archived_to_a_local_directory(
    hook: DocsignHook, sandbox: SandboxServer, make_envelope: Callable[..., str], tmp_path: Path
) -> None:
    envelope_id = make_envelope("COMPLETED")
    envelope = hook.get_envelope(envelope_id)
    dest = tmp_path / "archive"

    manifest = _archive(envelope_id=envelope_id, destination=str(dest))

    assert manifest["envelope_id"] == envelope_id
    assert manifest["external_id"] == "ACME-42"
    assert manifest["title"] == envelope.title
    assert manifest["status"] == "COMPLETED"
    assert manifest["completed_at"]
    assert manifest["completed_at"] == envelope.completed_at
    assert [(e["order"], e["item_id"]) for e in manifest["files"]] == [
        (i.order, i.id) for i in envelope.items
    ]
    assert [e["outcome"] for e in manifest["files"]] == ["created"] * 3
    assert {e["version"] for e in manifest["files"]} == {"signed"}
    assert [Path(e["uri"]).name for e in manifest["files"]] == [
        "01-Service agreement.pdf",
        "02-Annex A.pdf",
        "03-Price list.pdf",
    ]
    _assert_matches_sandbox(sandbox, manifest)
    # the manifest on disk is the XCom value, next to the files; nothing else was left behind
    manifest_path = dest / "ACME-42" / "manifest.json"
    assert json.loads(manifest_path.read_text()) == manifest
    assert manifest["manifest_uri"] == f"file://{manifest_path}"
    assert [p.name for p in _files_under(dest)] == sorted(
        ["01-Service agreement.pdf", "02-Annex A.pdf", "03-Price list.pdf", "manifest.json"]
    )
    downloads = [r for r in sandbox.requests() if r["path"].endswith("/download")]
    assert [r["path"] for r in downloads] == [f"/envelope/item/{i.id}/download" for i in envelope.items]


def test_rerun_is_idempotent_and_reports_unchanged(
    make_envelope: Callable[..., str], sandbox: SandboxServer, tmp_path: Path
) -> None:
    envelope_id = make_envelope("COMPLETED", external_id=None)
    dest = tmp_path / "archive"
    first = _archive(envelope_id=envelope_id, destination=str(dest))
    stats = {p: (p.stat().st_ino, p.read_bytes()) for p in _files_under(dest) if p.suffix == ".pdf"}

    second = _archive(envelope_id=envelope_id, destination=str(dest))

    assert [e["outcome"] for e in second["files"]] == ["unchanged"] * 3
    assert [e["sha256"] for e in second["files"]] == [e["sha256"] for e in first["files"]]
    # envelope_key falls back to the envelope id without an externalId
    assert all(f"/{envelope_id}/" in e["uri"] for e in second["files"])
    after = {p: (p.stat().st_ino, p.read_bytes()) for p in _files_under(dest) if p.suffix == ".pdf"}
    assert after == stats
    assert len(after) == 3
    assert json.loads((dest / envelope_id / "manifest.json").read_text()) == second
    _assert_matches_sandbox(sandbox, second)


def test_conflicting_existing_file_fails_and_is_left_untouched(
    make_envelope: Callable[..., str], tmp_path: Path
) -> None:
    envelope_id = make_envelope("COMPLETED", external_id="CONFLICT-1")
    dest = tmp_path / "archive"
    target = dest / "CONFLICT-1" / "02-Annex A.pdf"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"%PDF-1.4 someone else's document\n")
    before = (target.stat().st_mtime_ns, target.stat().st_ino, target.read_bytes())

    with pytest.raises(DocsignArchiveConflictError, match=r"02-Annex A\.pdf"):
        _archive(envelope_id=envelope_id, destination=str(dest))

    assert (target.stat().st_mtime_ns, target.stat().st_ino, target.read_bytes()) == before
    # nothing was moved into place and no temporary file is left
    assert _files_under(dest) == [target]


def test_overwrite_replaces_a_different_existing_file(
    make_envelope: Callable[..., str], sandbox: SandboxServer, tmp_path: Path
) -> None:
    envelope_id = make_envelope("COMPLETED", external_id="OVERWRITE-1")
    dest = tmp_path / "archive"
    target = dest / "OVERWRITE-1" / "01-Service agreement.pdf"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"%PDF-1.4 stale\n")

    manifest = _archive(envelope_id=envelope_id, destination=str(dest), overwrite=True)

    assert [e["outcome"] for e in manifest["files"]] == ["overwritten", "created", "created"]
    _assert_matches_sandbox(sandbox, manifest)


@pytest.mark.parametrize("status", ["DRAFT", "PENDING"])
def test_signed_before_completion_fails_and_writes_nothing(
    status: str, make_envelope: Callable[..., str], sandbox: SandboxServer, tmp_path: Path
) -> None:
    envelope_id = make_envelope(status)
    sandbox.clear_requests()
    dest = tmp_path / "archive"

    with pytest.raises(DocsignEnvelopeNotReadyError, match=f"is {status}, not COMPLETED"):
        _archive(envelope_id=envelope_id, destination=str(dest))

    assert not dest.exists()
    assert not any(r["path"].endswith("/download") for r in sandbox.requests())


def test_rejected_envelope_fails_without_retries_and_writes_nothing(
    make_envelope: Callable[..., str], sandbox: SandboxServer, tmp_path: Path
) -> None:
    envelope_id = make_envelope("REJECTED")
    sandbox.clear_requests()
    dest = tmp_path / "archive"

    with pytest.raises(DocsignEnvelopeFailedError, match="REJECTED") as info:
        _archive(envelope_id=envelope_id, destination=str(dest), version="signed")

    assert "Wrong price on page 2" in str(info.value)
    assert not dest.exists()
    assert not any(r["path"].endswith("/download") for r in sandbox.requests())


def test_original_is_allowed_before_completion_and_pending_only_while_pending(
    make_envelope: Callable[..., str], sandbox: SandboxServer, tmp_path: Path
) -> None:
    draft = make_envelope("DRAFT", external_id="DRAFT-ORIG", n=2)
    manifest = _archive(envelope_id=draft, destination=str(tmp_path / "archive"), version="original")
    assert [e["version"] for e in manifest["files"]] == ["original", "original"]
    _assert_matches_sandbox(sandbox, manifest, version="original")

    with pytest.raises(DocsignEnvelopeNotReadyError, match="only while the envelope is PENDING"):
        _archive(envelope_id=draft, destination=str(tmp_path / "pending"), version="pending")
    assert not (tmp_path / "pending").exists()


@pytest.mark.parametrize("action", ["wrong_content_type", "truncate"])
def test_bad_download_of_the_second_item_fails_and_leaves_no_file_at_a_final_name(
    action: str,
    hook: DocsignHook,
    make_envelope: Callable[..., str],
    sandbox: SandboxServer,
    tmp_path: Path,
) -> None:
    envelope_id = make_envelope("COMPLETED", external_id=f"FAULT-{action}")
    second = hook.get_envelope(envelope_id).items[1]
    sandbox.inject_fault(method="GET", path=f"/envelope/item/{second.id}/download", action=action, count=10)
    dest = tmp_path / "archive"

    with pytest.raises(DocsignArchiveError, match=second.id):
        _archive(envelope_id=envelope_id, destination=str(dest))

    assert not (dest / f"FAULT-{action}" / "02-Annex A.pdf").exists()
    # all-or-nothing: the first item was staged but never moved into place; no temporary file is left
    assert _files_under(dest) == []
    sandbox.clear_faults()
    manifest = _archive(envelope_id=envelope_id, destination=str(dest))
    assert [e["outcome"] for e in manifest["files"]] == ["created"] * 3


def test_hostile_titles_stay_inside_the_destination(
    hook: DocsignHook, make_envelope: Callable[..., str], sandbox: SandboxServer, tmp_path: Path
) -> None:
    hostile = ["../../etc/passwd", "a/b", "ctl\x01\x1b[31m\tname\x7f", "x" * 255, "../../etc/passwd"]
    envelope_id = make_envelope("COMPLETED", n=5, external_id="../../../escape", titles=hostile)
    dest = tmp_path / "archive"

    manifest = _archive(envelope_id=envelope_id, destination=str(dest), filename_template="{title}.pdf")

    assert [e["title"] for e in manifest["files"]] == hostile
    paths = [Path(e["uri"][len("file://") :]) for e in manifest["files"]]
    root = dest.resolve()
    for path in paths:
        assert path.resolve().is_relative_to(root)
        assert path.parent.resolve() == root
        assert path.name.endswith(".pdf")
        assert not path.name[:-4].lower().endswith(".pdf")
        assert len(path.name.encode()) <= 200
        assert not any(ord(ch) < 32 or ord(ch) == 127 for ch in path.name)
    assert len({p.name.casefold() for p in paths}) == 5  # the two identical titles were told apart
    assert [p.name for p in paths][:2] == ["_._etc_passwd.pdf", "a_b.pdf"]
    assert paths[4].name == "_._etc_passwd-2.pdf"
    _assert_matches_sandbox(sandbox, manifest)
    assert not (tmp_path / "etc").exists()
    assert {p.resolve() for p in _files_under(dest)} == {p.resolve() for p in paths} | {
        (dest / "manifest.json").resolve()
    }


def test_audit_log_and_certificate_are_archived_beside_the_items(
    make_envelope: Callable[..., str], tmp_path: Path
) -> None:
    envelope_id = make_envelope("COMPLETED", n=1, external_id="REPORTS-1")
    dest = tmp_path / "archive"

    manifest = _archive(
        envelope_id=envelope_id, destination=str(dest), include_audit_log=True, include_certificate=True
    )

    for kind, name in (("audit_log", "audit-log.pdf"), ("certificate", "certificate.pdf")):
        entry = manifest[kind]
        path = dest / "REPORTS-1" / name
        assert entry["uri"] == f"file://{path}"
        data = path.read_bytes()
        assert data.startswith(b"%PDF-")
        assert entry["sha256"] == _sha(data)
        assert entry["size"] == len(data)
    rerun = _archive(
        envelope_id=envelope_id, destination=str(dest), include_audit_log=True, include_certificate=True
    )
    assert rerun["files"][0]["outcome"] == "unchanged"
    # reports are rendered on request: identical bytes are "unchanged", different ones keep the first copy
    for kind in ("audit_log", "certificate"):
        assert rerun[kind]["outcome"] in {"unchanged", "kept"}
        assert rerun[kind]["sha256"] == _sha(Path(rerun[kind]["uri"][len("file://") :]).read_bytes())


def test_certificate_needs_a_finished_envelope(make_envelope: Callable[..., str], tmp_path: Path) -> None:
    draft = make_envelope("DRAFT", n=1)
    dest = tmp_path / "archive"
    with pytest.raises(DocsignEnvelopeNotReadyError, match="certificate"):
        _archive(envelope_id=draft, destination=str(dest), version="original", include_certificate=True)
    assert not dest.exists()


def test_memory_store_destination(make_envelope: Callable[..., str], sandbox: SandboxServer) -> None:
    from fsspec.implementations.memory import MemoryFileSystem

    if AIRFLOW_V_3_0_PLUS:
        from airflow.sdk.io import attach
    else:  # Airflow 2.11
        from airflow.io.store import attach  # type: ignore[no-redef]
    memory = MemoryFileSystem()
    attach("memory", fs=memory)  # Airflow registers no memory:// filesystem by itself
    envelope_id = make_envelope("COMPLETED", n=2, external_id="MEM-1")
    root = f"memory://docsign-archive-test-{os.getpid()}"

    try:
        manifest = _archive(envelope_id=envelope_id, destination=root)
        _check_memory_archive(manifest, root, sandbox)
    finally:
        if memory.exists(f"/docsign-archive-test-{os.getpid()}"):
            memory.rm(f"/docsign-archive-test-{os.getpid()}", recursive=True)


def _check_memory_archive(manifest: dict[str, Any], root: str, sandbox: SandboxServer) -> None:
    from airflow_provider_docsign._compat import ObjectStoragePath

    assert manifest["destination"] == root.replace("memory://", "memory:///")

    for entry in manifest["files"]:
        data = ObjectStoragePath(entry["uri"]).read_bytes()
        assert _sha(data) == entry["sha256"] == _sha(sandbox.item_bytes(entry["item_id"], "signed"))
    stored = json.loads(ObjectStoragePath(manifest["manifest_uri"]).read_text())
    assert stored == manifest
    listing = sorted(p.name for p in ObjectStoragePath(f"{root}/MEM-1").iterdir())
    assert listing == ["01-Service agreement.pdf", "02-Annex A.pdf", "manifest.json"]


def test_a_manifest_of_another_envelope_is_never_replaced(
    make_envelope: Callable[..., str], tmp_path: Path
) -> None:
    first = make_envelope("COMPLETED", n=1, external_id="SHARED-A")
    second = make_envelope("COMPLETED", n=1, external_id="SHARED-B")
    dest = tmp_path / "archive"
    flat = "{envelope_key}-{order:02d}-{title}.pdf"
    _archive(envelope_id=first, destination=str(dest), filename_template=flat)
    manifest_path = dest / "manifest.json"
    before = manifest_path.read_bytes()

    with pytest.raises(DocsignArchiveConflictError, match="manifest of another envelope"):
        _archive(envelope_id=second, destination=str(dest), filename_template=flat)
    assert manifest_path.read_bytes() == before
    assert [p.name for p in _files_under(dest)] == ["SHARED-A-01-Service agreement.pdf", "manifest.json"]

    manifest = _archive(
        envelope_id=second, destination=str(dest), filename_template=flat, manifest_name="{envelope_key}.json"
    )
    assert manifest["manifest_uri"] == f"file://{dest}/SHARED-B.json"
    assert json.loads((dest / "SHARED-B.json").read_text()) == manifest
    assert manifest_path.read_bytes() == before


def test_the_api_key_never_reaches_logs_manifest_or_errors(
    api_key: str,
    hook: DocsignHook,
    make_envelope: Callable[..., str],
    sandbox: SandboxServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    import logging

    caplog.set_level(logging.DEBUG)
    envelope_id = make_envelope("COMPLETED", n=2, external_id="SECRET-1")
    dest = tmp_path / "archive"
    manifest = _archive(envelope_id=envelope_id, destination=str(dest), include_audit_log=True)
    second = hook.get_envelope(envelope_id).items[1]
    sandbox.inject_fault(
        method="GET", path=f"/envelope/item/{second.id}/download", action="status", status=500
    )
    with pytest.raises(DocsignArchiveError) as info:
        _archive(envelope_id=envelope_id, destination=str(tmp_path / "other"))

    captured = capfd.readouterr()
    texts = [
        caplog.text,
        captured.out,
        captured.err,
        json.dumps(manifest),
        str(info.value),
        repr(info.value),
        str(info.value.__cause__),
    ]
    texts += [p.read_text() for p in dest.rglob("*.json")]
    assert all(api_key not in text for text in texts)
    # the logs were really captured (the task logger prints through structlog on Airflow 3)
    assert "Archiving 2 file(s)" in caplog.text + captured.out
    assert "Docsign GET" in caplog.text  # and the hook's DEBUG lines


def test_pending_version_while_pending_and_signed_without_require_completed(
    make_envelope: Callable[..., str], sandbox: SandboxServer, tmp_path: Path
) -> None:
    envelope_id = make_envelope("PENDING", n=2, external_id="PENDING-1")

    pending = _archive(envelope_id=envelope_id, destination=str(tmp_path / "p"), version="pending")
    assert [e["version"] for e in pending["files"]] == ["pending", "pending"]
    assert all(Path(e["uri"][len("file://") :]).read_bytes().startswith(b"%PDF-") for e in pending["files"])
    assert pending["status"] == "PENDING"

    # opting out of the COMPLETED check archives what the service serves as "signed" before completion
    unsigned = _archive(envelope_id=envelope_id, destination=str(tmp_path / "s"), require_completed=False)
    _assert_matches_sandbox(sandbox, unsigned, version="signed")
    assert [e["sha256"] for e in unsigned["files"]] == [
        _sha(sandbox.item_bytes(e["item_id"], "original")) for e in unsigned["files"]
    ]


def test_a_symlinked_envelope_folder_leading_outside_is_refused_and_nothing_written(
    make_envelope: Callable[..., str], sandbox: SandboxServer, tmp_path: Path
) -> None:
    envelope_id = make_envelope("COMPLETED", external_id="LINKED-1")
    dest = tmp_path / "archive"
    dest.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (dest / "LINKED-1").symlink_to(outside, target_is_directory=True)
    sandbox.clear_requests()

    with pytest.raises(DocsignArchiveEscapeError, match=r"outside the destination") as info:
        _archive(envelope_id=envelope_id, destination=str(dest))

    assert isinstance(info.value, AirflowFailException)  # a retry would meet the same link
    assert "LINKED-1/01-Service agreement.pdf" in str(info.value)
    assert list(outside.iterdir()) == []
    assert [p.name for p in dest.iterdir()] == ["LINKED-1"]
    # refused before any download
    assert not [r for r in sandbox.requests() if "download" in r["path"]]


def test_a_final_name_linked_to_an_outside_file_is_refused_not_unchanged(
    make_envelope: Callable[..., str], sandbox: SandboxServer, tmp_path: Path
) -> None:
    envelope_id = make_envelope("COMPLETED", external_id="LINKED-2", n=1)
    first = _archive(envelope_id=envelope_id, destination=str(tmp_path / "first"))
    outside = tmp_path / "outside.pdf"
    outside.write_bytes(Path(first["files"][0]["uri"][len("file://") :]).read_bytes())  # identical bytes
    dest = tmp_path / "archive"
    (dest / "LINKED-2").mkdir(parents=True)
    (dest / "LINKED-2" / "01-Service agreement.pdf").symlink_to(outside)
    before = outside.read_bytes()

    with pytest.raises(DocsignArchiveEscapeError, match=r"01-Service agreement\.pdf"):
        _archive(envelope_id=envelope_id, destination=str(dest))

    assert outside.read_bytes() == before
    assert sorted(p.name for p in (dest / "LINKED-2").iterdir()) == ["01-Service agreement.pdf"]


def test_a_failed_manifest_write_names_destination_and_cause_and_the_next_run_completes(
    make_envelope: Callable[..., str], tmp_path: Path
) -> None:
    envelope_id = make_envelope("COMPLETED", external_id="MANIFEST-1", n=2)
    dest = tmp_path / "archive"
    blocker = dest / "MANIFEST-1" / "manifest.json"
    blocker.mkdir(parents=True)  # a directory where the manifest file must go: the write fails

    with pytest.raises(DocsignArchiveError) as info:
        _archive(envelope_id=envelope_id, destination=str(dest), overwrite=True)

    message = str(info.value)
    assert f"in the destination file://{dest}" in message
    assert "IsADirectoryError" in message
    assert not isinstance(info.value, AirflowFailException)  # retryable: the next run completes it
    assert not [p for p in _files_under(dest) if p.name.endswith(".partial")]

    blocker.rmdir()
    manifest = _archive(envelope_id=envelope_id, destination=str(dest))
    assert [e["outcome"] for e in manifest["files"]] == ["unchanged", "unchanged"]
    assert json.loads(blocker.read_text()) == manifest


def test_a_directory_at_the_manifest_name_is_a_conflict_without_overwrite(
    make_envelope: Callable[..., str], tmp_path: Path
) -> None:
    envelope_id = make_envelope("COMPLETED", external_id="MANIFEST-2", n=1)
    dest = tmp_path / "archive"
    (dest / "MANIFEST-2" / "manifest.json").mkdir(parents=True)
    with pytest.raises(DocsignArchiveConflictError, match="manifest"):
        _archive(envelope_id=envelope_id, destination=str(dest))
    assert _files_under(dest) == []
