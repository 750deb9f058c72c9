"""Search filters, duplicates and the clean-up operator against the sandbox over HTTP."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_envelope, ctx, numbered_signers, sig, signer

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignArchiveSignedDocumentsOperator,
    DocsignDeleteEnvelopesOperator,
    DocsignDuplicateEnvelopeOperator,
)
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


def find_params(sandbox: SandboxServer) -> list[dict[str, Any]]:
    return [r["body"]["params"] for r in sandbox.requests(bodies=True) if r["path"] == "/envelope"]


def template(hook: DocsignHook, make_pdf: Callable[..., Path]) -> str:
    return hook.create_template(
        title=f"Template {uuid.uuid4().hex[:6]}",
        files=[make_pdf("t.pdf")],
        recipients=[
            {"email": "customer@placeholder.test", "name": "Customer", "role": "SIGNER", "fields": [sig()]}
        ],
    )


def test_template_and_source_filters(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    folder = hook.create_folder(f"search-{uuid.uuid4().hex[:6]}").id
    tid = template(hook, make_pdf)
    other = template(hook, make_pdf)
    made = [
        hook.use_template(
            tid, recipients=[{"placeholder": "Customer", "email": f"c{i}@example.test"}], folder_id=folder
        ).envelope_id
        for i in range(2)
    ]
    hook.use_template(
        other, recipients=[{"placeholder": "Customer", "email": "o@example.test"}], folder_id=folder
    )
    plain = hook.create_envelope(title="Plain", files=[make_pdf()], folder_id=folder)
    number = int(str(hook.get_template(tid).raw["secondaryId"]).split("_")[1])
    sandbox.clear_requests()
    by_id = {e.id for e in hook.find_envelopes(folder_id=folder, template_id=tid)}
    assert by_id == set(made)
    assert {e.id for e in hook.find_envelopes(folder_id=folder, template_id=number)} == set(made)
    assert {e.id for e in hook.find_envelopes(folder_id=folder, template_id=f"template_{number}")} == set(
        made
    )
    assert find_params(sandbox)[0]["templateId"] == str(number)  # the template's envelope id, resolved
    assert plain not in {e.id for e in hook.find_envelopes(folder_id=folder, source="TEMPLATE")}
    assert {e.id for e in hook.find_envelopes(folder_id=folder, source="DOCUMENT")} == {plain}


def test_order_and_expired_recipients(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    folder = hook.create_folder(f"order-{uuid.uuid4().hex[:6]}").id
    ids = []
    for days in (3, 1, 2):
        envelope_id = hook.create_envelope(
            title=f"{days} days", files=[make_pdf()], recipients=numbered_signers(1), folder_id=folder
        )
        hook.distribute_envelope(envelope_id)
        sandbox.backdate(envelope_id, days)
        ids.append(envelope_id)
    oldest_first = [e.id for e in hook.find_envelopes(folder_id=folder, order_by=("createdAt", "asc"))]
    assert oldest_first == [ids[0], ids[2], ids[1]]
    assert [
        e.id for e in hook.find_envelopes(folder_id=folder, order_by=("createdAt", "desc"))
    ] == oldest_first[::-1]
    expired = ids[1]
    sandbox.expire(expired, hook.get_envelope(expired).recipients[0].id)
    sandbox.clear_requests()
    assert [e.id for e in hook.find_envelopes(folder_id=folder, has_expired_recipients=True)] == [expired]
    # False is no filter on the real service (it has no "none expired" filter), so it is not sent.
    assert len(list(hook.find_envelopes(folder_id=folder, has_expired_recipients=False))) == 3
    params = find_params(sandbox)
    assert params[0]["hasExpiredRecipients"] == "true"
    assert "hasExpiredRecipients" not in params[1]
    sandbox.clear_requests()
    for bad in ({"order_by": ("title", "asc")}, {"source": "EMAIL"}, {"template_id": 0}):
        with pytest.raises(DocsignValidationError):
            list(hook.find_envelopes(folder_id=folder, **bad))
    assert sandbox.requests() == []


def test_a_rejected_envelope_is_duplicated_renamed_and_reused_on_retry(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    folder = hook.create_folder(f"dup-{uuid.uuid4().hex[:6]}").id
    source = hook.create_envelope(
        title="Contract",
        files=[make_pdf()],
        recipients=[signer(email="a@example.test")],
        external_id="contract-7",
    )
    hook.create_attachment(source, label="Terms", url="https://example.com/t")
    hook.distribute_envelope(source)
    sandbox.reject(source, hook.get_envelope(source).recipients[0].id, "wrong price")
    sandbox.wait_status(source, "REJECTED", timeout=20)
    op = DocsignDuplicateEnvelopeOperator(
        task_id="dup",
        envelope_id=source,
        title="Contract (resent)",
        external_id="contract-7",
        folder_id=folder,
    )
    result = op.execute(ctx())
    copy = hook.get_envelope(result["envelope_id"])
    assert result["reused"] is False
    assert (copy.status, copy.title, copy.external_id, copy.folder_id) == (
        "DRAFT",
        "Contract (resent)",
        "contract-7",
        folder,
    )
    assert [r.signing_status for r in copy.recipients] == ["NOT_SIGNED"]
    assert len(copy.fields) == 1
    assert hook.find_attachments(copy.id) == []  # the service does not copy attachments
    sandbox.clear_requests()
    again = op.execute(ctx(2))  # a retry finds the copy by its external id instead of copying again
    assert again == {**result, "reused": True}
    assert [r["path"] for r in sandbox.requests() if r["path"] == "/envelope/duplicate"] == []


def test_cleanup_dry_run_then_delete_then_retry(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    folder = hook.create_folder(f"cleanup-{uuid.uuid4().hex[:6]}").id
    old = sandbox.seed(
        [
            {
                "title": f"old {i}",
                "status": "DRAFT",
                "folderId": folder,
                "createdAt": f"2026-0{i + 1}-01T00:00:00.000Z",
            }
            for i in range(3)
        ]
    )
    young = hook.create_envelope(title="young", files=[make_pdf()], folder_id=folder)
    pending_old = sandbox.seed(
        [{"title": "sent", "status": "PENDING", "folderId": folder, "createdAt": "2026-01-15T00:00:00.000Z"}]
    )
    kwargs: dict[str, Any] = {"status": "DRAFT", "folder_id": folder, "older_than_days": 30}
    sandbox.clear_requests()
    listed = DocsignDeleteEnvelopesOperator(task_id="dry", dry_run=True, **kwargs).execute(ctx())
    assert [row["id"] for row in listed["selected"]] == old
    assert listed["deleted"] == []
    assert [r for r in sandbox.requests() if r["method"] == "POST"] == []
    done = DocsignDeleteEnvelopesOperator(task_id="clean", **kwargs).execute(ctx())
    assert done["deleted"] == old
    retry = DocsignDeleteEnvelopesOperator(task_id="clean", **kwargs).execute(ctx(2))
    assert (retry["selected"], retry["deleted"]) == ([], [])
    left = {e.id for e in hook.find_envelopes(folder_id=folder)}
    assert left == {young, *pending_old}
    by_ids = DocsignDeleteEnvelopesOperator(task_id="ids", envelope_ids=[old[0], young]).execute(ctx())
    assert (by_ids["deleted"], by_ids["already_deleted"]) == ([young], [old[0]])


def test_a_completed_envelope_is_deleted_only_with_an_intact_archive(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    envelope_id = completed_envelope(
        hook, sandbox, [make_pdf()], title="Signed", external_id=f"ret-{uuid.uuid4().hex[:6]}"
    )
    archive = tmp_path / "archive"
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=r"no archive manifest at .*manifest.json"):
        DocsignDeleteEnvelopesOperator(
            task_id="d", envelope_ids=[envelope_id], archive_destination=str(archive)
        ).execute(ctx())
    with pytest.raises(AirflowFailException, match="no archive_destination"):
        DocsignDeleteEnvelopesOperator(task_id="d", envelope_ids=[envelope_id]).execute(ctx())
    assert "/envelope/delete" not in [r["path"] for r in sandbox.requests()]
    manifest = DocsignArchiveSignedDocumentsOperator(
        task_id="a", envelope_id=envelope_id, destination=str(archive)
    ).execute(ctx())
    [pdf] = [Path(str(f["uri"]).removeprefix("file://")) for f in manifest["files"]]
    original = pdf.read_bytes()
    pdf.write_bytes(original[:-10])  # a damaged archive is not an archive
    with pytest.raises(AirflowFailException, match="changed: sha256"):
        DocsignDeleteEnvelopesOperator(
            task_id="d", envelope_ids=[envelope_id], archive_destination=str(archive)
        ).execute(ctx())
    pdf.write_bytes(original)
    done = DocsignDeleteEnvelopesOperator(
        task_id="d", envelope_ids=[envelope_id], archive_destination=str(archive)
    ).execute(ctx())
    assert done["deleted"] == [envelope_id]
    assert hook.get_envelope(envelope_id).deleted_at is not None  # soft-deleted, as the service does
    retry = DocsignDeleteEnvelopesOperator(
        task_id="d", envelope_ids=[envelope_id], archive_destination=str(archive)
    ).execute(ctx(2))
    assert retry["already_deleted"] == [envelope_id]


def test_an_envelope_signed_while_the_cleanup_runs_is_left_alone(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    """Selected as PENDING, COMPLETED before its delete: not deleted, since its archive was never checked.

    The sandbox holds the re-read (``get-many``) for a few seconds; the signer completes the envelope
    while it waits, as a real signer would in the middle of a long clean-up run.
    """
    folder = hook.create_folder(f"race-{uuid.uuid4().hex[:6]}").id
    stale, signing = (
        hook.create_envelope(title=t, files=[make_pdf()], recipients=[signer()], folder_id=folder)
        for t in ("stale", "signing")
    )
    for envelope_id in (stale, signing):
        hook.distribute_envelope(envelope_id)
        sandbox.backdate(envelope_id, 60)
    sandbox.clear_requests()
    fault = sandbox.inject_fault("POST", "/envelope/get-many", action="delay", delay=3)
    op = DocsignDeleteEnvelopesOperator(
        task_id="clean", status="PENDING", folder_id=folder, older_than_days=30
    )
    signed: list[str] = []

    def signer_completes_during_the_reread() -> None:
        deadline = time.monotonic() + 20
        while fault in {f["id"] for f in sandbox.faults()} and time.monotonic() < deadline:
            time.sleep(0.05)
        if time.monotonic() < deadline:  # the re-read is now waiting inside the sandbox
            signed.extend(str(r) for r in sandbox.complete(signing))

    # The operator runs on this thread (Airflow 2.11's execute wrapper keeps per-thread state); the
    # signer acts on another, bounded to 20 s.
    signer_thread = threading.Thread(target=signer_completes_during_the_reread)
    signer_thread.start()
    try:
        result = op.execute(ctx())
    finally:
        signer_thread.join(timeout=30)
        sandbox.clear_faults()
    assert not signer_thread.is_alive()
    assert signed, "the clean-up never re-read the envelopes"
    assert [row["id"] for row in result["selected"]] == [stale, signing]
    assert result["deleted"] == [stale]
    [skipped] = result["skipped"]
    assert (skipped["id"], skipped["status"]) == (signing, "COMPLETED")
    assert "archive was not checked" in skipped["reason"]
    assert [r["path"] for r in sandbox.requests()].count("/envelope/delete") == 1
    assert hook.get_envelope(signing).deleted_at is None
    assert hook.get_envelope(signing).status == "COMPLETED"
