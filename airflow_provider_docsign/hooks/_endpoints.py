"""One definition per API operation, shared by the sync and async paths.

Each builder returns a :class:`Call` (method, path relative to the base URL, query, JSON body or the
parts of a multipart upload, and whether the request reads, writes or creates, which decides the retry
rules). Ids are checked here so that an empty or malformed id never reaches the service. Every string a
call carries is checked once, by :func:`check_outgoing`, where the hook sends it (its request loops), so a
builder added later needs no text check of its own. :class:`Call`, the checks and :func:`camel` live in
:mod:`._call` and are re-exported here, so the mixins import everything from this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks._call import Call as Call
from airflow_provider_docsign.hooks._call import camel as camel
from airflow_provider_docsign.hooks._call import check_int_id as check_int_id
from airflow_provider_docsign.hooks._call import check_outgoing as check_outgoing
from airflow_provider_docsign.hooks._call import check_str_id as check_str_id
from airflow_provider_docsign.hooks._http import CREATE, READ, WRITE
from airflow_provider_docsign.service.models import Envelope

#: ``POST /envelope/get-many`` accepts 1..20 ids per call.
GET_MANY_BATCH = 20
#: ``perPage`` is at most 100 on every list route.
PAGE_SIZE = 100
DOWNLOAD_VERSIONS = ("signed", "original", "pending")


def _q(value: Any) -> str:
    # surrogatepass: a lone surrogate is quoted (not a crash here) and refused by check_outgoing.
    return quote(str(value), safe="", errors="surrogatepass")


def _clean(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _many(envelope_id: str, data: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The body of the ``create-many`` and ``update-many`` routes: the envelope and a list of objects."""
    return {"envelopeId": check_str_id(envelope_id, "envelope_id"), "data": [dict(d) for d in data]}


# -- envelopes ------------------------------------------------------------------------------------


def create_envelope(payload: Mapping[str, Any], files: Sequence[Any], names: Sequence[str]) -> Call:
    """``POST /envelope/create``: multipart, the JSON ``payload`` and one ``files`` part per PDF."""
    return Call(
        "POST",
        "/envelope/create",
        CREATE,
        what="create envelope",
        payload=dict(payload),
        files=tuple(files),
        names=tuple(names),
    )


def get_envelope(envelope_id: str) -> Call:
    """``GET /envelope/{id}``."""
    check_str_id(envelope_id, "envelope_id")
    return Call("GET", f"/envelope/{_q(envelope_id)}", READ, what="get envelope")


def get_many(envelope_ids: Sequence[str]) -> Call:
    """``POST /envelope/get-many`` for at most :data:`GET_MANY_BATCH` ids (a read, despite POST)."""
    ids = [check_str_id(i, "envelope_ids[]") for i in envelope_ids]
    if not 1 <= len(ids) <= GET_MANY_BATCH:
        raise DocsignValidationError([f"get-many takes 1..{GET_MANY_BATCH} ids, not {len(ids)}"])
    return Call(
        "POST",
        "/envelope/get-many",
        READ,
        json={"ids": {"type": "envelopeId", "ids": ids}},
        what="get envelopes",
    )


#: ``source`` values of ``GET /envelope`` (how an envelope was created; OpenAPI 2.17).
SOURCES = ("DOCUMENT", "TEMPLATE", "TEMPLATE_DIRECT_LINK")
#: ``orderByColumn`` values of ``GET /envelope`` (the service sorts by nothing else).
ORDER_COLUMNS = ("createdAt",)
ORDER_DIRECTIONS = ("asc", "desc")


