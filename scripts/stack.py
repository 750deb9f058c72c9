"""``make stack`` / ``make stack-down``: a distributed Airflow 3 on 127.0.0.1, one process per component.

``python scripts/stack.py up`` starts, each as its own process (and process group):

* PostgreSQL (Debian's ``postgresql``: a throw-away cluster made with ``initdb`` in a temp directory;
  run as the ``postgres`` user when started by root, since PostgreSQL refuses root) as the metadata DB;
* ``redis-server`` as the Celery broker;
* moto's S3 server (buckets ``docsign-work`` and ``docsign-archive``) as the object store;
* the Docsign sandbox, whose signers sign by themselves a few seconds after distribution;
* Airflow's ``api-server``, ``scheduler``, ``dag-processor`` and ``triggerer``;
* two Celery workers, each with its own ``HOME``, ``TMPDIR``, ``AIRFLOW_HOME`` (and so its own log
  folder), working directory and hostname: they share only the broker, the database and S3.

The connections (``docsign_default`` to the sandbox, ``docsign_s3`` to moto) are added to the metadata
database with ``airflow connections add``, as users add theirs: no component gets an ``AIRFLOW_CONN_*``
variable, so the workers, the triggerer and the UI all read them from the database.

It prints the UI URL, the login and the connection ids, and records every PID (with its start time, so
a recycled PID is never signalled) in ``.stack/stack.json``. ``python scripts/stack.py down`` stops
exactly those processes and removes the temp directory. A missing ``postgresql`` or ``redis-server``
is reported with the ``apt-get`` command before anything starts; a component that fails to start
stops everything started so far. The tests (``-m distributed``) use the same :class:`Stack`.

``python scripts/stack.py preflight --browser --install`` is ``make test``'s pre-flight (standard
library only, so it runs before any venv exists): it checks PostgreSQL, Redis and Chromium, installs
the missing ones with one ``apt-get install`` when root or with passwordless sudo, and prints the
``export`` lines (``DOCSIGN_CHROMIUM``, the browser the tests drive); otherwise it exits 2 naming what
is missing, the install command and ``make test-core``. ``make stack`` runs the same pre-flight with
``--install --for "make stack"`` (no Chromium), whose refusal is one line: the packages and the command.

The parts, one job each, next to this command line: ``stack_preflight.py`` (the pre-flight),
``stack_layout.py`` (ports, addresses, environments, connections) and ``stack_processes.py`` (the
processes: :class:`Stack`). Every name other code imports from ``stack`` is still importable from here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys

# Its modules (``stack_*.py`` next to it), also when it is imported by path rather than run.
HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from stack_layout import (  # noqa: E402
    API_KEY,
    ARCHIVE_BUCKET,
    DAGS_FOLDER,
    LEASE_DIR,
    ROOT,
    S3_CONN_ID,
    USERNAME,
    WORK_BUCKET,
    WORKERS,
    StackLayout,
)
from stack_preflight import (  # noqa: E402
    APT_HINT,
    APT_LOG,
    CHROMIUM_ENV,
    POSTGRESQL_ROOT_ENV,
    Prerequisites,
    StackError,
    apt_hint,
    chromium,
    ensure,
    missing_packages,
    postgres_bindir,
    preflight,
    redis_server,
)
from stack_processes import STARTUP_TIMEOUT, STOP_TIMEOUT, Stack, _alive, stop_pid  # noqa: E402

__all__ = [
    "API_KEY",
    "APT_HINT",
    "APT_LOG",
    "ARCHIVE_BUCKET",
    "CHROMIUM_ENV",
    "DAGS_FOLDER",
    "LEASE_DIR",
    "POSTGRESQL_ROOT_ENV",
    "ROOT",
    "S3_CONN_ID",
    "STARTUP_TIMEOUT",
    "STATE_DIR",
    "STATE_FILE",
    "STOP_TIMEOUT",
    "USERNAME",
    "WORKERS",
    "WORK_BUCKET",
    "Prerequisites",
    "Stack",
    "StackError",
    "StackLayout",
    "apt_hint",
    "check",
    "chromium",
    "down",
    "ensure",
    "main",
    "missing_packages",
    "postgres_bindir",
    "preflight",
    "redis_server",
    "stop_pid",
    "up",
]

STATE_DIR = ROOT / ".stack"
STATE_FILE = STATE_DIR / "stack.json"


def down() -> int:
    """Stop the processes recorded in ``.stack/stack.json`` (exactly those, by PID) and clean up."""
    if not STATE_FILE.exists():
        print("[stack] no stack is running (no .stack/stack.json)")
        return 0
    state = json.loads(STATE_FILE.read_text())
    for name, info in reversed(list(state["procs"].items())):
        stop_pid(info["pid"], info["started"], signal.SIGINT if name == "postgres" else signal.SIGTERM)
        print(f"[stack] stopped {name} (pid {info['pid']})")
    still = [n for n, i in state["procs"].items() if _alive(i["pid"], i["started"])]
    STATE_FILE.unlink()
    shutil.rmtree(state["base"], ignore_errors=True)
    if still:
        print(f"[stack] could not stop: {still}", file=sys.stderr)
        return 1
    return 0


def up() -> int:
    """Start a stack in the background and print how to use it; 1 if it could not start."""
    if STATE_FILE.exists():
        print("[stack] a stack is already running; `make stack-down` first", file=sys.stderr)
        return 1
    stack = Stack(state_file=STATE_FILE)
    try:
        stack.start()
    except (StackError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(stack.base, ignore_errors=True)
        print(f"[stack] {exc}", file=sys.stderr)
        return 1
    for log in stack._logs:
        log.close()
    print(stack.summary())
    return 0


def check(install: bool, browser: bool, what: str = "make test") -> int:
    """``preflight``: print the ``export`` lines of the prerequisites, or one message and exit 2."""
    try:
        found = ensure(browser=browser, install=install, what=what)
    except StackError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(found.exports())
    return 0


def main(argv: list[str] | None = None) -> int:
    """``up``, ``down`` or ``preflight``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["up", "down", "preflight"])
    parser.add_argument(
        "--install",
        action="store_true",
        help="preflight: install what is missing with apt-get when root or with passwordless sudo",
    )
    parser.add_argument("--browser", action="store_true", help="preflight: Chromium is needed too")
    parser.add_argument(
        "--for",
        dest="what",
        default="make test",
        help="preflight: the target that asks, named in its messages (make test, make stack)",
    )
    args = parser.parse_args(argv)
    if args.command == "preflight":
        return check(args.install, args.browser, args.what)
    return up() if args.command == "up" else down()


if __name__ == "__main__":
    sys.exit(main())
