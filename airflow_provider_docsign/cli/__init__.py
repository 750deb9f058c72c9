"""The ``docsign`` command: one entry point, one module per subcommand.

``docsign verify``, ``docsign templates show``, ``docsign preview``, ``docsign sandbox``,
``docsign webhooks check`` and ``docsign moved-imports``. Each subcommand module has
``register(subparsers)``, which adds its parser and sets ``func`` to a ``run(args) -> int``. This
package is the only place that prints and exits; the modules it calls return values or raise.

May import: anything in the package (it is the top of the command line's face). Nothing below the
face imports it; ``python -m`` entry modules (``sandbox/__main__``, ``preview/__main__``) call it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from airflow_provider_docsign.cli._common import (
    EXIT_UNUSABLE,
    CliError,
    isolate_airflow_home,
    log_to_stderr,
    one_line,
    process_state_restored,
)
from airflow_provider_docsign.exceptions import DocsignError

#: Subcommand modules, in the order ``docsign --help`` lists them.
SUBCOMMANDS = ("verify", "templates", "preview", "sandbox", "webhooks", "moved_imports")

_EPILOG = """examples:
  docsign verify archive/env_123/contract.pdf
  docsign verify --manifest archive/env_123/manifest.json
  docsign templates show envelope_abc123 --conn-id docsign_default
  docsign preview payload.json contract.pdf -o preview/
  docsign sandbox --port 8799 --data-dir /tmp/sandbox --api-key api_dev
  docsign webhooks check https://airflow.example.com:8090/docsign
  docsign moved-imports $AIRFLOW_HOME/dags

exit status: 0 ok, 1 a check failed, 2 unusable input or set-up (a wrong argument included); --debug
adds the traceback of a failure, never another exit status."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line too, pointing at ``--help``.

    Sub-parsers inherit the class (``add_subparsers`` uses the parent's type).
    """

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_UNUSABLE, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """As argparse's, with an unknown argument reported by the subcommand it was given to.

        argparse hands a subcommand's unknown arguments up to the top parser, whose error line would
        read ``docsign: error:``; it reads ``docsign verify: error:`` instead.
        """
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            _chosen(self, parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def _chosen(parser: argparse.ArgumentParser, parsed: argparse.Namespace) -> argparse.ArgumentParser:
    """The deepest subcommand parser that ``parsed`` chose below ``parser`` (``parser`` if none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            sub = action.choices.get(getattr(parsed, action.dest, None) or "")
            if sub is not None:
                return _chosen(sub, parsed)
    return parser


def build_parser(prog: str = "docsign") -> argparse.ArgumentParser:
    """The ``docsign`` parser with every subcommand registered.

    Every subcommand's parser also accepts ``--debug`` (``docsign verify --debug x.pdf`` works as well
    as ``docsign --debug verify x.pdf``).
    """
    parser = _Parser(
        prog=prog,
        description="Command-line tools of airflow-provider-docsign (Documenso v2 document signing).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    from airflow_provider_docsign import __version__

    parser.add_argument("--version", action="version", version=f"docsign {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"airflow_provider_docsign.cli.{name}")
        module.register(subparsers)
    for sub in _parsers(parser)[1:]:
        if "--debug" not in sub._option_string_actions:
            sub.add_argument(
                "--debug",
                action="store_true",
                default=argparse.SUPPRESS,
                help="show tracebacks and debug logs",
            )
    return parser


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every parser below it, depth first."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _parsers(sub)
    return found


def _subcommand_parser(command: str, prog: str) -> argparse.ArgumentParser:
    """The parser of one subcommand on its own, named ``prog`` (for the ``python -m`` forms)."""
    parser = build_parser()
    sub: argparse.ArgumentParser = next(
        action.choices[command]
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    old = sub.prog
    for each in _parsers(sub):
        each.prog = prog + each.prog[len(old) :]
    sub.set_defaults(command=command, debug=False)
    return sub


def run(argv: Sequence[str] | None, *, prog: str = "docsign", restore_state: bool = True) -> int:
    """Parse ``argv``, run the subcommand and turn any failure into one line and an exit status.

    :param argv: The arguments after ``docsign`` (default: the process arguments).
    :param prog: ``"docsign"``, or the name of an older entry point such as
        ``"python -m airflow_provider_docsign.preview"``: then ``argv`` starts with the subcommand's
        name, and usage, ``--help`` and error lines name ``prog`` instead.
    :param restore_state: Undo the command's changes to logging and warnings when it ends (for
        in-process callers); the ``docsign`` console script, which owns its process, does not.
    :return: The exit status, also for ``--help`` (0) and a usage error (2): nothing raises
        ``SystemExit``.
    """
    isolate_airflow_home()
    try:
        if prog == "docsign":
            args = build_parser().parse_args(argv)
            label = f"{prog} {args.command}"
        else:
            argv = list(sys.argv[1:] if argv is None else argv)
            args = _subcommand_parser(argv[0], prog).parse_args(argv[1:])
            label = prog
    except SystemExit as done:  # --help, --version, or a usage error (its one line is printed)
        return done.code if isinstance(done.code, int) else EXIT_UNUSABLE
    # The console script owns its process; an in-process call gets its logging and warnings back.
    args.label = label  # a subcommand that reports errors itself uses the same prefix
    with process_state_restored() if restore_state else contextlib.nullcontext():
        log_to_stderr(args.debug)
        try:
            status: int = args.func(args)
        except CliError as err:
            return _failed(label, err.message, err.status, debug=args.debug)
        except KeyboardInterrupt:
            print(f"{label}: interrupted", file=sys.stderr)
            return 130
        except DocsignError as err:  # one of ours that the subcommand did not explain further
            return _failed(label, str(err), EXIT_UNUSABLE, debug=args.debug)
        except Exception as err:
            return _failed(label, _unexpected(err), EXIT_UNUSABLE, debug=args.debug)
        return status


def _failed(label: str, message: str, status: int, *, debug: bool) -> int:
    """Report a failure: the traceback first with ``--debug``, then always the one line; the status.

    ``--debug`` adds the traceback and changes nothing else: the exit status stays the one the failure
    has without it (the docs reserve 1 for a failed check).
    """
    if debug:
        traceback.print_exc(file=sys.stderr)
    print(f"{label}: error: {one_line(message)}", file=sys.stderr)
    return status


def _unexpected(err: BaseException) -> str:
    """A failure no subcommand explained, in words: never the exception's class name or raw text.

    A file the system refused is named with the system's own words (``No space left on device``);
    anything else is a bug to report, with ``--debug`` for the traceback.
    """
    if isinstance(err, OSError) and err.strerror:
        where = f"{err.filename}: " if err.filename is not None else ""
        return f"{where}{err.strerror} (run with --debug for the traceback)"
    return (
        "the command stopped on an unexpected failure (a bug, or input it does not check yet): run it "
        "again with --debug for the traceback, and report it"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point of ``docsign``."""
    return run(argv, restore_state=False)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
