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

The checks live by job: recipient mapping in :mod:`.template_recipients`, prefill values in
:mod:`.template_prefill`, replacement PDFs in :mod:`.template_replacements`; this module keeps the
typed results, the whole call's check and :func:`describe_template` (and re-exports the rest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service.attachments import normalize_attachments
from airflow_provider_docsign.service.models import Envelope
from airflow_provider_docsign.service.payloads import SIGNATURE_FIELD_TYPES
from airflow_provider_docsign.service.template_prefill import (
    PREFILL_TYPES,
    check_prefill,
    field_label,
    field_options,
    resolve_prefill,
)
from airflow_provider_docsign.service.template_recipients import OPTIONAL_ROLES, map_recipients, recipient_who
from airflow_provider_docsign.service.template_replacements import check_replacements, resolve_replacements

__all__ = [
    "PREFILL_TYPES",
    "TemplateUse",
    "UsedRecipient",
    "describe_template",
    "resolve_prefill",
    "resolve_replacements",
    "validate_use_payload",
]

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
    mapped = map_recipients(recipients, template, problems)
    if distribute:
        for r in template.recipients:
            if r.role == "SIGNER" and not any(
                f.recipient_id == r.id and (f.type or "") in SIGNATURE_FIELD_TYPES for f in template.fields
            ):
                problems.append(
                    f"{recipient_who(r)} is a SIGNER without a signature field: the envelope would be "
                    "created but could not be sent"
                )
    prefill = check_prefill(prefill_fields, template, problems)
    sources, names, custom = check_replacements(files, template, problems)
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
            label = field_label(f)
            can = "prefill" if (f.type or "") in PREFILL_TYPES else "signer fills"
            options = field_options(f)
            extra = f"  options {options}" if options else ""
            lines.append(
                f"    field {f.id}  {f.type}  label {label!r}  item {f.envelope_item_id} page {f.page}  "
                f"({can}){extra}"
            )
    return lines
