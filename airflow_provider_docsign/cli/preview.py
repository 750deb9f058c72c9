"""``docsign preview PAYLOAD FILE... -o DIR``: where a payload's fields land on its PDFs.

For people designing templates: draws the payload's fields onto the PDFs, writes annotated PDFs and
one PNG per page to the output directory, and prints the warnings. Exit status 0 when there is
nothing to warn about, 1 when there are warnings (0 anyway with ``--no-fail-on-warnings``), 2 when
the input is unusable or the ``preview`` extra is missing (nothing is written then).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any

from airflow_provider_docsign.cli import _arguments as types
from airflow_provider_docsign.cli._common import EXIT_CHECK_FAILED, EXIT_OK, CliError, missing_extra

# Same bounds as airflow_provider_docsign.preview (not imported here: --help must work without pypdf).
_MIN_DPI, _MAX_DPI = 18, 600
#: A payload larger than this is not a payload (JSON of fields; the PDFs are separate files).
_MAX_PAYLOAD_BYTES = 16 * 1024 * 1024

_EPILOG = """examples:
  docsign preview docs/preview-example-payload.json contract.pdf -o preview/
  docsign preview payload.json contract.pdf annex.pdf -o preview/ --json

PAYLOAD holds a creation payload with 'recipients' (fields nested in each), or just the recipients
list. Exit status: 0 no warnings, 1 warnings, 2 unusable input or the preview extra missing."""


def register(subparsers: Any) -> None:
    """Add the ``preview`` subcommand."""
    parser = subparsers.add_parser(
        "preview",
        help="Draw a payload's fields onto its PDFs",
        description="Draw where a signing payload's fields land on its PDFs (nothing is sent). "
        'Needs the preview extra: pip install "airflow-provider-docsign[preview]".',
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The preview's arguments."""
    parser.add_argument(
        "payload",
        type=types.path("the JSON file of a payload"),
        help="JSON file: a creation payload with 'recipients' (fields nested in each), or just the "
        "recipients list",
    )
    parser.add_argument(
        "files",
        nargs="+",
        type=types.path("the path of a PDF"),
        help="the PDFs, in upload order (identifier 0, 1, ...)",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        type=types.path("an output directory"),
        help="output directory (created if needed)",
    )
    parser.add_argument(
        "--dpi",
        type=types.whole(_MIN_DPI, _MAX_DPI, "a resolution in dots per inch"),
        default=100,
        help=f"PNG resolution, {_MIN_DPI}-{_MAX_DPI} (default 100)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--no-fail-on-warnings",
        dest="fail_on_warnings",
        action="store_false",
        help="exit 0 even when there are warnings",
    )


def run(args: argparse.Namespace) -> int:
    """Render the preview; returns 1 when there are warnings (unless told not to fail on them)."""
    for module in ("pypdfium2", "PIL"):
        try:
            importlib.import_module(module)
        except ImportError as err:
            raise missing_extra("preview", err) from err
    from airflow_provider_docsign._sources import open_regular_file
    from airflow_provider_docsign.exceptions import DocsignValidationError
    from airflow_provider_docsign.preview import render_field_preview

    give = "give a JSON file with a creation payload or a recipients list"
    try:
        with open_regular_file(args.payload) as fh:  # a FIFO is refused, never waited on
            data = fh.read(_MAX_PAYLOAD_BYTES + 1)
        if len(data) > _MAX_PAYLOAD_BYTES:
            raise CliError(f"the payload {args.payload} is larger than {_MAX_PAYLOAD_BYTES} bytes: {give}")
        payload = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        raise CliError(f"cannot read the payload {args.payload}: {types.describe(err)}: {give}") from err
    try:
        result = render_field_preview(args.files, payload, args.output, dpi=args.dpi)
    except DocsignValidationError as err:
        raise CliError(str(err)) from err
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        for path in [*result.pdfs, *result.pngs]:
            print(path)
        for warning in result.warnings:
            print(f"warning: {warning.message}", file=sys.stderr)
        if not result.warnings:
            print("no warnings", file=sys.stderr)
    return EXIT_CHECK_FAILED if result.warnings and args.fail_on_warnings else EXIT_OK
