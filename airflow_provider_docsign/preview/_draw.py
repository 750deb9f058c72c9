"""Draw fields onto a copy of a PDF (pypdf) and rasterize the copy to PNGs (pypdfium2).

All drawing happens in *display space*: points, origin at the bottom-left corner of the page as a
viewer shows it (after ``/Rotate``, inside the ``/CropBox``), y upwards. One ``cm`` operator per page
maps display space to the page's default user space, so the same percentages work for portrait,
landscape, rotated and offset pages alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pypdf import PdfReader, PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    FloatObject,
    NameObject,
    PdfObject,
)

from airflow_provider_docsign.preview._layout import Layout, PlacedField

#: One colour per recipient (by position; the list repeats after eight recipients). Red is kept
#: for warnings.
PALETTE: tuple[tuple[int, int, int], ...] = (
    (31, 119, 180),  # blue
    (255, 127, 14),  # orange
    (44, 160, 44),  # green
    (148, 103, 189),  # purple
    (23, 190, 207),  # cyan
    (140, 86, 75),  # brown
    (227, 119, 194),  # pink
    (188, 189, 34),  # olive
)
WARNING_COLOR: tuple[int, int, int] = (214, 39, 40)
BANNER_FILL: tuple[int, int, int] = (255, 235, 235)
#: Opacity of the fill inside a field's rectangle (the border is opaque).
FILL_ALPHA = 0.18
BORDER_WIDTH = 2.0  # points
BANNER_LINE = 10.0  # points per banner line
BANNER_MAX_LINES = 8

_FONT = "/DocsignPreviewFont"
_ALPHA = "/DocsignPreviewAlpha"


def recipient_color(index: int) -> tuple[int, int, int]:
    """The RGB colour (0-255) used for the recipient at position ``index``."""
    return PALETTE[index % len(PALETTE)]


@dataclass(frozen=True)
class PageBox:
    """The displayed geometry of one page.

    :param llx: Lower-left x of the crop box, in user space.
    :param lly: Lower-left y of the crop box.
    :param urx: Upper-right x.
    :param ury: Upper-right y.
    :param rotation: ``/Rotate`` normalised to 0, 90, 180 or 270 (clockwise, as displayed).
    """

    llx: float
    lly: float
    urx: float
    ury: float
    rotation: int

    @property
    def display_size(self) -> tuple[float, float]:
        """(width, height) in points of the page as displayed."""
        width, height = self.urx - self.llx, self.ury - self.lly
        return (height, width) if self.rotation in (90, 270) else (width, height)

    def matrix(self) -> tuple[float, float, float, float, float, float]:
        """The ``cm`` matrix from display space (y up, origin bottom-left as shown) to user space."""
        if self.rotation == 90:
            return (0.0, 1.0, -1.0, 0.0, self.urx, self.lly)
        if self.rotation == 180:
            return (-1.0, 0.0, 0.0, -1.0, self.urx, self.ury)
        if self.rotation == 270:
            return (0.0, -1.0, 1.0, 0.0, self.llx, self.ury)
        return (1.0, 0.0, 0.0, 1.0, self.llx, self.lly)


def page_box(page: Any) -> PageBox:
    """Read a pypdf page's displayed geometry.

    The displayed area is the ``/CropBox`` (which defaults to the ``/MediaBox``): that is what viewers,
    the service's web editor and pdfium show, and what the percentages are measured against.
    Not checked against the real service: the recorded responses hold no rotated or cropped pages,
    so this rule comes from the issue's statement that percentages refer to the page as displayed.
    """
    box = page.cropbox
    left, right = sorted((float(box.left), float(box.right)))
    bottom, top = sorted((float(box.bottom), float(box.top)))
    rotation = int(page.get("/Rotate", 0) or 0) % 360
    if rotation not in (0, 90, 180, 270):  # invalid per the PDF spec; viewers ignore it
        rotation = 0
    return PageBox(left, bottom, right, top, rotation)


def _text(value: str) -> bytes:
    """A PDF literal string in WinAnsiEncoding (characters it lacks become '?')."""
    raw = value.encode("cp1252", errors="replace")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _rgb(color: tuple[int, int, int]) -> str:
    return " ".join(f"{c / 255:.4f}" for c in color)


def _fit(text: str, width: float, size: float) -> str:
    """Shorten ``text`` with an ellipsis to roughly fit ``width`` points in Helvetica at ``size``."""
    limit = max(1, int(width / (0.55 * size)))
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "\u2026"


def _num(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") or "0"


def field_label(field: PlacedField, layout: Layout) -> str:
    """The label drawn on a field: ``TYPE · name-or-email · #n``."""
    label = f"{field.type} \u00b7 {layout.recipients[field.recipient].label} \u00b7 #{field.number}"
    return label if field.value is None else f"{label} = {field.value}"


