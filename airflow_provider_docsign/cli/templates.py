"""``docsign templates show TEMPLATE_ID``: a template's items, recipients and fields, for template users.

The pure formatting lives in :func:`airflow_provider_docsign.service.templates.describe_template`; this module
is the only one that pairs it with the hook, so ``templates.py`` does not import the hook (which
imports ``templates.py`` through ``hooks/_templates.py``).
"""

from __future__ import annotations

import argparse
from typing import Any

from airflow_provider_docsign.cli._arguments import identifier
from airflow_provider_docsign.cli._common import (
    CliError,
    is_missing_connection,
    logs_off_stdout,
    missing_connection,
    service_error,
)

_EPILOG = """example:
  export AIRFLOW_CONN_DOCSIGN_DEFAULT='docsign://:api_xxxx@app.documenso.com/api%2Fv2'
  docsign templates show envelope_abc123

The template id is the envelope_... in the template's URL in the web app. Exit status 2 when the
connection is missing, the API key is refused (401) or the template is unknown (404)."""


def register(subparsers: Any) -> None:
    """Add the ``templates`` subcommand group (``show``)."""
    parser = subparsers.add_parser(
        "templates",
        help="Show a template's recipients and fields",
        description="Inspect templates of the signing service.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="templates_command", metavar="ACTION", required=True)
    show = actions.add_parser(
        "show",
        help="print one template's items, recipients and fields (ids, labels)",
        description="Print a template's items, recipients and fields (ids and labels), the names that "
        "DocsignCreateEnvelopeFromTemplateOperator maps and prefills.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    show.add_argument(
        "template_id",
        type=identifier("a template's envelope id, e.g. envelope_abc123"),
        help="the template's envelope id (envelope_...)",
    )
    show.add_argument(
        "--conn-id",
        default="docsign_default",
        type=identifier("an Airflow connection id, e.g. docsign_default"),
        help="the Airflow connection, type docsign (default: %(default)s)",
    )
    show.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the template; every failure becomes a :class:`CliError` naming what to check."""
    from airflow_provider_docsign.exceptions import DocsignError, DocsignValidationError
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.service.templates import describe_template

    logs_off_stdout(args.debug)  # Airflow is imported now: its log lines must not mix with the template

    try:
        with DocsignHook(args.conn_id) as hook:
            template = hook.get_template(args.template_id)
    except DocsignValidationError as err:  # an envelope, but a document, not a template
        raise CliError(f"{'; '.join(err.problems)}: give the id of a template") from err
    except DocsignError as err:
        raise service_error(err, args.conn_id, what=f"template {args.template_id}") from err
    except Exception as err:
        if is_missing_connection(err):
            raise missing_connection(args.conn_id) from err
        raise
    for line in describe_template(template):
        print(line)
    return 0
