"""Field placement preview: see where every field lands before anything is sent.

Valid coordinates do not guarantee that a field lies where it was meant to. These functions draw each
field onto a copy of its PDF (a rectangle in one colour per recipient, labelled
``TYPE · name-or-email · #n``) and render every page to a PNG, using the service's coordinate rules:
percentages of the page as displayed, from its top-left corner; ``identifier`` is the zero-based file
index; ``page`` is one-based. Placement problems are returned as warnings and drawn on the page.

* :func:`render_field_preview` previews a creation payload and its local PDFs.
* :func:`preview_envelope` previews an existing envelope (original PDFs and stored fields).
* ``python -m airflow_provider_docsign.preview payload.json a.pdf b.pdf -o out/`` does the first from
  the command line.

Importing this module needs no Airflow database and no rasterizer; pypdfium2 (the ``preview`` extra)
is imported only when PNGs are rendered.

May import: :mod:`..service`, the hook (to read an existing envelope) and the shared top-level
modules. Never the Airflow face (its ``__main__`` calls the cli).
"""

from __future__ import annotations

import dataclasses
import io
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pypdf import PdfReader

from airflow_provider_docsign._sources import NotARegularFileError, file_kind, open_regular_file
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.preview._draw import (
    BANNER_FILL,
    FILL_ALPHA,
    WARNING_COLOR,
    draw_pdf,
    page_box,
    rasterize,
    recipient_color,
)
from airflow_provider_docsign.preview._layout import (
    Layout,
    PreviewWarning,
    check_layout,
    layout_from_envelope,
    layout_from_payload,
    warned_fields,
)

if TYPE_CHECKING:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

__all__ = [
    "BANNER_FILL",
    "FILL_ALPHA",
    "WARNING_COLOR",
    "PreviewResult",
    "PreviewWarning",
    "preview_envelope",
    "recipient_color",
    "render_field_preview",
]

MIN_DPI, MAX_DPI = 18, 600


