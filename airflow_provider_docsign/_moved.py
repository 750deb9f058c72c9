"""The module paths of 0.2 that moved into domain packages in 0.3, kept importable until 0.4.

``import airflow_provider_docsign.verify`` (or ``from airflow_provider_docsign.models import Envelope``)
still works: a finder on ``sys.meta_path`` answers for exactly the old names in :data:`MOVED`, warns once
with :class:`DeprecationWarning` naming the new path, and hands back the new module itself (one module
object under both names, so classes compare equal and ``isinstance`` holds). Nothing is copied and no
file stands at the old path, so the package's top level shows only what everything uses.

Three 0.2 modules became packages of the same name (``archive``, ``bulk``, ``export``): their old
names (``from airflow_provider_docsign.export import parse_ts``) are forwarded by the package's
``__getattr__`` (:func:`forward`) to the module that holds them now, with the same warning.

Each old path also logs one warning per process (logger ``airflow_provider_docsign._moved``), naming
the old path, the new one and the file that imported it. A ``DeprecationWarning`` raised while Airflow
parses a DAG file is hidden by Python's default filters (the DAG module is not ``__main__``); a logged
warning shows in the dag-processor's log for that file and in the task's log. ``docsign
moved-imports DAGS_FOLDER`` (:func:`find_moved_imports`) lists every old path in a folder of DAGs
without running them.

``python -m airflow_provider_docsign.verify`` and ``python -m airflow_provider_docsign.templates`` stay
the documented ``docsign verify`` and ``docsign templates`` commands: for those two, the finder's
loader gives :mod:`runpy` the command's code.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import logging
import os
import pkgutil
import sys
import warnings
from collections.abc import Callable
from types import CodeType, ModuleType
from typing import Any

__all__ = ["FORWARDED", "MOVED", "find_moved_imports", "forward", "install"]

_LOG = logging.getLogger(__name__)
#: The old paths logged in this process (each once).
_LOGGED: set[str] = set()
#: What was logged for them, in order: an Airflow 2.11 task logs it again into its task log
#: (``ui/moved_listener.py``), since its DAG file was parsed before that log was attached.
_MESSAGES: list[str] = []
_HERE = os.path.dirname(os.path.abspath(__file__))
_IMPORTLIB = os.path.dirname(os.path.abspath(importlib.__file__ or ""))
#: How to find every old path at once, said in every logged warning.
FIND_ALL = "`docsign moved-imports DAGS_FOLDER` lists every old path in a folder"

_PACKAGE = "airflow_provider_docsign"
#: Removed in this version; until then the old paths warn.
REMOVED_IN = "0.4"

#: Old module (below the package) -> its new home in 0.3.
MOVED: dict[str, str] = {
    "attachments": "service.attachments",
    "corrections": "service.corrections",
    "expiry": "service.expiry",
    "models": "service.models",
    "outgoing": "service.outgoing",
    "payloads": "service.payloads",
    "templates": "service.templates",
    "webhook_events": "service.webhook_events",
    "webhook_urls": "service.webhook_urls",
    "links": "operators.links",
    "ltv": "evidence.ltv",
    "object_lock": "evidence.object_lock",
    "signatures": "evidence.signatures",
    "timestamps": "evidence.timestamps",
    "tsa_client": "evidence.tsa_client",
    "archive_batch": "archive.batch",
    "archive_evidence": "archive.evidence",
    "archive_signatures": "archive.signatures",
    "archive_store": "archive.store",
    "archiver": "archive.archiver",
    "retention": "archive.retention",
    "verify": "archive.auditor",
    "verify_evidence": "archive.audit_evidence",
    "bulk_state": "bulk.state",
    "bulk_store": "bulk.store",
    "export_store": "export.store",
    "lineage": "export.lineage",
}
#: The 0.2 modules that became packages of the same name -> the module that holds their old names now.
FORWARDED: dict[str, str] = {"archive": "naming", "bulk": "plan", "export": "rows"}
#: Old modules that ``python -m`` ran as a ``docsign`` subcommand.
COMMANDS: dict[str, str] = {"verify": "verify", "templates": "templates"}


class _AliasLoader(importlib.abc.Loader):
    """Loads an old name as the new module (and, for ``python -m``, as its ``docsign`` command)."""

    def __init__(self, old: str, new: str) -> None:
        self.old = old
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """Return the new module itself, imported under its new name."""
        message = (
            f"{_PACKAGE}.{self.old} moved to {_PACKAGE}.{self.new} in 0.3; "
            f"the old path goes in {REMOVED_IN}: import {_PACKAGE}.{self.new}"
        )
        if not _airflow_imports():
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            _log_once(f"{_PACKAGE}.{self.old}", message)
        return importlib.import_module(f"{_PACKAGE}.{self.new}")

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the new module ran when it was imported."""

    def get_code(self, fullname: str) -> CodeType:
        """What ``python -m`` of the old name runs: the ``docsign`` subcommand it always was."""
        command = COMMANDS.get(self.old)
        if command is None:
            raise ImportError(f"{fullname} is not a command; run `docsign --help`", name=fullname)
        source = (
            "import sys\n"
            f"from {_PACKAGE}.cli import run\n"
            f"sys.exit(run([{command!r}, *sys.argv[1:]], prog='python -m {fullname}'))\n"
        )
        return compile(source, f"<{fullname}>", "exec")


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Finds exactly the names in :data:`MOVED`; every other import goes on as usual."""

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for an old path, or ``None``."""
        package, _, old = fullname.rpartition(".")
        if package != _PACKAGE or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(old, MOVED[old]))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (the package's ``__init__`` calls it)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())


def forward(package: str, module: str) -> Callable[[str], Any]:
    """A package's ``__getattr__`` that serves the names its 0.2 module of the same name had.

    :param package: The package (``airflow_provider_docsign.export``), whose ``__init__`` assigns the
        result to ``__getattr__``.
    :param module: The module below it that holds those names now (``rows``).
    """
    target = f"{package}.{module}"

    submodules: set[str] = set()  # the package's modules, listed once

    def __getattr__(name: str) -> Any:
        here = sys.modules[package]
        if not submodules:
            submodules.update(info.name for info in pkgutil.iter_modules(here.__path__))
        # A submodule not imported yet (``from ...bulk import state``) is the import system's to load,
        # without importing the module that holds the old names.
        if name.startswith("_") or name in submodules:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        holder = importlib.import_module(target)
        if not hasattr(holder, name):
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        message = f"{package}.{name} moved to {target}.{name} in 0.3; the old path goes in {REMOVED_IN}"
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        _log_once(f"{package}.{name}", message)
        value = getattr(holder, name)
        setattr(here, name, value)  # warned once: the next look-up finds the name itself
        return value

    return __getattr__


def _importer() -> str | None:
    """``file line N`` of the first frame outside the import system and this package, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        inside = name.startswith("<frozen importlib") or os.path.abspath(name).startswith((_HERE, _IMPORTLIB))
        if not inside and not name.startswith("<frozen "):
            return f"{name} line {frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _airflow_imports() -> bool:
    """Whether Airflow itself asked for the old path, not a DAG.

    The 0.2 path of the extra link, which ``get_provider_info`` registers so that a DAG serialized by
    0.2 keeps its link, is imported by the providers manager and the deserializer: no one can act on a
    warning there.
    """
    airflow = sys.modules.get("airflow")
    roots = tuple(os.path.abspath(p) + os.sep for p in getattr(airflow, "__path__", ()))
    where = _importer()
    return bool(roots and where and os.path.abspath(where.rsplit(" line ", 1)[0]).startswith(roots))


def _log_once(old: str, message: str) -> None:
    """Log ``message`` as a warning, the first time ``old`` is used in this process."""
    if old in _LOGGED:
        return
    _LOGGED.add(old)
    where = _importer()
    text = f"{message} ({f'imported by {where}' if where else 'imported'}; {FIND_ALL})"
    _MESSAGES.append(text)
    _LOG.warning("%s", text)


def logged() -> list[str]:
    """The moved-import warnings this process has logged, in the order they were logged."""
    return list(_MESSAGES)


def _forwarded_names(package: str) -> set[str]:
    """The old names a :data:`FORWARDED` package serves: its holder's public names that it lacks."""
    module = importlib.import_module(f"{_PACKAGE}.{package}")
    holder = importlib.import_module(f"{_PACKAGE}.{package}.{FORWARDED[package]}")
    # What the package's own __init__ binds (read, since a served name is cached on the package).
    own = {info.name for info in pkgutil.iter_modules(module.__path__)}
    with open(module.__file__ or "", encoding="utf-8") as init:
        for node in ast.parse(init.read()).body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                own |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                own.add(node.name)
            else:
                own |= {
                    n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                }
    return {name for name in vars(holder) if not name.startswith("_") and name not in own}


def find_moved_imports(source: str, filename: str = "<source>") -> list[tuple[int, str, str]]:
    """Every 0.2 path that ``source`` imports, read without running it: ``(line, old, new)``.

    Finds ``import airflow_provider_docsign.models``, ``from airflow_provider_docsign.models import
    Envelope``, ``from airflow_provider_docsign import models`` and the names the packages of
    :data:`FORWARDED` serve (``from airflow_provider_docsign.export import parse_ts``).

    :param source: Python source (a DAG file).
    :param filename: Its name, for a syntax error.
    :raises SyntaxError: When ``source`` is not Python.
    """
    found: list[tuple[int, str, str]] = []
    forwarded: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if len(parts) >= 2 and parts[0] == _PACKAGE and parts[1] in MOVED:
                    found.append((node.lineno, f"{_PACKAGE}.{parts[1]}", f"{_PACKAGE}.{MOVED[parts[1]]}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] != _PACKAGE:
                continue
            if len(parts) == 1:
                for alias in node.names:
                    if alias.name in MOVED:
                        old, new = f"{_PACKAGE}.{alias.name}", f"{_PACKAGE}.{MOVED[alias.name]}"
                        found.append((node.lineno, old, new))
            elif parts[1] in MOVED:
                found.append((node.lineno, f"{_PACKAGE}.{parts[1]}", f"{_PACKAGE}.{MOVED[parts[1]]}"))
            elif len(parts) == 2 and parts[1] in FORWARDED:
                names = forwarded.setdefault(parts[1], set())
                if not names:
                    names |= _forwarded_names(parts[1])
                target = f"{_PACKAGE}.{parts[1]}.{FORWARDED[parts[1]]}"
                found += [
                    (node.lineno, f"{node.module}.{alias.name}", f"{target}.{alias.name}")
                    for alias in node.names
                    if alias.name in names
                ]
    return sorted(found)
