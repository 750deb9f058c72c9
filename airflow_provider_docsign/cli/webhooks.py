r"""``docsign webhooks check URL``: whether Documenso would refuse a subscription URL as private.

Documenso v2.17 does not deliver a webhook to a URL whose host is ``localhost`` or is (or resolves to)
a private, loopback or link-local address, unless the instance lists the host in
``NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS``; the delivery fails with status 0 and nothing tells the
Airflow side. This command answers the question before a webhook goes missing (the rule itself:
:mod:`airflow_provider_docsign.service.webhook_urls`). The URL is parsed as the service parses it (WHATWG), so
``http://127.0.0.1\@8.8.8.8/`` is judged by the host the service sees, ``127.0.0.1``. Bypass entries
that can never match (``0x0a.0.0.1``, ``localhost.``: the service compares entries as written) are
pointed out with the spelling that would.

Exit status: 0 the service would deliver, 1 it would refuse the URL as private (the reason and the
instance setting that lifts it are printed), 2 the URL is unusable (not http(s), no host, a host that
does not resolve).
"""

from __future__ import annotations

import argparse
from typing import Any

from airflow_provider_docsign.cli import _arguments as types
from airflow_provider_docsign.cli._common import EXIT_CHECK_FAILED, EXIT_OK, CliError
from airflow_provider_docsign.service.webhook_urls import (
    BYPASS_SETTING,
    UnusableWebhookUrl,
    check_webhook_url,
    unmatchable_bypass_entries,
)

_EPILOG = f"""examples:
  docsign webhooks check https://airflow.example.com:8790/docsign
  docsign webhooks check http://10.0.4.12:8790/ --bypass-hosts 10.0.4.12

The host is resolved from this machine; the service resolves it from where it runs, which may
answer differently (split-horizon DNS). Pass --bypass-hosts with the instance's {BYPASS_SETTING}
to check a URL against it. The URL is parsed as the service parses it (WHATWG URL standard).

exit status: 0 would be delivered, 1 would be refused as private, 2 unusable URL."""


def register(subparsers: Any) -> None:
    """Add the ``webhooks`` subcommand group."""
    parser = subparsers.add_parser(
        "webhooks",
        help="Check webhook subscription URLs",
        description="Webhook subscription tools.",
    )
    sub = parser.add_subparsers(dest="webhooks_command", metavar="ACTION", required=True)
    check = sub.add_parser(
        "check",
        help="Would the service refuse this URL as private?",
        description=(
            "Say whether Documenso would deliver webhooks to URL, or refuse it because its host is "
            "localhost or a private, loopback or link-local address (and how to lift the refusal)."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument(
        "url", metavar="URL", type=types.text("an http(s) URL"), help="the webhook subscription URL"
    )
    check.add_argument(
        "--bypass-hosts",
        default="",
        metavar="H,...",
        help=f"the instance's {BYPASS_SETTING}: comma-separated hosts exempt from the rule",
    )
    check.set_defaults(func=run)


def _entry_notes(bypass_hosts: str) -> list[str]:
    notes = []
    for entry, canonical in unmatchable_bypass_entries(bypass_hosts).items():
        spelling = f"write it {canonical}" if canonical else "it is not a host name or IP address"
        notes.append(
            f"note: the {BYPASS_SETTING} entry {entry!r} never matches (the service compares entries as "
            f"written with hosts as its URL parser writes them): {spelling}"
        )
    return notes


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit status."""
    notes = _entry_notes(args.bypass_hosts)
    try:
        verdict = check_webhook_url(args.url, args.bypass_hosts)
    except UnusableWebhookUrl as error:
        raise CliError(f"unusable webhook URL: {error}") from None
    if verdict.allowed:
        print(f"would be delivered: {verdict.reason}")
        status = EXIT_OK
    else:
        print(f"would be refused as private: {verdict.reason}")
        if verdict.stricter:
            print("(a range this check refuses and the service does not: the service may deliver)")
        print(f"to allow it: {verdict.remedy}")
        status = EXIT_CHECK_FAILED
    for note in notes:
        print(note)
    return status
