"""Building stored objects from request payloads: envelope meta, recipients, fields and uploaded items."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from . import pdfops
from .errors import app_error, validation_error
from .ids import cuid, envelope_item_id, recipient_token
from .schemas import FIELD_META_DEFAULTS, FIELD_META_KEY_DEFAULTS
from .state import SandboxState
from .store import Obj
from .upload import FormData, UploadedFile
from .validation import MISSING, Spec, check, refuse_unstorable

MAX_ITEMS = 5
PDF_TYPES = ("application/pdf",)
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

DEFAULT_META: dict[str, Any] = {
    "signingOrder": "PARALLEL",
    "distributionMethod": "EMAIL",
    "subject": None,
    "message": None,
    "timezone": "Etc/UTC",
    "dateFormat": "yyyy-MM-dd hh:mm a",
    "redirectUrl": None,
    "typedSignatureEnabled": True,
    "uploadSignatureEnabled": True,
    "drawSignatureEnabled": True,
    "allowDictateNextSigner": False,
    "language": "en",
    "emailSettings": {
        "recipientSigningRequest": True,
        "recipientRemoved": True,
        "recipientSigned": True,
        "documentPending": True,
        "documentCompleted": True,
        "documentDeleted": True,
        "ownerDocumentCompleted": True,
        "ownerRecipientExpired": True,
        "ownerDocumentCreated": True,
    },
    "emailId": None,
    "emailReplyTo": None,
    "envelopeExpirationPeriod": {"unit": "month", "amount": 3},
}
_META_KEYS = tuple(DEFAULT_META)


def email_settings(given: Any) -> dict[str, bool]:
    """``emailSettings`` as the real service's schema parses it (v2.17, ``ZDocumentEmailSettingsSchema``).

    Every flag the object leaves out becomes ``true`` and unknown keys are dropped; an object the schema
    refuses (a flag that is not a boolean) becomes all ``true``. The stored object is then *replaced*
    by this one: an update naming one flag resets every other flag to ``true``.
    """
    defaults: dict[str, bool] = dict(DEFAULT_META["emailSettings"])
    if not isinstance(given, dict) or any(
        key in given and not isinstance(given[key], bool) for key in defaults
    ):
        return defaults
    return {key: given.get(key, default) for key, default in defaults.items()}


def meta_update(given: dict[str, Any]) -> dict[str, Any]:
    """The documentMeta keys a create, update or distribute writes (``emailSettings: null`` writes none)."""
    out = dict(given)
    if "emailSettings" in out:
        if out["emailSettings"] is None:
            del out["emailSettings"]
        else:
            out["emailSettings"] = email_settings(out["emailSettings"])
    return out


def new_meta(given: dict[str, Any] | None) -> dict[str, Any]:
    """DocumentMeta with team defaults for everything not given."""
    meta = {
        "signingOrder": DEFAULT_META["signingOrder"],
        "distributionMethod": DEFAULT_META["distributionMethod"],
    }
    meta["id"] = cuid()
    for key in _META_KEYS:
        if key not in meta:
            meta[key] = json.loads(json.dumps(DEFAULT_META[key]))
    for key, value in meta_update(given or {}).items():
        if key in meta and value is not MISSING:
            meta[key] = value
    return meta


def new_recipient(envelope_id: str, spec: dict[str, Any], store_next: int) -> Obj:
    """A stored recipient from a create payload entry."""
    role = spec["role"]
    return {
        "envelopeId": envelope_id,
        "role": role,
        "readStatus": "NOT_OPENED",
        "signingStatus": "SIGNED" if role == "CC" else "NOT_SIGNED",
        "sendStatus": "SENT" if role == "CC" else "NOT_SENT",
        "id": store_next,
        "email": str(spec.get("email", "")).lower(),
        "name": spec.get("name", "") or "",
        "token": recipient_token(),
        "documentDeletedAt": None,
        "expired": None,
        "expiresAt": None,
        "expirationNotifiedAt": None,
        "signedAt": None,
        "authOptions": {"accessAuth": spec.get("accessAuth", []), "actionAuth": spec.get("actionAuth", [])},
        "signingOrder": spec.get("signingOrder"),
        "rejectionReason": None,
    }


def field_meta(kind: str, given: dict[str, Any] | None) -> dict[str, Any] | None:
    """The fieldMeta a create or an update stores for a field of type ``kind`` (see FIELD_META_DEFAULTS).

    None given: the type's defaults (on an update, that *resets* the field's settings, as v2.17 does:
    documenso#3286). Given: stored as given, with the few per-key defaults of the type's schema.
    """
    if kind == "FREE_SIGNATURE":
        return None
    if given is None:
        default = FIELD_META_DEFAULTS.get(kind)
        return json.loads(json.dumps(default)) if default is not None else None
    meta = dict(given)
    for key, value in FIELD_META_KEY_DEFAULTS.get(kind.lower(), {}).items():
        meta.setdefault(key, value)
    return meta


def new_field(envelope_id: str, item_id: str, recipient_id: int, spec: dict[str, Any], field_id: int) -> Obj:
    """A stored field; coordinates kept as numbers, serialised as strings on output."""
    kind = spec["type"]
    meta = field_meta(kind, spec.get("fieldMeta"))
    return {
        "envelopeId": envelope_id,
        "envelopeItemId": item_id,
        "type": kind,
        "id": field_id,
        "secondaryId": cuid(),
        "recipientId": recipient_id,
        "page": int(spec.get("page", 1)),
        "positionX": spec.get("positionX", 0),
        "positionY": spec.get("positionY", 0),
        "width": spec.get("width", 0),
        "height": spec.get("height", 0),
        "customText": "",
        "inserted": False,
        "fieldMeta": meta,
    }


def check_payload(raw: Any, spec: Spec, path: str) -> Any:
    """The multipart ``payload`` part (JSON already decoded) checked against ``spec``; zod's 400 if not."""
    if raw is MISSING:
        issue = {
            "code": "invalid_type",
            "expected": "object",
            "received": "undefined",
            "path": ["payload"],
            "message": "Required",
        }
        raise validation_error(path, [issue])
    issues: list[dict[str, Any]] = []
    payload = check(raw, spec, ["payload"], issues)
    if issues:
        raise validation_error(path, issues)
    refuse_unstorable(payload, path)
    return payload


