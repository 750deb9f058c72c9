"""Templates: typed results and the local checks of a ``POST /envelope/use`` call (pure code, no network).

A template is an envelope of type ``TEMPLATE`` (parsed as an :class:`~.models.Envelope`). Using it
creates a new DOCUMENT envelope with the template's items, recipients and fields. The real service
accepts two calls that leave an envelope which can never complete or that carries a wrong value, so
only these checks stand in the way:

* a replacement PDF with fewer pages than the template's fields on that item use (recordings
  ``templates/25`` and ``26``: a 1-page replacement is accepted, fields stay on page 2);
* a ``number`` prefill that is not a number (``templates/err_template_use_bad_number`` is a 200).

Recipients and fields may be named by id or, since ids change from one instance to the next, by the
template recipient's placeholder name or e-mail and by the field's label. Run
``docsign templates show TEMPLATE_ID`` to print them (the command is in :mod:`.cli.templates`).
"""

from __future__ import annotations

import datetime
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service.attachments import normalize_attachments
from airflow_provider_docsign.service.models import Envelope, Field, Recipient
from airflow_provider_docsign.service.payloads import SIGNATURE_FIELD_TYPES, PdfFile, inspect_files
from airflow_provider_docsign.service.payloads import source_label as _source_label

__all__ = [
    "PREFILL_TYPES",
    "TemplateUse",
    "UsedRecipient",
    "describe_template",
    "resolve_prefill",
    "resolve_replacements",
    "validate_use_payload",
]

#: Field types the service can prefill (``TEXT`` ... ``DROPDOWN``); any other type is refused by it
#: with ``INVALID_BODY`` ("not an advanced field"), DATE included: a DATE field takes the signing date.
PREFILL_TYPES = ("TEXT", "NUMBER", "RADIO", "CHECKBOX", "DROPDOWN")
#: Roles that need not be mapped: a CC only receives a copy.
OPTIONAL_ROLES = ("CC",)
# ASCII digits only: without re.ASCII, \d also matches Arabic-Indic or full-width digits, which
# Python's float() accepts but the service and the PDF's readers do not.
_NUMBER = re.compile(r"^[+-]?(\d+([.,]\d*)?|[.,]\d+)$", re.ASCII)
_OVERRIDE_KEYS = (
    "title",
    "subject",
    "message",
    "timezone",
    "dateFormat",
    "redirectUrl",
    "distributionMethod",
    "emailSettings",
    "language",
    "typedSignatureEnabled",
    "uploadSignatureEnabled",
    "drawSignatureEnabled",
    "allowDictateNextSigner",
    "envelopeExpirationPeriod",
)