def find_envelopes(
    *,
    page: int,
    query: str | None = None,
    status: str | None = None,
    folder_id: str | None = None,
    envelope_type: str | None = None,
    per_page: int = PAGE_SIZE,
    has_expired_recipients: bool | None = None,
    template_id: int | None = None,
    source: str | None = None,
    order_by: tuple[str, str] | None = None,
) -> Call:
    """``GET /envelope`` (one page).

    ``hasExpiredRecipients`` is sent only as ``"true"``: the real service treats ``"false"`` as no
    filter at all (it does not list the envelopes *without* an expired recipient), so it is never sent.
    """
    problems: list[str] = []
    if has_expired_recipients not in (None, True, False):
        problems.append(f"has_expired_recipients must be True, False or None, not {has_expired_recipients!r}")
    if template_id is not None:
        template_id = check_int_id(template_id, "template_id")
    if source is not None and source not in SOURCES:
        problems.append(f"source must be one of {', '.join(SOURCES)}, not {source!r}")
    column = direction = None
    if order_by is not None:
        if (
            not isinstance(order_by, tuple | list)
            or len(order_by) != 2
            or order_by[0] not in ORDER_COLUMNS
            or order_by[1] not in ORDER_DIRECTIONS
        ):
            problems.append(
                f"order_by must be (column, direction) with column in {ORDER_COLUMNS} and direction in "
                f"{ORDER_DIRECTIONS}, not {order_by!r}"
            )
        else:
            column, direction = order_by
    if problems:
        raise DocsignValidationError(problems, "find_envelopes")
    params = _clean(
        {
            "query": query,
            "status": status,
            "folderId": folder_id,
            "type": envelope_type,
            "templateId": template_id,
            "source": source,
            "hasExpiredRecipients": "true" if has_expired_recipients else None,
            "orderByColumn": column,
            "orderByDirection": direction,
            "page": page,
            "perPage": per_page,
        }
    )
    return Call("GET", "/envelope", READ, params=params, what="find envelopes")


def update_envelope(envelope_id: str, data: Mapping[str, Any] | None, meta: Mapping[str, Any] | None) -> Call:
    """``POST /envelope/update``."""
    body: dict[str, Any] = {"envelopeId": check_str_id(envelope_id, "envelope_id")}
    if data:
        body["data"] = dict(data)
    if meta:
        body["meta"] = dict(meta)
    return Call("POST", "/envelope/update", WRITE, json=body, what="update envelope")


def delete_envelope(envelope_id: str) -> Call:
    """``POST /envelope/delete``."""
    body = {"envelopeId": check_str_id(envelope_id, "envelope_id")}
    return Call("POST", "/envelope/delete", WRITE, json=body, what="delete envelope")


def distribute_envelope(envelope_id: str, meta: Mapping[str, Any] | None) -> Call:
    """``POST /envelope/distribute``."""
    body: dict[str, Any] = {"envelopeId": check_str_id(envelope_id, "envelope_id")}
    if meta:
        body["meta"] = dict(meta)
    return Call("POST", "/envelope/distribute", WRITE, json=body, what="distribute envelope")


def redistribute_envelope(envelope_id: str, recipient_ids: Sequence[int]) -> Call:
    """``POST /envelope/redistribute``."""
    ids = [check_int_id(r, "recipient_ids[]") for r in recipient_ids]
    if not ids:
        raise DocsignValidationError(["redistribute needs at least one recipient id"])
    body = {"envelopeId": check_str_id(envelope_id, "envelope_id"), "recipients": ids}
    # Not idempotent (it e-mails the recipients again), so it gets the create policy: retried only on
    # 429, answered before anything happens; after a 5xx or a lost answer the caller re-reads instead.
    return Call("POST", "/envelope/redistribute", CREATE, json=body, what="redistribute envelope")


def cancel_envelope(envelope_id: str, reason: str | None) -> Call:
    """``POST /envelope/cancel``."""
    body: dict[str, Any] = {"envelopeId": check_str_id(envelope_id, "envelope_id")}
    if reason is not None:
        body["reason"] = reason
    return Call("POST", "/envelope/cancel", WRITE, json=body, what="cancel envelope")


def audit_log(envelope_id: str, *, page: int, oldest_first: bool = False) -> Call:
    """``GET /envelope/{id}/audit-log`` (one page; newest first, or by ``createdAt`` ascending)."""
    check_str_id(envelope_id, "envelope_id")
    params: dict[str, Any] = {"page": page, "perPage": PAGE_SIZE}
    if oldest_first:
        params.update(orderByColumn="createdAt", orderByDirection="asc")
    return Call("GET", f"/envelope/{_q(envelope_id)}/audit-log", READ, params=params, what="get audit log")


# -- templates ------------------------------------------------------------------------------------


def use_template(payload: Mapping[str, Any], files: Sequence[Any], names: Sequence[str]) -> Call:
    """``POST /envelope/use``: multipart, the JSON ``payload`` and replacement PDFs. Creates an envelope."""
    return Call(
        "POST",
        "/envelope/use",
        CREATE,
        what="use template",
        payload=dict(payload),
        files=tuple(files),
        names=tuple(names),
    )


