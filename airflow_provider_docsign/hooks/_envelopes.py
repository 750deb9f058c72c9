"""Envelope methods of :class:`~.docsign.DocsignHook`: create, read, find, update, send, cancel, audit log.

A mixin typed against :class:`~._protocol.HookCore`: every request goes through the hook's one request
loop, so the retry rules of :mod:`._http` apply (a create is never repeated after it may have reached
the service).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from airflow_provider_docsign.exceptions import DocsignError, DocsignValidationError
from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._endpoints import camel
from airflow_provider_docsign.hooks._protocol import HookCore
from airflow_provider_docsign.service.expiry import DEFAULT as DEFAULT_PERIOD
from airflow_provider_docsign.service.expiry import merge_meta
from airflow_provider_docsign.service.models import Envelope, EnvelopeStatus, EnvelopeSummary
from airflow_provider_docsign.service.payloads import validate_create_payload

log = logging.getLogger("airflow_provider_docsign.hooks.docsign")

#: The flags of ``meta.emailSettings`` (v2.17 ``ZDocumentEmailSettingsSchema``).
EMAIL_SETTINGS = (
    "recipientSigningRequest",
    "recipientRemoved",
    "recipientSigned",
    "documentPending",
    "documentCompleted",
    "documentDeleted",
    "ownerDocumentCompleted",
    "ownerRecipientExpired",
    "ownerDocumentCreated",
)


def _keep_email_settings(hook: HookCore, envelope_id: str, meta: Mapping[str, Any] | None) -> Any:
    """``meta`` with a partial ``emailSettings`` completed from the envelope's current flags.

    The real service (v2.17) parses ``meta.emailSettings`` with a default of ``true`` for every flag it
    leaves out and then *replaces* the stored object, on ``/envelope/update`` and on
    ``/envelope/distribute`` alike: turning one e-mail off would turn back on every other one the team
    had turned off. So a partial object is completed from the envelope (one extra read); a complete one,
    or none, is sent as given.
    """
    given = meta.get("emailSettings") if isinstance(meta, Mapping) else None
    if not isinstance(given, Mapping) or all(key in given for key in EMAIL_SETTINGS):
        return meta
    current = (hook.get_envelope(envelope_id).meta or {}).get("emailSettings")
    kept = {k: v for k, v in current.items() if k in EMAIL_SETTINGS} if isinstance(current, Mapping) else {}
    return {**dict(meta or {}), "emailSettings": {**kept, **given}}


class EnvelopeMethods:
    """Envelope endpoints (mixed into ``DocsignHook``)."""

    def create_envelope(
        self: HookCore,
        *,
        title: str,
        files: Sequence[Any],
        recipients: Sequence[Mapping[str, Any]] | None = None,
        external_id: str | None = None,
        meta: Mapping[str, Any] | None = None,
        folder_id: str | None = None,
        envelope_type: str = "DOCUMENT",
        expiration_period: Any = DEFAULT_PERIOD,
        reminders: Any = DEFAULT_PERIOD,
        **payload_extra: Any,
    ) -> str:
        """Create a draft envelope from PDFs in one streaming multipart request; return its id.

        Everything is validated locally first (see
        :func:`~airflow_provider_docsign.service.payloads.validate_create_payload`); on a problem nothing is
        sent. A create is never retried after it may have reached the service.

        :param title: The envelope title (1-255 characters).
        :param files: The PDFs, in order: local paths, binary file objects or ``ObjectStoragePath``.
            ``field.identifier`` is the zero-based index into this list.
        :param recipients: Recipients in the service's shape, with nested ``fields``.
        :param external_id: Your own reference; lets you find the envelope after an ambiguous create.
        :param meta: Document meta in the service's shape (``subject``, ``message``, ``timezone``, ...).
        :param folder_id: Create the envelope in this folder.
        :param envelope_type: ``DOCUMENT`` or ``TEMPLATE``.
        :param expiration_period: How long signing links stay valid after sending: ``"14d"``, ``"2w"``,
            ``"1m"``, ``"1y"``, ``{"unit": "day", "amount": 14}``, or ``None`` for never; sent as
            ``meta.envelopeExpirationPeriod``. Default: leave it to the team's setting (3 months).
        :param reminders: Automatic reminders, ``{"send_after": "3d", "repeat_every": "2d"}`` or
            ``None`` for none; sent as ``meta.reminderSettings``. Default: the team's setting.
        :param payload_extra: Other payload keys, passed unchanged (e.g. ``visibility``, ``formValues``).
        """
        meta = merge_meta(meta, expiration_period, reminders)
        sources = list(files) if not isinstance(files, str | bytes | os.PathLike) else [files]
        payload, pdfs = validate_create_payload(
            title=title,
            files=sources,
            recipients=recipients,
            external_id=external_id,
            meta=meta,
            folder_id=folder_id,
            envelope_type=envelope_type,
            payload_extra=payload_extra,
        )
        call = ep.create_envelope(payload, sources, [p.name for p in pdfs])
        response = self._send(call, external_id=external_id)
        body = self._json(response, call, external_id)
        if not isinstance(body, Mapping) or not body.get("id"):
            raise self._ambiguous(call, "the answer had no envelope id", external_id)
        envelope_id = str(body["id"])
        log.info("Created Docsign envelope %s with %d file(s)", envelope_id, len(pdfs))
        return envelope_id

    def get_envelope(self: HookCore, envelope_id: str) -> Envelope:
        """Return the full envelope (items sorted by ``order``, recipients, fields).

        :param envelope_id: The envelope id.
        """
        return ep.parse_envelope(self._call(ep.get_envelope(envelope_id)))

    def get_envelopes(self: HookCore, envelope_ids: Iterable[str]) -> list[Envelope]:
        """Return many envelopes, 20 ids per request, in the order asked; unknown ids are left out.

        :param envelope_ids: Envelope ids.
        """
        ids = list(dict.fromkeys(envelope_ids))
        result: list[Envelope] = []
        for start in range(0, len(ids), ep.GET_MANY_BATCH):
            batch = ids[start : start + ep.GET_MANY_BATCH]
            result.extend(ep.parse_envelopes_in_order(self._call(ep.get_many(batch)), batch))
        return result

    def find_envelopes(
        self: HookCore,
        *,
        query: str | None = None,
        status: str | EnvelopeStatus | None = None,
        folder_id: str | None = None,
        envelope_type: str | None = None,
        has_expired_recipients: bool | None = None,
        template_id: int | str | None = None,
        source: str | None = None,
        order_by: tuple[str, str] | None = None,
    ) -> Iterator[EnvelopeSummary]:
        """Iterate over matching envelopes, following every page (100 per page).

        Note (real service): without ``folder_id`` only envelopes at the root are listed, and
        ``query`` is a case-insensitive substring match over title, externalId and recipients. There
        is no date filter: filter ``created_at`` yourself (``order_by=("createdAt", "asc")`` lets you
        stop at the first envelope that is too new).

        :param query: Search text.
        :param status: Only envelopes with this status.
        :param folder_id: Only envelopes in this folder.
        :param envelope_type: ``DOCUMENT`` or ``TEMPLATE``.
        :param has_expired_recipients: ``True``: only envelopes with at least one recipient whose
            signing link has expired (unsigned, not CC, ``expiresAt`` past, judged by the service's
            clock). ``False`` or ``None``: no filter (the service has no "none expired" filter; it
            ignores ``hasExpiredRecipients=false``).
        :param template_id: Only envelopes made from this template: its envelope id
            (``envelope_…``, read once to find its number), or the number itself (``14`` or
            ``"template_14"``, the ``templateId`` of the envelopes made from it).
        :param source: How the envelope was made: ``DOCUMENT``, ``TEMPLATE`` or ``TEMPLATE_DIRECT_LINK``.
        :param order_by: ``("createdAt", "asc" | "desc")``; the service's default is newest first.
        """
        status_value = status.value if isinstance(status, EnvelopeStatus) else status
        if status_value is not None and status_value not in {s.value for s in EnvelopeStatus}:
            raise DocsignValidationError([f"unknown status {status_value!r}"], "find_envelopes")
        number = _template_number(self, template_id) if template_id is not None else None
        # Built once, before the first request, so a bad filter is refused with nothing sent.
        ep.find_envelopes(
            page=1, has_expired_recipients=has_expired_recipients, source=source, order_by=order_by
        )
        for data in self._pages(
            lambda page: ep.find_envelopes(
                page=page,
                query=query,
                status=status_value,
                folder_id=folder_id,
                envelope_type=envelope_type,
                has_expired_recipients=has_expired_recipients,
                template_id=number,
                source=source,
                order_by=order_by,
            )
        ):
            yield EnvelopeSummary.from_json(data)

    def find_envelopes_by_external_id(
        self: HookCore, external_id: str, *, folder_id: str | None = None
    ) -> list[EnvelopeSummary]:
        """Return the envelopes whose ``externalId`` equals ``external_id`` exactly.

        The service only offers a substring search (and only sees the root without ``folder_id``), so
        the results are filtered to exact matches. ``externalId`` is not unique: expect 0, 1 or more.

        :param external_id: The external id to look for.
        :param folder_id: The folder the envelope was created in (``None``: the root).
        """
        if not isinstance(external_id, str) or not external_id.strip():
            raise DocsignValidationError(
                ["external_id must be a non-empty string"], "find_envelopes_by_external_id"
            )
        wanted = external_id.strip()  # the service trims externalId on create
        return [e for e in self.find_envelopes(query=wanted, folder_id=folder_id) if e.external_id == wanted]

    def update_envelope(
        self: HookCore,
        envelope_id: str,
        *,
        data: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        **changes: Any,
    ) -> EnvelopeSummary:
        """Change an envelope's title, externalId, folder, visibility or meta, keeping everything else.

        The service changes only the keys given (``data`` and ``meta`` alike), with one exception this
        method makes up for: a partial ``meta.emailSettings`` would reset the flags it leaves out to
        ``true``, so it is completed from the envelope's current flags first (one extra read).

        :param envelope_id: The envelope id.
        :param data: Changes in the service's shape (``title``, ``externalId``, ``folderId``, ...).
        :param meta: Meta changes in the service's shape.
        :param changes: The same as ``data`` with snake_case names (``title=``, ``external_id=``,
            ``folder_id=`` where ``None`` moves to the root).
        """
        merged = dict(data or {})
        merged.update(camel(changes))
        problems: list[str] = []
        for key in ("title", "externalId"):
            value = merged.get(key)
            if key in merged and value is not None and not isinstance(value, str):
                problems.append(f"{key} must be a string")
        if "title" in merged and not (isinstance(merged["title"], str) and merged["title"].strip()):
            problems.append("title must not be empty")
        if not merged and not meta:
            problems.append("nothing to update: give data, meta or keyword changes")
        if problems:
            raise DocsignValidationError(problems, "update_envelope")
        meta = _keep_email_settings(self, envelope_id, meta)
        return EnvelopeSummary.from_json(self._call(ep.update_envelope(envelope_id, merged, meta)))

    def duplicate_envelope(
        self: HookCore,
        envelope_id: str,
        *,
        title: str | None = None,
        external_id: str | None = None,
        folder_id: str | None = None,
        include_recipients: bool = True,
        include_fields: bool = True,
    ) -> str:
        """Copy a document or a template as a new DRAFT; return the copy's id.

        The service copies the original PDFs (never the signed ones), the meta, and (if asked) the
        recipients, with fresh signing state, and their fields. It does **not** copy the externalId,
        the folder, the attachments or form values, and it titles the copy ``"<title> (copy)"``: its
        ``/envelope/duplicate`` takes no title. So a ``title``, ``external_id`` or ``folder_id`` given
        here is set by one ``POST /envelope/update`` right after the duplicate.

        Not idempotent, and never retried after it may have reached the service. If the update fails,
        the error names the copy (which then has the service's title, no externalId and sits at the
        root).

        :param envelope_id: The envelope or template to copy.
        :param title: The copy's title (default: the service's ``"<title> (copy)"``).
        :param external_id: The copy's externalId (default: none; lets a retry find the copy).
        :param folder_id: Move the copy into this folder (default: the root, where the service puts it).
        :param include_recipients: Copy the recipients.
        :param include_fields: Copy the fields (only with ``include_recipients``: fields belong to recipients,
            so the service copies none without them).
        """
        changes: dict[str, Any] = {}
        if title is not None:
            changes["title"] = title
        if external_id is not None:
            changes["externalId"] = external_id
        if folder_id is not None:
            changes["folderId"] = folder_id
        problems: list[str] = []
        if isinstance(title, str) and not title.strip():
            problems.append("title must not be empty")
        for key in ("title", "externalId"):
            if key in changes and not isinstance(changes[key], str):
                problems.append(f"{key} must be a string")
        if problems:
            raise DocsignValidationError(problems, "duplicate_envelope")
        if changes:
            # The changes go out in an update after the copy exists: that request's one outgoing check
            # runs now, so that a refused title never leaves a half-made copy behind.
            ep.check_outgoing(ep.update_envelope(envelope_id, changes, None))
        call = ep.duplicate_envelope(
            envelope_id, include_recipients=include_recipients, include_fields=include_fields
        )
        body = self._call(call)
        if not isinstance(body, Mapping) or not body.get("id"):
            raise self._ambiguous(call, "the answer had no envelope id", None)
        new_id = str(body["id"])
        log.info("Duplicated Docsign envelope %s as %s", envelope_id, new_id)
        if changes:
            try:
                self._call(ep.update_envelope(new_id, changes, None))
            except DocsignError as exc:
                raise DocsignError(
                    f"envelope {envelope_id} was duplicated as {new_id}, but setting its "
                    f"{', '.join(sorted(changes))} failed ({exc}); update or delete {new_id}"
                ) from None
        return new_id

    def delete_envelope(self: HookCore, envelope_id: str) -> None:
        """Delete an envelope (drafts and pending ones are removed; finished ones are soft-deleted).

        :param envelope_id: The envelope id.
        """
        self._call(ep.delete_envelope(envelope_id))

    def distribute_envelope(
        self: HookCore, envelope_id: str, *, meta: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Send a draft to its recipients (DRAFT -> PENDING); return the raw answer.

        The answer lists every recipient with its ``signingUrl`` (sensitive: treat it as a secret).
        Note (real service): an unknown or completed envelope answers HTTP 500, not 404.

        :param envelope_id: The envelope id.
        :param meta: Meta to save before sending (``subject``, ``message``, ...); a partial
            ``emailSettings`` is completed from the envelope's current flags (as in :meth:`update_envelope`).
        """
        meta = _keep_email_settings(self, envelope_id, meta)
        body = self._call(ep.distribute_envelope(envelope_id, meta))
        return dict(body) if isinstance(body, Mapping) else {"response": body}

    def redistribute_envelope(
        self: HookCore, envelope_id: str, recipient_ids: Sequence[int]
    ) -> dict[str, Any]:
        """Re-send the signing request to some recipients of a pending envelope; return the raw answer.

        :param envelope_id: The envelope id.
        :param recipient_ids: Recipient ids to remind.
        """
        body = self._call(ep.redistribute_envelope(envelope_id, recipient_ids))
        return dict(body) if isinstance(body, Mapping) else {"response": body}

    def cancel_envelope(self: HookCore, envelope_id: str, *, reason: str | None = None) -> None:
        """Cancel a pending envelope (PENDING -> CANCELLED).

        :param envelope_id: The envelope id.
        :param reason: Why, recorded in the audit log.
        """
        self._call(ep.cancel_envelope(envelope_id, reason))

    def get_audit_log(
        self: HookCore, envelope_id: str, *, oldest_first: bool = False
    ) -> Iterator[dict[str, Any]]:
        """Iterate over the envelope's audit log entries (every page, newest first).

        A page is requested only when the iteration reaches it: close the iterator to stop paging.

        :param envelope_id: The envelope id.
        :param oldest_first: Oldest first instead (``createdAt`` ascending), so the first sending and
            opening come on the first pages.
        """
        pages = self._pages(lambda page: ep.audit_log(envelope_id, page=page, oldest_first=oldest_first))
        for entry in pages:
            yield dict(entry)


def _template_number(hook: HookCore, template_id: int | str) -> int:
    """The number the service files a template's documents under (``templateId``, e.g. ``14``).

    :param hook: The hook (reads the template when given its envelope id).
    :param template_id: ``14``, ``"14"``, ``"template_14"`` or the template's envelope id.
    """
    if isinstance(template_id, str) and template_id.startswith("template_"):
        template_id = template_id[len("template_") :]
    if isinstance(template_id, str) and template_id.startswith("envelope_"):
        secondary = str(hook.get_template(template_id).raw.get("secondaryId") or "")
        if not secondary.startswith("template_"):
            raise DocsignValidationError(
                [f"template {template_id} has no template number (secondaryId {secondary!r})"],
                "find_envelopes",
            )
        template_id = secondary[len("template_") :]
    return ep.check_int_id(template_id, "template_id")
