r"""Would Documenso deliver a webhook to this URL? The service's private-address rule (pure code, no Airflow).

Facts from Documenso v2.17 (``packages/lib/server-only/webhooks/assert-webhook-url.ts``,
``is-private-url.ts`` and ``execute-webhook-call.ts``; checked against a real instance):

- The URL is parsed by Node's WHATWG URL parser (Node's parser *is* ada), and the host the service
  judges is that parser's ``hostname``, lower-cased, without trailing dots: ``http://127.0.0.1\@8.8.8.8/``
  is host ``127.0.0.1`` (a backslash ends the authority), ``http://0x7f.1/`` is ``127.0.0.1``,
  fullwidth ``localhost`` is ``localhost``. We parse with the same parser (the ``ada-url``
  package), so we see the host the service sees; :mod:`urllib` does not (it saw ``8.8.8.8`` above).
- ``NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS`` (comma-separated; each entry trimmed and lower-cased, *not*
  otherwise normalised) lifts every check for a URL whose host equals an entry. So an entry only ever
  matches when it is written as the parser writes hosts: ``0x0a.0.0.1``, ``localhost.``,
  ``[0:0:0:0:0:0:0:1]`` or ``bücher.example`` never match (write ``10.0.0.1``, ``localhost``,
  ``[::1]``, ``xn--bcher-kva.example``). :func:`unmatchable_bypass_entries` finds such entries by
  parsing each with the same host parser.
- Otherwise the URL is refused when its host is ``localhost`` or an address in the service's private
  ranges, or is a name that resolves (``dns.lookup``, every address) to one; a name that does not
  resolve is refused too. Refused means no request: the delivery is recorded with status 0.
- An IPv6 literal outside the service's prefixes is passed to ``dns.lookup`` with its brackets, a
  lookup no resolver answers: v2.17 refuses every IPv6 literal URL that is not in its bypass list.
- The delivery is Node's ``fetch``, which cannot send to a URL carrying a user name or password, nor
  to a scheme other than http(s): such URLs pass the address check and still never get a delivery.

Where we are stricter (a URL we refuse that the service may deliver to; never the reverse):
:data:`STRICTER_RANGES` (0.0.0.0/8, documentation, benchmarking, multicast, reserved, IPv6 forms that
embed a private IPv4 address or are deprecated), ``*.localhost`` names without a lookup, and a DNS
lookup that times out (the service delivers then, after 250 ms).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import ada_url

__all__ = [
    "BYPASS_SETTING",
    "SERVICE_RANGES",
    "STRICTER_RANGES",
    "UnusableWebhookUrl",
    "WebhookUrl",
    "WebhookUrlVerdict",
    "canonical_host",
    "check_webhook_url",
    "host_addresses",
    "parse_bypass_hosts",
    "parse_webhook_url",
    "unmatchable_bypass_entries",
]

#: The Documenso instance's environment variable that lifts the rule for the hosts it lists.
BYPASS_SETTING = "NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS"

Resolver = Callable[..., list[tuple[Any, ...]]]
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _nets(*pairs: tuple[str, str]) -> tuple[tuple[_Network, str], ...]:
    return tuple((ipaddress.ip_network(net), kind) for net, kind in pairs)


#: The ranges Documenso v2.17 itself refuses (``is-private-url.ts``), with the word our reasons use.
SERVICE_RANGES = _nets(
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("169.254.0.0/16", "link-local"),
    ("0.0.0.0/32", "unspecified"),
    ("::1/128", "loopback"),
    ("::/128", "unspecified"),
    ("fe80::/16", "link-local"),
    ("fc00::/7", "private"),
)
#: Ranges we refuse too, where the service may deliver (or cannot, HTTP to multicast being no delivery).
STRICTER_RANGES = _nets(
    ("0.0.0.0/8", "this-network"),
    ("192.0.2.0/24", "documentation"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("198.18.0.0/15", "benchmarking"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),  # 255.255.255.255 (broadcast) included
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
    ("2001:db8::/32", "documentation"),
    ("64:ff9b:1::/48", "private"),  # local-use NAT64
    ("100::/64", "reserved"),  # discard-only
    ("::/96", "reserved"),  # IPv4-compatible addresses, deprecated
)


class UnusableWebhookUrl(ValueError):
    """The URL can get no delivery: not a URL, not http(s), credentials, or a host that does not resolve."""


@dataclass(frozen=True)
class WebhookUrl:
    """A URL as the service's WHATWG parser reads it.

    :param href: The URL as the parser serialises it.
    :param scheme: ``http``, ``https``, ...
    :param host: The host as the service compares it: the parser's hostname, lower-cased, without
        trailing dots; an IPv6 address in brackets.
    :param host_header: The ``Host`` header a client sends (the parser's ``host``: the port when it is
        not the scheme's default).
    :param port: The port a client connects to.
    :param target: The request target: path and query, percent-encoded by the parser.
    :param credentials: Whether the URL carries a user name or password.
    """

    href: str
    scheme: str
    host: str
    host_header: str
    port: int
    target: str
    credentials: bool


@dataclass(frozen=True)
class WebhookUrlVerdict:
    """Whether the service would deliver to a URL, and why.

    :param url: The URL checked.
    :param host: Its host, as the service's parser writes it and the service compares it.
    :param allowed: True when the service would deliver.
    :param reason: Why, in one sentence.
    :param addresses: The addresses the host is or resolved to (empty when the bypass list decided).
    :param stricter: For a refusal: True when the rule that refused is ours, not the service's (the
        service may deliver to this URL).
    """

    url: str
    host: str
    allowed: bool
    reason: str
    addresses: tuple[str, ...] = ()
    stricter: bool = False

    @property
    def remedy(self) -> str | None:
        """For a refused URL: the instance setting that would lift the refusal."""
        if self.allowed:
            return None
        return (
            f"add {self.host} to the Documenso instance's {BYPASS_SETTING} (comma-separated) and restart it"
        )


def parse_webhook_url(url: str) -> WebhookUrl:
    """Parse ``url`` as the service does (WHATWG, by ada: Node's own parser).

    :raises UnusableWebhookUrl: when the parser refuses it (the service refuses it too).
    """
    try:
        parts = ada_url.parse_url(str(url))
    except ValueError:
        raise UnusableWebhookUrl(f"{url!r} is not a URL (the WHATWG URL parser refuses it)") from None
    scheme = parts["protocol"].rstrip(":")
    default = {"http": 80, "https": 443}.get(scheme, 0)
    return WebhookUrl(
        href=parts["href"],
        scheme=scheme,
        host=_service_form(parts["hostname"]),
        host_header=parts["host"],
        port=int(parts["port"]) if parts["port"] else default,
        target=(parts["pathname"] or "/") + parts["search"],
        credentials=bool(parts["username"] or parts["password"]),
    )


def _service_form(hostname: str) -> str:
    """The service's ``normalizeHostname``: lower-cased, trailing dots removed."""
    return hostname.lower().rstrip(".")


def canonical_host(entry: str) -> str | None:
    """``entry`` (a host, as in a bypass list) as the service's parser writes hosts; None if it is not one."""
    text = entry.strip()
    if not text:
        return None
    if "://" not in text:
        # A bare IPv6 address is written in brackets in a URL.
        text = f"http://[{text}]/" if text.count(":") > 1 and not text.startswith("[") else f"http://{text}/"
    try:
        hostname = ada_url.parse_url(text, attributes=("hostname",))["hostname"]
    except ValueError:
        return None
    return _service_form(hostname) or None


def parse_bypass_hosts(value: str | Iterable[str] | None) -> frozenset[str]:
    """The bypass list as the service reads it: comma-separated, trimmed, lower-cased, empties dropped."""
    if value is None:
        return frozenset()
    entries = value.split(",") if isinstance(value, str) else [part for v in value for part in v.split(",")]
    return frozenset(entry.strip().lower() for entry in entries if entry.strip())


def unmatchable_bypass_entries(value: str | Iterable[str] | None) -> dict[str, str | None]:
    """Bypass entries that no URL can match, each with the spelling that would (None: not a host).

    The service compares each entry, as written, with the host as its URL parser writes it; an entry
    that the same parser writes differently (``0x0a.0.0.1``, ``localhost.``, ``[0:0:0:0:0:0:0:1]``,
    ``bücher.example``, ``host:8080``) can never be equal to a URL's host.
    """
    found: dict[str, str | None] = {}
    for entry in sorted(parse_bypass_hosts(value)):
        canonical = canonical_host(entry)
        if canonical != entry:
            found[entry] = canonical
    return found


def _kind(address: str) -> tuple[str, bool] | None:
    """What makes ``address`` undeliverable and whether that is our stricter rule; None for public."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            found = _kind(str(embedded))
            if found is not None:
                # The service's prefix test catches an IPv4-mapped address only when it is written
                # dotted, which its parser never does: these refusals are all ours.
                return found[0], True
    for table, stricter in ((SERVICE_RANGES, False), (STRICTER_RANGES, True)):
        for network, kind in table:
            if ip.version == network.version and ip in network:
                return kind, stricter
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside an IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96) or 6to4 address."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    value = int(ip)
    if ip in ipaddress.ip_network("64:ff9b::/96") or (value >> 32 == 0 and value > 1):
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def _literal(host: str) -> str | None:
    """The address ``host`` is: an IP literal, or (trailing dots dropped) one the parser reads as IPv4."""
    bare = host[1:-1] if host.startswith("[") else host
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        pass
    # "0x7f.0.0.1.." is a name to the parser; without its dots the service looks "0x7f.0.0.1" up, and
    # getaddrinfo reads that as 127.0.0.1, exactly as the parser does.
    canonical = canonical_host(bare)
    if canonical and canonical != bare:
        try:
            return str(ipaddress.IPv4Address(canonical))
        except ValueError:
            return None
    return None


def _is_localhost(host: str) -> bool:
    return host == "localhost" or host.endswith(".localhost")


def host_addresses(host: str, port: int, resolve: Resolver = socket.getaddrinfo) -> tuple[str, ...]:
    """The addresses ``host`` (as :attr:`WebhookUrl.host`) is, or resolves to through ``resolve``.

    :raises UnusableWebhookUrl: when the name does not resolve.
    """
    literal = _literal(host)
    if literal is not None:
        return (literal,)
    try:
        infos = resolve(host, port, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as error:
        raise UnusableWebhookUrl(f"the host {host} does not resolve ({error})") from None
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise UnusableWebhookUrl(f"the host {host} does not resolve (no address)")
    return addresses


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


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
    :param resolve: ``socket.getaddrinfo`` or a stand-in with its signature (called at most once).
    :raises UnusableWebhookUrl: for a URL that can get no delivery at all: one the WHATWG parser
        refuses, not http(s), with credentials, or whose host does not resolve.
    """
    parsed = parse_webhook_url(url)
    if parsed.scheme not in ("http", "https"):
        raise UnusableWebhookUrl(
            f"{url!r} is not an http(s) URL (the service's fetch cannot deliver to {parsed.scheme}:)"
        )
    if parsed.credentials:
        raise UnusableWebhookUrl(
            f"{url!r} carries a user name or password, and the service's fetch refuses such URLs"
        )
    host = parsed.host
    if not host:
        raise UnusableWebhookUrl(f"{url!r} has no host")
    if host in parse_bypass_hosts(bypass_hosts):
        return WebhookUrlVerdict(url, host, True, f"{host} is listed in {BYPASS_SETTING}")
    if _is_localhost(host):
        # The service looks "*.localhost" up, which answers a loopback address or nothing: refused too.
        return WebhookUrlVerdict(url, host, False, f"{host} is a loopback host name")
    addresses = host_addresses(host, parsed.port, resolve)
    literal = _literal(host) is not None
    for address in addresses:
        found = _kind(address)
        if found is not None:
            kind, stricter = found
            # The service refuses every IPv6 literal (see below): a stricter range makes no difference.
            stricter = stricter and not host.startswith("[")
            if not literal:
                where = f"{host} resolves to {address},"
            else:  # "0x7f.0.0.1" (a name to the parser, an address to the lookup) says which
                where = f"{host} is" if host.strip("[]") == address else f"{host} is {address},"
            reason = f"{where} {_article(kind)} {kind} address"
            return WebhookUrlVerdict(url, host, False, reason, addresses, stricter)
    if host.startswith("["):
        reason = (
            f"{host} is an IPv6 literal outside the service's private prefixes: Documenso v2.17 then "
            "looks it up in DNS, brackets included, and that lookup always fails"
        )
        return WebhookUrlVerdict(url, host, False, reason, addresses)
    public = f"{host} is a public address" if literal else f"{host} resolves to public addresses"
    return WebhookUrlVerdict(url, host, True, f"{public} ({', '.join(addresses)})", addresses)
