"""Status lifecycle: distribute, sign, reject, cancel and the asynchronous sealing job.

DRAFT -> PENDING (distribute) -> COMPLETED (every non-CC recipient signed; sealed shortly after)
| REJECTED (a recipient rejected; sealed shortly after) | CANCELLED (cancel).
As on the real service, an envelope with a field on a page its PDF does not have never completes: the
sealing job fails and the envelope stays PENDING.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from datetime import timedelta
from typing import Any

from . import pdfops, prefill
from .builders import meta_update
from .errors import ApiError, app_error, plain_error
from .ids import cuid, iso, utcnow
from .schemas import SIGNATURE_TYPES
from .state import SandboxState
from .store import Obj

log = logging.getLogger("airflow_provider_docsign.sandbox")
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


#: Days per unit when the real service turns ``envelopeExpirationPeriod`` into ``expiresAt`` (luxon's
#: ``Duration.toMillis``: a month is 30 days and a year 365; recordings: 3 months = 90 days).
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_DEFAULT_PERIOD: dict[str, Any] = {"unit": "month", "amount": 3}


def expires_at_for(meta: dict[str, Any]) -> str | None:
    """``expiresAt`` for a send now: from ``envelopeExpirationPeriod`` (null: 3 months; disabled: none)."""
    period: dict[str, Any] = meta.get("envelopeExpirationPeriod") or _DEFAULT_PERIOD
    if period.get("disabled") is True:
        return None
    try:
        days = _UNIT_DAYS[str(period["unit"])] * int(period["amount"])
    except (KeyError, TypeError, ValueError):
        days = 90
    return iso(utcnow() + timedelta(days=days))


def is_expired(rec: Obj) -> bool:
    """The real rule: not CC, not signed, and ``expiresAt`` has passed."""
    return bool(
        rec["role"] != "CC"
        and rec["signingStatus"] == "NOT_SIGNED"
        and rec.get("expiresAt")
        and rec["expiresAt"] <= iso()
    )


def expired_error(path: str) -> ApiError:
    """Signing refused for an expired recipient, in the real signing route's recorded shape.

    ``recorded/expiry/42``: a tRPC error envelope, HTTP 400, ``RECIPIENT_EXPIRED``.
    """
    message = "Recipient signing window has expired"
    return ApiError(
        400,
        {
            "error": {
                "json": {
                    "message": message,
                    "code": -32603,
                    "data": {
                        "code": "RECIPIENT_EXPIRED",
                        "httpStatus": 400,
                        "path": path,
                        "appError": {"code": "RECIPIENT_EXPIRED", "message": message},
                    },
                }
            }
        },
    )


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


def _pending_envelope(store: Any, envelope_id: str, path: str, verb: str) -> None:
    """Refuse, with the service's error, a test control on an envelope that is missing or not PENDING."""
    env = store.get("envelope", envelope_id)
    if env is None:
        raise app_error(path, "NOT_FOUND", "Envelope could not be found")
    if env["status"] != "PENDING":
        raise app_error(path, "INVALID_REQUEST", f"Envelope {envelope_id} must be pending to {verb}")


def expire(state: SandboxState, envelope_id: str, recipient_id: int | None) -> list[int]:
    """Test control: a recipient's signing link (or every unsigned non-CC one's) expires now.

    As the real service's sweep would: ``expiresAt`` in the past, ``expirationNotifiedAt`` set, audit
    ``DOCUMENT_RECIPIENT_EXPIRED``, webhook ``RECIPIENT_EXPIRED``. The envelope stays PENDING.
    """
    path = "sandbox.expire"
    store = state.store
    with store.tx():
        _pending_envelope(store, envelope_id, path, "expire")
        recipients = [
            r
            for r in store.recipients_of(envelope_id)
            if r["role"] != "CC" and r["signingStatus"] == "NOT_SIGNED"
        ]
        if recipient_id is not None:
            recipients = [r for r in recipients if r["id"] == recipient_id]
            if not recipients:
                raise app_error(path, "NOT_FOUND", f"Recipient {recipient_id} is not an unsigned signer here")
        now = utcnow()
        for rec in recipients:
            changed = store.edit("recipient", rec["id"])
            assert changed is not None
            changed["expiresAt"] = iso(now - timedelta(seconds=1))
            changed["expirationNotifiedAt"] = iso(now)
            store.put("recipient", changed)
            state.audit(
                envelope_id,
                "DOCUMENT_RECIPIENT_EXPIRED",
                {"recipientEmail": rec["email"], "recipientName": rec["name"], "recipientId": rec["id"]},
                name=None,
                email=None,
                user_id=None,
            )
    for _ in recipients:  # the real service fires one RECIPIENT_EXPIRED per recipient
        state.notify(envelope_id, "RECIPIENT_EXPIRED")
    return [r["id"] for r in recipients]


