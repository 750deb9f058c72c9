"""The clean-up (DocsignDeleteEnvelopesOperator) fed what a careless or hostile user could give it.

Archives tampered with after the fact: a manifest rewritten to drop a document, a PDF replaced by
another valid one with the manifest's hash updated to match, an entry pointing out of the archive
folder, symbolic links, a token removed while the manifest still declares it, a token from a TSA that
is not the pinned one. Envelopes that change between selection and delete: moved to another folder,
made younger, sent. A folder id that does not exist, a list rendered to text, a dry run over thousands.
Each outcome is counted at the sandbox: the ``POST /envelope/delete`` requests, and what is left.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_envelope, ctx, signer, tsa_conn_json

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignArchiveSignedDocumentsOperator,
    DocsignDeleteEnvelopesOperator,
)
from airflow_provider_docsign.sandbox import SandboxServer

REFUSED = "refusing to delete COMPLETED envelopes without an intact archive"


# -- helpers ---------------------------------------------------------------------------------------


def deletes(sandbox: SandboxServer) -> list[dict[str, Any]]:
    """The delete requests the sandbox received since its log was last cleared."""
    return [r for r in sandbox.requests() if r["path"] == "/envelope/delete"]


def archived(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    destination: Path,
    *,
    files: int = 1,
    **archive: Any,
) -> tuple[str, Path]:
    """A COMPLETED envelope of ``files`` PDFs, archived at ``destination``; its id and manifest path."""
    key = f"cleanup-{uuid.uuid4().hex[:8]}"
    pdfs = [make_pdf(f"{key}/doc{i}.pdf", title=f"Document {i}", pages=i + 1) for i in range(files)]
    envelope_id = completed_envelope(hook, sandbox, pdfs, title=f"Signed {key}", external_id=key)
    DocsignArchiveSignedDocumentsOperator(
        task_id="archive", envelope_id=envelope_id, destination=str(destination), **archive
    ).execute(ctx())
    return envelope_id, destination / key / "manifest.json"


def rewrite(manifest: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(manifest.read_text())
    change(data)
    manifest.write_text(json.dumps(data, indent=2) + "\n")


def clean(envelope_id: str, destination: Path, **kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = DocsignDeleteEnvelopesOperator(
        task_id="clean", envelope_ids=[envelope_id], archive_destination=str(destination), **kwargs
    ).execute(ctx())
    return result


def refused_and_kept(
    hook: DocsignHook, sandbox: SandboxServer, envelope_id: str, destination: Path, match: str, **kwargs: Any
) -> str:
    """Run the clean-up: it must fail naming ``match``, send no delete, and leave the envelope."""
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=REFUSED) as failure:
        clean(envelope_id, destination, **kwargs)
    message = str(failure.value)
    assert match in message, message
    assert envelope_id in message
    assert deletes(sandbox) == []
    assert hook.get_envelope(envelope_id).deleted_at is None
    return message


@pytest.fixture
def destination(tmp_path: Path) -> Path:
    return tmp_path / "archive"


@pytest.fixture
def tsa_conn(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``tsa_sandbox``: the sandbox's TSA, its certificate pinned; ``tsa_unpinned``: the same, unpinned."""
    sandbox.clear_tsa()
    unpinned = {"conn_type": "http", "host": sandbox.tsa_url, "extra": {"timeout": 5}}
    monkeypatch.setenv("AIRFLOW_CONN_TSA_SANDBOX", tsa_conn_json(sandbox, timeout=5))
    monkeypatch.setenv("AIRFLOW_CONN_TSA_UNPINNED", json.dumps(unpinned))
    yield "tsa_sandbox"
    sandbox.clear_tsa()


# -- tampered archives -----------------------------------------------------------------------------


def test_a_manifest_rewritten_to_drop_a_document_refuses_the_delete(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], destination: Path
) -> None:
    envelope_id, manifest = archived(hook, sandbox, make_pdf, destination, files=2)
    dropped = json.loads(manifest.read_text())["files"][1]
    (manifest.parent / dropped["path"]).unlink()
    rewrite(manifest, lambda m: m.update(files=m["files"][:1]))
    message = refused_and_kept(hook, sandbox, envelope_id, destination, "is not in the manifest")
    assert dropped["item_id"] in message
    # The same through a query (the envelope filed in a folder of its own): refused, nothing deleted.
    folder = hook.create_folder(f"signed-{uuid.uuid4().hex[:6]}").id
    hook.update_envelope(envelope_id, folder_id=folder)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=dropped["item_id"]):
        DocsignDeleteEnvelopesOperator(
            task_id="clean", status="COMPLETED", folder_id=folder, archive_destination=str(destination)
        ).execute(ctx())
    assert deletes(sandbox) == []
    assert hook.get_envelope(envelope_id).deleted_at is None


