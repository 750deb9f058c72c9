"""What every ``docsign`` subcommand shares: one-line errors, exit statuses, a throw-away Airflow home.

Exit statuses, the same for every subcommand:

* ``0``: done, every check passed;
* ``1``: a check failed (a signature, a manifest entry, a preview warning);
* ``2``: the command could not do its job: unusable input, a missing extra, a missing connection,
  a refused API key, an unknown template.

A failure is one line on stderr (``docsign SUBCOMMAND: error: ...``); the traceback only with
``--debug``.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

from airflow_provider_docsign._text import printable

if TYPE_CHECKING:
    from airflow_provider_docsign.exceptions import DocsignError

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_UNUSABLE = 2

_MISSING_EXTRA = 'the "{extra}" extra is not installed: pip install "airflow-provider-docsign[{extra}]"'


class CliError(Exception):
    """A failure the command reports as one line on stderr, with an exit status (default 2).

    :param message: What is wrong and what to check, for a person; never a secret.
    :param status: The exit status: 2 for unusable input or set-up, 1 for a failed check.
    """

    def __init__(self, message: str, status: int = EXIT_UNUSABLE) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def missing_extra(extra: str, err: ImportError | None = None) -> CliError:
    """The error for a subcommand whose optional dependencies are not installed."""
    detail = f" ({err.name} cannot be imported)" if err is not None and err.name else ""
    return CliError(_MISSING_EXTRA.format(extra=extra) + detail)


def is_missing_connection(err: BaseException) -> bool:
    """Whether ``err`` is Airflow's "connection not defined" (its class moved between 2.11 and 3.x)."""
    return type(err).__name__ == "AirflowNotFoundException"


def missing_connection(conn_id: str) -> CliError:
    """The error for a connection id that Airflow does not know: where it was looked for, how to define it."""
    env = "AIRFLOW_CONN_" + conn_id.upper()
    example = f"{env}='docsign://:API_KEY@app.documenso.com/api%2Fv2'"
    if _AIRFLOW_HOME["source"] == "throw-away":
        return CliError(
            f"the connection {conn_id!r} is not defined: AIRFLOW_HOME is not set and {_DEFAULT_HOME} holds "
            "no Airflow (no airflow.cfg), so only AIRFLOW_CONN_* variables and a secrets backend set with "
            f"AIRFLOW__SECRETS__* were searched; set {env} (for example {example}), set AIRFLOW_HOME to "
            "the Airflow home whose `airflow connections add` stored it, or name another one with --conn-id"
        )
    if _AIRFLOW_HOME["source"] == "default":
        home = f"{os.environ.get('AIRFLOW_HOME')} (Airflow's default: AIRFLOW_HOME is not set)"
    else:
        home = f"{os.environ.get('AIRFLOW_HOME')} (AIRFLOW_HOME)"
    return CliError(
        f"the connection {conn_id!r} is not defined in the Airflow home {home}; its metadata database, "
        f"the AIRFLOW_CONN_* variables and its secrets backend were searched: add it there with "
        f"`airflow connections add`, set {env} (for example {example}), point AIRFLOW_HOME at the Airflow "
        "home that has it, or name another one with --conn-id"
    )


def service_error(err: DocsignError, conn_id: str, *, what: str = "the object") -> CliError:
    """One line for a failed call to the signing service, saying what to check (exit status 2).

    :param err: What the hook raised.
    :param conn_id: The connection the command used, named in the message.
    :param what: What was asked for, e.g. ``"template envelope_1"``, named for a 404.
    """
    from airflow_provider_docsign.exceptions import (
        DocsignAPIError,
        DocsignAuthError,
        DocsignConnectionError,
        DocsignNotFoundError,
    )

    if isinstance(err, DocsignAuthError):
        return CliError(
            f"the signing service refused the API key of connection {conn_id!r} (HTTP {err.status_code}): "
            "check the connection's password (a team API key, api_...) and that its host is the instance "
            "the key belongs to"
        )
    if isinstance(err, DocsignNotFoundError):
        return CliError(
            f"{what} was not found (HTTP 404): check the id, and that connection {conn_id!r} points to the "
            "instance and team that own it"
        )
    if isinstance(err, DocsignConnectionError):
        return CliError(
            f"the signing service could not be reached through connection {conn_id!r}: check its host (the "
            f"API base URL, ending in /api/v2) and the network ({err})"
        )
    if isinstance(err, DocsignAPIError):
        return CliError(f"the signing service refused the request: {err}")
    return CliError(str(err))


#: Airflow's own default home when ``AIRFLOW_HOME`` is not set (``~`` is the user's ``HOME``).
_DEFAULT_HOME = "~/airflow"
#: Which home the command uses: "AIRFLOW_HOME" (set by the user), "default" (``~/airflow``, which
#: holds an Airflow) or "throw-away" (a temporary one); set by :func:`isolate_airflow_home`.
_AIRFLOW_HOME: dict[str, str] = {"source": "AIRFLOW_HOME"}


def default_airflow_home() -> str | None:
    """``~/airflow`` if it holds an Airflow (its ``airflow.cfg``), as Airflow's default home; else None.

    ``airflow connections add`` with no ``AIRFLOW_HOME`` stores the connection there, in the metadata
    database that ``airflow.cfg`` names.
    """
    home = os.path.expanduser(_DEFAULT_HOME)
    return home if os.path.isfile(os.path.join(home, "airflow.cfg")) else None


