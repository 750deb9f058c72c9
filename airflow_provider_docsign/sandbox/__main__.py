"""``python -m airflow_provider_docsign.sandbox`` is ``docsign sandbox`` (see :mod:`..cli.sandbox`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``docsign sandbox`` with ``argv`` (default: the process arguments); returns the exit status."""
    from airflow_provider_docsign.cli import run

    args = sys.argv[1:] if argv is None else list(argv)
    return run(["sandbox", *args], prog="python -m airflow_provider_docsign.sandbox")


if __name__ == "__main__":
    sys.exit(main())
