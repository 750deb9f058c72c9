"""Item methods of :class:`~.docsign.DocsignHook`: add, rename, reorder and delete PDFs; streamed downloads.

A mixin typed against :class:`~._protocol.HookCore`. Uploads are streaming multipart requests;
downloads are streamed, checked (content type, ``%PDF-``) and written atomically (:mod:`._io`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_docsign.exceptions import DocsignAPIError, DocsignValidationError
from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._endpoints import Call
from airflow_provider_docsign.hooks._io import make_sink
from airflow_provider_docsign.hooks._protocol import HookCore
from airflow_provider_docsign.hooks._transfer import stream_download
from airflow_provider_docsign.service.models import DownloadResult, EnvelopeItem
from airflow_provider_docsign.service.payloads import check_files_only, count_pdf_pages


def service_title(title: str) -> str:
    """An item title as the service stores it: without outer white space.

    Documenso v2.17.0 validates the title of ``POST /envelope/item/update-many`` with
    ``ZDocumentTitleSchema`` (``packages/trpc/server/document-router/schema.ts``, used by
    ``packages/trpc/server/envelope-router/update-envelope-items.types.ts``): a zod string that is
    trimmed, then held to 1-255 characters. So ``" Annex A "`` is stored as ``"Annex A"``. JavaScript's
    ``trim()`` and Python's ``str.strip()`` differ only on characters the outgoing check refuses anyway
    (C0 separators, NEL, U+FEFF).

    :param title: The title as given.
    """
    return title.strip()


def _download(
    hook: HookCore, call: Call, destination: Any, *, overwrite: bool, fallback_name: str
) -> DownloadResult:
    sink = make_sink(destination, overwrite=overwrite)
    response = hook._send(
        call, stream=True, headers={"Accept": "application/pdf", "Accept-Encoding": "identity"}
    )
    return stream_download(response, call, sink, fallback_name=fallback_name)


class ItemMethods:
    """Envelope item endpoints and downloads (mixed into ``DocsignHook``)."""

    def add_envelope_items(self: HookCore, envelope_id: str, files: Sequence[Any]) -> list[EnvelopeItem]:
        """Add PDFs to a draft envelope (one streaming multipart request); return the new items.

        :param envelope_id: The envelope id.
        :param files: The PDFs: local paths, binary file objects or ``ObjectStoragePath``.
        """
        ep.check_str_id(envelope_id, "envelope_id")
        sources = list(files) if not isinstance(files, str | bytes | os.PathLike) else [files]
        pdfs = check_files_only(sources, "add_envelope_items request")
        call = ep.create_items(envelope_id, sources, [p.name for p in pdfs])
        response = self._send(call)
        body = self._json(response, call)
        items = [EnvelopeItem.from_json(i) for i in (body or {}).get("data") or []]
        return sorted(items, key=lambda i: (i.order or 0, i.id))

    def update_envelope_items(
        self: HookCore, envelope_id: str, items: Sequence[Mapping[str, Any]]
    ) -> list[EnvelopeItem]:
        """Rename and/or reorder items, then read the envelope back and check the change was applied.

        The service (v2.17) changes only the ``title`` and ``order`` given; nothing else is reset. It
        stores a title trimmed (see :func:`service_title`), so titles are compared without outer white
        space on both sides.

        :param envelope_id: The envelope id.
        :param items: ``[{"envelopeItemId": ..., "title": ..., "order": ...}]`` (title and order optional).
        :return: All the envelope's items after the update, sorted by ``order``.
        :raises DocsignAPIError: if the service answered 200 but did not apply a requested change.
        """
        problems: list[str] = []
        if isinstance(items, Mapping) or not isinstance(items, Sequence) or not items:
            raise DocsignValidationError(["items must be a non-empty list"], "update_envelope_items")
        for index, item in enumerate(items):
            where = f"item #{index}"
            if not isinstance(item, Mapping):
                problems.append(f"{where}: must be an object")
                continue
            if not isinstance(item.get("envelopeItemId"), str) or not item["envelopeItemId"]:
                problems.append(f"{where}: envelopeItemId is required")
            if "title" not in item and "order" not in item:
                problems.append(f"{where}: give a title and/or an order")
            title = item.get("title")
            if "title" in item and (not isinstance(title, str) or not title.strip()):
                problems.append(f"{where}: title must be a non-empty string")
            order = item.get("order")
            if "order" in item and (not isinstance(order, int) or isinstance(order, bool) or order < 1):
                problems.append(f"{where}: order must be an integer >= 1")
        if problems:
            raise DocsignValidationError(problems, "update_envelope_items")
        call = ep.update_items(envelope_id, items)
        self._call(call)
        envelope = self.get_envelope(envelope_id)
        by_id = {i.id: i for i in envelope.items}
        not_applied = []
        for item in items:
            current = by_id.get(item["envelopeItemId"])
            if current is None:
                not_applied.append(f"{item['envelopeItemId']} is not an item of the envelope")
                continue
            if "title" in item and service_title(current.title or "") != service_title(item["title"]):
                not_applied.append(f"{current.id} title is {current.title!r}, not {item['title']!r}")
            if "order" in item and current.order != item["order"]:
                not_applied.append(f"{current.id} order is {current.order}, not {item['order']}")
        if not_applied:
            raise DocsignAPIError(
                "the service accepted the item update but did not apply it: " + "; ".join(not_applied),
                status_code=200,
                error_code="NOT_APPLIED",
                method=call.method,
                path=call.path,
            )
        return list(envelope.items)

    def delete_envelope_item(self: HookCore, envelope_id: str, envelope_item_id: str) -> None:
        """Delete an item (and its fields) from a draft envelope.

        :param envelope_id: The envelope id.
        :param envelope_item_id: The item id.
        """
        self._call(ep.delete_item(envelope_id, envelope_item_id))

    def download_envelope_item(
        self: HookCore,
        envelope_item_id: str,
        destination: Any,
        *,
        version: str = "signed",
        overwrite: bool = True,
    ) -> DownloadResult:
        """Stream one item's PDF to ``destination``, verified and atomically written.

        Note (real service): ``version="signed"`` on an envelope that is not COMPLETED returns the
        uploaded PDF with status 200; check the envelope status before treating it as signed.

        :param envelope_item_id: The item id.
        :param destination: A file path, an existing directory (the service's file name is used), an
            ``ObjectStoragePath`` (file or directory) or a binary file object.
        :param version: ``signed`` (default), ``original`` or ``pending``.
        :param overwrite: Whether an existing file may be replaced (atomically, after verification).
        """
        call = ep.download_item(envelope_item_id, version)
        return _download(
            self, call, destination, overwrite=overwrite, fallback_name=f"{envelope_item_id}.pdf"
        )

    def download_audit_log(
        self: HookCore, envelope_id: str, destination: Any, *, overwrite: bool = True
    ) -> DownloadResult:
        """Stream the envelope's audit log PDF to ``destination`` (see :meth:`download_envelope_item`).

        :param envelope_id: The envelope id.
        :param destination: Where to write (path, directory, ``ObjectStoragePath`` or binary file).
        :param overwrite: Whether an existing file may be replaced.
        """
        call = ep.download_audit_log(envelope_id)
        return _download(
            self, call, destination, overwrite=overwrite, fallback_name=f"{envelope_id}_audit-log.pdf"
        )

    def download_certificate(
        self: HookCore, envelope_id: str, destination: Any, *, overwrite: bool = True
    ) -> DownloadResult:
        """Stream the signing certificate PDF (COMPLETED or REJECTED envelopes) to ``destination``.

        Note (real service): before completion this answers HTTP 500 ``DOCUMENT_NOT_COMPLETE``.

        :param envelope_id: The envelope id.
        :param destination: Where to write (path, directory, ``ObjectStoragePath`` or binary file).
        :param overwrite: Whether an existing file may be replaced.
        """
        call = ep.download_certificate(envelope_id)
        return _download(
            self, call, destination, overwrite=overwrite, fallback_name=f"{envelope_id}_certificate.pdf"
        )

    def _item_page_count(self: HookCore, envelope_item_id: str) -> int:
        """Count an existing item's pages by streaming its original PDF to a temporary file."""
        with tempfile.TemporaryFile(prefix="docsign-pages-") as tmp:
            self.download_envelope_item(envelope_item_id, tmp, version="original")
            tmp.seek(0)
            return count_pdf_pages(tmp)
