"""The template methods of :class:`~.docsign.DocsignHook` (a mixin typed against ``HookCore``).

A template is an envelope of type ``TEMPLATE``: it is created, read and listed through the envelope
routes, used with ``POST /envelope/use`` (streaming multipart, like a create) and copied with
``POST /envelope/duplicate``. Every method here goes through the hook's one request loop, so the retry
policy is the same: a use or duplicate is a create, never repeated after it may have reached the service.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._protocol import HookCore
from airflow_provider_docsign.service.expiry import DEFAULT as DEFAULT_PERIOD
from airflow_provider_docsign.service.expiry import merge_meta
from airflow_provider_docsign.service.models import Envelope, EnvelopeSummary
from airflow_provider_docsign.service.templates import TemplateUse, validate_use_payload

log = logging.getLogger("airflow_provider_docsign.hooks.docsign")

TEMPLATE = "TEMPLATE"


class TemplateMethods:
    """Create, find, read, use and duplicate templates (mixed into ``DocsignHook``)."""

    def create_template(
        self: HookCore,
        *,
        title: str,
        files: Sequence[Any],
        recipients: Sequence[Mapping[str, Any]] | None = None,
        external_id: str | None = None,
        meta: Mapping[str, Any] | None = None,
        folder_id: str | None = None,
        **payload_extra: Any,
    ) -> str:
        """Create a template from PDFs, recipient roles (placeholder e-mails) and fields; return its id.

        Validated exactly as :meth:`create_envelope` validates (pages, coordinates, roles, a signature
        field for every SIGNER); nothing is sent on a problem.

        :param title: The template title.
        :param files: The PDFs, in order (``field.identifier`` is the index into this list).
        :param recipients: The roles, e.g. ``{"email": "customer@placeholder.test", "name": "Customer",
            "role": "SIGNER", "fields": [...]}``. Give fields a ``fieldMeta.label`` to prefill them by label.
        :param external_id: Your reference for the template.
        :param meta: Document meta the documents made from it inherit.
        :param folder_id: A folder of type ``TEMPLATE``.
        :param payload_extra: Other payload keys, passed unchanged.
        """
        return self.create_envelope(
            title=title,
            files=files,
            recipients=recipients,
            external_id=external_id,
            meta=meta,
            folder_id=folder_id,
            envelope_type=TEMPLATE,
            **payload_extra,
        )

    def get_template(self: HookCore, template_id: str) -> Envelope:
        """Return a template with its items, recipients and fields.

        :param template_id: The template's envelope id.
        :raises DocsignValidationError: if the envelope is not a template.
        """
        template = self.get_envelope(template_id)
        if template.type != TEMPLATE:
            raise DocsignValidationError(
                [f"{template_id} is a {template.type}, not a TEMPLATE"], "get_template"
            )
        return template

    def find_templates(
        self: HookCore, *, query: str | None = None, folder_id: str | None = None
    ) -> Iterator[EnvelopeSummary]:
        """Iterate over templates, following every page.

        As for documents, the real service lists only the root without ``folder_id``, and ``query`` is a
        case-insensitive substring match over title, externalId and recipients.

        :param query: Search text.
        :param folder_id: A template folder.
        """
        return self.find_envelopes(query=query, folder_id=folder_id, envelope_type=TEMPLATE)

    def find_templates_by_title(
        self: HookCore, title: str, *, folder_id: str | None = None
    ) -> list[EnvelopeSummary]:
        """Return the templates whose title equals ``title`` exactly (0, 1 or more).

        :param title: The exact title.
        :param folder_id: The template folder (``None``: the root).
        """
        if not isinstance(title, str) or not title.strip():
            raise DocsignValidationError(["title must be a non-empty string"], "find_templates_by_title")
        wanted = title.strip()
        return [t for t in self.find_templates(query=wanted, folder_id=folder_id) if t.title == wanted]

    def use_template(
        self: HookCore,
        template_id: str,
        *,
        recipients: Sequence[Mapping[str, Any]],
        prefill_fields: Any = None,
        files: Any = None,
        external_id: str | None = None,
        folder_id: str | None = None,
        distribute: bool = False,
        override: Mapping[str, Any] | None = None,
        attachments: Sequence[Mapping[str, Any]] | None = None,
        form_values: Mapping[str, Any] | None = None,
        template: Envelope | None = None,
        expiration_period: Any = DEFAULT_PERIOD,
        reminders: Any = DEFAULT_PERIOD,
    ) -> TemplateUse:
        """Create an envelope from a template in one streaming multipart request.

        The template is read first and the whole call is checked against it (see
        :func:`~airflow_provider_docsign.service.templates.validate_use_payload`): every recipient who must
        act
        mapped once, prefill values that fit their fields, replacement PDFs that are PDFs and have every
        page the template's fields use. On a problem nothing is sent. Like a create, a use is never
        retried after it may have reached the service: look the envelope up by ``external_id``.

        :param template_id: The template's envelope id.
        :param recipients: ``[{"id" or "placeholder", "email", "name"?, "signingOrder"?}]``.
        :param prefill_fields: ``[{"id" or "label", "value"}]`` or ``{label: value}``.
        :param files: Replacement PDFs, ``{item id or title: source}`` or a list in item order; sources
            are local paths, binary file objects or ``ObjectStoragePath``.
        :param external_id: Your reference for the new envelope (lets a retry find it).
        :param folder_id: The document folder for the new envelope.
        :param distribute: Send it at once (``distributeDocument``).
        :param override: ``title``, ``subject``, ``message``, ``timezone``, ``dateFormat``, ``language``...
        :param attachments: ``[{"label", "url"}]`` (or ``{"label", "data"}``): labelled ``https`` links.
        :param form_values: PDF form values.
        :param template: The template if already read (saves one request).
        :param expiration_period: How long signing links stay valid (``"14d"``, ``"2w"``, ``"1m"``,
            ``{"unit", "amount"}``, ``None`` for never); sent as ``override.envelopeExpirationPeriod``.
        :param reminders: ``{"send_after": "3d", "repeat_every": "2d"}`` or ``None``. The real
            service's ``/envelope/use`` has no ``reminderSettings`` (OpenAPI 2.17), so they are saved
            with one ``POST /envelope/update`` right after the use; with ``distribute=True`` the
            envelope is created as a draft, updated, then distributed, so reminders apply from the send.
        """
        expiry_override = merge_meta(override, expiration_period)
        reminder_meta = merge_meta(None, reminders=reminders)
        if expiry_override is not None:
            override = expiry_override
        send_now = False
        if reminder_meta:
            send_now, distribute = distribute, False
        if template is None or template.id != template_id:
            template = self.get_template(template_id)
        if isinstance(files, str | bytes | os.PathLike):
            files = [files]
        payload, sources, names = validate_use_payload(
            template,
            recipients=recipients,
            prefill_fields=prefill_fields,
            files=files,
            external_id=external_id,
            folder_id=folder_id,
            distribute=distribute,
            override=override,
            attachments=attachments,
            form_values=form_values,
        )
        call = ep.use_template(payload, sources, names)
        ext = payload.get("externalId")
        response = self._send(call, external_id=ext)
        body = self._json(response, call, ext)
        if not isinstance(body, Mapping) or not body.get("id"):
            raise self._ambiguous(call, "the answer had no envelope id", ext)
        result = TemplateUse.from_json(body)
        if reminder_meta:
            # Not a retry: the envelope exists; if this fails the error names it (found by externalId).
            self.update_envelope(result.envelope_id, meta=reminder_meta)
            if send_now:
                self.distribute_envelope(result.envelope_id)
        log.info(
            "Created Docsign envelope %s from template %s (%d replacement file(s), %d prefilled field(s))",
            result.envelope_id,
            template_id,
            len(sources),
            len(payload.get("prefillFields") or ()),
        )
        return result

    def duplicate_template(
        self: HookCore,
        template_id: str,
        *,
        include_recipients: bool = True,
        include_fields: bool = True,
    ) -> str:
        """Copy a template (titled ``"<title> (copy)"`` by the service); return the new template's id.

        Not idempotent, and never retried after it may have reached the service.

        :param template_id: The template to copy.
        :param include_recipients: Copy its recipients.
        :param include_fields: Copy its fields.
        """
        self.get_template(template_id)
        return self.duplicate_envelope(
            template_id, include_recipients=include_recipients, include_fields=include_fields
        )
