"""Would Documenso deliver a webhook to this URL? The service's private-address rule (pure code, no Airflow).

Facts from Documenso v2.17 (``packages/lib/server-only/webhooks/assert-webhook-url.ts`` and
``is-private-url.ts``; checked against a real instance): before each delivery the service refuses a
URL whose host is ``localhost``, or is or resolves to a private, loopback or link-local address. The
delivery is then recorded as failed with response code 0 and no request is made; the job's retries
fail the same way. Nothing tells the receiving side. The instance's environment variable
``NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS`` (comma-separated host names or IPs, compared with the URL's
host, lower-cased and without trailing dots) lifts the rule for the hosts it lists. A host that does
not resolve is refused too.

The service tests a handful of address prefixes; here the same question is answered with
:mod:`ipaddress` (private, loopback, link-local, unspecified and reserved, IPv4-mapped IPv6 addresses
by their IPv4 address). That is a little broader (e.g. the documentation ranges count as private), so
a URL this module refuses may, in rare corners, be delivered by the service; never the reverse for the
ranges the service checks.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "BYPASS_SETTING",
    "UnusableWebhookUrl",
    "WebhookUrlVerdict",
    "check_webhook_url",
    "parse_bypass_hosts",
]

#: The Documenso instance's environment variable that lifts the rule for the hosts it lists.
BYPASS_SETTING = "NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS"

Resolver = Callable[..., list[tuple[Any, ...]]]


class UnusableWebhookUrl(ValueError):
    """The URL cannot be a subscription URL at all (not http(s), no host, a host that does not resolve)."""


@dataclass(frozen=True)
class WebhookUrlVerdict:
    """Whether the service would deliver to a URL, and why.

    :param url: The URL checked.
    :param host: Its host, normalised as the service compares it.
    :param allowed: True when the service would deliver.
    :param reason: Why, in one sentence.
    :param addresses: The addresses the host is or resolved to (empty when the bypass list decided).
    """

    url: str
    host: str
    allowed: bool
    reason: str
    addresses: tuple[str, ...] = ()

    @property
    def remedy(self) -> str | None:
        """For a refused URL: the instance setting that would lift the refusal."""
        if self.allowed:
            return None
        return (
            f"add {self.host} to the Documenso instance's {BYPASS_SETTING} (comma-separated) and restart it"
        )


def parse_bypass_hosts(value: str | Iterable[str] | None) -> frozenset[str]:
    """The bypass list as the service reads it: comma-separated, trimmed, lower-cased, empties dropped."""
    if value is None:
        return frozenset()
    entries = value.split(",") if isinstance(value, str) else [part for v in value for part in v.split(",")]
    # Entries are trimmed and lower-cased only (a trailing dot in an entry stays, as in the service).
    return frozenset(entry.strip().lower() for entry in entries if entry.strip())


def _normalise(host: str) -> str:
    return host.strip().lower().rstrip(".")


def _private_kind(address: str) -> str | None:
    """What makes ``address`` private (``"loopback"``, ...), or None for a public address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind, flag in (
        ("loopback", ip.is_loopback),
        ("unspecified", ip.is_unspecified),
        ("link-local", ip.is_link_local),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
    ):
        if flag:
            return kind
    return None


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host.split("%", 1)[0]))
    except ValueError:
        return None


def check_webhook_url(
    url: str,
    bypass_hosts: str | Iterable[str] | None = None,
    *,
    resolve: Resolver = socket.getaddrinfo,
) -> WebhookUrlVerdict:
    """Decide whether the service would deliver a webhook to ``url``.

    :param url: The subscription URL.
    :param bypass_hosts: The instance's ``NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS`` (a comma-separated
        string or host names/IPs).
    :param resolve: ``socket.getaddrinfo`` or a stand-in with its signature.
    :raises UnusableWebhookUrl: for a URL that is not http(s), has no host, or whose host does not
        resolve (the service refuses those too).
    """
    try:
        parts = urlsplit(str(url).strip())
        hostname = parts.hostname
        port = parts.port
    except ValueError as error:
        raise UnusableWebhookUrl(f"{url!r} is not a URL: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise UnusableWebhookUrl(f"{url!r} is not an http(s) URL")
    bare = _normalise(hostname or "")
    if not bare:
        raise UnusableWebhookUrl(f"{url!r} has no host")
    # As the service's URL parser spells the host: an IPv6 address keeps its brackets, and that is the
    # form a bypass entry must have to match.
    host = f"[{bare}]" if ":" in bare else bare
    if host in parse_bypass_hosts(bypass_hosts):
        return WebhookUrlVerdict(url, host, True, f"{host} is listed in {BYPASS_SETTING}")
    if host == "localhost":
        return WebhookUrlVerdict(url, host, False, "localhost is a loopback host name")
    literal = _literal(bare)
    if literal is not None:
        addresses: tuple[str, ...] = (literal,)
    else:
        try:
            infos = resolve(bare, port or (443 if parts.scheme == "https" else 80), proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError) as error:
            raise UnusableWebhookUrl(f"the host {host} does not resolve ({error})") from None
        addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses:
            raise UnusableWebhookUrl(f"the host {host} does not resolve (no address)")
    for address in addresses:
        kind = _private_kind(address)
        if kind is not None:
            where = f"{host} is" if literal is not None else f"{host} resolves to {address},"
            article = "an" if kind[0] in "aeiou" else "a"
            return WebhookUrlVerdict(url, host, False, f"{where} {article} {kind} address", addresses)
    public = f"{host} is a public address" if literal is not None else f"{host} resolves to public addresses"
    return WebhookUrlVerdict(url, host, True, f"{public} ({', '.join(addresses)})", addresses)
