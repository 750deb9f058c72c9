"""Rejection and cancellation: end states, ``rejectionReason`` and what each state still allows."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import sig, signer
from pypdf import PdfReader
from test_sandbox_helpers import create_id, envelope, get, post

from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

TWO_SIGNERS = [
    signer(sig(positionY=10 + 20 * i), email=f"signer{i}@example.com", name=f"Signer {i}") for i in range(2)
]


def _pending(sandbox: SandboxServer, make_pdf: Callable[..., Path], name: str) -> dict[str, object]:
    env_id = create_id(sandbox, [make_pdf(name)], recipients=TWO_SIGNERS)
    assert post(sandbox, "/envelope/distribute", {"envelopeId": env_id}).status_code == 200
    return envelope(sandbox, env_id)


def test_reject_through_the_api(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env = _pending(sandbox, make_pdf, "reject-api.pdf")
    first = env["recipients"][0]["id"]  # type: ignore[index]
    resp = post(
        sandbox, f"/envelope/recipient/{first}/reject", {"envelopeId": env["id"], "reason": "Wrong amount"}
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["signingStatus"] == "REJECTED"
    assert resp.json()["rejectionReason"] == "Wrong amount"
    assert isinstance(resp.json()["fields"], list)
    done = sandbox.wait_status(str(env["id"]), "REJECTED")
    assert done["completedAt"] is not None
    by_id = {r["id"]: r for r in done["recipients"]}
    assert by_id[first]["rejectionReason"] == "Wrong amount"
    assert by_id[first]["signedAt"] is not None
    assert [r["signingStatus"] for r in done["recipients"]] == ["REJECTED", "NOT_SIGNED"]
    audit = get(sandbox, f"/envelope/{env['id']}/audit-log").json()["data"]
    rejected = [a for a in audit if a["type"] == "DOCUMENT_RECIPIENT_REJECTED"]
    assert rejected[0]["data"]["reason"] == "Wrong amount"
    # Terminal: a second rejection and a distribute are refused.
    second = env["recipients"][1]["id"]  # type: ignore[index]
    again = post(sandbox, f"/envelope/recipient/{second}/reject", {"envelopeId": env["id"], "reason": "x"})
    assert again.status_code == 400
    assert post(sandbox, "/envelope/distribute", {"envelopeId": env["id"]}).status_code == 500


def test_reject_through_the_control_api(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env = _pending(sandbox, make_pdf, "reject-control.pdf")
    second = int(env["recipients"][1]["id"])  # type: ignore[index]
    sandbox.sign(str(env["id"]), int(env["recipients"][0]["id"]))  # type: ignore[index]
    sandbox.reject(str(env["id"]), second, "Not my contract")
    done = sandbox.wait_status(str(env["id"]), "REJECTED")
    assert [r["signingStatus"] for r in done["recipients"]] == ["SIGNED", "REJECTED"]
    assert done["recipients"][1]["rejectionReason"] == "Not my contract"
    item = done["envelopeItems"][0]["id"]
    pending = get(sandbox, f"/envelope/item/{item}/download", params={"version": "pending"})
    assert pending.status_code == 400
    assert pending.json()["code"] == "ENVELOPE_REJECTED"
    cert = get(sandbox, f"/envelope/{env['id']}/certificate/download")
    assert cert.status_code == 200
    assert cert.content.startswith(b"%PDF-")
    # Sealed with a rejection mark: same page count, "REJECTED" on page 1, not the upload any more.
    signed = get(sandbox, f"/envelope/item/{item}/download").content
    original = get(sandbox, f"/envelope/item/{item}/download", params={"version": "original"}).content
    reader = PdfReader(io.BytesIO(signed))
    assert len(reader.pages) == len(PdfReader(io.BytesIO(original)).pages)
    assert "REJECTED" in reader.pages[0].extract_text()
    assert "REJECTED" not in PdfReader(io.BytesIO(original)).pages[0].extract_text()


def test_reject_needs_a_pending_envelope(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("draft-reject.pdf")], recipients=TWO_SIGNERS)
    rid = envelope(sandbox, env_id)["recipients"][0]["id"]
    resp = post(sandbox, f"/envelope/recipient/{rid}/reject", {"envelopeId": env_id, "reason": "too early"})
    assert resp.status_code == 400
    assert envelope(sandbox, env_id)["recipients"][0]["signingStatus"] == "NOT_SIGNED"
    empty = post(sandbox, f"/envelope/recipient/{rid}/reject", {"envelopeId": env_id, "reason": ""})
    assert empty.status_code == 400
    assert empty.json()["issues"][0]["path"] == ["reason"]


def test_cancel(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env = _pending(sandbox, make_pdf, "cancel.pdf")
    resp = post(sandbox, "/envelope/cancel", {"envelopeId": env["id"], "reason": "Deal is off"})
    assert resp.status_code == 200
    assert resp.json() == {"success": True}
    done = envelope(sandbox, str(env["id"]))
    assert done["status"] == "CANCELLED"
    assert done["completedAt"] is not None
    audit = get(sandbox, f"/envelope/{env['id']}/audit-log").json()["data"]
    assert [a["data"] for a in audit if a["type"] == "DOCUMENT_CANCELLED"] == [{"reason": "Deal is off"}]
    item = done["envelopeItems"][0]["id"]
    pending = get(sandbox, f"/envelope/item/{item}/download", params={"version": "pending"})
    assert (pending.status_code, pending.json()["code"]) == (400, "INVALID_REQUEST")
    cert = get(sandbox, f"/envelope/{env['id']}/certificate/download")
    assert cert.status_code == 500
    assert cert.json() == {"error": "Something went wrong", "code": "DOCUMENT_NOT_COMPLETE"}
    # Signing a cancelled envelope is impossible; cancelling twice is a 400.
    with pytest.raises(Exception, match="400"):
        sandbox.sign(str(env["id"]))
    assert post(sandbox, "/envelope/cancel", {"envelopeId": env["id"]}).status_code == 400


def test_cancel_a_draft_is_refused(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("cancel-draft.pdf")])
    resp = post(sandbox, "/envelope/cancel", {"envelopeId": env_id})
    assert resp.status_code == 400
    assert resp.json()["data"]["code"] == "INVALID_REQUEST"
    assert envelope(sandbox, env_id)["status"] == "DRAFT"


def test_auto_sign_personas_reject_expire_and_ignore_by_their_e_mail(
    tmp_path: Path, make_pdf: Callable[..., Path], api_key: str
) -> None:
    """``--auto-sign-after``: ``reject...@`` rejects, ``expire...@`` expires, ``ignore...@`` never acts."""
    with SandboxServer(tmp_path / "personas", api_key=api_key, auto_sign_after=0.1) as auto:
        made = {}
        for who in ("reject.ada", "expire.bob", "ignore.cy", "dee"):
            recipients = [signer(sig(), email=f"{who}@example.com", name=who)]
            env_id = create_id(auto, [make_pdf(f"{who}.pdf")], recipients=recipients)
            assert post(auto, "/envelope/distribute", {"envelopeId": env_id}).status_code == 200
            made[who] = env_id
        rejected = auto.wait_status(made["reject.ada"], "REJECTED")
        assert rejected["recipients"][0]["rejectionReason"] == "Declined (sandbox auto-sign persona)"
        assert auto.wait_status(made["dee"], "COMPLETED")["recipients"][0]["signingStatus"] == "SIGNED"
        expired = envelope(auto, made["expire.bob"])
        ignored = envelope(auto, made["ignore.cy"])
    assert expired["status"] == "PENDING"  # as on the real service: an expired link leaves it PENDING
    assert expired["recipients"][0]["signingStatus"] == "NOT_SIGNED"  # type: ignore[index]
    assert expired["recipients"][0]["expirationNotifiedAt"]  # type: ignore[index]
    assert ignored["status"] == "PENDING"
    assert ignored["recipients"][0]["expirationNotifiedAt"] is None  # type: ignore[index]
