"""``DocsignWebhookEventTrigger``: completion events pushed by the service, for an Airflow 3 ``AssetWatcher``.

Airflow 2.11 has no event-driven scheduling (no ``AssetWatcher``, no ``BaseEventTrigger``): importing
this module there raises an :class:`ImportError` that says so. Use the (coalesced) deferrable
``DocsignEnvelopeSensor`` on 2.11.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from airflow_provider_docsign._compat import (
    AIRFLOW_V_3_0_PLUS,
    AIRFLOW_VERSION,
    BaseEventTrigger,
    TriggerEvent,
    aget_connection,
)

if not AIRFLOW_V_3_0_PLUS:
    raise ImportError(
        "DocsignWebhookEventTrigger needs Airflow 3.0 or later (AssetWatcher and BaseEventTrigger); this "
        f"is Airflow {AIRFLOW_VERSION}. On Airflow 2.11 wait with the deferrable DocsignEnvelopeSensor, "
        "whose polls are coalesced 20 envelopes per request in the triggerer."
    )

from airflow_provider_docsign.service.webhook_events import DEFAULT_EVENTS, normalize_events
from airflow_provider_docsign.triggers._listener import (
    DEFAULT_HEAD_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    listener_for,
)

__all__ = [
    "DEFAULT_HEAD_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONNECTIONS",
    "DocsignWebhookEventTrigger",
]

#: Real deliveries are a few KB (the document and its recipients); 1 MiB leaves room for hundreds.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024


class DocsignWebhookEventTrigger(BaseEventTrigger):  # type: ignore[misc,valid-type]
    """Listen for Documenso webhooks in the triggerer; yield one event per accepted delivery.

    Use it in an ``AssetWatcher`` so that each delivery creates an asset event and runs the DAGs
    scheduled on that asset. Triggers on the same ``host`` and ``port`` share one listener, built on
    h11. A delivery is answered (2xx) before Airflow does anything with it. Method (405), path (404) and
    secret (401) are checked from the headers, before any of the body is read; malformed or deeply
    nested JSON, an event not accepted (400) and an oversized body (413) are refused and trigger
    nothing. Header lines are capped at 8 KiB and the head at 32 KiB, sent within ``head_timeout``; a
    flood of connections that send nothing cannot keep deliveries out (see ``max_connections``). Each
    event carries only ``envelope_id``, ``event``, ``status``, ``time``, ``rejection_reason`` and
    ``recipient_id`` (the recipient whose link expired, for ``RECIPIENT_EXPIRED``): the body (which
    holds every signer's signing token) is never logged or passed on.

    :param port: The TCP port to listen on (the subscription URL points here).
    :param host: The address to bind: loopback by default, or an interface the service can reach.
    :param secret_conn_id: An Airflow connection whose password is the subscription's secret (sent by
        the service in ``X-Documenso-Secret``). The secret is never a trigger argument, so it is not
        stored with the trigger or shown in the UI.
    :param events: The webhook events accepted (default: completed, rejected, cancelled). Add
        ``"RECIPIENT_EXPIRED"`` to hear about expired signing links (the envelope stays PENDING) and
        ``"DOCUMENT_REMINDER_SENT"`` for reminders.
    :param max_body_bytes: Larger bodies are refused with 413 without being read.
    :param path: The request path deliveries are posted to, e.g. ``/hook`` (other paths get 404);
        ``None`` (default) accepts any path.
    :param max_connections: Connections the listener keeps waiting for their request head (when all
        are taken, a new one takes the place of the oldest of the busiest client address, which gets
        503), and, separately, authenticated deliveries whose body it reads at once (503 above).
        Triggers sharing a port share the largest value.
    :param head_timeout: Seconds a connection may take to send its request line and headers (default
        2; Documenso sends them at once); then it is answered 408 and closed. Triggers sharing a port
        share the largest value.
    """

    def __init__(
        self,
        *,
        port: int,
        host: str = "127.0.0.1",
        secret_conn_id: str = "docsign_webhook",  # noqa: S107 - a connection id, not a secret
        events: Sequence[str] = DEFAULT_EVENTS,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        path: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        head_timeout: float = DEFAULT_HEAD_TIMEOUT,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise ValueError(f"port must be an integer between 1 and 65535, got {port!r}")
        if not isinstance(max_body_bytes, int) or max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be a positive integer, got {max_body_bytes!r}")
        if path is not None and (not isinstance(path, str) or not path.startswith("/") or "?" in path):
            raise ValueError(f"path must start with '/' and carry no query string, got {path!r}")
        if not isinstance(max_connections, int) or isinstance(max_connections, bool) or max_connections < 1:
            raise ValueError(f"max_connections must be a positive integer, got {max_connections!r}")
        if (
            not isinstance(head_timeout, (int, float))
            or isinstance(head_timeout, bool)
            or not 0 < head_timeout <= 60
        ):
            raise ValueError(f"head_timeout must be a number of seconds in (0, 60], got {head_timeout!r}")
        self.port = port
        self.host = str(host)
        self.secret_conn_id = str(secret_conn_id)
        self.events = list(normalize_events(events))
        self.max_body_bytes = max_body_bytes
        self.path = path
        self.max_connections = max_connections
        self.head_timeout = float(head_timeout)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Return the import path and the JSON-safe keyword arguments (no secret among them)."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "port": self.port,
                "host": self.host,
                "secret_conn_id": self.secret_conn_id,
                "events": list(self.events),
                "max_body_bytes": self.max_body_bytes,
                "path": self.path,
                "max_connections": self.max_connections,
                "head_timeout": self.head_timeout,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Yield one event per accepted delivery, for as long as the trigger runs."""
        connection = await aget_connection(self.secret_conn_id)
        secret = connection.password or ""
        if not secret:
            raise ValueError(
                f"connection {self.secret_conn_id!r} has no password: set it to the webhook subscription's "
                "secret (an empty secret would accept anyone's deliveries)"
            )
        subscription = await listener_for(self.host, self.port).subscribe(
            secret,
            self.events,
            self.max_body_bytes,
            path=self.path,
            max_connections=self.max_connections,
            head_timeout=self.head_timeout,
        )
        try:
            while True:
                event = await subscription.queue.get()
                yield TriggerEvent(event.to_dict())  # type: ignore[no-untyped-call]
        finally:
            subscription.close()