def duplicate_envelope(envelope_id: str, *, include_recipients: bool, include_fields: bool) -> Call:
    """``POST /envelope/duplicate`` (creates a copy titled ``"<title> (copy)"``)."""
    body = {
        "envelopeId": check_str_id(envelope_id, "envelope_id"),
        "includeRecipients": bool(include_recipients),
        "includeFields": bool(include_fields),
    }
    return Call("POST", "/envelope/duplicate", CREATE, json=body, what="duplicate envelope")


# -- attachments ----------------------------------------------------------------------------------


def find_attachments(envelope_id: str) -> Call:
    """``GET /envelope/attachment?envelopeId=…`` (every attachment, oldest first; not paginated)."""
    params = {"envelopeId": check_str_id(envelope_id, "envelope_id")}
    return Call("GET", "/envelope/attachment", READ, params=params, what="find attachments")


def create_attachment(envelope_id: str, label: str, url: str) -> Call:
    """``POST /envelope/attachment/create`` (a link: ``data`` is its URL)."""
    body = {"envelopeId": check_str_id(envelope_id, "envelope_id"), "data": {"label": label, "data": url}}
    return Call("POST", "/envelope/attachment/create", CREATE, json=body, what="create attachment")


def update_attachment(attachment_id: str, label: str, url: str) -> Call:
    """``POST /envelope/attachment/update`` (both ``label`` and ``data`` are required by the service)."""
    body = {"id": check_str_id(attachment_id, "attachment_id"), "data": {"label": label, "data": url}}
    return Call("POST", "/envelope/attachment/update", WRITE, json=body, what="update attachment")


def delete_attachment(attachment_id: str) -> Call:
    """``POST /envelope/attachment/delete``."""
    body = {"id": check_str_id(attachment_id, "attachment_id")}
    return Call("POST", "/envelope/attachment/delete", WRITE, json=body, what="delete attachment")


# -- items ----------------------------------------------------------------------------------------


def create_items(envelope_id: str, files: Sequence[Any], names: Sequence[str]) -> Call:
    """``POST /envelope/item/create-many``: multipart, ``{"envelopeId"}`` and one ``files`` part per PDF."""
    return Call(
        "POST",
        "/envelope/item/create-many",
        CREATE,
        what="add envelope items",
        payload={"envelopeId": check_str_id(envelope_id, "envelope_id")},
        files=tuple(files),
        names=tuple(names),
    )


def update_items(envelope_id: str, data: Sequence[Mapping[str, Any]]) -> Call:
    """``POST /envelope/item/update-many``."""
    body = _many(envelope_id, data)
    return Call("POST", "/envelope/item/update-many", WRITE, json=body, what="update envelope items")


def delete_item(envelope_id: str, envelope_item_id: str) -> Call:
    """``POST /envelope/item/delete``."""
    body = {
        "envelopeId": check_str_id(envelope_id, "envelope_id"),
        "envelopeItemId": check_str_id(envelope_item_id, "envelope_item_id"),
    }
    return Call("POST", "/envelope/item/delete", WRITE, json=body, what="delete envelope item")


def download_item(envelope_item_id: str, version: str) -> Call:
    """``GET /envelope/item/{id}/download?version=…``."""
    check_str_id(envelope_item_id, "envelope_item_id")
    if version not in DOWNLOAD_VERSIONS:
        raise DocsignValidationError(
            [f"version must be one of {', '.join(DOWNLOAD_VERSIONS)}, not {version!r}"]
        )
    return Call(
        "GET",
        f"/envelope/item/{_q(envelope_item_id)}/download",
        READ,
        params={"version": version},
        what=f"download envelope item ({version})",
    )


def download_audit_log(envelope_id: str) -> Call:
    """``GET /envelope/{id}/audit-log/download``."""
    check_str_id(envelope_id, "envelope_id")
    return Call("GET", f"/envelope/{_q(envelope_id)}/audit-log/download", READ, what="download audit log")


def download_certificate(envelope_id: str) -> Call:
    """``GET /envelope/{id}/certificate/download``."""
    check_str_id(envelope_id, "envelope_id")
    return Call("GET", f"/envelope/{_q(envelope_id)}/certificate/download", READ, what="download certificate")


# -- recipients -----------------------------------------------------------------------------------


def get_recipient(recipient_id: int) -> Call:
    """``GET /envelope/recipient/{id}``."""
    rid = check_int_id(recipient_id, "recipient_id")
    return Call("GET", f"/envelope/recipient/{rid}", READ, what="get recipient")


