"""The service's rules for correcting an envelope after creation (pure: no network, no Airflow).

Documenso v2.17 lets recipients, fields and attachments change after a draft is sent, but not always.
These functions say, from an envelope as ``GET /envelope/{id}`` returns it, whether the service would
refuse a change, and with which error, so that an operator can refuse it **before** sending anything,
with the error the service would give. Facts from the v2.17.0 source:

* recipients (``update-envelope-recipients.ts``, ``delete-envelope-recipient.ts``) and fields
  (``update-envelope-fields.ts``, the ``delete-envelope-field`` route): once the envelope is finished
  (``completedAt`` set: COMPLETED, REJECTED or CANCELLED) every change is refused; while it is PENDING, a
  recipient who has *interacted* cannot change, and neither can their fields. A recipient has
  interacted when they signed, or filled in any field; a CC recipient never counts as having
  interacted, but CC and VIEWER recipients have no fields to change (``canRecipientBeModified`` and
  ``canRecipientFieldsBeModified`` in ``packages/lib/utils/recipients.ts``);
* attachments (``packages/lib/server-only/envelope-attachment/*``): refused on COMPLETED and REJECTED
  envelopes only.

Every refusal is HTTP 400 with the code ``INVALID_REQUEST``; the messages below are the service's own.
Not covered: AES/QES envelopes (qualified signature levels) are locked as soon as they leave DRAFT
(``ENVELOPE_TSP_LOCKED``), but the API does not say an envelope's signature level, so that refusal
still comes from the service.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from airflow_provider_docsign.attachments import FROZEN_MESSAGE, FROZEN_STATUSES
from airflow_provider_docsign.models import Envelope, EnvelopeStatus, Recipient

__all__ = [
    "Refusal",
    "attachment_change_refusal",
    "field_delete_refusal",
    "fields_update_refusal",
    "recipient_delete_refusal",
    "recipients_update_refusal",
]

INVALID_REQUEST = "INVALID_REQUEST"
ENVELOPE_COMPLETE = "Envelope already complete"
DOCUMENT_COMPLETE = "Document already complete"
RECIPIENT_INTERACTED = "Cannot modify a recipient who has already interacted with the document"
FIELD_INTERACTED = "Cannot modify a field where the recipient has already interacted with the document"
DELETE_INTERACTED = "Recipient has already interacted with the document."


@dataclass(frozen=True)
class Refusal:
    """The error the service would answer a change with.

    :param method: The HTTP method of the request that was not sent.
    :param path: Its path.
    :param message: The service's message.
    :param code: The service's error code.
    :param status: The HTTP status the service would answer.
    """

    method: str
    path: str
    message: str
    code: str = INVALID_REQUEST
    status: int = 400


def _finished(envelope: Envelope) -> bool:
    status = str(getattr(envelope.status, "value", envelope.status))
    return envelope.completed_at is not None or status in {s.value for s in EnvelopeStatus.TERMINAL_STATUSES}


def _interacted(envelope: Envelope, recipient: Recipient) -> bool:
    """``not canRecipientBeModified``: signed, or filled in a field (never for CC)."""
    if (recipient.role or "") == "CC":
        return False
    if (recipient.signing_status or "") == "SIGNED":
        return True
    return any(f.inserted for f in envelope.fields if f.recipient_id == recipient.id)


def _fields_locked(envelope: Envelope, recipient: Recipient) -> bool:
    """``not canRecipientFieldsBeModified``."""
    return _interacted(envelope, recipient) or (recipient.role or "") in ("CC", "VIEWER")


def recipients_update_refusal(envelope: Envelope, recipient_ids: Iterable[int]) -> Refusal | None:
    """Whether ``POST /envelope/recipient/update-many`` of these recipients would be refused.

    Ids that are not recipients of the envelope are not judged here (check them first).

    :param envelope: The envelope as read just before.
    :param recipient_ids: The recipients to change.
    """
    path = "/envelope/recipient/update-many"
    if _finished(envelope):
        return Refusal("POST", path, ENVELOPE_COMPLETE)
    recipients = {r.id: r for r in envelope.recipients}
    for rid in recipient_ids:
        recipient = recipients.get(rid)
        if recipient is not None and _interacted(envelope, recipient):
            return Refusal("POST", path, RECIPIENT_INTERACTED)
    return None


def recipient_delete_refusal(envelope: Envelope, recipient_id: int) -> Refusal | None:
    """Whether ``POST /envelope/recipient/delete`` of this recipient would be refused.

    :param envelope: The envelope as read just before.
    :param recipient_id: The recipient to delete (one of the envelope's).
    """
    path = "/envelope/recipient/delete"
    if _finished(envelope):
        return Refusal("POST", path, DOCUMENT_COMPLETE)
    recipient = next((r for r in envelope.recipients if r.id == recipient_id), None)
    if recipient is not None and _interacted(envelope, recipient):
        return Refusal("POST", path, DELETE_INTERACTED)
    return None


def fields_update_refusal(envelope: Envelope, field_ids: Iterable[int]) -> Refusal | None:
    """Whether ``POST /envelope/field/update-many`` of these fields would be refused.

    :param envelope: The envelope as read just before.
    :param field_ids: The fields to change (ids that are not the envelope's are not judged here).
    """
    path = "/envelope/field/update-many"
    if _finished(envelope):
        return Refusal("POST", path, ENVELOPE_COMPLETE)
    fields = {f.id: f for f in envelope.fields}
    recipients = {r.id: r for r in envelope.recipients}
    for fid in field_ids:
        field = fields.get(fid)
        recipient = recipients.get(field.recipient_id) if field is not None and field.recipient_id else None
        if recipient is not None and _fields_locked(envelope, recipient):
            return Refusal("POST", path, FIELD_INTERACTED)
    return None


def field_delete_refusal(envelope: Envelope, field_id: int) -> Refusal | None:
    """Whether ``POST /envelope/field/delete`` of this field would be refused.

    :param envelope: The envelope as read just before.
    :param field_id: The field to delete (one of the envelope's).
    """
    path = "/envelope/field/delete"
    if _finished(envelope):
        return Refusal("POST", path, ENVELOPE_COMPLETE)
    field = next((f for f in envelope.fields if f.id == field_id), None)
    recipient = next((r for r in envelope.recipients if field and r.id == field.recipient_id), None)
    if recipient is not None and _fields_locked(envelope, recipient):
        return Refusal("POST", path, DELETE_INTERACTED)
    return None


def attachment_change_refusal(envelope: Envelope, path: str) -> Refusal | None:
    """Whether a change to the envelope's attachments (create, update or delete) would be refused.

    :param envelope: The envelope as read just before.
    :param path: The attachment route, e.g. ``/envelope/attachment/create``.
    """
    status = str(getattr(envelope.status, "value", envelope.status))
    if status in FROZEN_STATUSES:
        return Refusal("POST", path, FROZEN_MESSAGE)
    return None