def isolate_airflow_home() -> None:
    """Use the Airflow home Airflow itself would use, or a throw-away one when there is none.

    With ``AIRFLOW_HOME`` set, that home. Without it, Airflow uses ``~/airflow``: when that directory
    holds an Airflow (an ``airflow.cfg``, as ``airflow connections add`` or ``airflow db migrate``
    leave), the command uses it too, so a connection stored there is found. Otherwise importing Airflow
    would create ``~/airflow`` (config, logs), and a command-line tool that only reads a PDF or calls
    the API must leave the user's home untouched: it gets a throw-away home, removed when the process
    exits, and connections come from ``AIRFLOW_CONN_*`` environment variables (or a secrets backend
    configured through ``AIRFLOW__SECRETS__*``). Call it before anything imports ``airflow``.
    """
    if os.environ.get("AIRFLOW_HOME"):
        _AIRFLOW_HOME["source"] = "AIRFLOW_HOME"
        return
    default = default_airflow_home()
    if default:
        # What `airflow` itself uses with no AIRFLOW_HOME (set, so that an empty value means the same).
        os.environ["AIRFLOW_HOME"] = default
        _AIRFLOW_HOME["source"] = "default"
        return
    _AIRFLOW_HOME["source"] = "throw-away"
    home = tempfile.mkdtemp(prefix="docsign-cli-airflow-home-")
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    # atexit does not run when SIGTERM kills the process (``docsign sandbox`` is stopped that way, and
    # uvicorn re-raises the signal after its graceful shutdown): exit through SystemExit instead.
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
    os.environ["AIRFLOW_HOME"] = home
    # Nothing of Airflow's own set-up is needed by the CLI; keep it quiet and cheap.
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "ERROR")


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


#: Loggers a subcommand may route to stderr on its own (besides the root logger).
ROUTED_LOGGERS = (
    "pyhanko",
    "pyhanko_certvalidator",
    "py.warnings",
    "airflow",
    "airflow.task",
    "airflow.processor",
)


@contextlib.contextmanager
def process_state_restored() -> Iterator[None]:
    """Undo, when the command ends, what it changed in the process's logging and warnings set-up.

    ``docsign`` is a process entry point, but :func:`airflow_provider_docsign.cli.run` is also called
    in-process (the ``python -m`` forms, tests, a notebook). The caller's root logger must not stay
    silenced below WARNING and redirected to stderr afterwards, nor its warnings filters changed.
    """
    loggers = [logging.getLogger(), *(logging.getLogger(name) for name in ROUTED_LOGGERS)]
    saved = [(logger, list(logger.handlers), logger.level, logger.propagate) for logger in loggers]
    warnoptions = list(sys.warnoptions)
    with warnings.catch_warnings():  # restores warnings.filters and warnings.showwarning
        try:
            yield
        finally:
            logging.captureWarnings(False)
            for logger, handlers, level, propagate in saved:
                logger.handlers[:] = handlers  # the same handlers, in the same order
                logger.setLevel(level)
                logger.propagate = propagate
            sys.warnoptions[:] = warnoptions


def log_to_stderr(debug: bool) -> None:
    """Send every log record (ours, Airflow's, pyHanko's warnings) to stderr, never to stdout.

    stdout carries only the command's result, so that ``--json`` output always parses. Without
    ``debug``, deprecation warnings are hidden.
    """
    logging.captureWarnings(True)
    if not debug:
        # Deprecation notices of the libraries (Airflow 2.11 prints two at import: timer units) are
        # for the operator of the Airflow installation, not the user of this command: hide them
        # unless --debug. Airflow 2.11 re-enables its own unless sys.warnoptions is set, so set both.
        for category in (DeprecationWarning, PendingDeprecationWarning):
            warnings.simplefilter("ignore", category)
            sys.warnoptions.append(f"ignore::{category.__name__}")
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "stream", None) is sys.stdout:
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.WARNING)


def logs_off_stdout(debug: bool) -> None:
    """Redo :func:`log_to_stderr` once Airflow is imported, and keep Airflow's own records quiet.

    Importing Airflow applies its logging configuration: its console handler writes to stdout and
    replaces ours (on Airflow 2.11, with the user's ``AIRFLOW_HOME``, ``BaseHook.get_connection`` then
    printed "Retrieving connection" into a command's result, and a missing connection a traceback).
    Airflow's records are for whoever runs the Airflow installation: shown on stderr with ``--debug``
    only. Call it after the import, before the connection is read.
    """
    for name in ("", "airflow", "airflow.task", "airflow.processor"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            stream = getattr(handler, "stream", None)
            if stream in (sys.stdout, sys.__stdout__) or type(handler).__name__ == "RedirectStdHandler":
                logger.removeHandler(handler)
    root = logging.getLogger()
    if not any(getattr(h, "stream", None) is sys.stderr for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
    if not debug:
        logging.getLogger("airflow").setLevel(logging.CRITICAL)


def one_line(text: str) -> str:
    """Fold a message onto one line, with control characters escaped, for stderr."""
    return printable(" ".join(str(text).split()))
