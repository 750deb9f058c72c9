"""Template routes: ``POST /envelope/use`` and ``POST /envelope/duplicate``.

Templates themselves are envelopes of type ``TEMPLATE``, created, read, listed and foldered through the
envelope and folder routes. The checks and error messages follow the real service (Documenso 2.17),
including its quirks: a replacement PDF shorter than the template's fields need is accepted (recordings
``templates/25``/``26``), a NUMBER prefill is stored unchecked (``err_template_use_bad_number``), and an
unknown template recipient id is a 400 ``INVALID_BODY`` (``err_template_use_unknown_recipient``).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from . import lifecycle, prefill
from .builders import check_files, check_payload, new_recipient, pdf_pages
from .common import authenticate, json_body, multipart_call, ok, state_of, webapp_url
from .errors import app_error
from .faults import note_request
from .ids import cuid, envelope_item_id, iso
from .ids import envelope_id as new_envelope_id
from .routes_attachments import attachments_of, new_attachment
from .schemas import LANGUAGES
from .state import SandboxState
from .store import Obj, Store
from .upload import FormData, UploadedFile
from .validation import MISSING, S, Spec, validate

router = APIRouter()


def _opt(kind: str, **kw: Any) -> Spec:
    return S(kind, optional=True, **kw)


USE_PAYLOAD = S(
    "object",
    props={
        "envelopeId": S("string"),
        "externalId": _opt("string"),
        "recipients": _opt(
            "array",
            items=S(
                "object",
                props={
                    "id": S("number"),
                    "email": S("string", email=True, allow_empty_email=True, maximum=254),
                    "name": _opt("string", maximum=255),
                    "signingOrder": _opt("number"),
                },
            ),
        ),
        "distributeDocument": _opt("boolean"),
        "customDocumentData": _opt(
            "array",
            items=S(
                "object",
                props={
                    "identifier": S("union", alternatives=(S("string"), S("number"))),
                    "envelopeItemId": S("string"),
                },
            ),
        ),
        "folderId": _opt("string"),
        "prefillFields": _opt(
            "array",
            items=S(
                "object",
                props={
                    "id": S("number"),
                    "type": S("enum", options=("text", "number", "radio", "checkbox", "dropdown", "date")),
                    "value": _opt("any"),
                    "label": _opt("string"),
                    "placeholder": _opt("string"),
                },
            ),
        ),
        "override": _opt(
            "object",
            props={
                "title": _opt("string", minimum=1, maximum=255),
                "subject": _opt("string", maximum=254),
                "message": _opt("string", maximum=5000),
                "timezone": _opt("string"),
                "dateFormat": _opt("string"),
                "redirectUrl": _opt("string"),
                "distributionMethod": _opt("enum", options=("EMAIL", "NONE")),
                "language": _opt("enum", options=LANGUAGES),
                "typedSignatureEnabled": _opt("boolean"),
                "uploadSignatureEnabled": _opt("boolean"),
                "drawSignatureEnabled": _opt("boolean"),
                "allowDictateNextSigner": _opt("boolean"),
                "emailSettings": _opt("object"),
                "envelopeExpirationPeriod": _opt("object", nullable=True),
            },
        ),
        "attachments": _opt("array", items=S("object")),
        "formValues": _opt("object"),
    },
)

DUPLICATE = S(
    "object",
    props={
        "envelopeId": S("string", minimum=1),
        "includeRecipients": _opt("boolean"),
        "includeFields": _opt("boolean"),
    },
)


@router.post("/envelope/use")
async def use_template(request: Request) -> Response:
    """Multipart: ``payload`` JSON text plus optional ``files`` (replacement PDFs)."""
    url = webapp_url(request)
    return await multipart_call(request, "envelope.use", lambda st, form: _use(st, form, url))


def _number(env: Obj) -> int:
    return int(str(env["secondaryId"]).split("_")[-1])


def _template_or_404(state: SandboxState, envelope_id: Any, path: str) -> Obj:
    env = state.store.get("envelope", envelope_id)
    if env is None or env["type"] != "TEMPLATE" or env["deletedAt"] is not None:
        raise app_error(path, "NOT_FOUND", "Envelope could not be found")
    return env


def _replacements(
    form: FormData, mappings: list[dict[str, Any]], items: list[Obj], path: str
) -> dict[str, Any]:
    """Template item id -> uploaded file, resolved as the real service resolves ``identifier``."""
    uploaded = [
        f
        for i, f in enumerate(form.files)
        if any(m["identifier"] == f.filename or m["identifier"] == i for m in mappings)
    ]
    out: dict[str, UploadedFile] = {}
    for m in mappings:
        ident = m["identifier"]
        found: UploadedFile | None = None
        if isinstance(ident, str):
            found = next((f for f in uploaded if f.filename == ident), None)
        elif -len(uploaded) <= int(ident) < len(uploaded):
            found = uploaded[int(ident)]
        if found is None:
            raise app_error(path, "NOT_FOUND", f'File with identifier "{ident}" not found in uploaded files')
        if not any(i["id"] == m["envelopeItemId"] for i in items):
            raise app_error(
                path, "NOT_FOUND", f'Envelope item with ID "{m["envelopeItemId"]}" not found in template'
            )
        out[m["envelopeItemId"]] = found
    return out


def _use(state: SandboxState, form: FormData, url: str) -> dict[str, Any]:
    path = "envelope.use"
    raw = form.fields.get("payload", MISSING)
    if isinstance(raw, str):
        with contextlib.suppress(ValueError):
            raw = json.loads(raw)
    payload = check_payload(raw, USE_PAYLOAD, path)
    note_request(override=payload.get("override"))
    store = state.store
    template = _template_or_404(state, payload["envelopeId"], path)
    items = store.items_of(template["id"])
    if len(form.files) > len(items):
        raise app_error(
            path, "INVALID_BODY", f"You cannot upload more than {len(items)} envelope items per envelope"
        )
    check_files(form, state, path)
    replaced = _replacements(form, payload.get("customDocumentData") or [], items, path)
    pages = {item_id: pdf_pages(f, path) for item_id, f in replaced.items()}
    folder_id = payload.get("folderId")
    if folder_id is not None:
        folder = store.get("folder", folder_id)
        if folder is None or folder["type"] != "DOCUMENT":
            raise app_error(path, "NOT_FOUND", "Folder not found")
    t_recipients = store.recipients_of(template["id"])
    mapping = {int(r["id"]): r for r in payload.get("recipients") or []}
    for rid in mapping:
        if not any(r["id"] == rid for r in t_recipients):
            raise app_error(path, "INVALID_BODY", f"Recipient with ID {rid} not found in the template.")
    t_fields = store.fields_of(template["id"])
    prefills = {int(p["id"]): p for p in payload.get("prefillFields") or []}
    invalid = [str(fid) for fid in prefills if not any(f["id"] == fid for f in t_fields)]
    if invalid:
        raise app_error(
            path,
            "INVALID_BODY",
            f"The following field IDs do not exist in the template: {', '.join(invalid)}",
        )
    for fid, p in prefills.items():
        expected = next(f["type"] for f in t_fields if f["id"] == fid).lower()
        if expected != p["type"]:
            raise app_error(
                path,
                "INVALID_BODY",
                f"Field type mismatch for field {fid}: expected {expected}, got {p['type']}",
            )
    metas = {
        fid: prefill.apply(next(f for f in t_fields if f["id"] == fid), p, path)
        for fid, p in prefills.items()
    }
    override = dict(payload.get("override") or {})
    env_id = new_envelope_id()
    now = iso()
    with store.tx():
        number = store.next_value("document")
        meta = json.loads(json.dumps(template["documentMeta"]))
        meta["id"] = cuid()
        meta.update({k: v for k, v in override.items() if k != "title"})
        env: Obj = {
            **{k: template[k] for k in ("internalVersion", "visibility", "templateType", "authOptions")},
            "type": "DOCUMENT",
            "status": "DRAFT",
            "source": "TEMPLATE",
            "id": env_id,
            "secondaryId": f"document_{number}",
            "externalId": payload.get("externalId"),
            "createdAt": now,
            "updatedAt": now,
            "completedAt": None,
            "deletedAt": None,
            "title": override.get("title") or template["title"],
            "formValues": payload.get("formValues", template.get("formValues")),
            "publicTitle": "",
            "publicDescription": "",
            "userId": template["userId"],
            "teamId": template["teamId"],
            "folderId": folder_id,
            "templateId": _number(template),
            "documentMeta": meta,
            "_seq": time.time_ns(),
            "_autoSignAt": None,
        }
        store.put("envelope", env)
        new_items = {
            i["id"]: _copy_item(state, env_id, i, replaced.get(i["id"]), pages.get(i["id"])) for i in items
        }
        new_recipients: dict[int, Obj] = {}
        for rec in t_recipients:
            given = mapping.get(rec["id"], {})
            spec = {
                "role": rec["role"],
                "email": given.get("email", rec["email"]),
                "name": given.get("name", rec["name"]),
                "signingOrder": given.get("signingOrder", rec["signingOrder"]),
                "accessAuth": rec["authOptions"].get("accessAuth", []),
                "actionAuth": rec["authOptions"].get("actionAuth", []),
            }
            new_recipients[rec["id"]] = store.put(
                "recipient", new_recipient(env_id, spec, store.next_value("recipient"))
            )
        _copy_fields(store, t_fields, env_id, new_items, new_recipients, metas)
        # Real service: the template's attachments, then the ones given, become the document's.
        for att in [*attachments_of(state, template["id"]), *(payload.get("attachments") or [])]:
            store.put(
                "attachment",
                new_attachment(env_id, str(att.get("label", "")), str(att.get("data", "")), "link"),
            )
        state.audit(
            env_id,
            "DOCUMENT_CREATED",
            {"title": env["title"], "source": {"type": "TEMPLATE", "templateId": _number(template)}},
        )
    if payload.get("distributeDocument"):
        lifecycle.distribute(state, env_id, None, url)
    return {
        "id": env_id,
        "recipients": [
            {
                "id": r["id"],
                "name": r["name"],
                "email": r["email"],
                "token": r["token"],
                "role": r["role"],
                "signingOrder": r["signingOrder"],
                "signingUrl": lifecycle.signing_url(url, r["token"]),
            }
            for r in store.recipients_of(env_id)
        ],
    }


def _copy_item(
    state: SandboxState, envelope_id: str, item: Obj, upload: UploadedFile | None, pages: int | None
) -> Obj:
    """A new item from a template item: its PDF copied, or the replacement's (title kept, no ``.pdf``)."""
    store = state.store
    data_id = cuid()
    name = f"{data_id}.pdf"
    source = upload.path if upload is not None else store.file_path(item["_original"])
    shutil.copyfile(source, store.file_path(name))
    title = str(item["title"])
    new = {
        "id": envelope_item_id(),
        "envelopeId": envelope_id,
        "documentDataId": data_id,
        "title": title[:-4] if title.endswith(".pdf") else title,
        "order": item["order"],
        "_original": name,
        "_originalSha256": upload.sha256 if upload is not None else item["_originalSha256"],
        "_signed": None,
        "_signedSha256": None,
        "_pages": pages if pages is not None else item["_pages"],
        "_size": upload.size if upload is not None else item["_size"],
        "_seq": time.time_ns(),
    }
    return store.put("item", new)