def test_a_pdf_replaced_by_another_valid_pdf_with_its_hash_updated_refuses_the_delete(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], destination: Path
) -> None:
    envelope_id, manifest = archived(hook, sandbox, make_pdf, destination)
    _, other = archived(hook, sandbox, make_pdf, destination)
    [theirs] = json.loads(other.read_text())["files"]
    [ours] = json.loads(manifest.read_text())["files"]
    # Another envelope's signed PDF (sealed by the same service, so its signature is valid), under our
    # name, with our manifest's hash and size made to match: every local check passes.
    shutil.copyfile(other.parent / theirs["path"], manifest.parent / ours["path"])
    rewrite(manifest, lambda m: m["files"][0].update(sha256=theirs["sha256"], size=theirs["size"]))
    sandbox.clear_requests()
    message = refused_and_kept(
        hook, sandbox, envelope_id, destination, "is not the signed PDF the service holds"
    )
    assert theirs["sha256"] in message
    downloads = [r["path"] for r in sandbox.requests() if r["path"].endswith("/download")]
    assert downloads == [f"/envelope/item/{ours['item_id']}/download"]


def test_a_manifest_entry_outside_its_folder_or_behind_a_link_refuses_the_delete(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    destination: Path,
    tmp_path: Path,
) -> None:
    envelope_id, manifest = archived(hook, sandbox, make_pdf, destination)
    [entry] = json.loads(manifest.read_text())["files"]
    pdf = manifest.parent / entry["path"]
    original = manifest.read_text()
    # ``../``: the entry names a copy of the right bytes beside the envelope's folder.
    shutil.copyfile(pdf, destination / "outside.pdf")
    rewrite(manifest, lambda m: m["files"][0].update(path="../outside.pdf"))
    refused_and_kept(hook, sandbox, envelope_id, destination, "not a plain relative path")
    manifest.write_text(original)
    # The PDF swapped for a link to a copy inside the destination, then to one outside it.
    pdf.rename(destination / "moved.pdf")
    os.symlink(destination / "moved.pdf", pdf)
    refused_and_kept(hook, sandbox, envelope_id, destination, "symbolic link")
    pdf.unlink()
    shutil.copyfile(destination / "moved.pdf", tmp_path / "elsewhere.pdf")
    os.symlink(tmp_path / "elsewhere.pdf", pdf)
    refused_and_kept(hook, sandbox, envelope_id, destination, "symbolic link")
    pdf.unlink()
    (destination / "moved.pdf").rename(pdf)
    # The manifest itself a link to an intact copy: refused too.
    shutil.copyfile(manifest, destination / "manifest-copy.json")
    manifest.unlink()
    os.symlink(destination / "manifest-copy.json", manifest)
    refused_and_kept(hook, sandbox, envelope_id, destination, "symbolic link")
    manifest.unlink()
    (destination / "manifest-copy.json").rename(manifest)
    (destination / "outside.pdf").unlink()
    sandbox.clear_requests()
    assert clean(envelope_id, destination)["deleted"] == [envelope_id]  # put back: provably archived
    assert len(deletes(sandbox)) == 1


def test_a_report_the_archive_was_asked_for_must_be_there(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], destination: Path
) -> None:
    envelope_id, manifest = archived(
        hook, sandbox, make_pdf, destination, include_audit_log=True, include_certificate=True
    )
    data = json.loads(manifest.read_text())
    (manifest.parent / data["audit_log"]["path"]).unlink()
    rewrite(manifest, lambda m: m.update(audit_log=None))
    refused_and_kept(
        hook,
        sandbox,
        envelope_id,
        destination,
        "the audit log is not in the manifest",
        archive_include_audit_log=True,
        archive_include_certificate=True,
    )
    # The certificate the manifest still lists is checked even when the clean-up was not told of it.
    certificate = manifest.parent / data["certificate"]["path"]
    certificate.write_bytes(certificate.read_bytes() + b"%\n")
    refused_and_kept(hook, sandbox, envelope_id, destination, "changed: sha256")


