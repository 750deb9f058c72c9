"""Operators that add recipients and fields to an envelope, and record an external rejection."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign._text import printable
from airflow_provider_docsign.exceptions import DocsignAmbiguousWriteError, DocsignValidationError
from airflow_provider_docsign.models import EnvelopeStatus
from airflow_provider_docsign.operators._base import (
    PERMANENT_ERRORS,
    DocsignBaseOperator,
    current_try,
    fail_now,
    field_problems,
    status_value,
)
from airflow_provider_docsign.outgoing import email_problem
from airflow_provider_docsign.payloads import FIELD_TYPES, RECIPIENT_ROLES

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.models import Envelope

__all__ = [
    "DocsignAddFieldsOperator",
    "DocsignAddRecipientsOperator",
    "DocsignRejectRecipientOperator",
]

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

    :param recipients: The list given to :class:`DocsignAddRecipientsOperator`.
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

    :param fields: The list given to :class:`DocsignAddFieldsOperator`.
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
        if isinstance(rid, bool) or not isinstance(rid, int):
            problems.append(f"{label}: recipientId must be an integer recipient id, not {rid!r}")
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


def _matching_fields(
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


class DocsignAddRecipientsOperator(DocsignBaseOperator):
    """Add recipients to an envelope.

    The recipients are checked locally (e-mail, name, role) before anything is sent. On a retry of the
    task, recipients that are already on the envelope with the same e-mail and role (added by the
    failed try) are not added again.

    Returns the recipient ids, in the order the recipients were given.

    :param envelope_id: The envelope. Templated.
    :param recipients: Recipients in the service's JSON shape:
        ``[{"email", "name", "role", "signingOrder"?, "accessAuth"?, "actionAuth"?}]``. Roles are
        ``SIGNER``, ``APPROVER``, ``VIEWER``, ``CC`` and ``ASSISTANT``. Templated (rendered as JSON).
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "recipients")
    template_fields_renderers = {"recipients": "json"}
    ui_color = "#d6eaff"

    def __init__(self, *, envelope_id: str, recipients: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.recipients = recipients

    def execute(self, context: Context) -> list[int]:
        """Add the recipients and return their ids."""
        envelope_id = str(self.envelope_id)
        problems = recipient_problems(self.recipients)
        if problems:
            raise fail_now(DocsignValidationError(problems, context="recipients"))
        recipients = [dict(r) for r in self.recipients]
        envelope = self.read_envelope(context, envelope_id)

        def key(email: Any, role: Any) -> tuple[str, str]:
            return (str(email or "").lower(), str(role or ""))

        existing = {key(r.email, r.role): r.id for r in envelope.recipients}
        try_number = current_try(context)
        ids: list[int | None] = [None] * len(recipients)
        to_add: list[int] = []
        for n, r in enumerate(recipients):
            found = existing.get(key(r.get("email"), r.get("role"))) if try_number > 1 else None
            if found is not None:
                self.log.info(
                    "recipients[%d] is already on the envelope (added by a previous try): id %s", n, found
                )
                ids[n] = found
            else:
                to_add.append(n)
        if to_add:
            try:
                created = self.hook.create_recipients(envelope_id, [recipients[n] for n in to_add])
            except PERMANENT_ERRORS as err:
                raise fail_now(err) from err
            except DocsignAmbiguousWriteError:
                self.log.error(
                    "The add's outcome is unknown; a retry of the task skips recipients already added"
                )
                raise
            if len(created) != len(to_add):
                raise AirflowFailException(
                    f"The service created {len(created)} recipient(s) for {len(to_add)} requested"
                )
            for n, rec in zip(to_add, created, strict=True):
                ids[n] = rec.id
        self.log.info("Recipients of envelope %s: %s", envelope_id, ids)
        return [int(i) for i in ids if i is not None]


class DocsignAddFieldsOperator(DocsignBaseOperator):
    """Place fields on the pages of an envelope's items.

    The fields are checked locally first (recipient id, type, one-based page, coordinates 0-100 with
    ``positionX + width`` and ``positionY + height`` at most 100), then against the envelope: the
    recipient and item must belong to it and the page must exist in that item's PDF (the real service
    accepts a field on a missing page, and the envelope can then never complete). Nothing is created
    unless every field passes. On a retry of the task (or after a lost answer), fields equal to the
    requested ones that a failed try already created are adopted instead of created twice.

    Returns the new field ids, in the order the fields were given.

    :param envelope_id: The envelope. Templated.
    :param fields: Fields in the service's JSON shape: ``[{"recipientId", "envelopeItemId"? (default:
        the first item), "type", "page", "positionX", "positionY", "width", "height", "fieldMeta"?}]``.
        Templated (rendered as JSON).
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "fields")
    template_fields_renderers = {"fields": "json"}
    ui_color = "#d6eaff"

    def __init__(self, *, envelope_id: str, fields: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.fields = fields

    def execute(self, context: Context) -> list[int]:
        """Validate and create the fields; return their ids."""
        envelope_id = str(self.envelope_id)
        problems = field_shape_problems(self.fields)
        if problems:
            raise fail_now(DocsignValidationError(problems, context="fields"))
        fields = [dict(f) for f in self.fields]
        try:
            envelope = self.hook.get_envelope(envelope_id)
            self.push_envelope_link(context, envelope_id, envelope)
            counts = self.item_page_counts(envelope, self.items_beyond_page_one(envelope, fields))
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        problems = field_problems(fields, envelope=envelope, page_counts=counts)
        if problems:
            raise fail_now(DocsignValidationError(problems, context=f"fields for envelope {envelope_id}"))
        try_number = current_try(context)
        if try_number > 1:
            found = _matching_fields(envelope, fields)
            if found is not None:
                self.log.info("Try %s: the fields were created by a previous try: %s", try_number, found)
                return found
        try:
            # The hook checks the fields against the envelope once more; the counts save re-downloads.
            created = self.hook.create_fields(envelope_id, fields, page_counts=counts)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        except DocsignAmbiguousWriteError:
            found = _matching_fields(self.hook.get_envelope(envelope_id), fields, exclude=envelope)
            if found is None:
                self.log.error(
                    "The field creation's outcome is unknown: check envelope %s's fields", envelope_id
                )
                raise
            self.log.warning("The answer was lost, but the fields exist: %s", found)
            return found
        ids = [f.id for f in created]
        self.log.info("Created field(s) %s on envelope %s", ids, envelope_id)
        return ids


class DocsignRejectRecipientOperator(DocsignBaseOperator):
    """Record a rejection that happened outside the service (for example by phone) for a recipient.

    The envelope must be PENDING; it then becomes REJECTED. A recipient who is already REJECTED is left
    as is and the task succeeds (safe on retry).

    Returns ``{"envelope_id", "recipient_id", "signing_status"}``.

    :param recipient_id: The recipient who rejected. Templated.
    :param envelope_id: The envelope. Templated.
    :param reason: Why they rejected (required, recorded in the audit log). Templated.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("recipient_id", "envelope_id", "reason")
    ui_color = "#ffe0d6"

    def __init__(self, *, recipient_id: int | str, envelope_id: str, reason: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recipient_id = recipient_id
        self.envelope_id = envelope_id
        self.reason = reason

    def execute(self, context: Context) -> dict[str, Any]:
        """Record the rejection and return the recipient's signing status."""
        envelope_id = str(self.envelope_id)
        problems = []
        try:
            recipient_id = int(self.recipient_id)
        except (TypeError, ValueError):
            problems.append(f"recipient_id must be an integer, not {self.recipient_id!r}")
            recipient_id = -1
        if not isinstance(self.reason, str) or not self.reason.strip():
            problems.append("reason must be a non-empty string")
        if problems:
            raise fail_now(DocsignValidationError(problems, context="rejection"))
        envelope = self.read_envelope(context, envelope_id)
        recipient = next((r for r in envelope.recipients if r.id == recipient_id), None)
        if recipient is None:
            raise AirflowFailException(
                f"Recipient {recipient_id} is not a recipient of envelope {envelope_id}"
            )
        if recipient.signing_status == "REJECTED":
            self.log.info("Recipient %s has already rejected envelope %s (no-op)", recipient_id, envelope_id)
            return {"envelope_id": envelope_id, "recipient_id": recipient_id, "signing_status": "REJECTED"}
        if envelope.status != EnvelopeStatus.PENDING:
            raise AirflowFailException(
                f"Envelope {envelope_id} is {status_value(envelope.status)}: a rejection can only be "
                "recorded while it is PENDING"
            )
        try:
            result = self.hook.reject_recipient(recipient_id, envelope_id=envelope_id, reason=self.reason)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        except DocsignAmbiguousWriteError:
            result = self.hook.get_recipient(recipient_id)
            if getattr(result, "signing_status", None) != "REJECTED":
                raise
        status = getattr(result, "signing_status", None) or "REJECTED"
        self.log.info("Recorded the rejection of recipient %s on envelope %s", recipient_id, envelope_id)
        return {"envelope_id": envelope_id, "recipient_id": recipient_id, "signing_status": status}