def _copy_fields(
    store: Store,
    fields: list[Obj],
    envelope_id: str,
    items: dict[str, Obj],
    recipients: dict[Any, Obj],
    metas: dict[Any, Any],
) -> None:
    """Copy template fields onto the new envelope's items and recipients, not filled in.

    :param items: New item by template item id. :param recipients: New recipient by template recipient id.
    :param metas: Replacement ``fieldMeta`` by template field id (prefill on use; empty on duplicate).
    """
    for fld in fields:
        copy = json.loads(json.dumps(fld))
        copy.update(
            {
                "envelopeId": envelope_id,
                "envelopeItemId": items[fld["envelopeItemId"]]["id"],
                "recipientId": recipients[fld["recipientId"]]["id"],
                "id": store.next_value("field"),
                "secondaryId": cuid(),
                "customText": "",
                "inserted": False,
            }
        )
        if fld["id"] in metas:
            copy["fieldMeta"] = metas[fld["id"]]
        store.put("field", copy)


@router.post("/envelope/duplicate")
async def duplicate(request: Request) -> Response:
    """Copy an envelope or template as ``"<title> (copy)"``: items, and recipients and fields if asked."""
    path = "envelope.duplicate"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), DUPLICATE, path)
    store = state.store
    source = store.get("envelope", body["envelopeId"])
    if source is None or source["deletedAt"] is not None:
        raise app_error(path, "NOT_FOUND", "Envelope not found")
    with_recipients = body.get("includeRecipients", True)
    with_fields = body.get("includeFields", True) and with_recipients
    env_id = new_envelope_id()
    now = iso()
    with store.tx():
        number = store.next_value("document")
        env = json.loads(json.dumps(source))
        # Real service (duplicate-envelope.ts): externalId, folder, template link, form values and
        # attachments are not copied; the source says how it was made now (a plain duplicate).
        env.update(
            {
                "id": env_id,
                "status": "DRAFT",
                "secondaryId": f"{'template' if env['type'] == 'TEMPLATE' else 'document'}_{number}",
                "title": f"{source['title']} (copy)",
                "externalId": None,
                "folderId": None,
                "templateId": None,
                "formValues": None,
                "source": "DOCUMENT" if env["type"] == "DOCUMENT" else "TEMPLATE",
                "createdAt": now,
                "updatedAt": now,
                "completedAt": None,
                "deletedAt": None,
                "_seq": time.time_ns(),
                "_autoSignAt": None,
            }
        )
        env["documentMeta"]["id"] = cuid()
        store.put("envelope", env)
        items = {i["id"]: _copy_item(state, env_id, i, None, None) for i in store.items_of(source["id"])}
        recipients: dict[int, Obj] = {}
        if with_recipients:
            for rec in store.recipients_of(source["id"]):
                spec = {**rec, "accessAuth": rec["authOptions"].get("accessAuth", [])}
                spec["actionAuth"] = rec["authOptions"].get("actionAuth", [])
                recipients[rec["id"]] = store.put(
                    "recipient", new_recipient(env_id, spec, store.next_value("recipient"))
                )
        if with_fields:
            _copy_fields(store, store.fields_of(source["id"]), env_id, items, recipients, {})
    return ok({"id": env_id})