def test_a_token_removed_or_replaced_refuses_the_delete(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    destination: Path,
    tsa_conn: str,
) -> None:
    envelope_id, manifest = archived(hook, sandbox, make_pdf, destination, tsa_conn_id=tsa_conn)
    token = manifest.with_name("manifest.json.tsr")
    assert json.loads(manifest.read_text())["timestamp"]["token"] == token.name
    kept, published = token.read_bytes(), manifest.read_bytes()
    token.unlink()  # the "timestamp" key stays: the manifest says a token was published
    refused_and_kept(hook, sandbox, envelope_id, destination, "missing: no timestamp token")
    token.write_bytes(kept)
    rewrite(manifest, lambda m: m.update(title="Renamed after the token"))
    refused_and_kept(hook, sandbox, envelope_id, destination, "timestamp mismatch")
    # A token from a TSA that is not the pinned one: archived through an unpinned connection while the
    # sandbox's TSA answered with its second, untrusted certificate.
    other, signed_elsewhere = archived(hook, sandbox, make_pdf, destination)
    shutil.rmtree(signed_elsewhere.parent)
    sandbox.tsa_fault("untrusted", count=1)
    DocsignArchiveSignedDocumentsOperator(
        task_id="archive", envelope_id=other, destination=str(destination), tsa_conn_id="tsa_unpinned"
    ).execute(ctx())
    refused_and_kept(
        hook, sandbox, other, destination, "is not trusted by the pinned TSA", tsa_conn_id=tsa_conn
    )
    # The first archive put back as it was published: its token verifies against the pin; deleted.
    manifest.write_bytes(published)
    sandbox.clear_requests()
    assert clean(envelope_id, destination, tsa_conn_id=tsa_conn)["deleted"] == [envelope_id]
    assert len(deletes(sandbox)) == 1


# -- envelopes that change between selection and delete --------------------------------------------


def act_while_held(sandbox: SandboxServer, fault: str, action: Callable[[], None]) -> Callable[[], bool]:
    """Run ``action`` on another thread once the request ``fault`` holds has reached the sandbox.

    The sandbox holds that request (a ``delay`` fault) before processing it; the action runs
    meanwhile, bounded to 20 s. Returns a function that joins the thread and says whether it acted.
    """
    acted: list[bool] = []

    def run() -> None:
        deadline = time.monotonic() + 20
        while fault in {f["id"] for f in sandbox.faults()} and time.monotonic() < deadline:
            time.sleep(0.05)
        if time.monotonic() < deadline:
            action()
            acted.append(True)

    thread = threading.Thread(target=run)
    thread.start()

    def join() -> bool:
        thread.join(timeout=30)
        sandbox.clear_faults()
        assert not thread.is_alive()
        return bool(acted)

    return join


def days_since(iso: str) -> float:
    """``older_than_days`` that selects what was created before ``iso`` (a date long ago)."""
    then = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return (datetime.now(timezone.utc) - then).total_seconds() / 86400


def test_a_root_draft_moved_to_legal_hold_between_selection_and_delete_is_kept(
    hook: DocsignHook, sandbox: SandboxServer, docsign_conn: str
) -> None:
    """The acceptance: a root DRAFT moved to a "Legal hold" folder while the clean-up runs is kept.

    Seeded in 1971 at the root, so that this query (everything at the root older than 1972) selects
    only them, whatever else the session's sandbox holds.
    """
    legal_hold = hook.create_folder(f"Legal hold {uuid.uuid4().hex[:6]}").id
    first, moved = sandbox.seed(
        [
            {"title": f"draft {i}", "status": "DRAFT", "createdAt": f"1971-0{i + 1}-01T00:00:00.000Z"}
            for i in range(2)
        ]
    )
    mover = DocsignHook(docsign_conn)
    mover.list_folders()  # the connection is looked up here, on this thread
    sandbox.clear_requests()
    fault = sandbox.inject_fault("POST", "/envelope/delete", action="delay", delay=3)
    joined = act_while_held(sandbox, fault, lambda: mover.update_envelope(moved, folder_id=legal_hold))
    try:
        result = DocsignDeleteEnvelopesOperator(
            task_id="clean", status="DRAFT", older_than_days=days_since("1972-01-01T00:00:00Z")
        ).execute(ctx())
    finally:
        acted = joined()
        mover.close()
    assert acted, "the clean-up never sent its first delete"
    assert [row["id"] for row in result["selected"]] == [first, moved]
    assert result["deleted"] == [first]
    [skipped] = result["skipped"]
    assert skipped["id"] == moved
    assert f"was moved to folder {legal_hold}, out of the root" in skipped["reason"]
    assert [r["path"] for r in deletes(sandbox)] == ["/envelope/delete"]
    assert [e.id for e in hook.find_envelopes(folder_id=legal_hold)] == [moved]
    assert hook.get_envelopes([first]) == []  # a DRAFT is removed for good


