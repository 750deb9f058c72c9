"""The running sandbox's shared state: store, configuration, traffic controls and timers."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .faults import Traffic
from .ids import cuid, iso
from .sealing import Sealer
from .store import Obj, Store
from .tsa import TimestampAuthority
from .webhooks import WebhookSender

log = logging.getLogger("airflow_provider_docsign.sandbox")


@dataclass
class SandboxState:
    """Everything a request handler needs.

    :param store: Objects and files.
    :param api_key: The one team API key that is accepted.
    :param max_file_bytes: Per-file upload limit.
    :param auto_sign_after: Seconds after distribution at which every recipient signs, or None.
    :param seal_delay: Seconds between the last signature (or a rejection) and the status change.
    :param sealer: Signs completed PDFs (a :class:`~.sealing.Sealer`); None leaves them unsealed.
    :param tsa: The RFC 3161 timestamp authority at ``/tsa``; None: no TSA.
    """

    store: Store
    api_key: str
    max_file_bytes: int = 50 * 1024 * 1024
    auto_sign_after: float | None = None
    seal_delay: float = 0.3
    traffic: Traffic = field(default_factory=Traffic)
    sealer: Sealer | None = None
    tsa: TimestampAuthority | None = None
    webhooks: WebhookSender = field(default_factory=WebhookSender)
    _timers: list[threading.Timer] = field(default_factory=list)
    _closed: bool = False

    @property
    def max_file_mb(self) -> int:
        """The per-file limit in MB, as the error message states it."""
        return self.max_file_bytes // (1024 * 1024)

    def notify(self, envelope_id: str, event: str) -> None:
        """Send the webhook ``event`` about ``envelope_id`` to every subscription that wants it."""
        self.webhooks.notify(self.store, self.later, envelope_id, event)

    def later(self, delay: float, fn: Callable[[], Any]) -> None:
        """Run ``fn`` in a daemon timer thread after ``delay`` seconds (errors are logged)."""

        def run() -> None:
            if self._closed:
                return
            try:
                fn()
            except Exception:
                log.exception("sandbox background job failed")

        timer = threading.Timer(max(0.0, delay), run)
        timer.daemon = True
        self._timers = [t for t in self._timers if t.is_alive()]
        self._timers.append(timer)
        timer.start()

    def close(self) -> None:
        """Cancel timers and close the store."""
        self._closed = True
        for timer in self._timers:
            timer.cancel()
        with contextlib.suppress(Exception):
            self.store.close()

    def audit(
        self,
        envelope_id: str,
        kind: str,
        data: dict[str, Any] | None = None,
        *,
        name: str | None = "Sandbox Owner",
        email: str | None = "owner@sandbox.test",
        user_id: int | None = 1,
    ) -> Obj:
        """Append an audit-log entry."""
        entry = {
            "id": cuid(),
            "createdAt": iso(),
            "envelopeId": envelope_id,
            "name": name,
            "email": email,
            "userId": user_id,
            "userAgent": "airflow-provider-docsign-sandbox",
            "ipAddress": "127.0.0.1",
            "type": kind,
            "data": data or {},
            "_seq": time.time_ns(),
        }
        return self.store.put("audit", entry)