def reminders(state: SandboxState, envelope_id: str | None = None) -> list[dict[str, Any]]:
    """The reminder e-mails counted (not sent): one entry per (envelope, recipient) with a count."""
    counts: dict[tuple[str, int], int] = {}
    with state.store.lock:
        entries = [a for a in state.store.all("audit") if envelope_id in (None, a["envelopeId"])]
    for entry in entries:
        data = entry.get("data") or {}
        if entry["type"] == "EMAIL_SENT" and data.get("isResending"):
            key = (entry["envelopeId"], int(data["recipientId"]))
            counts[key] = counts.get(key, 0) + 1
    return [{"envelopeId": e, "recipientId": r, "count": c} for (e, r), c in sorted(counts.items())]


def auto_sign(state: SandboxState, envelope_id: str) -> None:
    """The ``--auto-sign-after`` job: every unsigned recipient signs (if still PENDING)."""
    env = state.store.get("envelope", envelope_id)
    if env is None or env["status"] != "PENDING":
        return
    sign(state, envelope_id, None)


def _field_value(fld: Obj, rec: Obj) -> str:
    kind = fld["type"]
    meta = fld.get("fieldMeta") or {}
    if kind in ("NAME", "INITIALS"):
        name = rec["name"] or rec["email"]
        return name if kind == "NAME" else "".join(p[0] for p in name.split() if p).upper()
    if kind == "EMAIL":
        return str(rec["email"])
    if kind == "DATE":
        return iso()[:16].replace("T", " ")
    if kind in ("TEXT", "NUMBER"):
        return str(meta.get("text") or meta.get("value") or "sandbox")
    if kind in ("CHECKBOX", "RADIO", "DROPDOWN"):
        values = meta.get("values") or []
        return str(values[0].get("value", "")) if values else ""
    return ""


def sign(state: SandboxState, envelope_id: str, recipient_id: int | None) -> list[int]:
    """Sign as one recipient (all their fields) or, with None, as every unsigned non-CC recipient."""
    path = "sandbox.sign"
    store = state.store
    with store.tx():
        _pending_envelope(store, envelope_id, path, "sign")
        recipients = store.recipients_of(envelope_id)
        if recipient_id is not None:
            chosen = [r for r in recipients if r["id"] == recipient_id]
            if not chosen:
                raise app_error(path, "NOT_FOUND", f"Recipient {recipient_id} not found")
            if chosen[0]["signingStatus"] != "NOT_SIGNED":
                raise app_error(path, "INVALID_REQUEST", "Recipient has already actioned the document")
        else:
            chosen = [r for r in recipients if r["role"] != "CC" and r["signingStatus"] == "NOT_SIGNED"]
        # Real service: an expired recipient cannot sign until redistribute renews the link.
        if any(is_expired(r) for r in chosen):
            raise expired_error("envelope.field.sign")
        now = iso()
        fields = store.fields_of(envelope_id)
        for rec in chosen:
            changed = store.edit("recipient", rec["id"])
            assert changed is not None
            changed.update({"signingStatus": "SIGNED", "signedAt": now, "sendStatus": "SENT"})
            store.put("recipient", changed)
            for fld in fields:
                if fld["recipientId"] == rec["id"] and not fld["inserted"]:
                    f2 = store.edit("field", fld["id"])
                    assert f2 is not None
                    f2["inserted"] = True
                    f2["customText"] = _field_value(fld, rec)
                    store.put("field", f2)
            state.audit(
                envelope_id,
                "DOCUMENT_RECIPIENT_COMPLETED",
                {
                    "recipientEmail": rec["email"],
                    "recipientName": rec["name"],
                    "recipientId": rec["id"],
                    "recipientRole": rec["role"],
                    "actionAuth": [],
                },
                name=rec["name"],
                email=rec["email"],
                user_id=None,
            )
    maybe_seal(state, envelope_id)
    return [r["id"] for r in chosen]


