"""Generate small, valid sample PDFs locally (no network), for the example DAGs, the demo and tests.

The PDFs are built with pypdf: each page carries a title line and a page number drawn in Helvetica, so
a rendered preview shows something recognisable. ``padding_bytes`` appends an unreferenced stream
object so that large test files (tens of MB) can be produced cheaply without slowing page parsing.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from pypdf import PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    NameObject,
)

PAGE_SIZES: dict[str, tuple[float, float]] = {
    "A4": (595.28, 841.89),
    "LETTER": (612.0, 792.0),
    "A4_LANDSCAPE": (841.89, 595.28),
}

__all__ = ["PAGE_SIZES", "render_sample_pdf", "storage_path", "store_sample_pdf", "write_sample_pdf"]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_sample_pdf(
    path: str | os.PathLike[str],
    *,
    title: str = "Sample contract",
    pages: int = 1,
    page_size: str | tuple[float, float] = "A4",
    padding_bytes: int = 0,
) -> Path:
    """Write a valid PDF with ``pages`` pages to ``path`` and return the path.

    For object storage (an ``ObjectStoragePath``), write :func:`render_sample_pdf`'s bytes instead.

    :param path: Where to write the PDF. Parent directories are created.
    :param title: Text drawn at the top of every page.
    :param pages: Number of pages (at least 1).
    :param page_size: ``"A4"``, ``"LETTER"``, ``"A4_LANDSCAPE"`` or a ``(width, height)`` tuple in points.
    :param padding_bytes: Extra bytes of incompressible filler (see :func:`render_sample_pdf`).
    """
    target = Path(path)
    data = render_sample_pdf(title=title, pages=pages, page_size=page_size, padding_bytes=padding_bytes)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as fh:
        fh.write(data)
    return target


def render_sample_pdf(
    *,
    title: str = "Sample contract",
    pages: int = 1,
    page_size: str | tuple[float, float] = "A4",
    padding_bytes: int = 0,
) -> bytes:
    """The bytes of a valid PDF with ``pages`` pages (write them wherever: a file, S3, a request).

    :param title: Text drawn at the top of every page.
    :param pages: Number of pages (at least 1).
    :param page_size: ``"A4"``, ``"LETTER"``, ``"A4_LANDSCAPE"`` or a ``(width, height)`` tuple in points.
    :param padding_bytes: Extra bytes of incompressible filler stored in an unreferenced stream, to make
        large files for memory and throughput tests.
    """
    if pages < 1:
        raise ValueError("pages must be at least 1")
    width, height = PAGE_SIZES[page_size.upper()] if isinstance(page_size, str) else page_size
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    for number in range(1, pages + 1):
        page = writer.add_blank_page(width=width, height=height)
        text = (
            f"BT /F1 20 Tf 50 {height - 60:.2f} Td ({_escape(title)}) Tj ET\n"
            f"BT /F1 10 Tf 50 40 Td (Page {number} of {pages}) Tj ET\n"
        )
        stream = DecodedStreamObject()
        stream.set_data(text.encode("latin-1", "replace"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {
                NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref}),
                NameObject("/ProcSet"): ArrayObject([NameObject("/PDF"), NameObject("/Text")]),
            }
        )
    if padding_bytes > 0:
        filler = DecodedStreamObject()
        filler.set_data(os.urandom(padding_bytes))
        writer.root_object[NameObject("/DocsignPadding")] = writer._add_object(filler)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def storage_path(location: str | os.PathLike[str], *parts: str) -> Any:
    """``location`` joined with ``parts`` as an ``ObjectStoragePath``.

    :param location: A local directory (made absolute, ``file://``) or a URI such as
        ``s3://aws_conn_id@bucket/prefix``; the connection id in the URI travels with every path
        made from it, so a string handed to another task (on another worker) still names the store.
    :param parts: Path segments appended with ``/`` (no separators inside a segment).
    """
    from airflow_provider_docsign._compat import ObjectStoragePath

    text = os.fspath(location)
    if "://" not in text:
        text = "file://" + os.path.abspath(text)
    return ObjectStoragePath("/".join([text.rstrip("/"), *parts]))


def store_sample_pdf(target: Any, **options: Any) -> str:
    """Write a sample PDF (see :func:`render_sample_pdf` for ``options``) to an ``ObjectStoragePath``.

    Returns the target's URI as a string, which operators such as ``DocsignCreateEnvelopeOperator``
    accept in ``files`` on any worker that can reach the store (``file://`` only on the same disk).

    :param target: Where to write, an ``ObjectStoragePath`` (see :func:`storage_path`).
    :param options: Keyword arguments of :func:`render_sample_pdf`.
    """
    data = render_sample_pdf(**options)
    if target.protocol in ("file", "local", ""):
        target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as fh:
        fh.write(data)
    return str(target)
