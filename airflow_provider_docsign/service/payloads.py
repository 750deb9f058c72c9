"""Validate what is about to be sent, before the first byte goes out (pure code, no network).

Every check collects its problems instead of stopping at the first one, so a single
:class:`~airflow_provider_docsign.exceptions.DocsignValidationError` lists everything wrong, each line
naming the recipient, field and file concerned. Page counts are read with pypdf from an open stream
(never by loading a whole file into memory).

The characters and lengths of the strings, and the e-mail addresses, are not checked here: every
request is checked once where it leaves the hook (:mod:`airflow_provider_docsign.service.outgoing`), against
the
service's own schema, and the problems name each field by its JSON path.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from airflow_provider_docsign._sources import open_source
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service.ids import ID_FORM, as_id, with_int_ids

__all__ = [
    "ENVELOPE_TYPES",
    "FIELD_TYPES",
    "MAX_TEXT_LENGTH",
    "RECIPIENT_ROLES",
    "SIGNATURE_FIELD_TYPES",
    "ItemPages",
    "PdfFile",
    "count_pdf_pages",
    "inspect_files",
    "source_label",
    "validate_create_payload",
    "validate_fields_for_envelope",
    "validate_recipients_for_envelope",
]

ENVELOPE_TYPES = ("DOCUMENT", "TEMPLATE")
RECIPIENT_ROLES = ("CC", "SIGNER", "VIEWER", "APPROVER", "ASSISTANT")
FIELD_TYPES = (
    "SIGNATURE",
    "FREE_SIGNATURE",
    "INITIALS",
    "NAME",
    "EMAIL",
    "DATE",
    "TEXT",
    "NUMBER",
    "RADIO",
    "CHECKBOX",
    "DROPDOWN",
)
SIGNATURE_FIELD_TYPES = ("SIGNATURE", "FREE_SIGNATURE")
#: Roles that cannot hold fields (the service refuses fields for them).
ROLES_WITHOUT_FIELDS = ("CC", "VIEWER")
#: The service's limit on titles, external ids and names (checked with every outgoing string).
MAX_TEXT_LENGTH = 255
MAX_EMAIL_LENGTH = 254
PDF_MAGIC = b"%PDF-"


def _stripped_email(recipient: Mapping[str, Any]) -> dict[str, Any]:
    """The recipient as sent: the e-mail stripped of surrounding white space (validated that way)."""
    out = dict(recipient)
    if isinstance(out.get("email"), str):
        out["email"] = out["email"].strip()
    return out


@dataclass(frozen=True)
class PdfFile:
    """A checked PDF about to be uploaded.

    :param index: Zero-based position among the files (what ``field.identifier`` refers to).
    :param name: The file name sent in the multipart part (and used by the service as the item title).
    :param page_count: Number of pages, read with pypdf.
    """

    index: int
    name: str
    page_count: int


@dataclass(frozen=True)
class ItemPages:
    """An existing envelope item, for checking new fields against it.

    :param id: The envelope item id.
    :param title: The item title (for messages).
    :param page_count: The item's number of pages, or ``None`` if unknown (then only
        ``page >= 1`` is checked).
    """

    id: str
    title: str | None
    page_count: int | None


def source_label(source: Any, index: int) -> str:
    """A short, human-readable name of an upload source, for messages and multipart file names."""
    name = getattr(source, "name", None)
    if isinstance(source, str | os.PathLike) or isinstance(name, str):
        # Path objects (local or ObjectStoragePath) carry their last component in ``name``; never call
        # os.fspath on an ObjectStoragePath (deprecated for remote file systems).
        text = str(name) if isinstance(name, str) else os.fspath(source)
        base = text.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        if base:
            return base
    return f"document-{index + 1}.pdf"


def count_pdf_pages(stream: IO[bytes]) -> int:
    """Count the pages of the PDF in the seekable binary ``stream`` (its position is restored)."""
    from pypdf import PdfReader

    start = stream.tell()
    try:
        return len(PdfReader(stream, strict=False).pages)
    finally:
        stream.seek(start)


def inspect_files(files: Sequence[Any]) -> tuple[list[PdfFile | None], list[str]]:
    """Check every file exists, starts with ``%PDF-`` and can be paged by pypdf.

    Returns one :class:`PdfFile` per source (``None`` for a file with problems) and the problems.
    """
    results: list[PdfFile | None] = []
    problems: list[str] = []
    for index, source in enumerate(files):
        name = source_label(source, index)
        where = f"file #{index} {name!r}"
        try:
            stream, owned = open_source(source)
        except FileNotFoundError:
            problems.append(f"{where}: does not exist ({source})")
            results.append(None)
            continue
        except IsADirectoryError:
            problems.append(f"{where}: is a directory, not a PDF file")
            results.append(None)
            continue
        except (OSError, TypeError, ValueError) as exc:
            problems.append(f"{where}: cannot be opened ({type(exc).__name__}: {exc})")
            results.append(None)
            continue
        try:
            start = stream.tell()
            head = stream.read(len(PDF_MAGIC))
            stream.seek(start)
            if head != PDF_MAGIC:
                problems.append(f"{where}: is not a PDF (it does not start with %PDF-)")
                results.append(None)
                continue
            try:
                pages = count_pdf_pages(stream)
            except Exception as exc:  # pypdf raises many types for broken files
                problems.append(
                    f"{where}: starts with %PDF- but cannot be read as a PDF ({type(exc).__name__})"
                )
                results.append(None)
                continue
            if pages < 1:
                problems.append(f"{where}: has no pages")
                results.append(None)
                continue
            results.append(PdfFile(index=index, name=name, page_count=pages))
        finally:
            if owned:
                stream.close()
    return results, problems


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_text(value: Any, what: str, problems: list[str], *, required: bool) -> None:
    if value is None:
        if required:
            problems.append(f"{what} is required")
        return
    if not isinstance(value, str):
        problems.append(f"{what} must be a string, not {type(value).__name__}")
        return
    if required and not value.strip():
        problems.append(f"{what} must not be empty")


def _check_geometry(
    field: Mapping[str, Any], where: str, page_count: int | None, problems: list[str]
) -> None:
    page = field.get("page")
    if page is None:
        problems.append(f"{where}: 'page' is required")
    elif not isinstance(page, int) or isinstance(page, bool):
        problems.append(f"{where}: 'page' must be an integer, not {page!r}")
    elif page < 1:
        problems.append(f"{where}: page {page} is invalid (pages are numbered from 1)")
    elif page_count is not None and page > page_count:
        problems.append(f"{where}: page {page} does not exist (the PDF has {page_count} page(s))")
    values: dict[str, float] = {}
    for key in ("positionX", "positionY", "width", "height"):
        value = field.get(key)
        if value is None:
            problems.append(f"{where}: {key!r} is required")
        elif not _is_number(value):
            problems.append(f"{where}: {key!r} must be a number from 0 to 100, not {value!r}")
        elif not 0 <= value <= 100:
            problems.append(f"{where}: {key} {value} is outside 0-100 (percent of the page)")
        else:
            values[key] = float(value)
    if "positionX" in values and "width" in values and values["positionX"] + values["width"] > 100:
        problems.append(
            f"{where}: positionX + width = {values['positionX'] + values['width']:g} exceeds 100 "
            "(the field runs off the right edge of the page)"
        )
    if "positionY" in values and "height" in values and values["positionY"] + values["height"] > 100:
        problems.append(
            f"{where}: positionY + height = {values['positionY'] + values['height']:g} exceeds 100 "
            "(the field runs off the bottom of the page)"
        )


def _check_field_type(field: Mapping[str, Any], where: str, problems: list[str]) -> str | None:
    ftype = field.get("type")
    if ftype not in FIELD_TYPES:
        problems.append(f"{where}: unknown field type {ftype!r} (known: {', '.join(FIELD_TYPES)})")
        return None
    meta = field.get("fieldMeta")
    if meta is not None:
        if ftype == "FREE_SIGNATURE":
            problems.append(f"{where}: a FREE_SIGNATURE field takes no fieldMeta")
        elif not isinstance(meta, Mapping):
            problems.append(f"{where}: fieldMeta must be an object")
        elif meta.get("type") is not None and meta.get("type") != str(ftype).lower():
            problems.append(f"{where}: fieldMeta.type {meta.get('type')!r} must be {str(ftype).lower()!r}")
    return str(ftype)


def _recipient_label(recipient: Any, index: int) -> str:
    if isinstance(recipient, Mapping):
        who = recipient.get("email") or recipient.get("name")
        if who:
            return f"recipient #{index} ({who})"
    return f"recipient #{index}"


def _check_recipient_core(recipient: Mapping[str, Any], label: str, problems: list[str]) -> str | None:
    role = recipient.get("role")
    if role not in RECIPIENT_ROLES:
        problems.append(f"{label}: unknown role {role!r} (known: {', '.join(RECIPIENT_ROLES)})")
        role = None
    email = recipient.get("email")
    if not isinstance(email, str):
        problems.append(f"{label}: 'email' must be a string (it may be empty)")
    name = recipient.get("name")
    if name is not None and not isinstance(name, str):
        problems.append(f"{label}: 'name' must be a string")
    return role if isinstance(role, str) else None


def _resolve_identifier(identifier: Any, names: Sequence[str], where: str, problems: list[str]) -> int | None:
    """Resolve ``field.identifier`` (index, or exact file name) to a file index, or ``None``."""
    count = len(names)
    if identifier is None:
        identifier = 0
    if isinstance(identifier, bool) or not isinstance(identifier, int | str):
        problems.append(f"{where}: identifier must be a file index (0..{count - 1}) or a file name")
        return None
    if isinstance(identifier, str):
        if identifier in names:
            return names.index(identifier)
        problems.append(
            f"{where}: identifier {identifier!r} matches no uploaded file name ({', '.join(names)})"
        )
        return None
    if not 0 <= identifier < count:
        if count == 0:
            problems.append(f"{where}: identifier {identifier} is out of range (no files were given)")
        else:
            problems.append(f"{where}: identifier {identifier} is out of range (files are 0..{count - 1})")
        return None
    return identifier


def validate_create_payload(
    *,
    title: Any,
    files: Sequence[Any],
    recipients: Sequence[Mapping[str, Any]] | None = None,
    external_id: Any = None,
    meta: Mapping[str, Any] | None = None,
    folder_id: Any = None,
    envelope_type: Any = "DOCUMENT",
    payload_extra: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[PdfFile]]:
    """Check a whole creation request and build its ``payload`` JSON.

    :param title: Envelope title (1-255 characters).
    :param files: The PDFs, as local paths, binary file objects or ``ObjectStoragePath`` objects.
    :param recipients: Recipients in the service's shape, each with optional nested ``fields``.
    :param external_id: The caller's own reference (at most 255 characters).
    :param meta: Document meta in the service's shape.
    :param folder_id: The folder to create the envelope in.
    :param envelope_type: ``DOCUMENT`` or ``TEMPLATE``.
    :param payload_extra: Other payload keys passed through unchanged (e.g. ``visibility``).
    :return: ``(payload, files)`` where ``files`` has one :class:`PdfFile` per source.
    :raises DocsignValidationError: listing every problem found.
    """
    problems: list[str] = []
    _check_text(title, "title", problems, required=True)
    _check_text(external_id, "externalId", problems, required=False)
    if envelope_type not in ENVELOPE_TYPES:
        problems.append(f"type {envelope_type!r} is unknown (known: {', '.join(ENVELOPE_TYPES)})")
    if folder_id is not None and (not isinstance(folder_id, str) or not folder_id.strip()):
        problems.append(f"folderId must be a non-empty string, not {folder_id!r}")
    if meta is not None and not isinstance(meta, Mapping):
        problems.append("meta must be an object (mapping)")
    if isinstance(files, str | bytes) or not isinstance(files, Sequence):
        problems.append("files must be a list of PDFs (paths, binary file objects or ObjectStoragePath)")
        files = []
    pdfs, file_problems = inspect_files(files)
    problems.extend(file_problems)
    names = [source_label(src, i) for i, src in enumerate(files)]
    if recipients is not None and (
        isinstance(recipients, str | Mapping) or not isinstance(recipients, Sequence)
    ):
        problems.append("recipients must be a list of recipient objects")
        recipients = []
    for r_index, recipient in enumerate(recipients or []):
        label = _recipient_label(recipient, r_index)
        if not isinstance(recipient, Mapping):
            problems.append(f"{label}: must be an object with email, name and role")
            continue
        role = _check_recipient_core(recipient, label, problems)
        fields = recipient.get("fields") or []
        if not isinstance(fields, Sequence) or isinstance(fields, str | Mapping):
            problems.append(f"{label}: 'fields' must be a list")
            fields = []
        if fields and role in ROLES_WITHOUT_FIELDS:
            problems.append(f"{label}: a {role} cannot have fields")
        has_signature = False
        for f_index, field in enumerate(fields):
            where = f"{label} field #{f_index}"
            if not isinstance(field, Mapping):
                problems.append(f"{where}: must be an object")
                continue
            ftype = _check_field_type(field, f"{where} ({field.get('type')})", problems)
            has_signature = has_signature or ftype in SIGNATURE_FIELD_TYPES
            index = _resolve_identifier(field.get("identifier"), names, where, problems)
            pdf = pdfs[index] if index is not None else None
            if index is not None:
                where = f"{where} ({field.get('type')}) on file #{index} {names[index]!r}"
            _check_geometry(field, where, pdf.page_count if pdf else None, problems)
        if role == "SIGNER" and not has_signature:
            problems.append(
                f"{label}: a SIGNER needs at least one SIGNATURE or FREE_SIGNATURE field "
                "(the service refuses to distribute otherwise)"
            )
    if problems:
        raise DocsignValidationError(problems, "create_envelope request")
    payload: dict[str, Any] = dict(payload_extra or {})
    payload.update({"type": envelope_type, "title": title})
    if external_id is not None:
        payload["externalId"] = external_id
    if folder_id is not None:
        payload["folderId"] = folder_id
    if recipients:
        payload["recipients"] = [_stripped_email(r) for r in recipients]
    if meta:
        payload["meta"] = dict(meta)
    return payload, [p for p in pdfs if p is not None]


def validate_fields_for_envelope(
    fields: Sequence[Mapping[str, Any]],
    *,
    items: Sequence[ItemPages],
    recipients: Mapping[int, Any],
    context: str = "create_fields request",
) -> list[dict[str, Any]]:
    """Check new fields against an envelope's current items and recipients.

    :param fields: Fields in the service's shape (``recipientId``, ``envelopeItemId``, ``type``,
        ``page``, ``positionX``, ...; or a ``placeholder`` instead of coordinates).
    :param items: The envelope's items in order; a field without ``envelopeItemId`` goes on the first.
    :param recipients: The envelope's recipients by id (objects with ``role`` and ``email``).
    :param context: What is being validated, for the error message.
    :return: The fields as plain dicts.
    :raises DocsignValidationError: listing every problem found.
    """
    problems: list[str] = []
    if isinstance(fields, str | Mapping) or not isinstance(fields, Sequence) or not fields:
        raise DocsignValidationError(["fields must be a non-empty list of field objects"], context)
    by_id = {i.id: i for i in items}
    for f_index, field in enumerate(fields):
        where = f"field #{f_index}"
        if not isinstance(field, Mapping):
            problems.append(f"{where}: must be an object")
            continue
        ftype = field.get("type")
        rid = field.get("recipientId")
        number = as_id(rid)
        recipient = recipients.get(number) if number is not None else None
        who = getattr(recipient, "email", None) or (f"id {rid}" if rid is not None else "missing")
        where = f"field #{f_index} ({ftype}) of recipient {who}"
        _check_field_type(field, where, problems)
        if recipient is None:
            problems.append(f"{where}: recipientId {rid!r} is not a recipient of this envelope")
        elif getattr(recipient, "role", None) in ROLES_WITHOUT_FIELDS:
            problems.append(f"{where}: a {recipient.role} cannot have fields")
        item_id = field.get("envelopeItemId")
        item: ItemPages | None
        if item_id is None:
            item = items[0] if items else None
            if item is None:
                problems.append(f"{where}: the envelope has no items to place the field on")
        else:
            item = by_id.get(item_id)
            if item is None:
                problems.append(f"{where}: envelopeItemId {item_id!r} is not an item of this envelope")
        if item is not None:
            where = f"{where} on item {item.id} {item.title!r}"
        if "placeholder" in field:
            if not isinstance(field["placeholder"], str) or not field["placeholder"]:
                problems.append(f"{where}: placeholder must be a non-empty string")
            continue
        _check_geometry(field, where, item.page_count if item else None, problems)
    if problems:
        raise DocsignValidationError(problems, context)
    return [dict(f) for f in with_int_ids(fields, ("recipientId",))]


def validate_recipients_for_envelope(
    recipients: Sequence[Mapping[str, Any]],
    *,
    context: str = "create_recipients request",
    update: bool = False,
) -> list[dict[str, Any]]:
    """Check recipients for ``create-many``/``update-many`` (role, e-mail, name).

    :param recipients: Recipients in the service's shape. For updates each needs an ``id`` and every
        other key is optional.
    :param context: What is being validated, for the error message.
    :param update: Whether this is an update (then only the keys given are checked).
    :raises DocsignValidationError: listing every problem found.
    """
    problems: list[str] = []
    if isinstance(recipients, str | Mapping) or not isinstance(recipients, Sequence) or not recipients:
        raise DocsignValidationError(["recipients must be a non-empty list of recipient objects"], context)
    for index, recipient in enumerate(recipients):
        label = _recipient_label(recipient, index)
        if not isinstance(recipient, Mapping):
            problems.append(f"{label}: must be an object")
            continue
        if update:
            rid = as_id(recipient.get("id"))
            if rid is None or rid < 1:
                problems.append(
                    f"{label}: 'id' (the recipient id, {ID_FORM}) is required for an update, "
                    f"not {recipient.get('id')!r}"
                )
            if "role" in recipient and recipient["role"] not in RECIPIENT_ROLES:
                problems.append(f"{label}: unknown role {recipient['role']!r}")
            checked = {k: v for k, v in recipient.items() if k in ("email", "name")}
            if "email" in checked or "name" in checked:
                sub: list[str] = []
                _check_recipient_core({"role": "SIGNER", "email": "", **checked}, label, sub)
                problems.extend(sub)
        else:
            _check_recipient_core(recipient, label, problems)
            if recipient.get("fields"):
                problems.append(f"{label}: add fields with create_fields, not inside create_recipients")
    if problems:
        raise DocsignValidationError(problems, context)
    return [_stripped_email(r) for r in with_int_ids(recipients, ("id",))]


def check_files_only(files: Iterable[Any], context: str) -> list[PdfFile]:
    """Check a list of PDFs (for ``add_envelope_items``) and return their descriptions."""
    sources = list(files) if not isinstance(files, str | bytes | os.PathLike) else [files]
    if not sources:
        raise DocsignValidationError(["files must contain at least one PDF"], context)
    pdfs, problems = inspect_files(sources)
    if problems:
        raise DocsignValidationError(problems, context)
    return [p for p in pdfs if p is not None]