def reject(state: SandboxState, envelope_id: str, recipient_id: int, reason: str, *, path: str) -> Obj:
    """Record a rejection; the envelope becomes REJECTED shortly after (asynchronously)."""
    store = state.store
    with store.tx():
        env = store.get("envelope", envelope_id)
        rec = store.get("recipient", recipient_id)
        if env is None or rec is None or rec["envelopeId"] != envelope_id:
            raise app_error(path, "NOT_FOUND", "Recipient not found")
        if env["type"] != "DOCUMENT" or env["status"] != "PENDING":
            raise app_error(path, "INVALID_REQUEST", f"Envelope {envelope_id} must be pending to reject")
        if rec["signingStatus"] != "NOT_SIGNED":
            raise app_error(path, "INVALID_REQUEST", "Recipient has already actioned the document")
        changed = store.edit("recipient", recipient_id)
        assert changed is not None
        changed.update({"signingStatus": "REJECTED", "rejectionReason": reason, "signedAt": iso()})
        store.put("recipient", changed)
        state.audit(
            envelope_id,
            "DOCUMENT_RECIPIENT_REJECTED",
            {
                "recipientEmail": rec["email"],
                "recipientName": rec["name"],
                "recipientId": rec["id"],
                "recipientRole": rec["role"],
                "reason": reason,
                "isExternal": True,
            },
        )
    maybe_seal(state, envelope_id)
    return changed


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


def _seal_outcome(state: SandboxState, envelope_id: str) -> str | None:
    env = state.store.get("envelope", envelope_id)
    if env is None or env["status"] != "PENDING":
        return None
    recipients = state.store.recipients_of(envelope_id)
    if any(r["signingStatus"] == "REJECTED" for r in recipients):
        return "REJECTED"
    if recipients and all(r["role"] == "CC" or r["signingStatus"] == "SIGNED" for r in recipients):
        return "COMPLETED"
    return None


def maybe_seal(state: SandboxState, envelope_id: str) -> None:
    """Schedule the sealing job if every recipient has acted (or one rejected)."""
    if _seal_outcome(state, envelope_id) is not None:
        state.later(state.seal_delay, lambda: seal(state, envelope_id))


def _certificate_lines(env: Obj, recipients: list[Obj], completed_at: str) -> list[tuple[float, str]]:
    lines: list[tuple[float, str]] = [
        (18, "Signing certificate (sandbox)"),
        (10, f"Envelope: {env['id']}"),
        (10, f"Title: {env['title']}"),
        (10, f"Completed: {completed_at}"),
        (10, ""),
        (12, "Signers"),
    ]
    for rec in recipients:
        if rec["role"] == "CC":
            continue
        lines.append((10, f"{rec['name']} <{rec['email']}>  {rec['role']}  signed {rec['signedAt']}"))
    lines.append((8, ""))
    lines.append((8, "Generated by the airflow-provider-docsign sandbox; not a legal signature."))
    return lines


def marks_for(state: SandboxState, item_id: str, *, inserted_only: bool = True) -> list[pdfops.Mark]:
    """Drawable marks for the inserted fields of one item."""
    marks = []
    item = state.store.get("item", item_id)
    if item is None:
        return []
    for fld in state.store.fields_of(item["envelopeId"]):
        if fld["envelopeItemId"] != item_id or (inserted_only and not fld["inserted"]):
            continue
        rec = state.store.get("recipient", fld["recipientId"])
        signer = (rec["name"] or rec["email"]) if rec else "signer"
        is_sig = fld["type"] in SIGNATURE_TYPES
        marks.append(
            pdfops.Mark(
                page=int(fld["page"]),
                x=float(fld["positionX"]),
                y=float(fld["positionY"]),
                width=float(fld["width"]),
                height=float(fld["height"]),
                text=f"Signed: {signer}" if is_sig else (fld["customText"] or ""),
                signature=is_sig,
            )
        )
    return marks