def _field_ops(field: PlacedField, layout: Layout, box: PageBox, marked: bool) -> list[bytes]:
    dw, dh = box.display_size
    x, w = field.x * dw / 100, field.width * dw / 100
    h = field.height * dh / 100
    y = dh - field.y * dh / 100 - h  # display space has y up; the service measures from the top
    color = _rgb(recipient_color(field.recipient))
    rect = f"{_num(x)} {_num(y)} {_num(w)} {_num(h)} re"
    ops = [
        # Fill first, then the opaque border over it, so the border keeps the exact colour.
        _op(f"q {_ALPHA} gs {color} rg {rect} f Q"),
        _op(f"q {color} RG {_num(BORDER_WIDTH)} w 0 j {rect} S Q"),
    ]
    if marked:
        pad = BORDER_WIDTH + 2
        outer = f"{_num(x - pad)} {_num(y - pad)} {_num(w + 2 * pad)} {_num(h + 2 * pad)} re"
        ops.append(_op(f"q {_rgb(WARNING_COLOR)} RG 1 w [3 2] 0 d {outer} S Q"))
    label = field_label(field, layout)
    if h >= 11 and w >= 30:  # inside, under the top border
        size = 7.0
        text = _fit(label, w - 2 * BORDER_WIDTH - 2, size)
        tx, ty = x + BORDER_WIDTH + 1, y + h - BORDER_WIDTH - 1 - size
    else:  # too small: above the rectangle
        size = 6.0
        text = _fit(label, max(w, 120.0), size)
        tx, ty = x, y + h + BORDER_WIDTH + 1
    ops.append(_show(color, size, tx, ty, text))
    return ops


def _op(text: str) -> bytes:
    return text.encode("ascii") + b"\n"


def _show(color: str, size: float, x: float, y: float, text: str) -> bytes:
    """Operators that draw one line of Helvetica text in ``color`` with its baseline at (x, y)."""
    head = f"q {color} rg BT {_FONT} {_num(size)} Tf {_num(x)} {_num(y)} Td ".encode("ascii")
    return head + _text(text) + b" Tj ET Q\n"


def _banner_ops(messages: Sequence[str], box: PageBox) -> list[bytes]:
    dw, dh = box.display_size
    shown = list(messages[:BANNER_MAX_LINES])
    if len(messages) > BANNER_MAX_LINES:
        shown.append(f"... and {len(messages) - BANNER_MAX_LINES} more warnings (see the preview result)")
    lines = [f"WARNING: {shown[0]}", *shown[1:]] if shown else []
    height = BANNER_LINE * len(lines) + 6
    top = dh - height
    ops = [
        _op(
            f"q {_rgb(BANNER_FILL)} rg 0 {_num(top)} {_num(dw)} {_num(height)} re f "
            f"{_rgb(WARNING_COLOR)} RG 1 w 0 {_num(top)} {_num(dw)} {_num(height)} re S Q"
        ),
    ]
    for number, line in enumerate(lines):
        baseline = dh - 3 - BANNER_LINE * (number + 1) + 2.5
        ops.append(_show(_rgb(WARNING_COLOR), 8.0, 6.0, baseline, _fit(line, dw - 12, 8.0)))
    return ops


