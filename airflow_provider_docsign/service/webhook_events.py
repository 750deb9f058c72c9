"""Documenso webhook deliveries, parsed down to what Airflow may see (pure code: no network, no Airflow).

The service POSTs ``{"event", "payload", "createdAt", "webhookEndpoint"}`` with the header
``X-Documenso-Secret`` (the subscription's secret, sent as is). ``payload`` is the whole document,
including every recipient's signing ``token``: a bearer credential. Only :class:`WebhookEvent`'s five
fields ever leave this module; the body itself is never logged, stored or put into an exception.

Facts from the Documenso source (``packages/lib/server-only/webhooks/``, the ``internal.execute-webhook``
job): any non-2xx answer, a connection error or a 10 s timeout fails the delivery, and the job runner
tries it again right away, up to 3 times (``BackgroundJob.maxRetries`` defaults to 3): 4 attempts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from airflow_provider_docsign.service.expiry import awaits_signature

__all__ = [
    "DEFAULT_EVENTS",
    "KNOWN_EVENTS",
    "SECRET_HEADER",
    "WebhookEvent",
    "WebhookRejected",
    "normalize_events",
    "parse_webhook",
]

#: The header that carries the subscription's secret.
SECRET_HEADER = "x-documenso-secret"  # noqa: S105 - a header name
#: Every event a Documenso webhook subscription can ask for (``WebhookTriggerEvents``).
KNOWN_EVENTS = (
    "DOCUMENT_CREATED",
    "DOCUMENT_SENT",
    "DOCUMENT_OPENED",
    "DOCUMENT_SIGNED",
    "DOCUMENT_COMPLETED",
    "DOCUMENT_REJECTED",
    "DOCUMENT_CANCELLED",
    "RECIPIENT_EXPIRED",
    "DOCUMENT_RECIPIENT_COMPLETED",
    "DOCUMENT_REMINDER_SENT",
    "TEMPLATE_CREATED",
    "TEMPLATE_UPDATED",
    "TEMPLATE_DELETED",
    "TEMPLATE_USED",
)
#: The events that end a wait.
DEFAULT_EVENTS = ("DOCUMENT_COMPLETED", "DOCUMENT_REJECTED", "DOCUMENT_CANCELLED")


class WebhookRejected(ValueError):
    """A delivery refused: ``status`` is the HTTP status to answer; the message never quotes the body.

    :param status: 4xx status for the sender.
    :param message: Why, in words a person can act on.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class WebhookEvent:
    """The only facts of a delivery passed into Airflow.

    :param envelope_id: The envelope id (``payload.envelopeId``).
    :param event: The event name, e.g. ``DOCUMENT_COMPLETED``.
    :param status: The envelope's status in the payload, e.g. ``COMPLETED``.
    :param time: ``createdAt`` of the delivery (ISO 8601).
    :param rejection_reason: The rejecting recipient's reason, for ``DOCUMENT_REJECTED``.
    :param recipient_id: For ``RECIPIENT_EXPIRED``, the recipient whose signing link expired (the
        payload is the whole document; the service marks that recipient's ``expirationNotifiedAt``
        just before it fires the event, so it is the unsigned, non-CC recipient notified last).
        ``None`` for other events (``DOCUMENT_REMINDER_SENT`` does not say whom it reminded).
    """

    envelope_id: str
    event: str
    status: str | None
    time: str | None
    rejection_reason: str | None = None
    recipient_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, as carried in a ``TriggerEvent``."""
        return {
            "envelope_id": self.envelope_id,
            "event": self.event,
            "status": self.status,
            "time": self.time,
            "rejection_reason": self.rejection_reason,
            "recipient_id": self.recipient_id,
        }


def normalize_events(events: Any) -> tuple[str, ...]:
    """Validate the events a trigger accepts.

    :raises ValueError: naming an unknown event, or when none is given.
    """
    values = [events] if isinstance(events, str) else list(events or ())
    out: list[str] = []
    for value in values:
        name = str(value).strip().upper()
        if name not in KNOWN_EVENTS:
            raise ValueError(f"unknown webhook event {value!r}; known: {', '.join(KNOWN_EVENTS)}")
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError("events is empty: the trigger would accept nothing")
    return tuple(out)


#: Real deliveries nest about 5 levels deep (body, payload, recipients, a recipient, authOptions).
MAX_JSON_DEPTH = 32
# An escape (two bytes), a quote or a bracket: matched one at a time, so the scan is linear.
_TOKENS = re.compile(rb'\\.|["\[\]{}]', re.DOTALL)


def _nesting(body: bytes) -> int:
    """The deepest bracket nesting of ``body`` outside strings, counted in a loop (no recursion)."""
    depth = deepest = 0
    in_string = False
    for match in _TOKENS.finditer(body):
        token = match.group()
        if token == b'"':
            in_string = not in_string
        elif in_string or len(token) == 2:
            continue
        elif token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                break
        else:
            depth -= 1
    return deepest


def _text(value: Any, limit: int = 500) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def parse_webhook(body: bytes) -> WebhookEvent:
    """Parse one delivery's body.

    :raises WebhookRejected: 400 for malformed or too deeply nested JSON, or a body without an event or
        envelope id (the message says what is missing, never what the body holds).
    """
    if _nesting(body) > MAX_JSON_DEPTH:  # before json.loads, whose parser recurses per level
        raise WebhookRejected(400, f"the body is nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise WebhookRejected(400, "the body is not JSON") from None
    if not isinstance(data, dict):
        raise WebhookRejected(400, "the body is not a JSON object")
    event = data.get("event")
    payload = data.get("payload")
    if not isinstance(event, str) or not event:
        raise WebhookRejected(400, "the body has no event")
    if not isinstance(payload, dict):
        raise WebhookRejected(400, "the body has no payload object")
    envelope_id = payload.get("envelopeId")
    if not isinstance(envelope_id, str) or not envelope_id or len(envelope_id) > 255:
        raise WebhookRejected(400, "the payload has no envelopeId")
    reason = None
    recipients = payload.get("recipients")
    if isinstance(recipients, list):
        for recipient in recipients:
            if isinstance(recipient, dict) and recipient.get("signingStatus") == "REJECTED":
                reason = _text(recipient.get("rejectionReason"))
                break
    return WebhookEvent(
        envelope_id=envelope_id,
        event=event[:64],
        status=_text(payload.get("status"), 32),
        time=_text(data.get("createdAt"), 64),
        rejection_reason=reason,
        recipient_id=_expired_recipient(recipients) if event == "RECIPIENT_EXPIRED" else None,
    )


def _expired_recipient(recipients: Any) -> int | None:
    """The unsigned, non-CC recipient whose ``expirationNotifiedAt`` is the latest (ISO text sorts)."""
    best: tuple[str, int] | None = None
    for r in recipients if isinstance(recipients, list) else ():
        if not isinstance(r, dict) or not awaits_signature(r):
            continue
        notified, rid = r.get("expirationNotifiedAt"), r.get("id")
        if not isinstance(notified, str) or not isinstance(rid, int) or isinstance(rid, bool):
            continue
        if best is None or notified > best[0]:
            best = (notified, rid)
    return None if best is None else best[1]
