"""Attachment methods of :class:`~.docsign.DocsignHook`: labelled links that travel with an envelope.

A mixin typed against :class:`~._protocol.HookCore`. Labels and URLs are checked before anything is
sent (:func:`~airflow_provider_docsign.service.attachments.attachment_problems`: a label, an ``https`` link).
A
create is never repeated after it may have reached the service; on doubt, list the envelope's
attachments and look for the label.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._protocol import HookCore
from airflow_provider_docsign.service.attachments import Attachment, attachment_problems

log = logging.getLogger("airflow_provider_docsign.hooks.docsign")


def _checked(label: str, url: str, context: str) -> None:
    problems = attachment_problems(label, url)
    if problems:
        raise DocsignValidationError(problems, context)


class AttachmentMethods:
    """Attachment endpoints (mixed into ``DocsignHook``)."""

    def find_attachments(self: HookCore, envelope_id: str) -> list[Attachment]:
        """Return the envelope's attachments, oldest first.

        :param envelope_id: The envelope id.
        """
        body = self._call(ep.find_attachments(envelope_id))
        data = body.get("data") if isinstance(body, Mapping) else None
        return [Attachment.from_json(a) for a in data or [] if isinstance(a, Mapping)]

    def create_attachment(self: HookCore, envelope_id: str, *, label: str, url: str) -> str:
        """Attach a link to an envelope; return the new attachment's id.

        The service refuses this on a COMPLETED or REJECTED envelope (400 ``INVALID_REQUEST``).

        :param envelope_id: The envelope id.
        :param label: The text signers see, e.g. ``"Terms and conditions"``.
        :param url: An ``https://`` link.
        """
        _checked(label, url, "create_attachment")
        call = ep.create_attachment(envelope_id, label, url)
        body = self._call(call)
        if not isinstance(body, Mapping) or not body.get("id"):
            raise self._ambiguous(call, "the answer had no attachment id", None)
        attachment_id = str(body["id"])
        log.info("Attached link %s to Docsign envelope %s", attachment_id, envelope_id)
        return attachment_id

    def update_attachment(self: HookCore, attachment_id: str, *, label: str, url: str) -> None:
        """Change an attachment's label and link (the service needs both, even if one is unchanged).

        :param attachment_id: The attachment id.
        :param label: The new (or current) label.
        :param url: The new (or current) ``https://`` link.
        """
        _checked(label, url, "update_attachment")
        self._call(ep.update_attachment(attachment_id, label, url))

    def delete_attachment(self: HookCore, attachment_id: str) -> None:
        """Remove an attachment (unknown ids answer 404 ``NOT_FOUND``).

        :param attachment_id: The attachment id.
        """
        self._call(ep.delete_attachment(attachment_id))
