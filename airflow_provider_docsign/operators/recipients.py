"""Operators that add, correct and remove recipients, and record an external rejection.

The field operators live in :mod:`.fields`; ``DocsignAddFieldsOperator`` is still importable from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign._text import printable
from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignValidationError,
)
from airflow_provider_docsign.operators._base import (
    PERMANENT_ERRORS,
    DocsignBaseOperator,
    fail_now,
    id_list,
    one_id,
    status_value,
)
from airflow_provider_docsign.operators.fields import DocsignAddFieldsOperator
from airflow_provider_docsign.service.corrections import (
    field_shape_problems,
    recipient_delete_refusal,
    recipient_problems,
    recipients_update_refusal,
)
from airflow_provider_docsign.service.ids import ID_FORM, as_id, with_int_ids
from airflow_provider_docsign.service.models import EnvelopeStatus

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context

__all__ = [
    "DocsignAddFieldsOperator",
    "DocsignAddRecipientsOperator",
    "DocsignDeleteRecipientOperator",
    "DocsignRejectRecipientOperator",
    "DocsignUpdateRecipientsOperator",
    "field_shape_problems",
    "recipient_problems",
]


def _identity(email: Any, role: Any, name: Any) -> tuple[str, ...]:
    """Who a recipient is, for "already on the envelope".

    The e-mail (lower-cased, as the service stores it) and the role; without an e-mail, the role and
    the name.
    """
    address = str(email or "").strip().lower()
    if address:
        return (address, str(role or ""))
    return ("", str(role or ""), str(name or "").strip())


def _listed_twice(recipients: list[dict[str, Any]]) -> list[str]:
    """One problem per e-mail given more than once (any role), naming every position it is at."""
    where: dict[str, list[int]] = {}
    for n, r in enumerate(recipients):
        address = str(r.get("email") or "").strip().lower()
        if address:
            where.setdefault(address, []).append(n)
    return [
        f"{' and '.join(f'recipients[{n}]' for n in at)} have the same e-mail {printable(address, 100)!r}; "
        "list each person once"
        for address, at in where.items()
        if len(at) > 1
    ]


class DocsignAddRecipientsOperator(DocsignBaseOperator):
    """Add recipients to an envelope.

    The recipients are checked locally (e-mail, name, role) before anything is sent, and an e-mail
    listed twice (compared lower-cased, as the service stores it) is refused, naming both positions.
    On any try (a retry, a re-run of the task, a later DAG run) a recipient who is already on the
    envelope with the same e-mail and role is not added again: its id is returned and the log says it
    was already there. Recipients without an e-mail (``""``, a template's placeholder) are matched by
    role and name instead.

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
        problems = recipient_problems(self.recipients) or _listed_twice(self.recipients)
        if problems:
            raise fail_now(DocsignValidationError(problems, context="recipients"))
        recipients = [dict(r) for r in self.recipients]
        envelope = self.read_envelope(context, envelope_id)
        existing: dict[tuple[str, ...], int] = {}
        for rec in envelope.recipients:
            existing.setdefault(_identity(rec.email, rec.role, rec.name), rec.id)
        ids: list[int | None] = [None] * len(recipients)
        to_add: list[int] = []
        for n, r in enumerate(recipients):
            found = existing.get(_identity(r.get("email"), r.get("role"), r.get("name")))
            if found is not None:
                self.log.info(
                    "recipients[%d] (%s) is already on envelope %s as recipient %s (added by an earlier "
                    "try or run, or by hand): not adding it again",
                    n,
                    r.get("role"),
                    envelope_id,
                    found,
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


class DocsignRejectRecipientOperator(DocsignBaseOperator):
    """Record a rejection that happened outside the service (for example by phone) for a recipient.

    The envelope must be PENDING; it then becomes REJECTED. A recipient who is already REJECTED is left
    as is and the task succeeds (safe on retry).

    Returns ``{"envelope_id", "recipient_id", "signing_status"}``.

    :param recipient_id: The recipient who rejected (an id, or its digits as a string). Templated.
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
        recipient_id = as_id(self.recipient_id)
        if recipient_id is None or recipient_id < 1:
            problems.append(f"recipient_id must be a recipient id ({ID_FORM}), not {self.recipient_id!r}")
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


class DocsignUpdateRecipientsOperator(DocsignBaseOperator):
    """Correct recipients of an envelope: e-mail, name, role, signing order or authentication.

    Meant for a draft (a wrong e-mail, a changed signer) but allowed where the service allows it.
    The service refuses a change once the envelope is finished (COMPLETED, REJECTED or CANCELLED:
    "Envelope already complete") and, while it is PENDING, a change to a recipient who has already
    signed or filled in a field ("Cannot modify a recipient who has already interacted with the
    document"). Those refusals are made here, before anything is sent, with the service's own code and
    message (:class:`~airflow_provider_docsign.exceptions.DocsignRefusedLocallyError`, 400
    ``INVALID_REQUEST``), and the task fails without retrying.

    Note (real service): every update sets the recipient's send and signing status back to not sent and
    not signed, and a role changed to CC or VIEWER loses its fields. On a PENDING envelope the
    corrected recipient is therefore not sent the document again by itself: remind them with
    :class:`~airflow_provider_docsign.operators.DocsignRemindRecipientsOperator`.

    Safe on retry: setting the same values again changes nothing.

    Returns ``[{"id", "email", "name", "role", "signing_order"}]`` in the order given.

    :param envelope_id: The envelope. Templated.
    :param recipients: The changes, in the service's JSON shape:
        ``[{"id", "email"?, "name"?, "role"?, "signingOrder"?, "accessAuth"?, "actionAuth"?}]``; an
        ``id`` may be its digit string (``"{{ ti.xcom_pull(task_ids='create')['recipients'][0]['id'] }}"``).
        Templated (rendered as JSON).
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "recipients")
    template_fields_renderers = {"recipients": "json"}
    ui_color = "#d6eaff"

    def __init__(self, *, envelope_id: str, recipients: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.recipients = recipients

    def execute(self, context: Context) -> list[dict[str, Any]]:
        """Check, then update the recipients; return them as they are now."""
        envelope_id = str(self.envelope_id)
        ids, problems = id_list(self.recipients, "recipients")
        if problems:
            raise fail_now(DocsignValidationError(problems, context="recipients"))
        changes = with_int_ids(self.recipients, ("id",))  # "100" (rendered by Jinja) is recipient 100
        envelope = self.read_envelope(context, envelope_id)
        known = {r.id for r in envelope.recipients}
        unknown = [
            f"recipient {i} is not a recipient of envelope {envelope_id}" for i in ids if i not in known
        ]
        if unknown:
            raise fail_now(DocsignValidationError(unknown, context="recipients"))
        refusal = recipients_update_refusal(envelope, ids)
        if refusal is not None:
            raise fail_now(refusal.error())
        try:
            updated = self.hook.update_recipients(envelope_id, changes)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        by_id = {r.id: r for r in updated}
        result = []
        for rid in ids:
            rec = by_id.get(rid)
            if rec is None:
                raise AirflowFailException(f"The service did not return recipient {rid} after the update")
            self.log.info("Updated recipient %s of envelope %s", rid, envelope_id)
            result.append(
                {
                    "id": rec.id,
                    "email": rec.email,
                    "name": rec.name,
                    "role": rec.role,
                    "signing_order": rec.signing_order,
                }
            )
        return result


class DocsignDeleteRecipientOperator(DocsignBaseOperator):
    """Remove a recipient (and their fields) from an envelope.

    The service refuses this once the envelope is finished ("Document already complete") and for a
    recipient who has signed or filled in a field ("Recipient has already interacted with the
    document."); those refusals are made here, before anything is sent, with the service's code and
    message, and the task fails without retrying. A recipient who is no longer on the envelope counts
    as deleted (safe on retry), and so does a 404 from the service.

    Returns ``{"envelope_id", "recipient_id", "deleted"}``: ``deleted`` is False when the recipient was
    already gone.

    :param envelope_id: The envelope. Templated.
    :param recipient_id: The recipient to remove. Templated.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "recipient_id")
    ui_color = "#ffe0d6"

    def __init__(self, *, envelope_id: str, recipient_id: int | str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.recipient_id = recipient_id

    def execute(self, context: Context) -> dict[str, Any]:
        """Check, then delete the recipient."""
        recipient_id = one_id(self.recipient_id, "recipient_id")
        return self.delete_from_envelope(
            context,
            str(self.envelope_id),
            "recipient",
            recipient_id,
            lambda envelope: any(r.id == recipient_id for r in envelope.recipients),
            recipient_delete_refusal,
            self.hook.delete_recipient,
        )
