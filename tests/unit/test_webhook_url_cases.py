"""72 webhook URLs judged as Documenso v2.17 judged them (issue 29): the host it sees and its verdict.

The facts are the service's own, recorded on a real instance and copied into
``tests/contract/data/documenso-2.17/webhook-url-cases.json`` (its ``about`` note says how). The
instance had no outside DNS, so its refusals of public *names* are not the rule's: here names get
fixed answers from a stand-in resolver (no network at all), ``public.example`` and ``bücher.example``
a public address and ``rebind.example`` a loopback one, and those rows are judged by the rule.

Bracketed public IPv6 literals (``[2606:4700::1111]``) are the one place where we keep the recorded
verdict although the note suggests a lookup failure: v2.17's ``assert-webhook-url.ts`` passes the
hostname to ``dns.lookup`` *with its brackets* (``new URL(...).hostname`` keeps them, and its IP test
fails on them), and no resolver answers ``[2606:4700::1111]``; so the service refuses every IPv6
literal outside its private prefixes, with or without DNS, and so do we.

Every verdict agrees, except the rows in :data:`EXCEPTIONS`, where we refuse and the service does not;
never the other way round.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from helpers import SPEC_DIR

from airflow_provider_docsign.service.webhook_urls import (
    UnusableWebhookUrl,
    check_webhook_url,
    parse_webhook_url,
    unmatchable_bypass_entries,
)

CASES = json.loads((SPEC_DIR / "webhook-url-cases.json").read_text(encoding="utf-8"))

#: Fixed answers for the names in the table; any other name is a test error, never a real lookup.
DNS = {
    "public.example": ["93.184.215.14"],
    "xn--bcher-kva.example": ["93.184.215.15"],
    "rebind.example": ["127.0.0.1"],
}

#: (url, bypass list) -> why we refuse a URL the service's check lets through.
EXCEPTIONS = {
    ("http://0.1.2.3/", ""): "0.0.0.0/8 is 'this network' (RFC 1122), not a host on the internet; "
    "the service refuses only 0.0.0.0 itself",
    ("http://198.18.0.1/", ""): "198.18.0.0/15 is reserved for benchmarking (RFC 2544)",
    ("http://192.0.2.1/", ""): "192.0.2.0/24 is a documentation range (RFC 5737)",
    ("http://224.0.0.1/", ""): "224.0.0.0/4 is multicast: an HTTP request cannot reach it",
    ("http://255.255.255.255/", ""): "240.0.0.0/4 is reserved, 255.255.255.255 the broadcast address",
    ("http://127.0.0.1@public.example/", ""): "a URL with a user name: the service's check passes it, "
    "and then Node's fetch refuses to send to a URL with credentials (TypeError, status 0)",
    ("http://127.0.0.1%2f@8.8.8.8/", ""): "a URL with a user name (127.0.0.1%2f): Node's fetch refuses it",
    ("ftp://8.8.8.8/", ""): "not http(s): the check passes any scheme, Node's fetch cannot send to ftp:",
}


def _resolve(host: str, port: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
    if host not in DNS:
        raise socket.gaierror(socket.EAI_NONAME, f"no fixed answer for {host}")
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)) for address in DNS[host]]


def _ours(case: dict[str, Any]) -> tuple[bool, bool | None]:
    """(our verdict, whether the refusal is our stricter rule; None for an unusable URL)."""
    try:
        verdict = check_webhook_url(case["url"], case["bypass_hosts"], resolve=_resolve)
    except UnusableWebhookUrl:
        return False, None
    return verdict.allowed, verdict.stricter


def test_the_table_is_the_recorded_one() -> None:
    assert len(CASES["cases"]) == 72
    assert "WHATWG" in CASES["about"]
    assert set(EXCEPTIONS) <= {(c["url"], c["bypass_hosts"]) for c in CASES["cases"]}


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: f"{c['url']!r} bypass={c['bypass_hosts']!r}")
def test_we_see_the_host_the_service_sees(case: dict[str, Any]) -> None:
    if case["service_hostname"] is None:  # the service's parser refused the URL
        with pytest.raises(UnusableWebhookUrl, match="is not a URL"):
            parse_webhook_url(case["url"])
    else:
        assert parse_webhook_url(case["url"]).host == case["service_hostname"]


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: f"{c['url']!r} bypass={c['bypass_hosts']!r}")
def test_our_verdict_is_the_service_s_or_stricter(case: dict[str, Any]) -> None:
    allowed, stricter = _ours(case)
    key = (case["url"], case["bypass_hosts"])
    if key in EXCEPTIONS:
        assert case["service_allows"], EXCEPTIONS[key]
        assert not allowed, EXCEPTIONS[key]
        # Our rule, not the service's, refused: the verdict says so (or the URL is unusable outright).
        assert stricter is not False
    else:
        assert allowed == case["service_allows"]
        if not allowed and stricter is not None:
            assert not stricter, "a refusal the service makes too is not flagged as ours"


def test_bypass_entries_the_service_never_matches_are_found_with_their_spelling() -> None:
    entries = {c["bypass_hosts"] for c in CASES["cases"] if c["bypass_hosts"]}
    assert unmatchable_bypass_entries(",".join(sorted(entries))) == {
        "[::ffff:127.0.0.1]": "[::ffff:7f00:1]",
        "[0:0:0:0:0:0:0:1]": "[::1]",
        "0x0a.0.0.1": "10.0.0.1",
        "bücher.example": "xn--bcher-kva.example",
        "localhost.": "localhost",
    }
    # In each table row with such an entry the service refused (or judged the URL without it).
    for case in CASES["cases"]:
        if case["bypass_hosts"] in unmatchable_bypass_entries(case["bypass_hosts"]):
            assert case["service_reason"] != "bypass"
