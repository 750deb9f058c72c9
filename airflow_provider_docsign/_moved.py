"""The module paths of 0.2 that moved into domain packages in 0.3, kept importable until 0.4.

``import airflow_provider_docsign.verify`` (or ``from airflow_provider_docsign.models import Envelope``)
still works: a finder on ``sys.meta_path`` answers for exactly the old names in :data:`MOVED`, warns once
with :class:`DeprecationWarning` naming the new path, and hands back the new module itself (one module
object under both names, so classes compare equal and ``isinstance`` holds). Nothing is copied and no
file stands at the old path, so the package's top level shows only what everything uses.

Three 0.2 modules became packages of the same name (``archive``, ``bulk``, ``export``): their old
names (``from airflow_provider_docsign.export import parse_ts``) are forwarded by the package's
``__getattr__`` (:func:`forward`) to the module that holds them now, with the same warning.

``python -m airflow_provider_docsign.verify`` and ``python -m airflow_provider_docsign.templates`` stay
the documented ``docsign verify`` and ``docsign templates`` commands: for those two, the finder's
loader gives :mod:`runpy` the command's code.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import pkgutil
import sys
import warnings
from collections.abc import Callable
from types import CodeType, ModuleType
from typing import Any

__all__ = ["MOVED", "forward", "install"]

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
#: Old modules that ``python -m`` ran as a ``docsign`` subcommand.
COMMANDS: dict[str, str] = {"verify": "verify", "templates": "templates"}


class _AliasLoader(importlib.abc.Loader):
    """Loads an old name as the new module (and, for ``python -m``, as its ``docsign`` command)."""

    def __init__(self, old: str, new: str) -> None:
        self.old = old
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """Return the new module itself, imported under its new name."""
        warnings.warn(
            f"{_PACKAGE}.{self.old} moved to {_PACKAGE}.{self.new} in 0.3; "
            f"the old path goes in {REMOVED_IN}: import {_PACKAGE}.{self.new}",
            DeprecationWarning,
            stacklevel=2,
        )
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
        warnings.warn(
            f"{package}.{name} moved to {target}.{name} in 0.3; the old path goes in {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,
        )
        value = getattr(holder, name)
        setattr(here, name, value)  # warned once: the next look-up finds the name itself
        return value

    return __getattr__
