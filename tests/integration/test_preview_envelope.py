"""Preview of an envelope fetched from the sandbox == preview of the payload that created it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
from PIL import Image, ImageChops

from airflow_provider_docsign.exceptions import DocsignDownloadError, DocsignNotFoundError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignFieldPreviewOperator
from airflow_provider_docsign.preview import preview_envelope, recipient_color, render_field_preview

pytestmark = pytest.mark.integration


def _field(
    identifier: int, page: int, x: float, y: float, w: float, h: float, kind: str = "SIGNATURE"
) -> dict:
    return {
        "identifier": identifier,
        "type": kind,
        "page": page,
        "positionX": x,
        "positionY": y,
        "width": w,
        "height": h,
    }


RECIPIENTS = [
    {
        "email": "ann.signer@example.com",
        "name": "Ann Signer",
        "role": "SIGNER",
        "fields": [_field(0, 2, 10, 70, 30, 6), _field(1, 1, 12.5, 20.25, 25, 5, "DATE")],
    },
    {
        "email": "ben@example.com",
        "name": "",
        "role": "SIGNER",
        # Overlaps Ann's signature on purpose: the stored envelope must give the same warning.
        "fields": [_field(0, 2, 30, 72, 30, 6), _field(2, 1, 60, 40, 30, 8, "TEXT")],
    },
    {
        "email": "carl@example.com",
        "name": "Carl Approver",
        "role": "APPROVER",
        "fields": [_field(2, 1, 5, 5, 20, 5)],
    },
]


def _files(make_pdf) -> list[Path]:
    return [
        make_pdf("a4.pdf", pages=2, page_size="A4"),
        make_pdf("letter.pdf", page_size="LETTER"),
        make_pdf("landscape.pdf", page_size="A4_LANDSCAPE"),
    ]


def _same_pixels(first: Path, second: Path) -> bool:
    one, two = Image.open(first).convert("RGB"), Image.open(second).convert("RGB")
    return one.size == two.size and ImageChops.difference(one, two).getbbox() is None


def test_envelope_preview_matches_the_payload_preview(sandbox, docsign_conn, make_pdf, tmp_path):
    files = _files(make_pdf)
    hook = DocsignHook(docsign_conn_id=docsign_conn)
    envelope_id = hook.create_envelope(title="Preview match", files=files, recipients=RECIPIENTS)

    from_payload = render_field_preview(files, RECIPIENTS, tmp_path / "payload")
    sandbox.clear_requests()
    from_envelope = preview_envelope(envelope_id, tmp_path / "envelope", docsign_conn_id=docsign_conn)

    assert len(from_envelope.pngs) == len(from_payload.pngs) == 4
    for mine, theirs in zip(from_payload.pngs, from_envelope.pngs, strict=True):
        assert mine.name == theirs.name
        assert _same_pixels(mine, theirs), mine.name
    assert [w.to_dict() for w in from_envelope.warnings] == [w.to_dict() for w in from_payload.warnings]
    assert [(w.kind, w.field, w.other_field) for w in from_envelope.warnings] == [("overlap", 1, 3)]
    # The fields really are there: Ben's TEXT field on the landscape file, in his colour.
    landscape = Image.open(from_envelope.pngs[3]).convert("RGB")
    width, height = landscape.size
    assert landscape.getpixel((int(0.60 * width), int(0.44 * height)))[:3] == recipient_color(1)
    # Only reads were made: the envelope, then each item's original PDF.
    requests = sandbox.requests()
    assert [r["method"] for r in requests] == ["GET"] * 4
    assert requests[0]["path"] == f"/envelope/{envelope_id}"
    assert all(r["path"].startswith("/envelope/item/") and r["status"] == 200 for r in requests[1:])


def test_operator_previews_an_envelope_by_id(sandbox, docsign_conn, make_pdf, tmp_path):
    files = _files(make_pdf)
    hook = DocsignHook(docsign_conn_id=docsign_conn)
    envelope_id = hook.create_envelope(title="Preview operator", files=files, recipients=RECIPIENTS)
    from_payload = render_field_preview(files, RECIPIENTS, tmp_path / "payload")

    op = DocsignFieldPreviewOperator(
        task_id="preview", envelope_id=envelope_id, docsign_conn_id=docsign_conn, output_dir=tmp_path / "dest"
    )
    xcom = op.execute(context={})  # type: ignore[arg-type]

    assert [Path(p).name for p in xcom["pngs"]] == [p.name for p in from_payload.pngs]
    assert all(_same_pixels(Path(a), b) for a, b in zip(xcom["pngs"], from_payload.pngs, strict=True))
    assert xcom["warnings"] == [w.to_dict() for w in from_payload.warnings]


def test_unknown_envelope_writes_nothing(sandbox, docsign_conn, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(DocsignNotFoundError):
        preview_envelope("envelope_doesnotexist", out, docsign_conn_id=docsign_conn)
    assert not out.exists()


def test_failed_download_writes_nothing(sandbox, docsign_conn, make_pdf, tmp_path):
    files = _files(make_pdf)
    hook = DocsignHook(docsign_conn_id=docsign_conn)
    envelope_id = hook.create_envelope(title="Preview fault", files=files, recipients=RECIPIENTS)
    sandbox.inject_fault(
        method="GET", path="/envelope/item/*/download", action="wrong_content_type", count=10
    )
    out = tmp_path / "out"
    with pytest.raises(DocsignDownloadError):
        preview_envelope(envelope_id, out, docsign_conn_id=docsign_conn)
    assert not out.exists()


def test_stored_field_on_a_missing_page_is_warned(sandbox, docsign_conn, make_pdf, tmp_path):
    # The real service accepts a field on a page the PDF lacks (the envelope can then never complete);
    # our hook refuses to send one, so create it with a plain multipart request to the sandbox.
    pdf = make_pdf("one-page.pdf")
    payload = {
        "type": "DOCUMENT",
        "title": "Page too far",
        "recipients": [
            {
                "email": "ann@example.com",
                "name": "Ann",
                "role": "SIGNER",
                "fields": [_field(0, 1, 10, 10, 30, 6), _field(0, 3, 10, 50, 30, 6, "DATE")],
            }
        ],
    }
    with open(pdf, "rb") as fh:
        response = requests.post(
            f"{sandbox.base_url}/envelope/create",
            headers={"Authorization": sandbox.api_key},
            data={"payload": json.dumps(payload)},
            files=[("files", ("one-page.pdf", fh, "application/pdf"))],
            timeout=30,
        )
    assert response.status_code == 200, response.text
    envelope_id = response.json()["id"]

    result = preview_envelope(envelope_id, tmp_path / "out", docsign_conn_id=docsign_conn)

    assert [(w.kind, w.field, w.page, w.file) for w in result.warnings] == [
        ("missing_page", 2, 3, "one-page.pdf")
    ]
    assert len(result.pngs) == 1
    image = Image.open(result.pngs[0]).convert("RGB")
    width, height = image.size
    assert image.getpixel((int(0.10 * width), int(0.13 * height)))[:3] == recipient_color(0)
