"""``docsign webhooks check URL``: whether Documenso would refuse a subscription URL as private.

Documenso v2.17 does not deliver a webhook to a URL whose host is ``localhost`` or is (or resolves to)
a private, loopback or link-local address, unless the instance lists the host in
``NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS``; the delivery fails with status 0 and nothing tells the
Airflow side. This command answers the question before a webhook goes missing (the rule itself:
:mod:`airflow_provider_docsign.webhook_urls`).

Exit status: 0 the service would deliver, 1 it would refuse the URL as private (the reason and the
instance setting that lifts it are printed), 2 the URL is unusable (not http(s), no host, a host that
does not resolve).
"""

from __future__ import annotations

import argparse
from typing import Any

from airflow_provider_docsign.cli._common import EXIT_CHECK_FAILED, EXIT_OK, CliError
from airflow_provider_docsign.webhook_urls import BYPASS_SETTING, UnusableWebhookUrl, check_webhook_url

_EPILOG = f"""examples:
  docsign webhooks check https://airflow.example.com:8790/docsign
  docsign webhooks check http://10.0.4.12:8790/ --bypass-hosts 10.0.4.12

The host is resolved from this machine; the service resolves it from where it runs, which may
answer differently (split-horizon DNS). Pass --bypass-hosts with the instance's {BYPASS_SETTING}
to check a URL against it.

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
    check.add_argument("url", metavar="URL", help="the webhook subscription URL")
    check.add_argument(
        "--bypass-hosts",
        default="",
        metavar="H,...",
        help=f"the instance's {BYPASS_SETTING}: comma-separated hosts exempt from the rule",
    )
    check.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit status."""
    try:
        verdict = check_webhook_url(args.url, args.bypass_hosts)
    except UnusableWebhookUrl as error:
        raise CliError(f"unusable webhook URL: {error}") from None
    if verdict.allowed:
        print(f"would be delivered: {verdict.reason}")
        return EXIT_OK
    print(f"would be refused as private: {verdict.reason}")
    print(f"to allow it: {verdict.remedy}")
    return EXIT_CHECK_FAILED
