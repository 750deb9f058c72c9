"""Hostile and modified PDFs for the verification tests, built byte by byte or with pyHanko's writer."""

from __future__ import annotations

import io
from pathlib import Path


def build_pdf(objects: list[bytes]) -> bytes:
    """A PDF whose objects ``1 0 obj``... are ``objects`` (object 1 is the catalog), with a valid xref."""
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def deeply_nested_pdf(path: Path, depth: int = 100_000) -> Path:
    """A one-page PDF whose ``/AcroForm /Fields`` is an array nested ``depth`` levels deep."""
    nested = b"[" * depth + b"]" * depth
    path.write_bytes(
        build_pdf(
            [
                b"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields " + nested + b" >> >>",
                b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
            ]
        )
    )
    return path


def add_annotation(source: Path, target: Path) -> Path:
    """``source`` plus one incremental update (pyHanko's writer) that adds a text annotation to page 1.

    The signed revision is untouched: only an annotation is added, as a PDF viewer's "comment" does.
    """
    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

    writer = IncrementalPdfFileWriter(io.BytesIO(source.read_bytes()))
    page = writer.root["/Pages"]["/Kids"][0].get_object()
    annotation = generic.DictionaryObject(
        {
            generic.NameObject("/Type"): generic.NameObject("/Annot"),
            generic.NameObject("/Subtype"): generic.NameObject("/Text"),
            generic.NameObject("/Rect"): generic.ArrayObject(
                [generic.FloatObject(v) for v in (10, 10, 30, 30)]
            ),
            generic.NameObject("/Contents"): generic.TextStringObject("reviewed"),
        }
    )
    ref = writer.add_object(annotation)
    annots = page.get("/Annots")
    if annots is None:
        page[generic.NameObject("/Annots")] = generic.ArrayObject([ref])
    else:
        annots.get_object().append(ref)
    writer.update_container(page)
    out = io.BytesIO()
    writer.write(out)
    target.write_bytes(out.getvalue())
    return target


def many_fields_pdf(path: Path, count: int) -> Path:
    """A one-page PDF whose ``/AcroForm /Fields`` lists ``count`` (unsigned) signature fields."""
    refs = b" ".join(b"%d 0 R" % (i + 4) for i in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [" + refs + b"] >> >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ]
    objects += [b"<< /FT /Sig /T (f%d) >>" % i for i in range(count)]
    path.write_bytes(build_pdf(objects))
    return path
