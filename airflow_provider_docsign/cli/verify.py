"""``docsign verify``: placeholder that hands its arguments on.

The old entry point is ``airflow_provider_docsign.verify.main``.

TODO(issue 21/22): replace with a real parser (--help with an example) and CliError failures.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``verify`` subcommand."""
    parser = subparsers.add_parser(
        "verify", help="Verify PDF signatures or re-audit an archive manifest", add_help=False
    )
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit status."""
    from airflow_provider_docsign.verify import main

    return int(main(args.rest) or 0)
