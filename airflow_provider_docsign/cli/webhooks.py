"""``docsign webhooks check URL``: placeholder (issue 22 fills it in)."""

from __future__ import annotations

import argparse
from typing import Any

from airflow_provider_docsign.cli._common import CliError


def register(subparsers: Any) -> None:
    """Add the ``webhooks`` subcommand group."""
    parser = subparsers.add_parser("webhooks", help="Check webhook subscription URLs")
    sub = parser.add_subparsers(dest="webhooks_command", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="Would the service refuse this URL as private?")
    check.add_argument("url")
    check.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit status."""
    raise CliError("not implemented yet")
