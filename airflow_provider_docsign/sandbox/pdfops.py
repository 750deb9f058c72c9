"""PDF work with pypdf: page counts, drawing signature marks, certificate and audit-log pages.

The sandbox draws a *visible* mark inside every signed SIGNATURE field's rectangle (a framed box with the
signer's name), and appends a certificate page listing the signers, the completion time and the
envelope id. It is a visual stand-in, not a cryptographic signature.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pypdf import PageObject as _PageObject
from pypdf import PdfReader, PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    NameObject,
)

A4 = (595.28, 841.89)
FONT = "/DocsignSandboxF1"


@dataclass(frozen=True)
class Mark:
    """A field to draw: 1-based page, percent coordinates from the top-left corner, and the text."""

    page: int
    x: float
    y: float
    width: float
    height: float
    text: str
    signature: bool


def is_pdf_file(path: str | os.PathLike[str]) -> bool:
    """True when the file starts with ``%PDF-`` and pypdf can read its page tree."""
    try:
        with open(path, "rb") as fh:
            if fh.read(5) != b"%PDF-":
                return False
        page_count(path)
    except Exception:
        return False
    return True


def page_count(path: str | os.PathLike[str]) -> int:
    """Number of pages, read lazily with pypdf."""
    # An open file, not a path: given a path, pypdf reads the whole file into memory first (+100 MB of
    # server RSS for a 100 MB upload); given a file it seeks to the xref and reads only what it needs.
    with open(path, "rb") as fh:
        return len(PdfReader(fh).pages)


def _esc(text: str) -> str:
    safe = text.encode("latin-1", "replace").decode("latin-1")
    return safe.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _overlay(width: float, height: float, ops: str) -> _PageObject:
    page = _PageObject.create_blank_page(width=width, height=height)
    stream = DecodedStreamObject()
    stream.set_data(ops.encode("latin-1", "replace"))
    page[NameObject("/Contents")] = stream
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    page[NameObject("/Resources")] = DictionaryObject(
        {
            NameObject("/Font"): DictionaryObject({NameObject(FONT): font}),
            NameObject("/ProcSet"): ArrayObject([NameObject("/PDF"), NameObject("/Text")]),
        }
    )
    return page


def _mark_ops(mark: Mark, left: float, bottom: float, pw: float, ph: float) -> str:
    w = mark.width / 100 * pw
    h = mark.height / 100 * ph
    x = left + mark.x / 100 * pw
    y = bottom + ph - mark.y / 100 * ph - h
    size = max(4.0, min(h * 0.45, 18.0))
    ops = [f"q {x:.2f} {y:.2f} {w:.2f} {h:.2f} re W n"]
    if mark.signature:
        ops.append(f"0.90 0.94 1 rg {x:.2f} {y:.2f} {w:.2f} {h:.2f} re f")
        ops.append(f"0.05 0.20 0.60 RG 1.5 w {x + 1:.2f} {y + 1:.2f} {w - 2:.2f} {h - 2:.2f} re S")
        ops.append(
            f"0.05 0.20 0.60 rg 1 w {x + 3:.2f} {y + h * 0.25:.2f} m {x + w - 3:.2f} {y + h * 0.25:.2f} l S"
        )
    else:
        ops.append("0 0 0 rg")
    ops.append(f"BT {FONT} {size:.2f} Tf {x + 4:.2f} {y + h * 0.35:.2f} Td ({_esc(mark.text)}) Tj ET")
    ops.append("Q")
    return "\n".join(ops)


def _text_page_ops(lines: Sequence[tuple[float, str]], height: float) -> str:
    ops = []
    y = height - 60
    for size, text in lines:
        ops.append(f"BT {FONT} {size:.1f} Tf 50 {y:.2f} Td ({_esc(text)}) Tj ET")
        y -= size * 1.6
        if y < 40:
            break
    return "\n".join(ops)


def draw_marks(writer: PdfWriter, marks: Iterable[Mark]) -> None:
    """Draw ``marks`` onto the writer's pages; marks on pages that do not exist are skipped."""
    by_page: dict[int, list[Mark]] = {}
    for m in marks:
        by_page.setdefault(m.page, []).append(m)
    for number, page_marks in by_page.items():
        if not 1 <= number <= len(writer.pages):
            continue
        page = writer.pages[number - 1]
        box = page.mediabox
        left, bottom = float(box.left), float(box.bottom)
        pw, ph = float(box.width), float(box.height)
        ops = "\n".join(_mark_ops(m, left, bottom, pw, ph) for m in page_marks)
        overlay = _overlay(float(box.right), float(box.top), ops)
        page.merge_page(overlay)


def add_text_page(writer: PdfWriter, lines: Sequence[tuple[float, str]], size: tuple[float, float]) -> None:
    """Append a page with ``(font size, text)`` lines from the top."""
    width, height = size
    page = writer.add_blank_page(width=width, height=height)
    page.merge_page(_overlay(width, height, _text_page_ops(lines, height)))


def write_signed(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    marks: Iterable[Mark],
    certificate: Sequence[tuple[float, str]] | None,
    *,
    stamp: str | None = None,
) -> None:
    """Write ``source`` with ``marks`` drawn (a ``stamp`` on page 1, a certificate page) to ``target``."""
    writer = PdfWriter(clone_from=PdfReader(os.fspath(source)))
    draw_marks(writer, marks)
    if stamp is not None and len(writer.pages):
        first = writer.pages[0]
        box = first.mediabox
        ops = (
            f"q 0.80 0.05 0.05 rg BT {FONT} 16 Tf {float(box.left) + 20:.2f} {float(box.top) - 28:.2f} Td "
            f"({_esc(stamp)}) Tj ET Q"
        )
        first.merge_page(_overlay(float(box.right), float(box.top), ops))
    if certificate is not None:
        last = writer.pages[-1].mediabox if len(writer.pages) else None
        size = (float(last.width), float(last.height)) if last is not None else A4
        add_text_page(writer, certificate, size)
    tmp = Path(str(target) + ".tmp")
    with open(tmp, "wb") as fh:
        writer.write(fh)
    os.replace(tmp, target)


def text_pdf(lines: Sequence[tuple[float, str]], *, lines_per_page: int = 40) -> bytes:
    """A standalone A4 PDF of text lines (audit log and certificate downloads)."""
    import io

    writer = PdfWriter()
    chunks = [lines[i : i + lines_per_page] for i in range(0, max(len(lines), 1), lines_per_page)] or [[]]
    for chunk in chunks:
        add_text_page(writer, chunk, A4)
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()
