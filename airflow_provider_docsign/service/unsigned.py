"""Why an envelope did not end signed, in one wording for every face that says it (pure code).

A campaign's wait (``sensors/_batch``) and its batch archive (``archive/batch``) both tell a person why
an envelope is not signed: who rejected it and what they wrote, or whose signing link expired and
when. Both call these functions, so the outcome file, the wait's XCom, the archive's XCom and the logs
say it in the same words. A recipient is named by id, role and masked e-mail (``s***@example.com``),
never the full address; a rejection reason is cut to :data:`MAX_REASON` characters and written with
``repr`` (its control characters, new lines and bidirectional marks escaped, so it stays one line).
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_provider_docsign.service.expiry import mask_email
from airflow_provider_docsign.service.models import Envelope, Recipient

__all__ = ["MAX_REASON", "expired_reason", "rejection_reason", "who"]

#: The longest part of a signer's rejection reason that is repeated (characters).
MAX_REASON = 500


def who(recipient: Recipient) -> str:
    """``recipient 41 (SIGNER, e***@peer.test)``: the recipient named without its full e-mail."""
    return f"recipient {recipient.id} ({recipient.role or 'unknown role'}, {mask_email(recipient.email)})"


def rejection_reason(envelope: Envelope) -> str:
    """``rejected by recipient 41 (SIGNER, e***@peer.test): 'Clause 9 ...'`` for a REJECTED envelope.

    :param envelope: The envelope as read: every recipient whose signing status is REJECTED is named.
    """
    parts = []
    for recipient in envelope.recipients:
        if (recipient.signing_status or "").upper() != "REJECTED":
            continue
        said = recipient.rejection_reason
        text = repr(said[:MAX_REASON]) if said else "(no reason given)"  # repr escapes control characters
        parts.append(f"{who(recipient)}: {text}")
    if not parts:
        return "rejected; the service recorded no rejecting recipient"
    return "rejected by " + "; ".join(parts)


def expired_reason(expired: Iterable[Recipient]) -> str | None:
    """``signing link of recipient 41 (SIGNER, e***@peer.test) expired at <when>``; ``None`` for none.

    :param expired: The recipients whose signing link expired
        (:func:`~airflow_provider_docsign.service.expiry.expired_recipients`).
    """
    named = [f"{who(r)} expired at {r.expires_at}" for r in expired]
    return f"signing link of {'; '.join(named)}" if named else None