@dataclass(frozen=True)
class UsedRecipient:
    """A recipient of the envelope created from a template, as ``/envelope/use`` answers it.

    :param id: The new recipient id.
    :param email: The e-mail address the template recipient was mapped to.
    :param name: The name.
    :param role: ``SIGNER``, ``CC``, ...
    :param signing_order: The position in a sequential signing order, if any.
    :param raw: The JSON (holds the signing ``token`` and ``signingUrl``: bearer links, never log them).
    """

    id: int
    email: str | None = None
    name: str | None = None
    role: str | None = None
    signing_order: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form without the token or signing URL."""
        return {
            "id": self.id,
            "email": self.email,
            "name": self.name,
            "role": self.role,
            "signing_order": self.signing_order,
        }


@dataclass(frozen=True)
class TemplateUse:
    """The answer of ``POST /envelope/use``: the new envelope and its recipients.

    :param envelope_id: The id of the envelope created from the template.
    :param recipients: Its recipients.
    :param raw: The JSON the record was parsed from.
    """

    envelope_id: str
    recipients: tuple[UsedRecipient, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TemplateUse:
        """Parse the service's answer."""
        recipients = []
        for r in data.get("recipients") or ():
            order = r.get("signingOrder")
            recipients.append(
                UsedRecipient(
                    id=int(r["id"]),
                    email=None if r.get("email") is None else str(r["email"]),
                    name=None if r.get("name") is None else str(r["name"]),
                    role=None if r.get("role") is None else str(r["role"]),
                    signing_order=None if order is None else int(order),
                    raw=dict(r),
                )
            )
        return cls(envelope_id=str(data["id"]), recipients=tuple(recipients), raw=dict(data))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (no tokens)."""
        return {"envelope_id": self.envelope_id, "recipients": [r.to_dict() for r in self.recipients]}


def _label(f: Field) -> str:
    meta = f.field_meta or {}
    return str(meta.get("label") or "")


def _recipient_who(r: Recipient) -> str:
    return f"template recipient {r.id} ({r.name or r.email or r.role})"


def _find_recipient(spec: Mapping[str, Any], template: Envelope) -> tuple[Recipient | None, str]:
    """The template recipient a mapping names: by ``id``, or by ``placeholder`` (name or e-mail)."""
    if "id" in spec and spec["id"] is not None:
        rid = spec["id"]
        if isinstance(rid, str) and rid.strip().isdigit():
            rid = int(rid)
        if not isinstance(rid, int) or isinstance(rid, bool):
            return None, f"id {spec['id']!r} is not a recipient id (an integer)"
        for r in template.recipients:
            if r.id == rid:
                return r, ""
        return None, f"id {rid} is not a recipient of the template"
    key = spec.get("placeholder")
    if not isinstance(key, str) or not key.strip():
        return None, "name the template recipient with 'id' or 'placeholder' (its name or e-mail)"
    wanted = key.strip().lower()
    hits = [r for r in template.recipients if wanted in ((r.name or "").lower(), (r.email or "").lower())]
    if len(hits) > 1:
        return None, f"placeholder {key!r} matches {len(hits)} template recipients; use 'id'"
    if not hits:
        return None, f"placeholder {key!r} matches no template recipient's name or e-mail"
    return hits[0], ""


def _map_recipients(recipients: Any, template: Envelope, problems: list[str]) -> list[dict[str, Any]]:
    if recipients is None:
        recipients = []
    if isinstance(recipients, str | Mapping) or not isinstance(recipients, Sequence):
        problems.append("recipients must be a list of {id or placeholder, email, name} objects")
        return []
    mapped: dict[int, int] = {}
    out: list[dict[str, Any]] = []
    for index, spec in enumerate(recipients):
        where = f"recipients[{index}]"
        if not isinstance(spec, Mapping):
            problems.append(f"{where}: must be an object with id (or placeholder), email and name")
            continue
        target, why = _find_recipient(spec, template)
        if target is None:
            problems.append(f"{where}: {why}")
            continue
        where = f"{where} ({_recipient_who(target)})"
        if target.id in mapped:
            problems.append(f"{where}: mapped twice (also by recipients[{mapped[target.id]}])")
            continue
        mapped[target.id] = index
        email = spec.get("email")
        if isinstance(email, str):
            email = email.strip()  # stripped once: what is checked is what is sent
        if not isinstance(email, str) or not email:
            problems.append(f"{where}: 'email' must be a non-empty e-mail address")
        entry: dict[str, Any] = {"id": target.id, "email": email}
        name = spec.get("name")
        if name is not None:
            if not isinstance(name, str):
                problems.append(f"{where}: 'name' must be a string")
            entry["name"] = name
        order = spec.get("signingOrder", spec.get("signing_order"))
        if order is not None:
            if not isinstance(order, int) or isinstance(order, bool) or order < 0:
                problems.append(f"{where}: signingOrder must be a non-negative integer, not {order!r}")
            entry["signingOrder"] = order
        out.append(entry)
    for r in template.recipients:
        if r.id not in mapped and (r.role or "") not in OPTIONAL_ROLES:
            problems.append(
                f"{_recipient_who(r)} is a {r.role} who must act but is not mapped to an e-mail address "
                f"(add {{'id': {r.id}, 'email': ..., 'name': ...}} to recipients)"
            )
    return out


def _find_field(spec: Mapping[str, Any], template: Envelope) -> tuple[Field | None, str]:
    if spec.get("id") is not None:
        fid = spec["id"]
        if isinstance(fid, str) and fid.strip().isdigit():
            fid = int(fid)
        if not isinstance(fid, int) or isinstance(fid, bool):
            return None, f"id {spec['id']!r} is not a field id (an integer)"
        for f in template.fields:
            if f.id == fid:
                return f, ""
        return None, f"field id {fid} is not a field of the template"
    label = spec.get("label")
    if not isinstance(label, str) or not label.strip():
        return None, "name the template field with 'id' or 'label'"
    hits = [f for f in template.fields if _label(f).strip().lower() == label.strip().lower()]
    if len(hits) > 1:
        return None, f"label {label!r} matches {len(hits)} template fields; use 'id'"
    if not hits:
        return None, f"label {label!r} matches no template field"
    return hits[0], ""


def _options(f: Field) -> list[str]:
    values = (f.field_meta or {}).get("values") or []
    return [str(v.get("value")) for v in values if isinstance(v, Mapping) and v.get("value") is not None]


def _prefill_value(f: Field, value: Any, where: str, problems: list[str]) -> Any:
    """The value in the service's shape, or ``None`` after recording a problem."""
    ftype = (f.type or "").upper()
    meta = f.field_meta or {}
    if ftype not in PREFILL_TYPES:
        hint = " (a DATE field is filled with the signing date; prefill a TEXT field instead)"
        problems.append(
            f"{where}: a {ftype} field cannot be prefilled; only {', '.join(PREFILL_TYPES)} can"
            + (hint if ftype == "DATE" else "")
        )
        return None
    if ftype == "TEXT":
        if isinstance(value, datetime.date):
            value = value.isoformat()
        if not isinstance(value, str):
            problems.append(f"{where}: a TEXT value must be a string, not {type(value).__name__}")
            return None
        limit = meta.get("characterLimit")
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 and len(value) > limit:
            problems.append(f"{where}: {len(value)} characters exceed the field's characterLimit {limit}")
        return value
    if ftype == "NUMBER":
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                problems.append(f"{where}: {value!r} is not a finite number")
                return None
            value = str(value)
        if not isinstance(value, str) or not _NUMBER.match(value.strip()):
            # The real service stores any string here (err_template_use_bad_number is a 200).
            problems.append(f"{where}: {value!r} is not a number (e.g. '1250.50')")
            return None
        number = float(value.strip().replace(",", "."))
        for key, sign in (("minValue", 1), ("maxValue", -1)):
            bound = meta.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool) and sign * (bound - number) > 0:
                problems.append(f"{where}: {value} is outside the field's {key} {bound}")
        return value.strip()
    options = _options(f)
    if ftype == "CHECKBOX":
        chosen = [value] if isinstance(value, str) else value
        if not isinstance(chosen, list | tuple) or not chosen or not all(isinstance(v, str) for v in chosen):
            problems.append(f"{where}: a CHECKBOX value must be a non-empty list of option values")
            return None
        for v in chosen:
            if v not in options:
                problems.append(
                    f"{where}: {v!r} is not an option of the field ({', '.join(options) or 'none'})"
                )
        return list(chosen)
    if not isinstance(value, str):
        problems.append(f"{where}: a {ftype} value must be a string, not {type(value).__name__}")
        return None
    if value not in options:
        problems.append(f"{where}: {value!r} is not an option of the field ({', '.join(options) or 'none'})")
    return value