def test_drafts_moved_made_younger_or_sent_between_selection_and_delete_are_kept(
    hook: DocsignHook, sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    folder = hook.create_folder(f"retention-{uuid.uuid4().hex[:6]}").id
    first, to_root, younger = sandbox.seed(
        [
            {
                "title": f"old {i}",
                "status": "DRAFT",
                "folderId": folder,
                "createdAt": f"2025-0{i + 1}-01T00:00:00.000Z",
            }
            for i in range(3)
        ]
    )
    sent = hook.create_envelope(title="to send", files=[make_pdf()], recipients=[signer()], folder_id=folder)
    sandbox.backdate(sent, 380)  # created late in 2025: selected last
    mover = DocsignHook(docsign_conn)
    mover.list_folders()

    def meanwhile() -> None:
        mover.update_envelope(to_root, folder_id=None)
        sandbox.backdate(younger, -800)  # now created in the future: younger than any cut-off
        mover.distribute_envelope(sent)

    sandbox.clear_requests()
    fault = sandbox.inject_fault("POST", "/envelope/delete", action="delay", delay=3)
    joined = act_while_held(sandbox, fault, meanwhile)
    try:
        result = DocsignDeleteEnvelopesOperator(
            task_id="clean", status="DRAFT", folder_id=folder, older_than_days=30
        ).execute(ctx())
    finally:
        acted = joined()
        mover.close()
    assert acted
    assert [row["id"] for row in result["selected"]] == [first, to_root, younger, sent]  # oldest first
    assert result["deleted"] == [first]
    reasons = {s["id"]: s["reason"] for s in result["skipped"]}
    assert set(reasons) == {to_root, younger, sent}
    assert f"was moved to the root, out of folder {folder}" in reasons[to_root]
    assert "no longer before the cut-off" in reasons[younger]
    assert "is now PENDING, no longer status=DRAFT" in reasons[sent]
    assert len(deletes(sandbox)) == 1
    assert {e.id for e in hook.find_envelopes(folder_id=folder)} == {younger, sent}
    assert [e.id for e in hook.get_envelopes([to_root])] == [to_root]


# -- selection inputs ------------------------------------------------------------------------------


def test_a_folder_that_does_not_exist_or_holds_templates_fails_naming_it(
    hook: DocsignHook, sandbox: SandboxServer
) -> None:
    templates = hook.create_folder(f"templates-{uuid.uuid4().hex[:6]}", folder_type="TEMPLATE").id
    for folder, why in (
        ("cmdoesnotexist0000000000", "is not a folder of this team"),
        ("  ", "is not a folder of this team"),
        ("None", "is not a folder of this team"),  # what Jinja renders for a missing value
        (templates, "is a TEMPLATE folder"),
    ):
        sandbox.clear_requests()
        for dry_run in (True, False):
            with pytest.raises(AirflowFailException, match=why):
                DocsignDeleteEnvelopesOperator(
                    task_id="clean", status="DRAFT", folder_id=folder, dry_run=dry_run
                ).execute(ctx())
        assert [r for r in sandbox.requests() if r["method"] == "POST"] == []


def test_envelope_ids_rendered_to_text_are_parsed_or_refused_before_anything_is_sent(
    hook: DocsignHook, sandbox: SandboxServer
) -> None:
    drafts = sandbox.seed([{"title": f"draft {i}", "status": "DRAFT"} for i in range(2)])
    sandbox.clear_requests()
    for bad in ("", "envelope a", "../envelope_x", [drafts[0], 7], [{"title": "no id"}]):
        with pytest.raises(AirflowFailException, match="envelope_ids"):
            DocsignDeleteEnvelopesOperator(task_id="clean", envelope_ids=bad).execute(ctx())  # type: ignore[arg-type]
    assert sandbox.requests() == []
    # A list Jinja rendered as JSON (no spaces) once reached the service as one id and was reported
    # "already deleted"; it is parsed back, and so is Python's repr of it.
    result = DocsignDeleteEnvelopesOperator(task_id="clean", envelope_ids=json.dumps(drafts[:1])).execute(
        ctx()
    )
    assert (result["deleted"], result["already_deleted"]) == ([drafts[0]], [])
    result = DocsignDeleteEnvelopesOperator(task_id="clean", envelope_ids=repr(drafts)).execute(ctx())
    assert (result["deleted"], result["already_deleted"]) == ([drafts[1]], [drafts[0]])
    assert len(deletes(sandbox)) == 2
    assert DocsignDeleteEnvelopesOperator(task_id="clean", envelope_ids="[]").execute(ctx())["selected"] == []


def test_a_dry_run_over_thousands_sends_nothing_and_the_bound_holds(
    hook: DocsignHook, sandbox: SandboxServer
) -> None:
    folder = hook.create_folder(f"thousands-{uuid.uuid4().hex[:6]}").id
    count = 2500
    seeded = sandbox.seed(
        [
            {
                "title": f"old draft {i}",
                "status": "DRAFT",
                "folderId": folder,
                "createdAt": f"2025-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.{i // 3600:03d}Z",
            }
            for i in range(count)
        ]
    )
    query = {"status": "DRAFT", "folder_id": folder, "older_than_days": 30}
    sandbox.clear_requests()
    listed = DocsignDeleteEnvelopesOperator(task_id="dry", dry_run=True, max_envelopes=5000, **query).execute(
        ctx()
    )
    assert len(listed["selected"]) == count
    assert {row["id"] for row in listed["selected"]} == set(seeded)
    assert listed["deleted"] == []
    requests = sandbox.requests()
    assert [r for r in requests if r["method"] != "GET"] == []  # no re-read, no delete
    assert len(requests) == count // 100  # one listing page per 100, nothing else
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="more than max_envelopes=1000"):
        DocsignDeleteEnvelopesOperator(task_id="clean", **query).execute(ctx())
    assert [r["method"] for r in sandbox.requests()] == ["GET"] * 11  # stops after the 1001st
    assert sum(1 for _ in hook.find_envelopes(folder_id=folder)) == count


