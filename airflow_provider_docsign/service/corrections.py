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

It also holds the local checks of the recipients and fields the operators are given (their shape,
before the envelope is read), and the match that lets a retried task adopt fields an earlier try made.

Every refusal is HTTP 400 with the code ``INVALID_REQUEST``; the messages below are the service's own.
Not covered: AES/QES envelopes (qualified signature levels) are locked as soon as they leave DRAFT
(``ENVELOPE_TSP_LOCKED``), but the API does not say an envelope's signature level, so that refusal
still comes from the service.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_docsign._text import printable
from airflow_provider_docsign.exceptions import DocsignRefusedLocallyError
from airflow_provider_docsign.service.attachments import FROZEN_MESSAGE, FROZEN_STATUSES
from airflow_provider_docsign.service.ids import ID_FORM, as_id
from airflow_provider_docsign.service.models import Envelope, EnvelopeStatus, Recipient
from airflow_provider_docsign.service.outgoing import email_problem
from airflow_provider_docsign.service.payloads import FIELD_TYPES, RECIPIENT_ROLES

__all__ = [
    "Refusal",
    "attachment_change_refusal",
    "field_delete_refusal",
    "field_shape_problems",
    "fields_update_refusal",
    "matching_fields",
    "recipient_delete_refusal",
    "recipient_problems",
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

    def error(self) -> DocsignRefusedLocallyError:
        """The error to raise: the service's status, code and message, for the request not sent."""
        return DocsignRefusedLocallyError(
            self.message, status_code=self.status, error_code=self.code, method=self.method, path=self.path
        )


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


# -- local shape checks (before the envelope is read) ----------------------------------------------

_RECIPIENT_KEYS = {"email", "name", "role", "signingOrder", "accessAuth", "actionAuth"}
_COORDINATES = ("positionX", "positionY", "width", "height")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def recipient_problems(recipients: Any) -> list[str]:
    """Local problems of recipients in the service's JSON shape (no network).

    :param recipients: The list given to ``DocsignAddRecipientsOperator``.
    """
    if not isinstance(recipients, list | tuple) or not recipients:
        return ["recipients: must be a non-empty list"]
    problems: list[str] = []
    for n, r in enumerate(recipients):
        label = f"recipients[{n}]"
        if not isinstance(r, dict):
            problems.append(f"{label}: must be an object, not {type(r).__name__}")
            continue
        label += f" ({printable(r.get('email') or r.get('name') or 'no email', 100)})"
        if "fields" in r:
            problems.append(
                f"{label}: fields cannot be added with a recipient here; use DocsignAddFieldsOperator"
            )
        unknown = sorted(set(r) - _RECIPIENT_KEYS - {"fields"})
        if unknown:
            problems.append(f"{label}: unknown key(s) {unknown}")
        email = r.get("email")
        # the one e-mail rule of the package (ASCII, IDNA-encoded domains; see outgoing.email_problem)
        why = email_problem(email.strip()) if isinstance(email, str) and email.strip() else None
        if not isinstance(email, str) or why:
            problems.append(f'{label}: email must be an e-mail address (or ""){f" ({why})" if why else ""}')
        name = r.get("name", "")
        if not isinstance(name, str) or len(name) > 255:
            problems.append(f"{label}: name must be a string of at most 255 characters")
        role = r.get("role")
        if role not in RECIPIENT_ROLES:
            problems.append(f"{label}: role {role!r} is not one of {sorted(RECIPIENT_ROLES)}")
        order = r.get("signingOrder")
        if order is not None and (isinstance(order, bool) or not isinstance(order, int) or order < 0):
            problems.append(f"{label}: signingOrder must be a non-negative integer")
    return problems


def field_shape_problems(fields: Any) -> list[str]:
    """Local problems of fields in the service's JSON shape, before the envelope is read.

    :param fields: The list given to ``DocsignAddFieldsOperator``.
    """
    if not isinstance(fields, list | tuple) or not fields:
        return ["fields: must be a non-empty list"]
    problems: list[str] = []
    for n, f in enumerate(fields):
        label = f"fields[{n}]"
        if not isinstance(f, dict):
            problems.append(f"{label}: must be an object, not {type(f).__name__}")
            continue
        rid = f.get("recipientId")
        if as_id(rid) is None:
            problems.append(f"{label}: recipientId must be a recipient id ({ID_FORM}), not {rid!r}")
        ftype = f.get("type")
        if ftype not in FIELD_TYPES:
            problems.append(f"{label}: type {ftype!r} is not one of {sorted(FIELD_TYPES)}")
        item_id = f.get("envelopeItemId")
        if item_id is not None and (not isinstance(item_id, str) or not item_id):
            problems.append(f"{label}: envelopeItemId must be an item id string")
        if "placeholder" in f:
            if not isinstance(f["placeholder"], str) or not f["placeholder"]:
                problems.append(f"{label}: placeholder must be a non-empty string")
            continue
        page = f.get("page")
        if isinstance(page, bool) or not isinstance(page, int) or page < 1:
            problems.append(f"{label}: page must be an integer >= 1 (pages are one-based), not {page!r}")
        values: dict[str, float] = {}
        for key in _COORDINATES:
            number = _number(f.get(key))
            if number is None:
                problems.append(f"{label}: {key} must be a number (percent of the page), not {f.get(key)!r}")
            elif not 0 <= number <= 100:
                problems.append(f"{label}: {key}={number:g} is outside 0-100 (percent of the page)")
            else:
                values[key] = number
        if len(values) == 4:
            if values["positionX"] + values["width"] > 100:
                problems.append(
                    f"{label}: positionX + width = {values['positionX'] + values['width']:g} exceeds 100"
                )
            if values["positionY"] + values["height"] > 100:
                problems.append(
                    f"{label}: positionY + height = {values['positionY'] + values['height']:g} exceeds 100"
                )
    return problems


def matching_fields(
    envelope: Envelope, fields: Sequence[Mapping[str, Any]], exclude: Envelope | None = None
) -> list[int] | None:
    """Ids of stored fields equal to every requested one (recipient, item, type, page, box), or None.

    Used on retry and after a lost answer, so fields a failed try created are not created twice.
    Placeholder fields cannot be matched (their box comes from the PDF text), so they give None.

    :param envelope: The envelope as read now.
    :param fields: The requested fields, in the service's JSON shape.
    :param exclude: An earlier read of the envelope whose fields do not count (they existed before).
    """
    old = {f.id for f in exclude.fields} if exclude is not None else set()
    candidates = [f for f in envelope.fields if f.id not in old]
    first = envelope.items[0].id if envelope.items else None
    ids: list[int] = []
    for wanted in fields:
        if "placeholder" in wanted:
            return None
        item_id = wanted.get("envelopeItemId") or first
        box = [_number(wanted.get(k)) for k in _COORDINATES]
        match = next(
            (
                f
                for f in candidates
                if f.id not in ids
                and f.recipient_id == wanted.get("recipientId")
                and f.envelope_item_id == item_id
                and (f.type or "") == wanted.get("type")
                and f.page == wanted.get("page")
                and all(
                    a is not None and b is not None and abs(a - b) < 1e-6
                    for a, b in zip((f.position_x, f.position_y, f.width, f.height), box, strict=True)
                )
            ),
            None,
        )
        if match is None:
            return None
        ids.append(match.id)
    return ids
