"""The sandbox sends webhooks like the real service (facts from Documenso's webhook code, no code).

- A subscription has a URL, a secret and the events it wants (``--webhook URL --webhook-secret S
  --webhook-events DOCUMENT_COMPLETED,...`` or ``POST /_sandbox/webhooks``).
- The body is ``{"event", "payload", "createdAt", "webhookEndpoint"}``; ``payload`` is the document with
  its legacy numeric ``id``, ``envelopeId`` and every recipient (twice: ``recipients`` and ``Recipient``,
  tokens included), as in the recorded deliveries. The header ``X-Documenso-Secret`` carries the secret.
- Delivery: POST with a 10 s timeout, redirects not followed; any non-2xx, timeout or connection error
  fails the attempt, and it is tried again at once, 4 attempts in all (the real job runner's
  ``maxRetries`` of 3).
- Private addresses, as the real service (``airflow_provider_docsign.service.webhook_urls``): the URL is
parsed
  as the service parses it (WHATWG), and a URL whose host is ``localhost`` or is (or resolves to) a
  private, loopback or link-local address is refused before any request, unless the host is listed in
  ``NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS`` (the same environment variable, or
  ``--webhook-ssrf-bypass-hosts``; entries compared as written, as the service does). A refused
  delivery is logged like the real one: every attempt with status 0, plus ``refused`` with the reason.
  The default lists nothing, so tests that deliver to 127.0.0.1 list it
  (``SandboxServer(webhook_ssrf_bypass_hosts="127.0.0.1")``).
- Each delivery resolves its host once, checks those addresses, and connects to exactly the first of
  them for every attempt (``Host`` header and TLS server name from the URL; no proxy from the
  environment): what was checked is what is reached, whatever the name answers later. The log
  records the ``address`` connected to.
- ``POST /_sandbox/webhooks/dns {"answers": {"name": [["addr", ...], ...]}}`` gives names fixed
  answers, one list per lookup (the last repeats; ``[]`` does not resolve), so that tests can judge
  names and DNS rebinding with no DNS; other names are resolved by the system.
- Fault ``POST /_sandbox/webhooks/drop {"count": n}``: the next n deliveries are silently lost (never
  sent), as when the receiver was down through every attempt.

The delivery log (``GET /_sandbox/webhooks``) holds event, envelope id, URL and attempt statuses, never
the body or the secret.
"""

from __future__ import annotations

import functools
import json
import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from airflow_provider_docsign.service.webhook_urls import (
    UnusableWebhookUrl,
    WebhookUrl,
    check_webhook_url,
    host_addresses,
    parse_bypass_hosts,
    parse_webhook_url,
    unmatchable_bypass_entries,
)

from .ids import iso
from .store import Store
from .views import legacy_ids, recipient_lite

#: Runs a callable in the background after a delay (``SandboxState.later``).
Later = Callable[[float, Callable[[], Any]], Any]

log = logging.getLogger(__name__)

TIMEOUT = 10.0
ATTEMPTS = 4
SENT_EVENTS = ("DOCUMENT_COMPLETED", "DOCUMENT_REJECTED", "DOCUMENT_CANCELLED")
#: Events a subscription may also ask for (sent by the expiry control endpoint and by redistribute).
EXTRA_EVENTS = ("RECIPIENT_EXPIRED", "DOCUMENT_REMINDER_SENT")


@dataclass
class Subscription:
    """One webhook subscription."""

    url: str
    secret: str
    events: tuple[str, ...]

    def public(self) -> dict[str, Any]:
        """Without the secret."""
        return {"url": self.url, "events": list(self.events)}


