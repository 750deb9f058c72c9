"""Render previews and check their pixels: fields land where the service's coordinates say.

The expected pixel positions are computed here straight from the percentages and the PNG size (the
PNG shows the page as displayed), independently of the code's own page-space transform.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from PIL import Image
from pypdf import PdfReader, PdfWriter
from pypdf.generic import NameObject, NumberObject, RectangleObject
from test_preview_support import WHITE, close, field, pixel, reshape_pdf, tint

from airflow_provider_docsign.preview import recipient_color, render_field_preview

RECIPIENTS = [
    {
        "email": "alice@example.com",
        "name": "Alice Signer",
        "role": "SIGNER",
        "fields": [field(10, 60, 30, 8), field(55, 12, 25, 6, kind="DATE")],
    },
    {
        "email": "bob@example.com",
        "name": "",
        "role": "SIGNER",
        "fields": [field(55, 75, 35, 9)],
    },
]
# Points (percent) that are well away from every field, the sample text and the page number.
OUTSIDE = [(50, 45), (25, 88), (85, 40), (5, 30)]


def _assert_fields_drawn(png: Path, recipients: list[dict]) -> None:
    image = Image.open(png).convert("RGB")
    for index, recipient in enumerate(recipients):
        color = recipient_color(index)
        for f in recipient["fields"]:
            x, y, w, h = f["positionX"], f["positionY"], f["width"], f["height"]
            # The border, on all four sides, has exactly the recipient's colour.
            for point in ((x, y + h * 0.6), (x + w, y + h / 2), (x + w * 0.7, y), (x + w / 2, y + h)):
                assert close(pixel(image, *point), color), (png.name, index, f, point, pixel(image, *point))
            # Inside the border: the recipient's colour as a translucent fill (below the label).
            inside = pixel(image, x + w * 0.6, y + h * 0.8)
            assert close(inside, tint(color)), (png.name, index, f, inside)
    for point in OUTSIDE:
        assert pixel(image, *point) == WHITE, (png.name, point)


@pytest.mark.parametrize(
    ("page_size", "landscape"),
    [("A4", False), ("LETTER", False), ("A4_LANDSCAPE", True)],
)
def test_fields_have_recipient_colours_on_each_page_size(make_pdf, tmp_path, page_size, landscape):
    pdf = make_pdf(f"{page_size}.pdf", page_size=page_size)
    result = render_field_preview([pdf], RECIPIENTS, tmp_path / "out")

    assert result.warnings == []
    assert len(result.pdfs) == 1
    assert len(result.pngs) == 1
    image = Image.open(result.pngs[0])
    width, height = image.size
    assert (width > height) is landscape
    page = PdfReader(pdf).pages[0]
    ratio = float(page.mediabox.width) / float(page.mediabox.height)
    assert width / height == pytest.approx(ratio, rel=0.01)
    _assert_fields_drawn(result.pngs[0], RECIPIENTS)


@pytest.mark.parametrize("rotate", [90, 180, 270])
def test_rotated_pages_use_the_displayed_orientation(make_pdf, tmp_path, rotate):
    source = make_pdf("portrait.pdf", page_size="A4")
    rotated = reshape_pdf(source, tmp_path / f"rot{rotate}.pdf", rotate=rotate)
    result = render_field_preview([rotated], RECIPIENTS, tmp_path / "out")

    width, height = Image.open(result.pngs[0]).size
    assert (width > height) is (rotate in (90, 270))
    _assert_fields_drawn(result.pngs[0], RECIPIENTS)


def test_offset_media_and_crop_boxes(make_pdf, tmp_path):
    source = make_pdf("boxes.pdf", page_size="LETTER")
    # A page whose boxes do not start at the origin, and a crop box smaller than the media box:
    # percentages are of the displayed (cropped) page.
    shifted = reshape_pdf(
        source,
        tmp_path / "shifted.pdf",
        rotate=90,
        mediabox=(-40, 25, 572, 817),
        cropbox=(-10, 50, 520, 780),
    )
    result = render_field_preview([shifted], RECIPIENTS, tmp_path / "out", dpi=72)

    image = Image.open(result.pngs[0])
    assert image.size == (730, 530)  # the crop box, turned by 90 degrees, at 1 px per point
    _assert_fields_drawn(result.pngs[0], RECIPIENTS)


def test_every_page_of_every_file_gets_a_png_and_fields_land_on_their_own_file(make_pdf, tmp_path):
    first = make_pdf("first.pdf", pages=2)
    second = make_pdf("second.pdf", page_size="LETTER")
    recipients = [
        {"email": "a@example.com", "name": "A", "role": "SIGNER", "fields": [field(10, 10, 20, 5, page=2)]},
        {
            "email": "b@example.com",
            "name": "B",
            "role": "SIGNER",
            "fields": [field(60, 60, 20, 5, identifier=1)],
        },
    ]
    result = render_field_preview([first, second], recipients, tmp_path / "out")

    assert [p.name for p in result.pngs] == [
        "00-first.page001.png",
        "00-first.page002.png",
        "01-second.page001.png",
    ]
    assert [len(group) for group in result.pngs_by_file] == [2, 1]
    page1, page2, other = (Image.open(p).convert("RGB") for p in result.pngs)
    assert close(pixel(page2, 10, 12), recipient_color(0))
    assert pixel(page1, 10, 12) == WHITE  # the field is on page 2 only
    assert close(pixel(other, 60, 62), recipient_color(1))
    assert pixel(page1, 60, 62) == WHITE
    assert pixel(page2, 60, 62) == WHITE


def test_preview_pdf_is_a_copy_and_the_original_is_untouched(make_pdf, tmp_path):
    pdf = make_pdf("contract.pdf", pages=3, page_size="LETTER")
    before = hashlib.sha256(pdf.read_bytes()).hexdigest()
    result = render_field_preview([pdf], RECIPIENTS, tmp_path / "out")

    assert hashlib.sha256(pdf.read_bytes()).hexdigest() == before
    copy = PdfReader(result.pdfs[0])
    original = PdfReader(pdf)
    assert len(copy.pages) == 3
    assert [tuple(p.mediabox) for p in copy.pages] == [tuple(p.mediabox) for p in original.pages]
    text = copy.pages[0].extract_text()
    assert "SIGNATURE \u00b7 Alice Signer \u00b7 #1" in text
    assert "SIGNATURE \u00b7 bob@example.com \u00b7 #3" in text  # no name: the email is the label
    assert "contract" in text  # the page's own content is still there
    assert result.to_dict()["pdfs"] == [str(result.pdfs[0])]


def test_identifier_by_name_negative_index_and_string_coordinates(make_pdf, tmp_path):
    first = make_pdf("first.pdf")
    second = make_pdf("second.pdf")
    recipients = [
        {
            "email": "a@example.com",
            "name": "A",
            "role": "SIGNER",
            "fields": [
                # The real service: a string identifier matches a file name, a negative index counts
                # from the end (JS Array.at), and Decimal strings are numbers.
                field("10", "10", "20", "5", identifier="second.pdf"),
                field(60, 60, 20, 5, identifier=-2),
                field(60, 80, 20, 5, identifier=None),
            ],
        }
    ]
    result = render_field_preview([first, second], recipients, tmp_path / "out")

    assert result.warnings == []
    one, two = (Image.open(p).convert("RGB") for p in result.pngs)
    color = recipient_color(0)
    assert close(pixel(two, 10, 12), color)
    assert pixel(one, 10, 12) == WHITE
    assert close(pixel(one, 60, 62), color)
    assert pixel(two, 60, 62) == WHITE
    assert close(pixel(one, 60, 82), color)


def test_each_recipient_gets_a_distinct_colour():
    colors = [recipient_color(i) for i in range(8)]
    assert len(set(colors)) == 8
    assert WHITE not in colors


def test_rotation_and_media_box_inherited_from_the_page_tree(make_pdf, tmp_path):
    source = make_pdf("inherited.pdf", pages=2)
    writer = PdfWriter(clone_from=PdfReader(source))
    tree = writer.root_object["/Pages"].get_object()
    tree[NameObject("/Rotate")] = NumberObject(270)
    tree[NameObject("/MediaBox")] = RectangleObject([0, 0, 612, 792])
    for page in writer.pages:
        for key in ("/Rotate", "/MediaBox", "/CropBox"):
            if key in page:
                del page[key]
    inherited = tmp_path / "inherited-tree.pdf"
    with open(inherited, "wb") as fh:
        writer.write(fh)
    kids = PdfReader(inherited).trailer["/Root"]["/Pages"]["/Kids"]
    assert all("/Rotate" not in kid.get_object() and "/MediaBox" not in kid.get_object() for kid in kids)

    result = render_field_preview([inherited], RECIPIENTS, tmp_path / "out", dpi=72)
    assert Image.open(result.pngs[0]).size == (792, 612)  # Letter, turned: as displayed
    _assert_fields_drawn(result.pngs[0], RECIPIENTS)