def test_an_archive_in_object_storage_is_checked_the_same_way(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    make_s3_bucket: Callable[..., Any],
    docsign_conn: str,
) -> None:
    """S3 (moto): a manifest rewritten to drop a document refuses the delete; put back, it deletes."""
    s3 = make_s3_bucket("cleanup-archive", conn_id="cleanup_s3")
    destination = "s3://cleanup-archive/signed"
    key = f"s3-{uuid.uuid4().hex[:8]}"
    pdfs = [make_pdf(f"{key}/doc{i}.pdf", title=f"Document {i}") for i in range(2)]
    envelope_id = completed_envelope(hook, sandbox, pdfs, title="Signed in S3", external_id=key)
    DocsignArchiveSignedDocumentsOperator(
        task_id="archive", envelope_id=envelope_id, destination=destination, destination_conn_id="cleanup_s3"
    ).execute(ctx())
    manifest_key = f"signed/{key}/manifest.json"
    original = s3.get_object(Bucket="cleanup-archive", Key=manifest_key)["Body"].read()
    data = json.loads(original)
    dropped = data["files"].pop()
    s3.delete_object(Bucket="cleanup-archive", Key=f"signed/{key}/{dropped['path']}")
    s3.put_object(Bucket="cleanup-archive", Key=manifest_key, Body=json.dumps(data).encode())

    def run() -> dict[str, Any]:
        result: dict[str, Any] = DocsignDeleteEnvelopesOperator(
            task_id="clean",
            envelope_ids=[envelope_id],
            archive_destination=destination,
            archive_conn_id="cleanup_s3",
        ).execute(ctx())
        return result

    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=f"item {dropped['item_id']}"):
        run()
    assert deletes(sandbox) == []
    assert hook.get_envelope(envelope_id).deleted_at is None
    DocsignArchiveSignedDocumentsOperator(
        task_id="archive",
        envelope_id=envelope_id,
        destination=destination,
        destination_conn_id="cleanup_s3",
        overwrite=True,
    ).execute(ctx())
    assert run()["deleted"] == [envelope_id]
    assert len(deletes(sandbox)) == 1
