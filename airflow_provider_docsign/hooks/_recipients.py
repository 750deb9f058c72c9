"""Recipient methods of :class:`~.docsign.DocsignHook` (a mixin typed against ``HookCore``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._protocol import HookCore
from airflow_provider_docsign.service.models import Recipient
from airflow_provider_docsign.service.payloads import validate_recipients_for_envelope


class RecipientMethods:
    """Recipient endpoints (mixed into ``DocsignHook``)."""

    def get_recipient(self: HookCore, recipient_id: int) -> Recipient:
        """Return a recipient, with its fields.

        :param recipient_id: The recipient id.
        """
        return Recipient.from_json(self._call(ep.get_recipient(recipient_id)))

    def create_recipients(
        self: HookCore, envelope_id: str, recipients: Sequence[Mapping[str, Any]]
    ) -> list[Recipient]:
        """Add recipients to an envelope (fields are added separately with :meth:`create_fields`).

        :param envelope_id: The envelope id.
        :param recipients: ``[{"email", "name", "role", "signingOrder"?}]`` in the service's shape.
        """
        data = validate_recipients_for_envelope(recipients)
        body = self._call(ep.create_recipients(envelope_id, data))
        return [Recipient.from_json(r) for r in (body or {}).get("data") or []]

    def update_recipients(
        self: HookCore, envelope_id: str, recipients: Sequence[Mapping[str, Any]]
    ) -> list[Recipient]:
        """Change recipients (by ``id``). Note: the service resets their send and signing status.

        Only the keys given change: the service (v2.17) merges the change over the stored recipient and
        keeps ``accessAuth``/``actionAuth`` when the request leaves them out (each one separately), so
        nothing needs to be read and sent back. A role change to CC or VIEWER deletes the recipient's
        fields.

        :param envelope_id: The envelope id.
        :param recipients: ``[{"id", "email"?, "name"?, "role"?, ...}]`` in the service's shape.
        """
        data = validate_recipients_for_envelope(recipients, context="update_recipients request", update=True)
        body = self._call(ep.update_recipients(envelope_id, data))
        return [Recipient.from_json(r) for r in (body or {}).get("data") or []]

    def delete_recipient(self: HookCore, recipient_id: int) -> None:
        """Remove a recipient who has not interacted yet.

        :param recipient_id: The recipient id.
        """
        self._call(ep.delete_recipient(recipient_id))

    def reject_recipient(self: HookCore, recipient_id: int, *, envelope_id: str, reason: str) -> Recipient:
        """Record an external rejection by a recipient of a pending envelope (it then becomes REJECTED).

        :param recipient_id: The recipient id.
        :param envelope_id: The envelope id.
        :param reason: Why the recipient rejected.
        """
        return Recipient.from_json(self._call(ep.reject_recipient(recipient_id, envelope_id, reason)))