def create_recipients(envelope_id: str, data: Sequence[Mapping[str, Any]]) -> Call:
    """``POST /envelope/recipient/create-many``."""
    body = _many(envelope_id, data)
    return Call("POST", "/envelope/recipient/create-many", CREATE, json=body, what="create recipients")


def update_recipients(envelope_id: str, data: Sequence[Mapping[str, Any]]) -> Call:
    """``POST /envelope/recipient/update-many``."""
    body = _many(envelope_id, data)
    return Call("POST", "/envelope/recipient/update-many", WRITE, json=body, what="update recipients")


def delete_recipient(recipient_id: int) -> Call:
    """``POST /envelope/recipient/delete``."""
    body = {"recipientId": check_int_id(recipient_id, "recipient_id")}
    return Call("POST", "/envelope/recipient/delete", WRITE, json=body, what="delete recipient")


def reject_recipient(recipient_id: int, envelope_id: str, reason: str) -> Call:
    """``POST /envelope/recipient/{id}/reject``."""
    rid = check_int_id(recipient_id, "recipient_id")
    if not isinstance(reason, str) or not reason.strip():
        raise DocsignValidationError(["reason must be a non-empty string"])
    body = {"envelopeId": check_str_id(envelope_id, "envelope_id"), "reason": reason}
    return Call("POST", f"/envelope/recipient/{rid}/reject", WRITE, json=body, what="reject recipient")


# -- fields ---------------------------------------------------------------------------------------


def get_field(field_id: int) -> Call:
    """``GET /envelope/field/{id}``."""
    fid = check_int_id(field_id, "field_id")
    return Call("GET", f"/envelope/field/{fid}", READ, what="get field")


def create_fields(envelope_id: str, data: Sequence[Mapping[str, Any]]) -> Call:
    """``POST /envelope/field/create-many``."""
    body = _many(envelope_id, data)
    return Call("POST", "/envelope/field/create-many", CREATE, json=body, what="create fields")


def update_fields(envelope_id: str, data: Sequence[Mapping[str, Any]]) -> Call:
    """``POST /envelope/field/update-many``."""
    body = _many(envelope_id, data)
    return Call("POST", "/envelope/field/update-many", WRITE, json=body, what="update fields")


def delete_field(field_id: int) -> Call:
    """``POST /envelope/field/delete``."""
    body = {"fieldId": check_int_id(field_id, "field_id")}
    return Call("POST", "/envelope/field/delete", WRITE, json=body, what="delete field")


# -- folders --------------------------------------------------------------------------------------


def list_folders(*, page: int, parent_id: str | None, folder_type: str | None) -> Call:
    """``GET /folder`` (one page)."""
    params = _clean({"parentId": parent_id, "type": folder_type, "page": page, "perPage": PAGE_SIZE})
    return Call("GET", "/folder", READ, params=params, what="list folders")


def create_folder(name: str, parent_id: str | None, folder_type: str | None) -> Call:
    """``POST /folder/create``."""
    body = _clean({"name": name, "parentId": parent_id, "type": folder_type})
    return Call("POST", "/folder/create", CREATE, json=body, what="create folder")


def update_folder(folder_id: str, data: Mapping[str, Any]) -> Call:
    """``POST /folder/update``."""
    body = {"folderId": check_str_id(folder_id, "folder_id"), "data": dict(data)}
    return Call("POST", "/folder/update", WRITE, json=body, what="update folder")


def delete_folder(folder_id: str) -> Call:
    """``POST /folder/delete``."""
    body = {"folderId": check_str_id(folder_id, "folder_id")}
    return Call("POST", "/folder/delete", WRITE, json=body, what="delete folder")


# -- parsers shared by both paths -----------------------------------------------------------------


def parse_envelope(body: Any) -> Envelope:
    """Parse ``GET /envelope/{id}``."""
    return Envelope.from_json(body)


def parse_envelopes_in_order(body: Any, requested: Sequence[str]) -> list[Envelope]:
    """Parse ``POST /envelope/get-many``; return envelopes in the requested order (missing ids omitted)."""
    found = {str(e["id"]): Envelope.from_json(e) for e in (body or {}).get("data") or []}
    return [found[i] for i in dict.fromkeys(requested) if i in found]


def page_items(body: Any) -> tuple[list[Any], int]:
    """Return a list page's ``data`` and ``totalPages`` (0 when missing)."""
    if not isinstance(body, Mapping):
        return [], 0
    data = body.get("data") or []
    try:
        total = int(body.get("totalPages") or 0)
    except (TypeError, ValueError):
        total = 0
    return list(data), total
