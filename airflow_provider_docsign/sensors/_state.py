"""What one poll learned about each envelope, as JSON-safe records (pure code: no Airflow, no network).

:func:`snapshot` turns the envelopes the hook read into :class:`EnvelopeState` records, one per
requested id (an id the service did not return becomes a *deleted* state), with the recipients who
rejected the envelope (:class:`Rejection`) and those whose signing link has expired (:class:`Expiry`).
The records travel in trigger events (:meth:`EnvelopeState.to_dict`) and the sensor's XCom.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from airflow_provider_docsign._text import printable
from airflow_provider_docsign.service.expiry import expired_recipients, mask_email
from airflow_provider_docsign.service.models import Envelope, EnvelopeStatus

__all__ = ["EnvelopeState", "Expiry", "Rejection", "snapshot"]


@dataclass(frozen=True)
class Rejection:
    """A recipient who rejected an envelope.

    :param recipient_id: The recipient id.
    :param name: The recipient's display name.
    :param email: The recipient's e-mail address, masked (``s***@example.com``) as in every log line:
        it travels in the trigger's event and the task's error.
    :param reason: The ``rejectionReason`` they gave (``None`` if none was recorded).
    :param role: ``SIGNER``, ``APPROVER``, ...
    """

    recipient_id: int | str | None
    name: str | None
    email: str | None
    reason: str | None
    role: str | None = None

    def describe(self) -> str:
        """``recipient 3 'Sam Signer' (SIGNER, s***@example.com) with reason: 'Wrong amount'``."""
        who = f"recipient {self.recipient_id}"
        if self.name:
            who += f" {self.name!r}"
        details = [d for d in (self.role, printable(self.email, 254) if self.email else None) if d]
        if details:
            who += f" ({', '.join(details)})"
        reason = repr(self.reason) if self.reason else "(no reason given)"
        return f"{who} with reason: {reason}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "recipient_id": self.recipient_id,
            "name": self.name,
            "email": self.email,
            "reason": self.reason,
            "role": self.role,
        }


@dataclass(frozen=True)
class Expiry:
    """A recipient whose signing link has expired (unsigned, not CC, ``expiresAt`` in the past).

    :param recipient_id: The recipient id.
    :param role: ``SIGNER``, ``APPROVER``, ``VIEWER`` or ``ASSISTANT``.
    :param email: The recipient's e-mail, masked (``e***@example.com``).
    :param expires_at: When the link expired (the service's ISO timestamp).
    """

    recipient_id: int | str | None
    role: str | None
    email: str | None
    expires_at: str | None

    def describe(self) -> str:
        """``recipient 41 (SIGNER, e***@peer.test), link expired at 2026-11-23T12:02:49.855Z``."""
        return (
            f"recipient {self.recipient_id} ({self.role or 'unknown role'}, {self.email or '(no e-mail)'}), "
            f"link expired at {self.expires_at}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (the e-mail is already masked)."""
        return {
            "recipient_id": self.recipient_id,
            "role": self.role,
            "email": self.email,
            "expires_at": self.expires_at,
        }


@dataclass(frozen=True)
class EnvelopeState:
    """What one poll learned about one envelope (JSON-safe through :meth:`to_dict`).

    :param envelope_id: The envelope id.
    :param status: Its status, or ``None`` when the service did not return it (deleted or not visible).
    :param completed_at: ``completedAt`` (set for COMPLETED, REJECTED and CANCELLED).
    :param item_ids: The envelope item ids, in ``order``.
    :param deleted: Whether the envelope is gone (not returned) or soft-deleted (``deletedAt`` set).
    :param rejections: The recipients who rejected it.
    :param expired: The recipients whose signing link has expired (the envelope stays PENDING).
    """

    envelope_id: str
    status: str | None
    completed_at: str | None = None
    item_ids: tuple[str, ...] = ()
    deleted: bool = False
    rejections: tuple[Rejection, ...] = field(default=())
    expired: tuple[Expiry, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, as carried in trigger events."""
        return {
            "envelope_id": self.envelope_id,
            "status": self.status,
            "completed_at": self.completed_at,
            "item_ids": list(self.item_ids),
            "deleted": self.deleted,
            "rejections": [r.to_dict() for r in self.rejections],
            "expired": [e.to_dict() for e in self.expired],
        }

    def to_xcom(self) -> dict[str, Any]:
        """The sensor's XCom entry: id, status, completedAt and item ids in order (no personal data)."""
        return {
            "envelope_id": self.envelope_id,
            "status": self.status,
            "completed_at": self.completed_at,
            "item_ids": list(self.item_ids),
        }

    @classmethod
    def from_dict(cls, data: Any) -> EnvelopeState:
        """Rebuild a state from :meth:`to_dict` output (for example a trigger event), checking types.

        :raises ValueError: when ``data`` does not have the expected shape.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"an envelope state must be a mapping, got {type(data).__name__}")
        envelope_id = data.get("envelope_id")
        status = data.get("status")
        completed_at = data.get("completed_at")
        item_ids = data.get("item_ids", [])
        rejections = data.get("rejections", [])
        expired = data.get("expired", [])
        if not isinstance(envelope_id, str) or not envelope_id:
            raise ValueError("an envelope state has no envelope_id")
        if status is not None and not isinstance(status, str):
            raise ValueError(f"envelope {envelope_id}: status must be a string or null")
        if completed_at is not None and not isinstance(completed_at, str):
            raise ValueError(f"envelope {envelope_id}: completed_at must be a string or null")
        if not isinstance(item_ids, list) or not all(isinstance(i, str) for i in item_ids):
            raise ValueError(f"envelope {envelope_id}: item_ids must be a list of strings")
        if not isinstance(rejections, list) or not all(isinstance(r, Mapping) for r in rejections):
            raise ValueError(f"envelope {envelope_id}: rejections must be a list of mappings")
        if not isinstance(expired, list) or not all(isinstance(e, Mapping) for e in expired):
            raise ValueError(f"envelope {envelope_id}: expired must be a list of mappings")
        return cls(
            envelope_id=envelope_id,
            status=status,
            completed_at=completed_at,
            item_ids=tuple(item_ids),
            deleted=bool(data.get("deleted", False)),
            rejections=tuple(
                Rejection(
                    recipient_id=r.get("recipient_id"),
                    name=r.get("name"),
                    email=mask_email(r.get("email")) if r.get("email") else None,
                    reason=r.get("reason"),
                    role=r.get("role"),
                )
                for r in rejections
            ),
            expired=tuple(
                Expiry(
                    recipient_id=e.get("recipient_id"),
                    role=e.get("role"),
                    email=e.get("email"),
                    expires_at=e.get("expires_at"),
                )
                for e in expired
            ),
        )


def _status_text(status: Any) -> str | None:
    if status is None:
        return None
    return status.value if isinstance(status, EnvelopeStatus) else str(status)


def snapshot(
    envelopes: Iterable[Envelope], envelope_ids: Sequence[str], *, now: datetime | None = None
) -> list[EnvelopeState]:
    """One :class:`EnvelopeState` per requested id, in the requested order.

    ``POST /envelope/get-many`` silently leaves out ids it cannot find (deleted, or not visible to the
    key) instead of answering 404, so a requested id missing from the answer is a *deleted* state.
    A soft-deleted envelope (``deletedAt`` set) counts as deleted too.

    A PENDING envelope whose unsigned, non-CC recipient has an ``expiresAt`` before ``now`` lists
    that recipient in ``expired`` (the real service leaves such an envelope PENDING).

    :param envelopes: What the hook returned.
    :param envelope_ids: The ids that were asked for.
    :param now: The time to judge expiry against (default: now, UTC).
    """
    by_id = {envelope.id: envelope for envelope in envelopes}
    states: list[EnvelopeState] = []
    for envelope_id in envelope_ids:
        envelope = by_id.get(envelope_id)
        if envelope is None:
            states.append(EnvelopeState(envelope_id=envelope_id, status=None, deleted=True))
            continue
        rejections = tuple(
            Rejection(
                recipient_id=r.id,
                name=r.name,
                email=mask_email(r.email) if r.email else None,
                reason=r.rejection_reason,
                role=str(getattr(r.role, "value", r.role)) if r.role else None,
            )
            for r in envelope.recipients
            if (r.signing_status or "").upper() == "REJECTED"
        )
        status = _status_text(envelope.status)
        expired: tuple[Expiry, ...] = ()
        if status == EnvelopeStatus.PENDING.value:
            expired = tuple(
                Expiry(recipient_id=r.id, role=r.role, email=mask_email(r.email), expires_at=r.expires_at)
                for r in expired_recipients(envelope.recipients, now)
            )
        states.append(
            EnvelopeState(
                envelope_id=envelope_id,
                status=status,
                completed_at=envelope.completed_at,
                item_ids=tuple(item.id for item in envelope.items),
                deleted=bool(envelope.deleted_at),
                rejections=rejections,
                expired=expired,
            )
        )
    return states