def _prefill(prefill: Any, template: Envelope, problems: list[str]) -> list[dict[str, Any]]:
    if prefill is None:
        return []
    if isinstance(prefill, Mapping):
        # {label or id: value} is accepted as a shorthand.
        prefill = [
            {"id": k} | {"value": v} if isinstance(k, int) else {"label": k, "value": v}
            for k, v in prefill.items()
        ]
    if isinstance(prefill, str) or not isinstance(prefill, Sequence):
        problems.append(
            "prefill_fields must be a list of {id or label, value} objects or a {label: value} map"
        )
        return []
    out: list[dict[str, Any]] = []
    seen: set[int] = set()
    for index, spec in enumerate(prefill):
        where = f"prefill_fields[{index}]"
        if not isinstance(spec, Mapping):
            problems.append(f"{where}: must be an object with id (or label) and value")
            continue
        target, why = _find_field(spec, template)
        if target is None:
            problems.append(f"{where}: {why}")
            continue
        where = (
            f"{where} (field {target.id} {target.type}{' ' + repr(_label(target)) if _label(target) else ''})"
        )
        if target.id in seen:
            problems.append(f"{where}: prefilled twice")
            continue
        seen.add(target.id)
        given_type = spec.get("type")
        if given_type is not None and str(given_type).lower() != (target.type or "").lower():
            problems.append(f"{where}: type {given_type!r} does not match the field's type {target.type}")
            continue
        if "value" not in spec:
            problems.append(f"{where}: 'value' is required")
            continue
        value = _prefill_value(target, spec["value"], where, problems)
        if value is not None:
            out.append({"id": target.id, "type": (target.type or "").lower(), "value": value})
    return out


