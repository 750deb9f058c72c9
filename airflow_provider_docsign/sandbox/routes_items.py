"""Envelope item routes: create-many (multipart), update-many, delete, and the PDF download routes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from . import lifecycle, pdfops, seal_job, sealing
from .builders import check_files, check_item_limit, check_payload, pdf_pages, store_item
from .common import authenticate, envelope_or_404, json_body, multipart_call, ok, state_of, success
from .errors import ApiError, app_error, download_error
from .schemas import DOWNLOAD_VERSIONS, ENVELOPE_ID_BODY, ITEM_DELETE, ITEM_UPDATE_MANY
from .state import SandboxState
from .store import Obj
from .upload import FormData
from .validation import MISSING, validate

router = APIRouter()
CHUNK = 256 * 1024


def _editable_files(env: Obj) -> bool:
    # Files can change only on a DRAFT document or a non-terminal template.
    if env["type"] == "DOCUMENT":
        return bool(env["status"] == "DRAFT")
    return env["status"] not in lifecycle.TERMINAL


@router.post("/envelope/item/create-many")
async def create_items(request: Request) -> Response:
    """Add PDFs to a DRAFT envelope; titles are the file names, orders continue after the last."""
    return await multipart_call(request, "envelope.item.createMany", _create_items)


def _create_items(state: SandboxState, form: FormData) -> dict[str, Any]:
    path = "envelope.item.createMany"
    raw = form.fields.get("payload", MISSING)
    if isinstance(raw, str):
        with contextlib.suppress(ValueError):
            raw = json.loads(raw)
    payload = check_payload(raw, ENVELOPE_ID_BODY, path)
    check_files(form, state, path)
    store = state.store
    env = envelope_or_404(state, payload["envelopeId"], path)
    if not _editable_files(env):
        raise app_error(path, "INVALID_REQUEST", "Envelope item is not editable")
    existing = store.items_of(env["id"])
    check_item_limit(len(existing) + len(form.files), path)
    pages = [pdf_pages(f, path) for f in form.files]
    last = max((i["order"] for i in existing), default=0)
    with store.tx():
        created = [store_item(state, env["id"], f, last + n + 1, pages[n]) for n, f in enumerate(form.files)]
        for item in created:
            state.audit(
                env["id"],
                "ENVELOPE_ITEM_CREATED",
                {"envelopeItemId": item["id"], "envelopeItemTitle": item["title"]},
            )
    data = [
        {
            "id": i["id"],
            "title": i["title"],
            "envelopeId": i["envelopeId"],
            "order": i["order"],
            "documentDataId": i["documentDataId"],
        }
        for i in created
    ]
    return {"data": data}


@router.post("/envelope/item/update-many")
async def update_items(request: Request) -> Response:
    """Rename and reorder items (order only while no signer has acted)."""
    path = "envelope.item.updateMany"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), ITEM_UPDATE_MANY, path)
    ignore_order = bool(request.scope.get("sandbox.ignore_order"))
    store = state.store
    with store.tx():
        env = envelope_or_404(state, body["envelopeId"], path)
        if env["status"] in lifecycle.TERMINAL:
            raise app_error(path, "INVALID_REQUEST", "Envelope item is not editable")
        acted = any(
            r["role"] != "CC" and (r["sendStatus"] == "SENT" or r["signingStatus"] != "NOT_SIGNED")
            for r in store.recipients_of(env["id"])
        )
        changed: list[Obj] = []
        for entry in body["data"]:
            item = store.edit("item", entry["envelopeItemId"])
            if item is None or item["envelopeId"] != env["id"]:
                raise app_error(path, "INVALID_REQUEST", "Envelope item does not belong to this envelope")
            if "order" in entry and entry["order"] != item["order"]:
                if env["status"] == "PENDING" and acted:
                    raise app_error(path, "INVALID_REQUEST", "Envelope item order cannot be changed")
                if not ignore_order:  # fault injection: silently ignore order changes
                    item["order"] = int(entry["order"])
            if "title" in entry:
                item["title"] = entry["title"]
            store.put("item", item)
            changed.append(item)
    data = [
        {"id": i["id"], "order": i["order"], "title": i["title"], "envelopeId": i["envelopeId"]}
        for i in changed
    ]
    return ok({"data": data})


@router.post("/envelope/item/delete")
async def delete_item(request: Request) -> Response:
    """Delete an item and its fields (DRAFT only)."""
    path = "envelope.item.delete"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), ITEM_DELETE, path)
    store = state.store
    with store.tx():
        env = envelope_or_404(state, body["envelopeId"], path)
        item = store.get("item", body["envelopeItemId"])
        if item is None or item["envelopeId"] != env["id"]:
            raise app_error(path, "NOT_FOUND", "Envelope item not found")
        if not _editable_files(env):
            raise app_error(path, "INVALID_REQUEST", "Envelope item is not editable")
        for fld in store.fields_of(env["id"]):
            if fld["envelopeItemId"] == item["id"]:
                store.remove("field", fld["id"])
        store.remove("item", item["id"])
        state.audit(
            env["id"],
            "ENVELOPE_ITEM_DELETED",
            {"envelopeItemId": item["id"], "envelopeItemTitle": item["title"]},
        )
    for name in (item["_original"], item.get("_signed")):
        if name:
            with contextlib.suppress(OSError):
                os.unlink(store.file_path(name))
    return success()


# -- downloads --------------------------------------------------------------------------------------
def content_disposition(filename: str) -> str:
    """RFC 6266 ``attachment`` header, with ``filename*`` for non-ASCII names."""
    ascii_name = filename.encode("ascii", "replace").decode("ascii").replace('"', "'")
    # Control characters are not allowed in a header value (the server would drop the connection);
    # like the real service's content-disposition encoding, keep them only in the encoded filename*.
    ascii_name = "".join("?" if ord(ch) < 32 or ord(ch) == 127 else ch for ch in ascii_name)
    value = f'attachment; filename="{ascii_name}"'
    if ascii_name != filename:
        value += f"; filename*=UTF-8''{quote(filename)}"
    return value


def _stem(title: str) -> str:
    return title[:-4] if title.lower().endswith(".pdf") else title


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _iter_file(path: Path, remove_after: bool = False) -> Iterator[bytes]:
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                yield chunk
    finally:
        if remove_after:
            with contextlib.suppress(OSError):
                os.unlink(path)


def file_response(
    path: Path, filename: str, etag: str | None, extra: dict[str, str], *, remove_after: bool = False
) -> Response:
    """Stream a stored PDF with the real download headers."""
    headers = {
        "content-disposition": content_disposition(filename),
        "content-length": str(path.stat().st_size),
    }
    if etag:
        headers["etag"] = etag
    headers.update(extra)
    return StreamingResponse(_iter_file(path, remove_after), media_type="application/pdf", headers=headers)


NO_CACHE = {"cache-control": "no-cache, no-store, must-revalidate", "pragma": "no-cache", "expires": "0"}
PENDING_CODES = {
    "DRAFT": "ENVELOPE_DRAFT",
    "COMPLETED": "ENVELOPE_COMPLETED",
    "REJECTED": "ENVELOPE_REJECTED",
    "CANCELLED": "INVALID_REQUEST",
}


@router.get("/envelope/item/{envelope_item_id}/download")
async def download_item(request: Request, envelope_item_id: str) -> Response:
    """``version`` = original | signed (default) | pending, with the real headers and error bodies."""
    authenticate(request, "download", download=True)
    state = state_of(request)
    version = request.query_params.get("version", "signed")
    if version not in DOWNLOAD_VERSIONS:
        opts = " | ".join(f"'{v}'" for v in DOWNLOAD_VERSIONS)
        body = {
            "data": {"version": version},
            "error": [
                {
                    "received": version,
                    "code": "invalid_enum_value",
                    "options": list(DOWNLOAD_VERSIONS),
                    "path": ["version"],
                    "message": f"Invalid enum value. Expected {opts}, received '{version}'",
                }
            ],
            "success": False,
        }
        raise ApiError(400, body)
    store = state.store
    with store.lock:
        item = store.get("item", envelope_item_id)
        env = store.get("envelope", item["envelopeId"]) if item else None
        if item is None or env is None:
            raise download_error(404, "Envelope item not found")
        item = dict(item)
        status = env["status"]
        env_id = env["id"]
    stem = _stem(item["title"])
    if version == "original":
        return file_response(
            store.file_path(item["_original"]), f"{stem}.pdf", item["_originalSha256"], NO_CACHE
        )
    if version == "signed":
        # Real service: before completion "signed" is simply the uploaded PDF, with status 200.
        if item.get("_signed"):
            path = store.file_path(item["_signed"])
            variant = request.scope.get("sandbox.signed_variant")
            if variant:
                tmp = await run_in_threadpool(_render_variant, state, item, str(variant))
                tmp_etag: str = await run_in_threadpool(_sha256_file, tmp)
                return file_response(tmp, f"{stem}_signed.pdf", tmp_etag, NO_CACHE, remove_after=True)
            etag = item.get("_signedSha256") or await run_in_threadpool(_sha256_file, path)
        else:
            path, etag = store.file_path(item["_original"]), item["_originalSha256"]
        return file_response(path, f"{stem}_signed.pdf", etag, NO_CACHE)
    if status != "PENDING":
        raise download_error(
            400,
            f"Envelope {env_id} must be pending to download a partially signed PDF",
            PENDING_CODES[status],
        )
    marks = seal_job.marks_for(state, item["id"])
    tmp = await run_in_threadpool(_render_pending, state, item, marks)
    pending_etag: str = await run_in_threadpool(_sha256_file, tmp)
    if request.headers.get("if-none-match") == pending_etag:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return Response(status_code=304, headers={"etag": pending_etag, "cache-control": "no-store, private"})
    return file_response(
        tmp, f"{stem}_pending.pdf", pending_etag, {"cache-control": "no-store, private"}, remove_after=True
    )


def _render_variant(state: SandboxState, item: Obj, variant: str) -> Path:
    """A temporary copy of a sealed item, broken the way a download fault asks for."""
    store = state.store
    sealed = store.file_path(item["_signed"])
    fd, name = tempfile.mkstemp(dir=store.tmp_dir, suffix=".pdf")
    os.close(fd)
    try:
        if variant == "unsigned":
            sealing.copy_file(store.file_path(item.get("_unsealed") or item["_original"]), name)
        elif variant == "tamper_signed":
            sealing.write_tampered(sealed, name)
        else:
            sealing.write_modified(sealed, name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return Path(name)


def _render_pending(state: SandboxState, item: Obj, marks: list[pdfops.Mark]) -> Path:
    fd, name = tempfile.mkstemp(dir=state.store.tmp_dir, suffix=".pdf")
    os.close(fd)
    pdfops.write_signed(state.store.file_path(item["_original"]), name, marks, None)
    return Path(name)


def _envelope_for_download(state: SandboxState, envelope_id: str) -> Obj:
    env = state.store.get("envelope", envelope_id)
    if env is None or env["type"] != "DOCUMENT":
        raise download_error(404, "Document not found")
    return env


def _pdf_response(data: bytes, filename: str) -> Response:
    headers = {
        "content-disposition": content_disposition(filename),
        "cache-control": NO_CACHE["cache-control"],
    }
    return Response(data, media_type="application/pdf", headers=headers)


@router.get("/envelope/{envelope_id}/audit-log/download")
async def download_audit_log(request: Request, envelope_id: str) -> Response:
    """The audit log as a PDF (any status)."""
    authenticate(request, "download", download=True)
    state = state_of(request)
    env = _envelope_for_download(state, envelope_id)
    lines: list[tuple[float, str]] = [
        (16, "Audit log (sandbox)"),
        (10, f"Envelope: {env['id']}"),
        (10, f"Title: {env['title']}"),
        (10, ""),
    ]
    for entry in state.store.audit_of(envelope_id):
        lines.append((9, f"{entry['createdAt']}  {entry['type']}  {entry['email'] or ''}"))
    data = await run_in_threadpool(pdfops.text_pdf, lines)
    return _pdf_response(data, f"{_stem(env['title'])}_audit-log.pdf")


@router.get("/envelope/{envelope_id}/certificate/download")
async def download_certificate(request: Request, envelope_id: str) -> Response:
    """The signing certificate as a PDF (COMPLETED or REJECTED only; otherwise the real 500)."""
    authenticate(request, "download", download=True)
    state = state_of(request)
    env = _envelope_for_download(state, envelope_id)
    if env["status"] not in ("COMPLETED", "REJECTED"):
        raise download_error(500, "Something went wrong", "DOCUMENT_NOT_COMPLETE")
    recipients = state.store.recipients_of(envelope_id)
    lines = seal_job._certificate_lines(env, recipients, env["completedAt"] or "")
    data = await run_in_threadpool(pdfops.text_pdf, lines)
    return _pdf_response(data, f"{_stem(env['title'])}_certificate.pdf")
