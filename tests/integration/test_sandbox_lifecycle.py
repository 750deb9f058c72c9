"""The whole envelope lifecycle over real HTTP against the sandbox, ending in a signed PDF."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from helpers import sig, signer
from pypdf import PdfReader
from test_sandbox_helpers import auth, create_id, envelope, get, post

from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


def _dark_fraction(pdf: bytes, page_index: int, box: tuple[float, float, float, float]) -> float:
    """Fraction of non-white pixels inside ``box`` (percent x, y, w, h from top-left) of a rendered page."""
    doc = pdfium.PdfDocument(pdf)
    try:
        image = doc[page_index].render(scale=1).to_pil().convert("L")
    finally:
        doc.close()
    width, height = image.size
    x, y, w, h = box
    left, top = int(width * x / 100) + 2, int(height * y / 100) + 2
    right, bottom = int(width * (x + w) / 100) - 2, int(height * (y + h) / 100) - 2
    crop = image.crop((left, top, right, bottom))
    histogram = crop.histogram()  # 256 buckets of grey levels
    return sum(histogram[:240]) / sum(histogram)


def test_create_to_signed_download(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    contract = make_pdf("contract.pdf", pages=2)
    annex = make_pdf("annex.pdf", pages=1)
    env_id = create_id(sandbox, [contract], title="Lifecycle", external_id="lifecycle-1")

    env = envelope(sandbox, env_id)
    assert env["status"] == "DRAFT"
    assert [i["title"] for i in env["envelopeItems"]] == ["contract.pdf"]
    field = env["fields"][0]
    assert (field["positionX"], field["positionY"], field["width"], field["height"]) == (
        "10",
        "20",
        "30",
        "10",
    )

    added = sandbox_post_item(sandbox, env_id, annex)
    assert [(i["title"], i["order"]) for i in added] == [("annex.pdf", 2)]

    first, second = envelope(sandbox, env_id)["envelopeItems"]
    resp = post(
        sandbox,
        "/envelope/item/update-many",
        {
            "envelopeId": env_id,
            "data": [
                {"envelopeItemId": second["id"], "order": 1, "title": "Annex A"},
                {"envelopeItemId": first["id"], "order": 2},
            ],
        },
    )
    assert resp.status_code == 200, resp.text
    items = envelope(sandbox, env_id)["envelopeItems"]
    assert [(i["id"], i["title"], i["order"]) for i in items] == [
        (second["id"], "Annex A", 1),
        (first["id"], "contract.pdf", 2),
    ]

    resp = post(sandbox, "/envelope/distribute", {"envelopeId": env_id})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["success"] is True
    assert body["recipients"][0]["signingUrl"].endswith("/sign/" + body["recipients"][0]["token"])
    assert envelope(sandbox, env_id)["status"] == "PENDING"

    sandbox.sign(env_id)
    done = sandbox.wait_status(env_id, "COMPLETED")
    assert done["completedAt"] is not None
    assert done["recipients"][0]["signingStatus"] == "SIGNED"
    assert all(f["inserted"] for f in done["fields"])

    resp = get(sandbox, f"/envelope/item/{first['id']}/download", params={"version": "signed"})
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "application/pdf"
    assert resp.headers["content-disposition"] == 'attachment; filename="contract_signed.pdf"'
    signed = resp.content
    original = get(sandbox, f"/envelope/item/{first['id']}/download", params={"version": "original"}).content
    assert original == contract.read_bytes()
    assert signed == sandbox.item_bytes(first["id"], version="signed")

    reader = PdfReader(io.BytesIO(signed))
    assert len(reader.pages) == len(PdfReader(io.BytesIO(original)).pages) + 1
    certificate = reader.pages[-1].extract_text()
    assert env_id in certificate
    assert "Sam Signer" in certificate
    assert "signer@example.com" in certificate

    box = (10.0, 20.0, 30.0, 10.0)
    assert _dark_fraction(original, 0, box) == 0.0
    assert _dark_fraction(signed, 0, box) > 0.2
    # Outside the field the page is unchanged.
    assert _dark_fraction(signed, 0, (60.0, 40.0, 30.0, 10.0)) == 0.0


def sandbox_post_item(sandbox: SandboxServer, env_id: str, pdf: Path) -> list[dict[str, object]]:
    import json

    import requests

    resp = requests.post(
        sandbox.base_url + "/envelope/item/create-many",
        headers=auth(sandbox),
        files=[
            ("payload", (None, json.dumps({"envelopeId": env_id}))),
            ("files", (pdf.name, pdf.read_bytes(), "application/pdf")),
        ],
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    data: list[dict[str, object]] = resp.json()["data"]
    return data


def test_signed_before_completion_is_the_upload(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    pdf = make_pdf("draft.pdf")
    env_id = create_id(sandbox, [pdf])
    item = envelope(sandbox, env_id)["envelopeItems"][0]["id"]
    resp = get(sandbox, f"/envelope/item/{item}/download")
    # Real service quirk: "signed" on a draft is the uploaded PDF with status 200.
    assert resp.status_code == 200
    assert resp.content == pdf.read_bytes()
    assert resp.headers["content-disposition"] == 'attachment; filename="draft_signed.pdf"'


def test_pending_version_draws_inserted_fields(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    pdf = make_pdf("two.pdf")
    recipients = [
        signer(sig(positionY=10 + 30 * i, width=30, height=10), email=f"s{i}@example.com", name=f"Signer {i}")
        for i in range(2)
    ]
    env_id = create_id(sandbox, [pdf], recipients=recipients)
    env = envelope(sandbox, env_id)
    item = env["envelopeItems"][0]["id"]
    draft = get(sandbox, f"/envelope/item/{item}/download", params={"version": "pending"})
    assert draft.status_code == 400
    assert draft.json() == {
        "error": f"Envelope {env_id} must be pending to download a partially signed PDF",
        "code": "ENVELOPE_DRAFT",
    }
    assert post(sandbox, "/envelope/distribute", {"envelopeId": env_id}).status_code == 200
    sandbox.sign(env_id, env["recipients"][0]["id"])
    resp = get(sandbox, f"/envelope/item/{item}/download", params={"version": "pending"})
    assert resp.status_code == 200
    assert resp.headers["content-disposition"] == 'attachment; filename="two_pending.pdf"'
    assert resp.headers["cache-control"] == "no-store, private"
    assert len(PdfReader(io.BytesIO(resp.content)).pages) == 1
    assert _dark_fraction(resp.content, 0, (10.0, 10.0, 30.0, 10.0)) > 0.2
    assert _dark_fraction(resp.content, 0, (10.0, 40.0, 30.0, 10.0)) == 0.0
    assert envelope(sandbox, env_id)["status"] == "PENDING"
    again = get(
        sandbox,
        f"/envelope/item/{item}/download",
        params={"version": "pending"},
        headers={**auth(sandbox), "If-None-Match": resp.headers["etag"]},
    )
    assert (again.status_code, again.content) == (304, b"")


def test_distribute_needs_a_signature_field_per_signer(
    sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    recipients = [{"email": "nofield@example.com", "name": "No Field", "role": "SIGNER"}]
    env_id = create_id(sandbox, [make_pdf("nofield.pdf")], recipients=recipients)
    resp = post(sandbox, "/envelope/distribute", {"envelopeId": env_id})
    assert resp.status_code == 400
    assert resp.json()["data"]["code"] == "MISSING_SIGNATURE_FIELD"
    assert envelope(sandbox, env_id)["status"] == "DRAFT"


def test_distribute_without_recipients_is_500(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    env_id = create_id(sandbox, [make_pdf("nobody.pdf")], recipients=[])
    resp = post(sandbox, "/envelope/distribute", {"envelopeId": env_id})
    assert resp.status_code == 500
    assert envelope(sandbox, env_id)["status"] == "DRAFT"


def test_field_on_missing_page_never_completes(sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    recipients = [signer(sig(page=99), email="p99@example.com", name="Page Ninety")]
    env_id = create_id(sandbox, [make_pdf("short.pdf")], recipients=recipients)
    assert post(sandbox, "/envelope/distribute", {"envelopeId": env_id}).status_code == 200
    sandbox.complete(env_id)
    with pytest.raises(TimeoutError):
        sandbox.wait_status(env_id, "COMPLETED", timeout=2)
    env = envelope(sandbox, env_id)
    assert env["status"] == "PENDING"
    assert env["recipients"][0]["signingStatus"] == "SIGNED"


def test_a_skewed_clock_moves_every_timestamp_and_the_date_header(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    """``POST /_sandbox/clock``: a service whose clock is an hour behind, consistently."""
    from datetime import datetime, timedelta, timezone

    from airflow_provider_docsign.hooks.docsign import DocsignHook

    hook = DocsignHook()
    env_id = create_id(sandbox, [make_pdf()], title="Skewed")
    sandbox.set_clock_offset(-3600)
    hook.distribute_envelope(env_id)
    machine_now = datetime.now(timezone.utc)
    service_now = hook.last_service_time  # the Date header of the answer
    assert service_now is not None
    assert timedelta(minutes=55) < machine_now - service_now < timedelta(minutes=65)
    sent = next(e for e in hook.get_audit_log(env_id) if e["type"] == "DOCUMENT_SENT")
    created = datetime.fromisoformat(sent["createdAt"].replace("Z", "+00:00"))
    assert abs(created - service_now) < timedelta(minutes=1)
    expires = hook.get_envelope(env_id).recipients[0].expires_at
    assert expires is not None  # three months from the service's now, not the machine's
    link_life = datetime.fromisoformat(expires.replace("Z", "+00:00")) - service_now
    assert abs(link_life - timedelta(days=90)) < timedelta(minutes=1)
    sandbox.set_clock_offset(0)
    hook.get_envelope(env_id)
    assert hook.last_service_time is not None
    assert abs(datetime.now(timezone.utc) - hook.last_service_time) < timedelta(minutes=5)