def _add_resources(writer: PdfWriter, page: Any, font_ref: PdfObject, alpha_ref: PdfObject) -> None:
    current = page.get("/Resources")
    resources = DictionaryObject(current.get_object()) if current is not None else DictionaryObject()
    for key, name, ref in (("/Font", _FONT, font_ref), ("/ExtGState", _ALPHA, alpha_ref)):
        existing = resources.get(key)
        sub = DictionaryObject(existing.get_object()) if existing is not None else DictionaryObject()
        sub[NameObject(name)] = ref
        resources[NameObject(key)] = sub
    page[NameObject("/Resources")] = resources


def _append_content(writer: PdfWriter, page: Any, overlay: bytes) -> None:
    """Wrap the page's own content in q/Q (so its graphics state cannot leak) and append ours."""
    before, after = DecodedStreamObject(), DecodedStreamObject()
    before.set_data(b"q\n")
    after.set_data(b"\nQ\n" + overlay)
    contents = page.get("/Contents")
    parts = ArrayObject([writer._add_object(before)])
    if contents is not None:
        resolved = contents.get_object()
        if isinstance(resolved, ArrayObject):
            parts.extend(resolved)
        else:
            parts.append(contents)
    parts.append(writer._add_object(after))
    page[NameObject("/Contents")] = parts


def draw_pdf(
    source: Path | IO[bytes],
    destination: Path,
    *,
    file_index: int,
    layout: Layout,
    banners: Mapping[int, Sequence[str]],
    marked: frozenset[int],
) -> None:
    """Write a copy of ``source`` with the layout's fields for ``file_index`` drawn on it.

    :param source: The PDF to copy.
    :param destination: Where to write the copy.
    :param file_index: The file's zero-based index in the layout.
    :param layout: The fields and recipients.
    :param banners: Warning lines to show, by one-based page number.
    :param marked: Numbers of fields to outline in red (a warning concerns them).
    """
    reader = PdfReader(source)
    writer = PdfWriter(clone_from=reader)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
        }
    )
    alpha = DictionaryObject(
        {NameObject("/Type"): NameObject("/ExtGState"), NameObject("/ca"): FloatObject(FILL_ALPHA)}
    )
    font_ref, alpha_ref = writer._add_object(font), writer._add_object(alpha)
    by_page: dict[int, list[PlacedField]] = {}
    for placed in layout.fields:
        if placed.file_index == file_index:
            by_page.setdefault(placed.page, []).append(placed)
    for number, page in enumerate(writer.pages, start=1):
        fields = by_page.get(number, [])
        messages = banners.get(number, ())
        if not fields and not messages:
            continue
        box = page_box(page)
        ops = [_op("q " + " ".join(_num(v) for v in box.matrix()) + " cm")]
        for field in fields:
            ops.extend(_field_ops(field, layout, box, field.number in marked))
        if messages:
            ops.extend(_banner_ops(messages, box))
        ops.append(_op("Q"))
        _add_resources(writer, page, font_ref, alpha_ref)
        _append_content(writer, page, b"".join(ops))
    with open(destination, "wb") as fh:
        writer.write(fh)


def rasterize(pdf_path: Path, png_paths: Sequence[Path], *, dpi: int) -> None:
    """Render every page of ``pdf_path`` (as displayed: rotation and crop box applied) to PNGs.

    :param pdf_path: The PDF to render.
    :param png_paths: One destination per page, in page order.
    :param dpi: Resolution; the PNG of an A4 page at 100 dpi is 827 x 1169 pixels.
    """
    import pypdfium2 as pdfium  # lazy: only rendering needs the native library

    document = pdfium.PdfDocument(str(pdf_path))
    try:
        for index, target in enumerate(png_paths):
            page = document[index]
            try:
                bitmap = page.render(scale=dpi / 72, fill_color=(255, 255, 255, 255))
                try:
                    image = bitmap.to_pil()
                    if image.mode != "RGB":
                        image = image.convert("RGB")
                    # Fast zlib level: encoding dominated the run time at the default level (about
                    # 3x slower for files only ~15% smaller).
                    image.save(target, format="PNG", compress_level=1)
                finally:
                    bitmap.close()
            finally:
                page.close()
    finally:
        document.close()
