"""Each placement warning: found, returned with its file/page/field/recipient, and drawn on the page."""

from __future__ import annotations

import json

from PIL import Image
from test_preview_support import WHITE, close, count_color, field, pixel

from airflow_provider_docsign.preview import (
    BANNER_FILL,
    WARNING_COLOR,
    recipient_color,
    render_field_preview,
)


def _signer(name: str, *fields: dict, role: str = "SIGNER") -> dict:
    return {"email": f"{name.lower()}@example.com", "name": name, "role": role, "fields": list(fields)}


def _banner_pixels(png) -> int:
    """Pixels of the warning banner's fill in the top band of the page image."""
    image = Image.open(png).convert("RGB")
    return count_color(image, BANNER_FILL, (0, 0, image.size[0], 40))


def test_clean_payload_has_no_warnings_and_no_banner(make_pdf, tmp_path):
    pdf = make_pdf("clean.pdf", pages=2)
    result = render_field_preview([pdf], [_signer("Ann", field(10, 50, 30, 6))], tmp_path / "out")

    assert result.warnings == []
    assert all(_banner_pixels(png) == 0 for png in result.pngs)


def test_overlapping_fields(make_pdf, tmp_path):
    pdf = make_pdf("overlap.pdf", pages=2)
    recipients = [
        _signer("Ann", field(10, 50, 30, 6, page=2)),
        _signer(
            "Ben", field(30, 53, 30, 6, page=2), field(40, 70, 10, 5, page=2), field(50, 70, 10, 5, page=2)
        ),
    ]
    result = render_field_preview([pdf], recipients, tmp_path / "out")

    assert [(w.kind, w.field, w.other_field, w.page, w.file) for w in result.warnings] == [
        ("overlap", 1, 2, 2, "overlap.pdf")  # fields 3 and 4 only touch: no warning
    ]
    assert result.warnings[0].recipient == "Ann"
    assert "#1" in result.warnings[0].message
    assert "#2" in result.warnings[0].message
    page1, page2 = result.pngs
    assert _banner_pixels(page2) > 0
    assert _banner_pixels(page1) == 0
    # Both fields get a red dashed outline just outside their border.
    image = Image.open(page2).convert("RGB")
    width, height = image.size
    marked = count_color(image, WARNING_COLOR, (int(0.05 * width), int(0.45 * height), width // 2, height))
    assert marked > 20


def test_field_running_off_the_page(make_pdf, tmp_path):
    pdf = make_pdf("off.pdf", page_size="A4_LANDSCAPE")
    recipients = [_signer("Ann", field(85, 10, 20, 5), field(10, 97, 20, 5, kind="INITIALS"))]
    result = render_field_preview([pdf], recipients, tmp_path / "out")

    kinds = [(w.kind, w.field, w.page, w.file, w.recipient) for w in result.warnings]
    assert kinds == [("off_page", 1, 1, "off.pdf", "Ann"), ("off_page", 2, 1, "off.pdf", "Ann")]
    assert "85..105" in result.warnings[0].message
    assert "97..102" in result.warnings[1].message
    assert _banner_pixels(result.pngs[0]) > 0
    # The part that is on the page is still drawn in the recipient's colour.
    assert close(pixel(Image.open(result.pngs[0]).convert("RGB"), 85, 13), recipient_color(0))


def test_field_on_a_page_the_pdf_lacks(make_pdf, tmp_path):
    pdf = make_pdf("short.pdf", pages=2)
    recipients = [_signer("Ann", field(10, 50, 30, 6), field(10, 50, 30, 6, page=3, kind="DATE"))]
    result = render_field_preview([pdf], recipients, tmp_path / "out")

    assert [(w.kind, w.field, w.page, w.file) for w in result.warnings] == [
        ("missing_page", 2, 3, "short.pdf")
    ]
    assert "2 pages" in result.warnings[0].message
    # Reported on the file's last page, since page 3 does not exist to draw on.
    page1, page2 = result.pngs
    assert _banner_pixels(page2) > 0
    assert _banner_pixels(page1) == 0
    assert len(result.pngs) == 2


def test_field_on_a_file_that_was_not_given(make_pdf, tmp_path):
    pdf = make_pdf("only.pdf")
    recipients = [_signer("Ann", field(10, 50, 30, 6), field(10, 70, 30, 6, identifier=1))]
    result = render_field_preview([pdf], recipients, tmp_path / "out")

    assert [(w.kind, w.field, w.file) for w in result.warnings] == [("missing_file", 2, None)]
    assert "identifier 1" in result.warnings[0].message
    assert _banner_pixels(result.pngs[0]) > 0
    assert pixel(Image.open(result.pngs[0]).convert("RGB"), 12, 72) == WHITE  # not drawn anywhere


def test_signer_without_a_signature_field(make_pdf, tmp_path):
    pdf = make_pdf("sig.pdf")
    recipients = [
        _signer("Ann", field(10, 50, 30, 6, kind="TEXT")),
        _signer("Ben", field(10, 70, 30, 6, kind="FREE_SIGNATURE")),  # FREE_SIGNATURE counts
        _signer("Cat", role="VIEWER"),  # viewers need no fields
        _signer("Dan"),
    ]
    result = render_field_preview([pdf], recipients, tmp_path / "out")

    assert [(w.kind, w.recipient, w.field, w.page) for w in result.warnings] == [
        ("missing_signature", "Ann", None, None),
        ("missing_signature", "Dan", None, None),
    ]
    assert "MISSING_SIGNATURE_FIELD" in result.warnings[0].message
    assert _banner_pixels(result.pngs[0]) > 0


def test_many_warnings_are_all_returned_and_json_safe(make_pdf, tmp_path):
    pdf = make_pdf("many.pdf")
    fields = [field(10 + i, 10 + i, 20, 5, kind="TEXT") for i in range(12)]
    result = render_field_preview([pdf], [_signer("Ann", *fields)], tmp_path / "out")

    overlaps = [(w.field, w.other_field) for w in result.warnings if w.kind == "overlap"]
    # Field i spans y = 10+i .. 15+i: fields overlap when their numbers differ by less than 5.
    expected = [(i, j) for i in range(1, 13) for j in range(i + 1, 13) if j - i < 5]
    assert overlaps == expected
    assert [w.kind for w in result.warnings].count("missing_signature") == 1
    data = json.loads(json.dumps(result.to_dict()))
    assert len(data["warnings"]) == len(result.warnings)
    assert set(data["warnings"][0]) == {
        "kind",
        "message",
        "file",
        "page",
        "field",
        "recipient",
        "other_field",
    }