@dataclass(frozen=True)
class PreviewResult:
    """What a preview wrote, and what it found.

    :param pdfs: One annotated copy per input PDF, in input order.
    :param pngs: One PNG per page, file by file, page by page.
    :param warnings: Placement problems (also drawn on the pages they concern).
    :param pngs_by_file: The PNGs grouped per input PDF (``pngs_by_file[i][p - 1]`` is page ``p`` of
        file ``i``).
    """

    pdfs: list[Path]
    pngs: list[Path]
    warnings: list[PreviewWarning]
    pngs_by_file: list[list[Path]] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict: ``{"pdfs": [...], "pngs": [...], "warnings": [{...}, ...]}``."""
        return {
            "pdfs": [str(p) for p in self.pdfs],
            "pngs": [str(p) for p in self.pngs],
            "warnings": [w.to_dict() for w in self.warnings],
        }


@dataclass(frozen=True)
class _Source:
    name: str
    handle: Path | IO[bytes]
    pages: int
    local: Path | None


def _is_remote(value: Any) -> bool:
    """True for ObjectStoragePath (fsspec-backed, also os.PathLike on some versions) and URI strings."""
    if hasattr(value, "fs") and hasattr(value, "protocol"):
        return True
    return not isinstance(value, (str, os.PathLike)) or (isinstance(value, str) and "://" in value)


def _load(index: int, file: Any, problems: list[str]) -> _Source | None:
    """Open one input PDF, checking it exists, is a PDF and can be read; record problems."""
    name = getattr(file, "name", None)
    if isinstance(file, (str, os.PathLike)) and not isinstance(name, str):
        name = os.path.basename(os.fspath(file))
    name = os.path.basename(name) if isinstance(name, str) and name else f"file {index}"
    where = f"files[{index}] ({name})"
    try:
        if hasattr(file, "read"):  # an open binary file
            data = file.read()
            if not isinstance(data, bytes):
                problems.append(f"{where}: must be opened in binary mode")
                return None
            handle: Path | IO[bytes] = io.BytesIO(data)
            head, local = data[:5], None
        elif _is_remote(file):
            if not isinstance(file, str) and not hasattr(file, "open"):
                problems.append(f"{where}: expected a path, an ObjectStoragePath or a binary file")
                return None
            if isinstance(file, str):
                from airflow_provider_docsign._compat import ObjectStoragePath

                file = ObjectStoragePath(file)
            with file.open("rb") as fh:
                data = fh.read()
            handle = io.BytesIO(data)
            head, local = data[:5], None
        else:
            local = Path(file)
            with open_regular_file(local) as fh:  # a FIFO or a device is refused, never waited on
                head = fh.read(5)
            handle = local
    except FileNotFoundError:
        problems.append(f"{where}: no such file")
        return None
    except NotARegularFileError as exc:
        problems.append(f"{where}: it is {exc.kind}, not a regular file")
        return None
    except (OSError, ValueError) as exc:
        problems.append(f"{where}: cannot be read ({type(exc).__name__}: {exc})")
        return None
    if head != b"%PDF-":
        problems.append(f"{where}: not a PDF (it does not start with %PDF-)")
        return None
    try:
        reader = PdfReader(handle)
        if reader.is_encrypted and not reader.decrypt(""):
            problems.append(f"{where}: the PDF is encrypted with a password")
            return None
        pages = len(reader.pages)
        if pages == 0:
            problems.append(f"{where}: the PDF has no pages")
            return None
        for page in reader.pages:
            page_box(page)  # a broken box fails here, before anything is written
    except Exception as exc:  # pypdf raises many kinds of errors on damaged files
        problems.append(f"{where}: the PDF cannot be parsed ({type(exc).__name__}: {exc})")
        return None
    if isinstance(handle, io.BytesIO):
        handle.seek(0)
    return _Source(name=str(name), handle=handle, pages=pages, local=local)


def _safe_stem(name: str) -> str:
    stem = re.sub(r"\.pdf$", "", os.path.basename(name), flags=re.IGNORECASE)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._")[:80] or "document"


def _banners(layout: Layout, warnings: Sequence[PreviewWarning]) -> dict[tuple[int, int], list[str]]:
    """Decide on which page each warning is written.

    A warning goes on its own page, else on the file's last page (a missing page), else on the first
    page of the first file (a missing file, or a signer without a signature field).
    """
    numbered = {f.number: f for f in layout.fields}
    banners: dict[tuple[int, int], list[str]] = {}
    for warning in warnings:
        placed = numbered.get(warning.field) if warning.field is not None else None
        if placed is not None and placed.file_index is not None:
            count = layout.page_counts[placed.file_index]
            key = (placed.file_index, min(max(placed.page, 1), count))
        else:
            key = (0, 1)
        banners.setdefault(key, []).append(warning.message)
    return banners


def _render(layout: Layout, sources: Sequence[_Source], output_dir: Any, dpi: int) -> PreviewResult:
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not MIN_DPI <= dpi <= MAX_DPI:
        raise DocsignValidationError([f"dpi must be an integer from {MIN_DPI} to {MAX_DPI}, got {dpi!r}"])
    out = Path(output_dir)
    if out.exists() and not out.is_dir():
        kind = file_kind(os.stat(out).st_mode)
        raise DocsignValidationError([f"output {out} is {kind}, not a directory"], context="preview output")
    inputs = {s.local.resolve() for s in sources if s.local is not None}
    names = [f"{i:02d}-{_safe_stem(s.name)}" for i, s in enumerate(sources)]
    planned = [out / f"{n}.preview.pdf" for n in names]
    planned += [
        out / f"{n}.page{p:03d}.png"
        for n, s in zip(names, sources, strict=True)
        for p in range(1, s.pages + 1)
    ]
    clash = [str(p) for p in planned if p.resolve() in inputs]
    if clash:
        raise DocsignValidationError(
            [f"output {p} would overwrite an input PDF; choose another output directory" for p in clash]
        )
    warnings = check_layout(layout)
    banners = _banners(layout, warnings)
    marked = warned_fields(warnings)
    out.mkdir(parents=True, exist_ok=True)
    pdfs: list[Path] = []
    pngs_by_file: list[list[Path]] = []
    # Render everything into a scratch directory beside the output, then move the files into place,
    # so a failure half-way leaves no partial preview (and no truncated older one).
    with tempfile.TemporaryDirectory(dir=out, prefix=".preview-") as scratch:
        moves: list[tuple[Path, Path]] = []
        for index, (source, stem) in enumerate(zip(sources, names, strict=True)):
            pdf_tmp = Path(scratch) / f"{stem}.preview.pdf"
            page_banners = {page: lines for (fi, page), lines in banners.items() if fi == index}
            draw_pdf(
                source.handle,
                pdf_tmp,
                file_index=index,
                layout=layout,
                banners=page_banners,
                marked=marked,
            )
            png_tmp = [Path(scratch) / f"{stem}.page{p:03d}.png" for p in range(1, source.pages + 1)]
            rasterize(pdf_tmp, png_tmp, dpi=dpi)
            moves.append((pdf_tmp, out / pdf_tmp.name))
            moves.extend((tmp, out / tmp.name) for tmp in png_tmp)
            pdfs.append(out / pdf_tmp.name)
            pngs_by_file.append([out / tmp.name for tmp in png_tmp])
        for tmp, final in moves:
            os.replace(tmp, final)
    return PreviewResult(
        pdfs=pdfs,
        pngs=[png for group in pngs_by_file for png in group],
        warnings=list(warnings),
        pngs_by_file=pngs_by_file,
    )


def render_field_preview(
    files: Sequence[Any],
    recipients: Any,
    output_dir: str | os.PathLike[str],
    *,
    dpi: int = 100,
) -> PreviewResult:
    """Draw a creation payload's fields onto copies of its PDFs and render every page to PNG.

    Nothing is sent anywhere. Output names are ``NN-<stem>.preview.pdf`` and
    ``NN-<stem>.pageNNN.png`` (``NN`` is the file index) in ``output_dir``, which is created if needed;
    the files appear only once everything has rendered.

    :param files: The PDFs in upload order (``identifier`` indexes this list): local paths, or
        ``ObjectStoragePath``/URI strings such as ``s3://bucket/a.pdf``.
    :param recipients: The payload's ``recipients`` list in the service's JSON shape (``email``,
        ``name``, ``role`` and nested ``fields`` with ``identifier``, ``type``, ``page``,
        ``positionX``, ``positionY``, ``width``, ``height``), or a whole creation payload.
    :param output_dir: A local directory for the annotated PDFs and the PNGs.
    :param dpi: PNG resolution (18 to 600).
    :raises DocsignValidationError: if a file is missing or not a PDF, or a field cannot be drawn at
        all (e.g. no numeric coordinates); every problem is listed and nothing is written.
    """
    if isinstance(files, (str, bytes, os.PathLike)) or not isinstance(files, Sequence):
        raise DocsignValidationError(["files must be a list of PDF paths"], context="preview files")
    problems: list[str] = [] if files else ["files is empty: give at least one PDF"]
    loaded = [_load(i, f, problems) for i, f in enumerate(files)]
    sources = [s for s in loaded if s is not None]
    try:
        layout = layout_from_payload(recipients, [s.name for s in sources], [s.pages for s in sources])
    except DocsignValidationError as exc:
        problems.extend(exc.problems)
        layout = None
    if problems or layout is None:
        raise DocsignValidationError(problems, context="preview input")
    return _render(layout, sources, output_dir, dpi)


def preview_envelope(
    envelope_id: str,
    output_dir: str | os.PathLike[str],
    docsign_conn_id: str = "docsign_default",
    *,
    dpi: int = 100,
    hook: DocsignHook | None = None,
    prefill_fields: Any = None,
    files: Any = None,
) -> PreviewResult:
    """Preview an existing envelope or template: its original PDFs with the stored fields drawn.

    Recipients and fields are ordered as the service created them, so the preview of an envelope has
    the same colours and field numbers as the preview of the payload that created it. For a template,
    ``prefill_fields`` are drawn on their fields and ``files`` replace the template's PDFs, as
    ``use_template`` would send them; a field on a page that a replacement lacks is flagged.

    :param envelope_id: The envelope or template (``envelope_…``).
    :param output_dir: A local directory for the annotated PDFs and the PNGs.
    :param docsign_conn_id: The Airflow connection to the signing service.
    :param dpi: PNG resolution (18 to 600).
    :param hook: An existing :class:`~airflow_provider_docsign.hooks.docsign.DocsignHook` to use
        instead of creating one from ``docsign_conn_id``.
    :param prefill_fields: Template prefill values, ``[{"id" or "label", "value"}]`` or ``{label: value}``.
    :param files: Replacement PDFs, ``{item id or title: source}`` or a list in item order.
    """
    from airflow_provider_docsign.service.templates import resolve_prefill, resolve_replacements

    if hook is None:
        from airflow_provider_docsign.hooks.docsign import DocsignHook

        hook = DocsignHook(docsign_conn_id=docsign_conn_id)
    envelope = hook.get_envelope(envelope_id)
    if not envelope.items:
        raise DocsignValidationError(
            ["the envelope has no items (PDFs) to preview"], context=f"envelope {envelope_id}"
        )
    replacements = resolve_replacements(envelope, files)
    values = resolve_prefill(envelope, prefill_fields) if prefill_fields is not None else {}
    with tempfile.TemporaryDirectory(prefix="docsign-preview-") as scratch:
        problems: list[str] = []
        sources: list[_Source] = []
        for index, item in enumerate(envelope.items):
            if item.id in replacements:
                source = _load(index, replacements[item.id], problems)
                if source is not None:
                    sources.append(source)
                continue
            target = Path(scratch) / f"{index:02d}.pdf"
            hook.download_envelope_item(item.id, target, version="original")
            source = _load(index, target, problems)
            if source is not None:
                sources.append(
                    _Source(
                        name=item.title or f"item-{index + 1}.pdf",
                        handle=target,
                        pages=source.pages,
                        local=None,
                    )
                )
        if problems:
            raise DocsignValidationError(problems, context=f"envelope {envelope_id} items")
        layout = layout_from_envelope(envelope, [s.name for s in sources], [s.pages for s in sources])
        if values:
            by_number = _numbers_to_ids(layout, envelope)
            layout = dataclasses.replace(
                layout,
                fields=tuple(
                    dataclasses.replace(f, value=_shown(values[by_number[f.number]]))
                    if by_number.get(f.number) in values
                    else f
                    for f in layout.fields
                ),
            )
        return _render(layout, sources, output_dir, dpi)


def _shown(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _numbers_to_ids(layout: Layout, envelope: Any) -> dict[int, int]:
    """Field number on the drawing -> field id (the order :func:`layout_from_envelope` numbers them)."""
    order = {r.id: i for i, r in enumerate(sorted(envelope.recipients, key=lambda r: r.id))}
    stored = sorted(envelope.fields, key=lambda f: (order.get(f.recipient_id, len(order)), f.id or 0))
    return {number: f.id for number, f in enumerate(stored, start=1)}
