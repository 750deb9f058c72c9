"""The service's private-address rule for webhook URLs, and ``docsign webhooks check`` (issues 22, 29).

Host names are resolved by a stand-in for ``socket.getaddrinfo`` (no network); ``localhost`` and IP
literals need no resolver. The command runs as a real process through the ``docsign`` console script.
URLs are parsed as the service parses them (WHATWG); the service's own 72 cases are in
``test_webhook_url_cases.py``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign.service.webhook_urls import (
    BYPASS_SETTING,
    UnusableWebhookUrl,
    check_webhook_url,
    parse_bypass_hosts,
)

DNS = {
    "hooks.example.com": ["93.184.216.34"],
    "intranet.example.com": ["93.184.216.35", "10.1.2.3"],  # one private address is enough
    "v6.example.com": ["::ffff:192.168.0.7"],
}


def _resolve(host: str, port: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
    if host not in DNS:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)) for address in DNS[host]]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:8790/hook", "127.0.0.1 is a loopback address"),
        ("http://localhost:8790/", "localhost is a loopback host name"),
        ("http://LocalHost.:8790/", "localhost is a loopback host name"),
        ("http://10.0.4.12/", "10.0.4.12 is a private address"),
        ("http://172.20.0.1/", "172.20.0.1 is a private address"),
        ("https://192.168.1.10/", "192.168.1.10 is a private address"),
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254 is a link-local address"),
        ("http://0.0.0.0/", "0.0.0.0 is an unspecified address"),
        ("http://[::1]:8790/", "[::1] is a loopback address"),
        ("http://[fe80::1]/", "[fe80::1] is a link-local address"),
        ("http://[fd00::5]/", "[fd00::5] is a private address"),
        ("http://[::ffff:127.0.0.1]/", "[::ffff:7f00:1] is a loopback address"),
        # Issue 29: a backslash ends the authority for the WHATWG parser (urllib saw host 8.8.8.8).
        ("http://127.0.0.1\\@8.8.8.8/", "127.0.0.1 is a loopback address"),
        ("http://127.0.0.1:8790\\@8.8.8.8/hook", "127.0.0.1 is a loopback address"),
        ("http:\\\\10.0.0.5\\hook", "10.0.0.5 is a private address"),
        ("http://0x7f.1/", "127.0.0.1 is a loopback address"),
        ("http://0x7f.0.0.1../", "0x7f.0.0.1 is 127.0.0.1, a loopback address"),
        ("http://%31%32%37.0.0.1/", "127.0.0.1 is a loopback address"),
        (
            "http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",
            "localhost is a loopback host name",
        ),
        ("http://foo.localhost/", "foo.localhost is a loopback host name"),
        ("http://[64:ff9b::a00:1]/", "[64:ff9b::a00:1] is a private address"),
        ("http://intranet.example.com/", "intranet.example.com resolves to 10.1.2.3, a private address"),
        ("http://v6.example.com/", "v6.example.com resolves to ::ffff:192.168.0.7, a private address"),
    ],
)
def test_private_hosts_are_refused_with_the_reason_and_the_setting_that_lifts_it(
    url: str, reason: str
) -> None:
    verdict = check_webhook_url(url, resolve=_resolve)
    assert not verdict.allowed
    assert verdict.reason == reason
    assert verdict.remedy == (
        f"add {verdict.host} to the Documenso instance's {BYPASS_SETTING} (comma-separated) and restart it"
    )


def test_public_hosts_are_allowed() -> None:
    assert check_webhook_url("https://hooks.example.com/docsign", resolve=_resolve).allowed
    assert check_webhook_url("http://93.184.216.34:8790/", resolve=_resolve).allowed
    # A fragment is not the host, for either parser.
    assert check_webhook_url("http://93.184.216.34#@127.0.0.1/", resolve=_resolve).allowed


def test_an_ipv6_literal_is_refused_as_the_service_refuses_it() -> None:
    """v2.17 looks a bracketed literal outside its prefixes up in DNS, brackets included: always refused."""
    verdict = check_webhook_url("http://[2606:4700::1111]/", resolve=_resolve)
    assert not verdict.allowed
    assert not verdict.stricter
    assert "IPv6 literal" in verdict.reason
    assert check_webhook_url("http://[2606:4700::1111]/", "[2606:4700::1111]", resolve=_resolve).allowed


def test_stricter_ranges_say_the_service_may_deliver() -> None:
    verdict = check_webhook_url("http://192.0.2.1/", resolve=_resolve)
    assert (verdict.allowed, verdict.stricter) == (False, True)
    assert verdict.reason == "192.0.2.1 is a documentation address"
    assert not check_webhook_url("http://10.0.0.1/", resolve=_resolve).stricter


def test_the_resolver_is_asked_once_and_only_for_names() -> None:
    asked: list[str] = []

    def counting(host: str, port: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        asked.append(host)
        return _resolve(host, port, **kwargs)

    check_webhook_url("http://127.0.0.1\\@hooks.example.com/", resolve=counting)
    check_webhook_url("http://0x7f.1/", resolve=counting)
    check_webhook_url("https://Hooks.Example.COM./docsign", resolve=counting)
    assert asked == ["hooks.example.com"]


def test_listed_hosts_are_allowed_as_the_service_matches_them() -> None:
    """Case and the URL's trailing dots do not matter; an IPv6 entry needs its brackets, as in the URL."""
    bypass = " 127.0.0.1 , Intranet.Example.com,[::1],"
    assert parse_bypass_hosts(bypass) == {"127.0.0.1", "intranet.example.com", "[::1]"}
    for url in ("http://127.0.0.1:8790/", "http://INTRANET.example.com./", "http://[::1]/"):
        verdict = check_webhook_url(url, bypass, resolve=_resolve)
        assert verdict.allowed, url
        assert BYPASS_SETTING in verdict.reason
    assert not check_webhook_url("http://[::1]/", "::1", resolve=_resolve).allowed
    assert not check_webhook_url("http://127.0.0.2/", bypass, resolve=_resolve).allowed


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://hooks.example.com/", "is not an http(s) URL"),
        ("hooks.example.com/hook", "is not a URL"),
        # The WHATWG parser reads http:///hook as http://hook/, as the service does.
        ("http:///hook", "the host hook does not resolve"),
        ("http://[::1/", "is not a URL"),
        ("https://hooks.example.com:99999/", "is not a URL"),
        ("http://[fe80::1%25eth0]/", "is not a URL"),
        ("http://user:pw@hooks.example.com/", "carries a user name or password"),
        ("http://hooks.example.com\ud800/", "is not a URL"),
        ("http://nowhere.invalid/", "the host nowhere.invalid does not resolve"),
    ],
)
def test_unusable_urls_say_what_is_wrong(url: str, message: str) -> None:
    with pytest.raises(UnusableWebhookUrl, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_webhook_url(url, resolve=_resolve)


def _docsign(*args: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("docsign", path=str(Path(sys.executable).parent))
    assert script, "the docsign console script is installed with the package"
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=120)


def test_docsign_webhooks_check_exit_statuses() -> None:
    refused = _docsign("webhooks", "check", "http://127.0.0.1:8790/hook")
    assert refused.returncode == 1, refused.stderr
    assert refused.stdout.splitlines() == [
        "would be refused as private: 127.0.0.1 is a loopback address",
        f"to allow it: add 127.0.0.1 to the Documenso instance's {BYPASS_SETTING} (comma-separated) and "
        "restart it",
    ]

    listed = _docsign(
        "webhooks", "check", "http://127.0.0.1:8790/hook", "--bypass-hosts", "10.0.0.1,127.0.0.1"
    )
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == f"would be delivered: 127.0.0.1 is listed in {BYPASS_SETTING}\n"

    public = _docsign("webhooks", "check", "https://93.184.216.34:8790/docsign")
    assert public.returncode == 0, public.stderr
    assert public.stdout == "would be delivered: 93.184.216.34 is a public address (93.184.216.34)\n"

    unusable = _docsign("webhooks", "check", "ftp://127.0.0.1/")
    assert unusable.returncode == 2
    assert unusable.stdout == ""
    assert unusable.stderr == (
        "docsign webhooks: error: unusable webhook URL: 'ftp://127.0.0.1/' is not an http(s) URL (the "
        "service's fetch cannot deliver to ftp:)\n"
    )

    # Issue 29: the host the service sees, not the one urllib saw (8.8.8.8: "would be delivered").
    backslash = _docsign("webhooks", "check", "http://127.0.0.1:8790\\@8.8.8.8/hook")
    assert backslash.returncode == 1, backslash.stderr
    assert backslash.stdout.splitlines()[0] == "would be refused as private: 127.0.0.1 is a loopback address"


def test_docsign_webhooks_check_points_out_bypass_entries_that_never_match() -> None:
    checked = _docsign(
        "webhooks", "check", "http://0x0a.0.0.1:8790/", "--bypass-hosts", "0x0a.0.0.1, localhost.,[::1]"
    )
    assert checked.returncode == 1, checked.stderr
    assert checked.stdout.splitlines() == [
        "would be refused as private: 10.0.0.1 is a private address",
        f"to allow it: add 10.0.0.1 to the Documenso instance's {BYPASS_SETTING} (comma-separated) and "
        "restart it",
        f"note: the {BYPASS_SETTING} entry '0x0a.0.0.1' never matches (the service compares entries as "
        "written with hosts as its URL parser writes them): write it 10.0.0.1",
        f"note: the {BYPASS_SETTING} entry 'localhost.' never matches (the service compares entries as "
        "written with hosts as its URL parser writes them): write it localhost",
    ]
    stricter = _docsign("webhooks", "check", "http://198.18.0.1/")
    assert stricter.returncode == 1
    assert "the service may deliver" in stricter.stdout


def test_docsign_webhooks_check_help_has_an_example() -> None:
    helped = _docsign("webhooks", "check", "--help")
    assert helped.returncode == 0
    assert "docsign webhooks check https://" in helped.stdout
    assert "--bypass-hosts" in helped.stdout
    assert BYPASS_SETTING in helped.stdout
