"""Status lifecycle: distribute, redistribute, cancel, and the jobs a restart reschedules.

DRAFT -> PENDING (distribute) -> COMPLETED (every non-CC recipient signed; sealed shortly after)
| REJECTED (a recipient rejected; sealed shortly after) | CANCELLED (cancel).
As on the real service, an envelope with a field on a page its PDF does not have never completes: the
sealing job fails and the envelope stays PENDING.

Recipients' signing and rejection live in :mod:`.signing`, signing-link expiry and reminders in
:mod:`.expiry`, the sealing job in :mod:`.seal_job`.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from . import prefill
from .builders import meta_update
from .errors import app_error, plain_error
from .expiry import expires_at_for
from .ids import iso
from .schemas import SIGNATURE_TYPES
from .seal_job import maybe_seal
from .signing import auto_sign
from .state import SandboxState
from .store import Obj

TERMINAL = ("COMPLETED", "REJECTED", "CANCELLED")


def signing_url(webapp_url: str, token: str) -> str:
    """``{WEBAPP_URL}/sign/{token}``."""
    return f"{webapp_url.rstrip('/')}/sign/{token}"


def send_response(state: SandboxState, env: Obj, webapp_url: str) -> dict[str, Any]:
    """The distribute/redistribute response body."""
    recipients = [
        {
            "id": r["id"],
            "name": r["name"],
            "email": r["email"],
            "token": r["token"],
            "role": r["role"],
            "signingOrder": r["signingOrder"],
            "signingUrl": signing_url(webapp_url, r["token"]),
        }
        for r in state.store.recipients_of(env["id"])
    ]
    return {"success": True, "id": env["id"], "recipients": recipients}


def distribute(
    state: SandboxState, envelope_id: str, meta: dict[str, Any] | None, webapp_url: str
) -> dict[str, Any]:
    """DRAFT -> PENDING with the real checks, in the real order."""
    path = "envelope.distribute"
    store = state.store
    with store.tx():
        env = store.edit("envelope", envelope_id)
        if env is None or env["type"] != "DOCUMENT" or env["deletedAt"] is not None:
            raise plain_error(path, "Document not found")
        recipients = store.recipients_of(envelope_id)
        if not recipients:
            raise plain_error(path, "Document has no recipients")
        if env["status"] in TERMINAL:
            raise plain_error(path, "Can not send completed document")
        fields = store.fields_of(envelope_id)
        for rec in recipients:
            if rec["role"] == "SIGNER" and not any(
                f["recipientId"] == rec["id"] and f["type"] in SIGNATURE_TYPES for f in fields
            ):
                raise app_error(
                    path, "MISSING_SIGNATURE_FIELD", f"Recipient {rec['email']} is missing a signature field"
                )
        if meta:
            env["documentMeta"].update(meta_update(meta))
        method = env["documentMeta"].get("distributionMethod", "EMAIL")
        # Real service: prefilled fields are inserted when their recipient is first sent the envelope.
        prefill.auto_insert(store, envelope_id)
        now = iso()
        # Real service: every unsigned, non-CC recipient gets a fresh expiresAt at each send.
        expires_at = expires_at_for(env["documentMeta"])
        for rec in recipients:
            if rec["role"] == "CC" or rec["signingStatus"] in ("SIGNED", "REJECTED"):
                continue
            changed = store.edit("recipient", rec["id"])
            assert changed is not None
            if method == "EMAIL":
                changed["sendStatus"] = "SENT"
            changed["expiresAt"] = expires_at
            changed["expirationNotifiedAt"] = None
            store.put("recipient", changed)
        first_send = env["status"] == "DRAFT"
        env["status"] = "PENDING"
        env["updatedAt"] = now
        if state.auto_sign_after is not None and first_send:
            env["_autoSignAt"] = _epoch() + state.auto_sign_after
        store.put("envelope", env)
        if first_send:
            state.audit(envelope_id, "DOCUMENT_SENT", {})
        if method == "EMAIL":
            for rec in recipients:
                if rec["role"] != "CC" and rec["signingStatus"] == "NOT_SIGNED":
                    email_sent(state, envelope_id, rec, resending=False)
        response = send_response(state, env, webapp_url)
    if first_send and state.auto_sign_after is not None:
        state.later(state.auto_sign_after, lambda: auto_sign(state, envelope_id))
    maybe_seal(state, envelope_id)
    return response


EMAIL_TYPES = {
    "SIGNER": "SIGNING_REQUEST",
    "VIEWER": "VIEW_REQUEST",
    "APPROVER": "APPROVE_REQUEST",
    "ASSISTANT": "ASSISTING_REQUEST",
    "CC": "CC",
}


def email_sent(state: SandboxState, envelope_id: str, rec: Obj, *, resending: bool) -> None:
    """Audit entry for a (simulated) signing email."""
    state.audit(
        envelope_id,
        "EMAIL_SENT",
        {
            "recipientEmail": rec["email"],
            "recipientName": rec["name"],
            "recipientId": rec["id"],
            "recipientRole": rec["role"],
            "emailType": "REMINDER" if resending else EMAIL_TYPES.get(rec["role"], "SIGNING_REQUEST"),
            "isResending": resending,
        },
    )


def _epoch() -> float:
    return time.time()


def redistribute(
    state: SandboxState, envelope_id: str, recipient_ids: list[int], webapp_url: str
) -> dict[str, Any]:
    """Resend to listed recipients (PENDING only), as the real service does.

    Renews ``expiresAt``, counts the reminder e-mail and fires ``DOCUMENT_REMINDER_SENT``. DRAFT and
    terminal envelopes answer 500 (``recorded/expiry/45``).
    """
    path = "envelope.redistribute"
    store = state.store
    with store.tx():
        env = store.get("envelope", envelope_id)
        if env is None or env["deletedAt"] is not None:
            raise plain_error(path, "Document not found")
        if env["status"] == "DRAFT":
            raise plain_error(path, "Can not send draft document")
        if env["status"] != "PENDING":
            raise plain_error(path, "Can not send completed document")
        wanted = set(recipient_ids)
        expires_at = expires_at_for(env["documentMeta"])
        email = (env["documentMeta"].get("emailSettings") or {}).get("recipientSigningRequest", True)
        for rec in store.recipients_of(env["id"]):
            if rec["id"] in wanted and rec["role"] != "CC" and rec["signingStatus"] == "NOT_SIGNED":
                changed = store.edit("recipient", rec["id"])
                assert changed is not None
                changed["sendStatus"] = "SENT"
                changed["expiresAt"] = expires_at
                changed["expirationNotifiedAt"] = None
                store.put("recipient", changed)
                if email:  # counted, never sent: see GET /_sandbox/reminders
                    email_sent(state, env["id"], changed, resending=True)
        response = send_response(state, env, webapp_url)
    state.notify(envelope_id, "DOCUMENT_REMINDER_SENT")
    return response


def cancel(state: SandboxState, envelope_id: str, reason: str | None) -> None:
    """PENDING -> CANCELLED."""
    path = "envelope.cancel"
    store = state.store
    with store.tx():
        env = store.edit("envelope", envelope_id)
        if env is None or env["deletedAt"] is not None:
            raise app_error(path, "NOT_FOUND", "Envelope not found")
        if env["status"] != "PENDING":
            raise app_error(path, "INVALID_REQUEST", "Only pending envelopes can be cancelled")
        now = iso()
        env.update({"status": "CANCELLED", "completedAt": now, "updatedAt": now})
        store.put("envelope", env)
        state.audit(envelope_id, "DOCUMENT_CANCELLED", {"reason": reason or ""})
    state.notify(envelope_id, "DOCUMENT_CANCELLED")


def recover(state: SandboxState) -> None:
    """After a restart: reschedule sealing and auto-signing jobs that were pending."""
    for env in state.store.all("envelope"):
        if env["status"] != "PENDING":
            continue
        maybe_seal(state, env["id"])
        at = env.get("_autoSignAt")
        if at is not None:
            state.later(max(0.0, float(at) - _epoch()), functools.partial(auto_sign, state, env["id"]))
