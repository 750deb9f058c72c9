"""Recipients act: sign (one recipient or every unsigned one, also the ``--auto-sign-after`` job) and reject.

Signing fills the recipient's fields with sandbox values; once everyone who must act has signed, or one
recipient has rejected, the sealing job (:mod:`.seal_job`) is scheduled and flips the status shortly after.
"""

from __future__ import annotations

from .errors import app_error
from .expiry import expire, expired_error, is_expired, require_pending
from .ids import iso
from .seal_job import maybe_seal
from .state import SandboxState
from .store import Obj

#: ``--auto-sign-after`` personas: an unsigned recipient whose e-mail's local part starts with one of
#: these does that instead of signing (``reject.ada@example.test`` rejects), so that a demo or a test
#: campaign can hold rejections and expired links without driving each envelope by hand.
PERSONAS = ("reject", "expire", "ignore")
AUTO_REJECTION_REASON = "Declined (sandbox auto-sign persona)"


def persona_of(email: str) -> str | None:
    """The auto-sign persona an e-mail address asks for (``reject``, ``expire``, ``ignore``), if any."""
    local = email.split("@", 1)[0].lower()
    return next((p for p in PERSONAS if local.startswith(p)), None)


def auto_sign(state: SandboxState, envelope_id: str) -> None:
    """The ``--auto-sign-after`` job: every unsigned recipient signs (if still PENDING).

    A recipient with a persona e-mail does what it says instead: ``reject...@`` rejects (the envelope
    becomes REJECTED), ``expire...@`` lets its link expire (the envelope stays PENDING, as on the real
    service), ``ignore...@`` never acts. Then the others sign, when nobody rejected.
    """
    env = state.store.get("envelope", envelope_id)
    if env is None or env["status"] != "PENDING":
        return
    unsigned = [
        r
        for r in state.store.recipients_of(envelope_id)
        if r["role"] != "CC" and r["signingStatus"] == "NOT_SIGNED"
    ]
    acting = {r["id"]: persona_of(str(r["email"])) for r in unsigned}
    for rec in unsigned:
        if acting[rec["id"]] == "reject":
            reject(state, envelope_id, rec["id"], AUTO_REJECTION_REASON, path="sandbox.autoSign")
            return
    for rec in unsigned:
        if acting[rec["id"]] == "expire":
            expire(state, envelope_id, rec["id"])
    for rec in unsigned:
        if acting[rec["id"]] is None:
            sign(state, envelope_id, rec["id"])


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
        require_pending(store, envelope_id, path, "sign")
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
            # Real service (v2.17 complete-document-with-token): signing leaves sendStatus as it was;
            # only a send by e-mail (or opening the link) sets SENT.
            changed.update({"signingStatus": "SIGNED", "signedAt": now})
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