def check_item_limit(count: int, path: str) -> None:
    """Refuse an envelope that would hold more than :data:`MAX_ITEMS` items."""
    if count > MAX_ITEMS:
        raise app_error(
            path,
            "ENVELOPE_ITEM_LIMIT_EXCEEDED",
            f"You cannot upload more than {MAX_ITEMS} envelope items per envelope",
        )


def check_files(form: FormData, state: SandboxState, path: str) -> None:
    """Size limit (zod 400), then type (UNSUPPORTED_FILE_TYPE), then PDF validity (INVALID_DOCUMENT_FILE)."""
    issues = [
        {
            "code": "custom",
            "message": f"File cannot be larger than {state.max_file_mb}MB",
            "path": ["files", i],
        }
        for i, f in enumerate(form.files)
        if f.size > state.max_file_bytes
    ]
    if issues:
        raise validation_error(path, issues)
    for f in form.files:
        if f.content_type == DOCX:
            raise app_error(
                path, "CONVERSION_SERVICE_UNAVAILABLE", "Document conversion service is not configured"
            )
        if f.content_type not in PDF_TYPES:
            raise app_error(
                path,
                "UNSUPPORTED_FILE_TYPE",
                f"Unsupported file type: {f.content_type}",
                extra={
                    "userMessage": "This file type isn't supported. Please upload a PDF or Word document.",
                    "statusCode": 400,
                },
            )


def pdf_pages(f: UploadedFile, path: str) -> int:
    """Page count of an uploaded PDF or the real INVALID_DOCUMENT_FILE error."""
    if not f.head.startswith(b"%PDF-"):
        raise app_error(path, "INVALID_DOCUMENT_FILE", "The document is not a valid PDF")
    try:
        return pdfops.page_count(f.path)
    except Exception:
        raise app_error(path, "INVALID_DOCUMENT_FILE", "The document is not a valid PDF") from None


def store_item(state: SandboxState, envelope_id: str, f: UploadedFile, order: int, pages: int) -> Obj:
    """Move an uploaded file into the store and create its item."""
    data_id = cuid()
    name = f"{data_id}.pdf"
    os.replace(f.path, state.store.file_path(name))
    item = {
        "id": envelope_item_id(),
        "envelopeId": envelope_id,
        "documentDataId": data_id,
        "title": f.filename,
        "order": order,
        "_original": name,
        "_originalSha256": f.sha256,
        "_signed": None,
        "_signedSha256": None,
        "_pages": pages,
        "_size": f.size,
        "_seq": time.time_ns(),
    }
    return state.store.put("item", item)


def resolve_identifier(identifier: Any, files: list[UploadedFile]) -> int | None:
    """File index for a field's ``identifier``, or None when nothing matches.

    A number indexes ``files`` like JS ``.at()`` (negative counts from the end), a string must equal a
    file name, and a missing identifier means the first file.
    """
    if identifier is MISSING or identifier is None:
        return 0 if files else None
    if isinstance(identifier, str):
        for i, f in enumerate(files):
            if f.filename == identifier:
                return i
        return None
    index = int(identifier)
    if -len(files) <= index < len(files):
        return index % len(files)
    return None
