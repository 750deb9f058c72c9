"""Command line: ``python -m airflow_provider_docsign.preview payload.json a.pdf b.pdf -o out/``.

For people designing templates: draws the payload's fields onto the PDFs, writes annotated PDFs and
one PNG per page to the output directory, and prints the warnings. The exit status is 0 when there
is nothing to warn about, 1 when there are warnings (or with ``--no-fail-on-warnings``, 0 anyway), and
2 when the input is unusable (nothing is written then).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.preview import MAX_DPI, MIN_DPI, render_field_preview


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_docsign.preview",
        description="Draw where a signing payload's fields land on its PDFs (nothing is sent).",
    )
    parser.add_argument(
        "payload",
        help="JSON file: a creation payload with 'recipients' (fields nested in each), or just the "
        "recipients list",
    )
    parser.add_argument("files", nargs="+", help="the PDFs, in upload order (identifier 0, 1, ...)")
    parser.add_argument("-o", "--output", required=True, help="output directory (created if needed)")
    parser.add_argument("--dpi", type=int, default=100, help=f"PNG resolution, {MIN_DPI}-{MAX_DPI}")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--no-fail-on-warnings",
        dest="fail_on_warnings",
        action="store_false",
        help="exit 0 even when there are warnings",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return the exit status."""
    args = _parser().parse_args(argv)
    try:
        with open(args.payload, encoding="utf-8") as fh:
            payload = json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read the payload {args.payload}: {exc}", file=sys.stderr)
        return 2
    try:
        result = render_field_preview(args.files, payload, args.output, dpi=args.dpi)
    except DocsignValidationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        for path in [*result.pdfs, *result.pngs]:
            print(path)
        for warning in result.warnings:
            print(f"warning: {warning.message}", file=sys.stderr)
        if not result.warnings:
            print("no warnings", file=sys.stderr)
    return 1 if result.warnings and args.fail_on_warnings else 0


if __name__ == "__main__":
    sys.exit(main())