def _replacements(
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


def validate_use_payload(
    template: Envelope,
    *,
    recipients: Any,
    prefill_fields: Any = None,
    files: Any = None,
    external_id: Any = None,
    folder_id: Any = None,
    distribute: bool = False,
    override: Mapping[str, Any] | None = None,
    attachments: Sequence[Mapping[str, Any]] | None = None,
    form_values: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[Any], list[str]]:
    """Check a whole ``/envelope/use`` call against the template and build its ``payload`` JSON.

    :param template: The template, as read with ``get_envelope`` (items, recipients and fields).
    :param recipients: ``[{"id" or "placeholder", "email", "name"?, "signingOrder"?}]``: every template
        recipient who must act (any role but CC) mapped exactly once.
    :param prefill_fields: ``[{"id" or "label", "value", "type"?}]`` or ``{label: value}``.
    :param files: Replacement PDFs: ``{item id or item title: source}`` or a list in item order
        (``None`` entries keep the template's PDF).
    :param external_id: Your reference for the new envelope (at most 255 characters).
    :param folder_id: The document folder for the new envelope.
    :param distribute: Send the envelope at once.
    :param override: ``title``, ``subject``, ``message``, ``timezone``, ``dateFormat``, ``language``...
    :param attachments: ``[{"label", "url"}]`` (or the service's ``{"label", "data"}``); a label and an
        ``https`` link each (see :mod:`airflow_provider_docsign.service.attachments`).
    :param form_values: PDF form values by form field name.
    :return: ``(payload, file sources, multipart file names)``.
    :raises DocsignValidationError: listing every problem found.
    """
    problems: list[str] = []
    if (template.type or "TEMPLATE") != "TEMPLATE":
        problems.append(f"{template.id} is a {template.type}, not a TEMPLATE")
    mapped = _map_recipients(recipients, template, problems)
    if distribute:
        for r in template.recipients:
            if r.role == "SIGNER" and not any(
                f.recipient_id == r.id and (f.type or "") in SIGNATURE_FIELD_TYPES for f in template.fields
            ):
                problems.append(
                    f"{_recipient_who(r)} is a SIGNER without a signature field: the envelope would be "
                    "created but could not be sent"
                )
    prefill = _prefill(prefill_fields, template, problems)
    sources, names, custom = _replacements(files, template, problems)
    if external_id is not None and (not isinstance(external_id, str) or len(external_id.strip()) > 255):
        problems.append("external_id must be a string of at most 255 characters")
    if folder_id is not None and (not isinstance(folder_id, str) or not folder_id.strip()):
        problems.append(f"folder_id must be a non-empty string, not {folder_id!r}")
    checked_attachments: list[dict[str, str]] = []
    if attachments:
        checked_attachments, found = normalize_attachments(attachments)
        problems.extend(found)
    if override is not None:
        if not isinstance(override, Mapping):
            problems.append("override must be an object")
        else:
            unknown = sorted(set(override) - set(_OVERRIDE_KEYS))
            if unknown:
                problems.append(f"override: unknown keys {unknown} (known: {', '.join(_OVERRIDE_KEYS)})")
            title = override.get("title")
            if title is not None and (not isinstance(title, str) or not title.strip()):
                problems.append("override.title must be a non-empty string")
    if problems:
        raise DocsignValidationError(problems, f"use_template request for {template.id}")
    payload: dict[str, Any] = {"envelopeId": template.id, "recipients": mapped}
    if external_id is not None:
        payload["externalId"] = external_id.strip()
    if folder_id is not None:
        payload["folderId"] = folder_id
    if prefill:
        payload["prefillFields"] = prefill
    if custom:
        payload["customDocumentData"] = custom
    if override:
        payload["override"] = dict(override)
    if checked_attachments:
        payload["attachments"] = [{"label": a["label"], "data": a["url"]} for a in checked_attachments]
    if form_values:
        payload["formValues"] = dict(form_values)
    payload["distributeDocument"] = bool(distribute)
    return payload, sources, names


def resolve_prefill(template: Envelope, prefill_fields: Any) -> dict[int, Any]:
    """Prefill values by template field id, checked as :func:`validate_use_payload` checks them.

    :param template: The template.
    :param prefill_fields: ``[{"id" or "label", "value"}]`` or ``{label: value}``.
    :raises DocsignValidationError: listing every problem found.
    """
    problems: list[str] = []
    entries = _prefill(prefill_fields, template, problems)
    if problems:
        raise DocsignValidationError(problems, f"prefill_fields for {template.id}")
    return {int(e["id"]): e["value"] for e in entries}


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
    sources, _, custom = _replacements(files, stripped, problems)
    problems = [p for p in problems if p.startswith("files")]
    if problems:
        raise DocsignValidationError(problems, f"replacement files for {template.id}")
    return {c["envelopeItemId"]: src for c, src in zip(custom, sources, strict=True)}


def describe_template(template: Envelope) -> list[str]:
    """Lines that show a template's items, recipients and fields with their ids and labels."""
    lines = [f"Template {template.id} {template.title!r} (type {template.type}, folder {template.folder_id})"]
    lines.append("Items:")
    for item in template.items:
        lines.append(f"  {item.id}  {item.title!r}")
    lines.append("Recipients (map with {'id' or 'placeholder', 'email', 'name'}):")
    for r in template.recipients:
        must = "optional" if (r.role or "") in OPTIONAL_ROLES else "must be mapped"
        lines.append(f"  id {r.id}  {r.role}  name {r.name!r}  email {r.email!r}  ({must})")
        for f in template.fields:
            if f.recipient_id != r.id:
                continue
            label = _label(f)
            can = "prefill" if (f.type or "") in PREFILL_TYPES else "signer fills"
            options = _options(f)
            extra = f"  options {options}" if options else ""
            lines.append(
                f"    field {f.id}  {f.type}  label {label!r}  item {f.envelope_item_id} page {f.page}  "
                f"({can}){extra}"
            )
    return lines
