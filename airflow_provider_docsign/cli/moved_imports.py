"""``docsign moved-imports DAGS_FOLDER``: every 0.2 import path in a folder of DAGs, before 0.4 removes them.

0.3 moved 27 modules (and made three of them packages) and keeps the old paths importable, with a
warning, until 0.4 (:mod:`airflow_provider_docsign._moved`). This command reads every ``.py`` file
under the folders and files given, without running any of them, and prints one line per old path:
``FILE:LINE: OLD moved to NEW``.

Exit status: 0 no old path, 1 old paths were found (listed), 2 a path that is not there.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from airflow_provider_docsign import _moved
from airflow_provider_docsign.cli import _arguments as types
from airflow_provider_docsign.cli._common import EXIT_CHECK_FAILED, EXIT_OK, CliError

_EPILOG = f"""examples:
  docsign moved-imports $AIRFLOW_HOME/dags
  docsign moved-imports dags/contracts.py dags/export.py

Nothing is imported or run: the files are read as Python source. Folders are searched recursively
(hidden folders and __pycache__ left out). The old paths work until {_moved.REMOVED_IN}, with a warning
in the dag-processor's and the task's log.

exit status: 0 none found, 1 old paths found, 2 a path that does not exist."""


def register(subparsers: Any) -> None:
    """Add the ``moved-imports`` subcommand."""
    parser = subparsers.add_parser(
        "moved-imports",
        help="List the 0.2 import paths a folder of DAGs still uses",
        description=(
            "List every import of a module path that 0.3 moved (and 0.4 removes) in the Python files "
            "under DAGS_FOLDER, with the path to import instead."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "folders",
        nargs="+",
        metavar="DAGS_FOLDER",
        type=types.path("a DAGs folder or a Python file"),
        help="a folder of DAG files (searched recursively) or one file",
    )
    parser.set_defaults(func=run)


def python_files(place: Path) -> list[Path]:
    """``place`` itself (a file), or every ``.py`` file below it, in a stable order."""
    if place.is_file():
        return [place]
    if not place.is_dir():
        raise CliError(f"{place}: no such file or folder")
    found = []
    for root, dirs, files in os.walk(place):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        found += [Path(root) / name for name in sorted(files) if name.endswith(".py")]
    return found


def run(args: argparse.Namespace) -> int:
    """Print each old path as ``FILE:LINE: OLD moved to NEW``; a summary line last."""
    files = [file for place in args.folders for file in python_files(Path(place))]
    count = 0
    skipped = []
    for file in files:
        try:
            found = _moved.find_moved_imports(file.read_text(encoding="utf-8", errors="replace"), str(file))
        except (SyntaxError, ValueError):
            skipped.append(file)
            continue
        for line, old, new in found:
            print(f"{file}:{line}: {old} moved to {new} (the old path goes in {_moved.REMOVED_IN})")
        count += len(found)
    for file in skipped:
        print(f"{file}: not read: it is not valid Python")
    where = f"{len(files)} file{'s' if len(files) != 1 else ''}"
    if count:
        print(f"{count} old import path{'s' if count != 1 else ''} in {where}: import the new paths shown")
        return EXIT_CHECK_FAILED
    print(f"no old import paths in {where}")
    return EXIT_OK
