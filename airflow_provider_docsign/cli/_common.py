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
import logging
import os
import shutil
import sys
import tempfile

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


def isolate_airflow_home() -> None:
    """Point ``AIRFLOW_HOME`` at a temporary directory when the user has not set one.

    Importing Airflow with no ``AIRFLOW_HOME`` creates ``~/airflow`` (config, logs). A command-line
    tool that only reads a PDF or calls the API must leave the user's home untouched, so it gets a
    throw-away home, removed when the process exits. Connections then come from ``AIRFLOW_CONN_*``
    environment variables (or a secrets backend configured through ``AIRFLOW__SECRETS__*``). Call it
    before anything imports ``airflow``.
    """
    if os.environ.get("AIRFLOW_HOME"):
        return
    home = tempfile.mkdtemp(prefix="docsign-cli-airflow-home-")
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    os.environ["AIRFLOW_HOME"] = home
    # Nothing of Airflow's own set-up is needed by the CLI; keep it quiet and cheap.
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "ERROR")


def log_to_stderr(debug: bool) -> None:
    """Send every log record (ours, Airflow's, pyHanko's warnings) to stderr, never to stdout.

    stdout carries only the command's result, so that ``--json`` output always parses.
    """
    logging.captureWarnings(True)
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "stream", None) is sys.stdout:
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.WARNING)


def one_line(text: str) -> str:
    """Fold a message onto one line, with control characters escaped, for stderr."""
    flat = " ".join(str(text).split())
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in flat)