@dataclass
class WebhookSender:
    """Subscriptions, the drop fault, the private-address bypass list and the delivery log."""

    #: Hosts exempt from the private-address rule (``NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS``).
    bypass_hosts: frozenset[str] = frozenset()
    subscriptions: list[Subscription] = field(default_factory=list)
    drop: int = 0
    deliveries: list[dict[str, Any]] = field(default_factory=list)
    #: Fixed DNS answers by name, one address list per lookup (``POST /_sandbox/webhooks/dns``).
    dns: dict[str, list[list[str]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def subscribe(self, url: str, secret: str, events: Any) -> Subscription:
        """Add a subscription; ``events`` a list or a comma-separated string (default: the three sent)."""
        if isinstance(events, str):
            events = [e for e in events.split(",") if e.strip()]
        chosen = tuple(str(e).strip().upper() for e in (events or SENT_EVENTS))
        unknown = [e for e in chosen if e not in SENT_EVENTS + EXTRA_EVENTS]
        if not url.startswith(("http://", "https://")) or unknown:
            raise ValueError(
                f"bad webhook subscription: url must be http(s), events among {SENT_EVENTS + EXTRA_EVENTS}"
            )
        sub = Subscription(url=url, secret=secret, events=chosen)
        with self.lock:
            self.subscriptions.append(sub)
        return sub

    def snapshot(self) -> dict[str, Any]:
        """Subscriptions (no secrets), the bypass list and the delivery log."""
        with self.lock:
            return {
                "subscriptions": [s.public() for s in self.subscriptions],
                "drop": self.drop,
                "ssrfBypassHosts": sorted(self.bypass_hosts),
                "deliveries": [dict(d) for d in self.deliveries],
            }

    def clear(self) -> None:
        """Remove every subscription, the drop fault and the log."""
        with self.lock:
            self.subscriptions.clear()
            self.deliveries.clear()
            self.dns.clear()
            self.drop = 0

    def set_dns(self, answers: dict[str, list[list[str]]]) -> None:
        """Replace the fixed DNS answers: ``{name: [[address, ...] per lookup, ...]}``."""
        table = {}
        for name, lookups in answers.items():
            if not isinstance(lookups, list) or not lookups or not all(isinstance(a, list) for a in lookups):
                raise ValueError(f"dns answers for {name!r}: a non-empty list of address lists")
            table[str(name).lower()] = [[str(address) for address in answer] for answer in lookups]
        with self.lock:
            self.dns = table

    def resolve(self, host: str, port: int, **kwargs: Any) -> list[tuple[Any, ...]]:
        """``socket.getaddrinfo``, or the next fixed answer for ``host`` when it has some."""
        with self.lock:
            lookups = self.dns.get(host)
            answer = None if lookups is None else (lookups.pop(0) if len(lookups) > 1 else lookups[0])
        if answer is None:
            return socket.getaddrinfo(host, port, **kwargs)
        if not answer:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known (sandbox DNS answer)")
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in answer
        ]

    def notify(self, store: Store, later: Later, envelope_id: str, event: str) -> None:
        """Queue one delivery per subscription that wants ``event`` (sent from a background thread).

        :param store: The sandbox's store, read for the delivery's payload.
        :param later: Runs each delivery in the background (``SandboxState.later``).
        :param envelope_id: The envelope the event is about.
        :param event: The event, e.g. ``DOCUMENT_COMPLETED``.
        """
        with self.lock:
            targets = [s for s in self.subscriptions if event in s.events]
        if not targets:
            return
        payload = _payload(store, envelope_id)
        if payload is None:
            return
        for sub in targets:
            later(0, functools.partial(self._deliver, sub, event, envelope_id, payload))

    def _deliver(self, sub: Subscription, event: str, envelope_id: str, payload: dict[str, Any]) -> None:
        entry: dict[str, Any] = {"event": event, "envelopeId": envelope_id, "url": sub.url, "attempts": []}
        with self.lock:
            self.deliveries.append(entry)
            if self.drop > 0:
                self.drop -= 1
                entry["dropped"] = True
                return
        target, refusal = self._target(sub.url)
        if target is None:
            # As the real service: no request at all, every attempt recorded as failed with status 0.
            with self.lock:
                entry["refused"] = refusal
                entry["attempts"].extend([0] * ATTEMPTS)
            log.warning("webhook %s for %s refused: %s", event, envelope_id, refusal)
            return
        parsed, address = target
        with self.lock:
            entry["address"] = address
        body = {"event": event, "payload": payload, "createdAt": iso(), "webhookEndpoint": sub.url}
        raw = json.dumps(body, separators=(",", ":")).encode()
        # The connection goes to the checked address; the Host header and the TLS server name (and so
        # the certificate check) are the URL's. No proxy from the environment: it would connect elsewhere.
        url = httpx.URL(scheme=parsed.scheme, host=address, port=parsed.port, raw_path=parsed.target.encode())
        headers = {
            "Host": parsed.host_header,
            "Content-Type": "application/json",
            "X-Documenso-Secret": sub.secret,
        }
        extensions = {"sni_hostname": parsed.host.strip("[]")} if parsed.scheme == "https" else {}
        with httpx.Client(timeout=TIMEOUT, follow_redirects=False, trust_env=False) as client:
            for _ in range(ATTEMPTS):
                try:
                    status = client.post(url, content=raw, headers=headers, extensions=extensions).status_code
                except httpx.HTTPError:
                    status = 0
                with self.lock:
                    entry["attempts"].append(status)
                if 200 <= status < 300:
                    return
        log.warning("webhook %s for %s failed after %d attempts", event, envelope_id, ATTEMPTS)

    def _target(self, url: str) -> tuple[tuple[WebhookUrl, str] | None, str | None]:
        """Where to deliver ``url`` (its parse, the one checked address), or why the service would refuse it.

        The host is resolved once: the check and the connection use the same answer.
        """
        answers: list[list[tuple[Any, ...]]] = []

        def once(host: str, port: int, **kwargs: Any) -> list[tuple[Any, ...]]:
            if not answers:
                answers.append(self.resolve(host, port, **kwargs))
            return answers[0]

        try:
            verdict = check_webhook_url(url, self.bypass_hosts, resolve=once)
            if not verdict.allowed:
                return None, f"{verdict.reason}; {verdict.remedy}"
            parsed = parse_webhook_url(url)
            # A host the bypass list lets through was not resolved by the check: resolve it now (once).
            addresses = verdict.addresses or host_addresses(parsed.host, parsed.port, once)
        except UnusableWebhookUrl as error:
            return None, str(error)
        return (parsed, addresses[0]), None

    def set_bypass_hosts(self, value: str | None) -> None:
        """Set the bypass list from a comma-separated string (None or empty: nothing is exempt)."""
        self.bypass_hosts = parse_bypass_hosts(value)
        for entry, canonical in unmatchable_bypass_entries(value).items():
            # The service says nothing; the sandbox at least warns.
            log.warning(
                "bypass entry %r never matches a URL's host (entries are compared as written)%s",
                entry,
                f": write it {canonical}" if canonical else "",
            )


def _payload(store: Store, envelope_id: str) -> dict[str, Any] | None:
    with store.lock:
        env = store.get("envelope", envelope_id)
        if env is None:
            return None
        legacy = legacy_ids(store, envelope_id)
        recipients = []
        for rec in store.recipients_of(envelope_id):
            out = recipient_lite(rec)
            out.pop("expired", None)
            out.update(legacy)
            recipients.append(out)
    return {
        "id": legacy["documentId"],
        "envelopeId": envelope_id,
        "externalId": env.get("externalId"),
        "userId": env.get("userId"),
        "authOptions": env.get("authOptions"),
        "formValues": env.get("formValues"),
        "visibility": env.get("visibility"),
        "title": env.get("title"),
        "status": env.get("status"),
        "createdAt": env.get("createdAt"),
        "updatedAt": env.get("updatedAt"),
        "completedAt": env.get("completedAt"),
        "deletedAt": env.get("deletedAt"),
        "teamId": env.get("teamId"),
        "templateId": env.get("templateId"),
        "source": "DOCUMENT",
        "documentMeta": env.get("documentMeta"),
        "recipients": recipients,
        "Recipient": [dict(r) for r in recipients],
    }
