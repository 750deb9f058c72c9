"""Template use: check replacement PDFs for the template's items (pure code, no network).

Replacements are given as ``{item id or item title: source}`` or as a list in item order. The real
service accepts a replacement with fewer pages than the template's fields on that item use (recordings
``templates/25`` and ``26``): the envelope could never complete, so that is refused here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service.models import Envelope
from airflow_provider_docsign.service.payloads import PdfFile, inspect_files
from airflow_provider_docsign.service.payloads import source_label as _source_label

__all__ = ["check_replacements", "resolve_replacements"]


def check_replacements(
    files: Any, template: Envelope, problems: list[str]
) -> tuple[list[Any], list[str], list[dict[str, Any]]]:
    """Check replacement PDFs; return the sources, their part names and ``customDocumentData``."""
    if files is None:
        return [], [], []
    items = list(template.items)
    pairs: list[tuple[Any, Any]] = []
    if isinstance(files, Mapping):
        pairs = list(files.items())
    elif isinstance(files, str | bytes | os.PathLike) or not isinstance(files, Sequence):
        problems.append("files must map template items (id or title) to PDFs, or list PDFs in item order")
        return [], [], []
    else:
        pairs = [(i, src) for i, src in enumerate(files) if src is not None]
    chosen: list[tuple[Any, Any]] = []
    used: set[str] = set()
    for key, source in pairs:
        item = None
        if isinstance(key, int) and not isinstance(key, bool):
            item = items[key] if 0 <= key < len(items) else None
        elif isinstance(key, str):
            item = next((i for i in items if i.id == key), None) or next(
                (i for i in items if (i.title or "") in (key, key.removesuffix(".pdf"))), None
            )
        if item is None:
            known = ", ".join(f"{i.id} {i.title!r}" for i in items) or "none"
            problems.append(f"files[{key!r}]: matches no item of the template (items: {known})")
            continue
        if item.id in used:
            problems.append(f"files[{key!r}]: item {item.id} is replaced twice")
            continue
        used.add(item.id)
        chosen.append((item, source))
    pdfs, file_problems = inspect_files([s for _, s in chosen])
    problems.extend(f"replacement {text}" for text in file_problems)
    sources: list[Any] = []
    names: list[str] = []
    custom: list[dict[str, Any]] = []
    for index, ((item, source), pdf) in enumerate(zip(chosen, pdfs, strict=True)):
        if pdf is not None:
            _check_pages(pdf, item.id, item.title, template, problems)
        sources.append(source)
        names.append(_source_label(source, index))
        custom.append({"identifier": index, "envelopeItemId": item.id})
    return sources, names, custom


def _check_pages(
    pdf: PdfFile, item_id: str, title: str | None, template: Envelope, problems: list[str]
) -> None:
    for f in template.fields:
        if f.envelope_item_id == item_id and f.page is not None and f.page > pdf.page_count:
            who = next((r for r in template.recipients if r.id == f.recipient_id), None)
            problems.append(
                f"replacement {pdf.name!r} for item {item_id} {title!r} has {pdf.page_count} page(s), but "
                f"template field {f.id} ({f.type}{' of ' + (who.name or who.email or '') if who else ''}) "
                f"is on page {f.page}: the envelope could never be completed"
            )


def resolve_replacements(template: Envelope, files: Any) -> dict[str, Any]:
    """Replacement PDF sources by template item id (the keys resolved as ``use_template`` resolves them).

    Page counts are not checked here: the preview draws and flags fields on pages a replacement lacks.

    :param template: The template.
    :param files: ``{item id or title: source}`` or a list in item order.
    :raises DocsignValidationError: if a key matches no item.
    """
    if files is None:
        return {}
    if isinstance(files, str | bytes | os.PathLike):
        files = [files]
    problems: list[str] = []
    stripped = Envelope.from_json({**template.raw, "fields": []})
    sources, _, custom = check_replacements(files, stripped, problems)
    problems = [p for p in problems if p.startswith("files")]
    if problems:
        raise DocsignValidationError(problems, f"replacement files for {template.id}")
    return {c["envelopeItemId"]: src for c, src in zip(custom, sources, strict=True)}