def seal(state: SandboxState, envelope_id: str) -> None:
    """The asynchronous sealing job: write signed PDFs, then flip the status."""
    store = state.store
    with store.lock:
        outcome = _seal_outcome(state, envelope_id)
        if outcome is None:
            return
        env = dict(store.get("envelope", envelope_id) or {})
        items = [dict(i) for i in store.items_of(envelope_id)]
        recipients = store.recipients_of(envelope_id)
        fields = store.fields_of(envelope_id)
    completed_at = iso()
    produced: dict[str, tuple[str, str, str]] = {}
    if outcome == "COMPLETED":
        pages = {i["id"]: int(i["_pages"]) for i in items}
        for fld in fields:
            if not 1 <= int(fld["page"]) <= pages.get(fld["envelopeItemId"], 0):
                # Real service: the seal job fails on a field outside the PDF; the envelope stays PENDING.
                log.warning(
                    "envelope %s: field %s is on a missing page; it can never complete",
                    envelope_id,
                    fld["id"],
                )
                return
    # Completed: marks plus a certificate page. Rejected: the real service also seals, with a rejection
    # mark; the sandbox stamps "REJECTED" on page 1 (never archived: only COMPLETED is).
    certificate = _certificate_lines(env, recipients, completed_at) if outcome == "COMPLETED" else None
    stamp = None if outcome == "COMPLETED" else f"REJECTED {completed_at}"
    try:
        for item in items:
            data_id = cuid()
            name = f"{data_id}.pdf"
            # Real service: a completed document is sealed with the instance certificate (PAdES,
            # signing time = completion). The unsealed rendering is kept for the `unsigned` fault.
            seal_it = outcome == "COMPLETED" and state.sealer is not None
            unsealed = f"{data_id}.unsealed.pdf" if seal_it else name
            pdfops.write_signed(
                store.file_path(item["_original"]),
                store.file_path(unsealed),
                marks_for(state, item["id"]),
                certificate,
                stamp=stamp,
            )
            produced[item["id"]] = (data_id, name, unsealed)
            if seal_it:
                assert state.sealer is not None
                state.sealer.seal(store.file_path(unsealed), store.file_path(name), completed_at)
    except Exception:
        for _, name, unsealed in produced.values():
            for stale in {name, unsealed}:
                with contextlib.suppress(OSError):
                    os.unlink(store.file_path(stale))
        raise
    with store.tx():
        current_env = store.edit("envelope", envelope_id)
        if current_env is None or _seal_outcome(state, envelope_id) != outcome:
            return
        current_env.update({"status": outcome, "completedAt": completed_at, "updatedAt": completed_at})
        store.put("envelope", current_env)
        for item_id, (data_id, name, unsealed) in produced.items():
            sealed = store.edit("item", item_id)
            if sealed is None:
                continue
            sealed["documentDataId"] = data_id
            sealed["_signed"] = name
            sealed["_unsealed"] = unsealed if unsealed != name else None
            sealed["_signedSha256"] = None
            store.put("item", sealed)
        if outcome == "COMPLETED":
            state.audit(envelope_id, "DOCUMENT_COMPLETED", {"transactionId": cuid()})
    state.notify(envelope_id, f"DOCUMENT_{outcome}")


def recover(state: SandboxState) -> None:
    """After a restart: reschedule sealing and auto-signing jobs that were pending."""
    for env in state.store.all("envelope"):
        if env["status"] != "PENDING":
            continue
        maybe_seal(state, env["id"])
        at = env.get("_autoSignAt")
        if at is not None:
            state.later(max(0.0, float(at) - _epoch()), functools.partial(auto_sign, state, env["id"]))
