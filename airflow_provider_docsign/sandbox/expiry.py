"""Signing-link expiry and reminders: ``expiresAt`` at each send, the expired refusal, the test controls.

A recipient's link expires ``envelopeExpirationPeriod`` after each send (distribute or redistribute
renews it); an expired recipient cannot sign. ``/_sandbox/expire`` expires a link now, as the real
service's sweep would, and ``/_sandbox/reminders`` counts the reminder e-mails (never sent).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from .errors import ApiError, app_error
from .ids import iso, utcnow
from .state import SandboxState
from .store import Obj

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


def require_pending(store: Any, envelope_id: str, path: str, verb: str) -> None:
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
        require_pending(store, envelope_id, path, "expire")
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
