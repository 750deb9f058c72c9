"""Checks that the README and the guides name only what exists (imported by tests/unit/test_readme.py).

:mod:`readme_check` runs the pages' samples; this module reads their prose as well, so a rename or a
release cannot leave a page behind:

* every wheel or sdist file name names the package's current version;
* every name that looks like ours (``Docsign...``, an exception ending in ``Error`` or ``Failure``) is
  defined somewhere in the package (or is Python's, or one of :data:`EXTERNAL_NAMES`);
* every keyword a Python sample passes to one of our classes is a parameter of it (or of a base class:
  ``BaseOperator``'s ``task_id``, ``retries``...);
* every ``make X`` a page names, in prose too, is a target of the Makefile, and every ``dags_examples/``
  file it names exists;
* every guide is listed in the README's guide table, docs/index.md's and mkdocs.yml's ``nav`` alike.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import re
from functools import cache

from readme_check import ROOT, makefile_targets, python_blocks

PACKAGE = ROOT / "airflow_provider_docsign"
#: Names of other projects a page may quote (an error another client raised, in a benchmark).
EXTERNAL_NAMES = {"APIError": "documenso-sdk's error, quoted in docs/benchmarks.md"}

_OURS = re.compile(r"\b(Docsign[A-Z]\w*|[A-Z]\w*(?:Error|Failure))\b")
_DIST = re.compile(r"\bairflow_provider_docsign-(\d[\w.]*?)(?:-py3-none-any\.whl|\.tar\.gz)")
_MAKE = re.compile(r"`make ([\w-]+)")
_EXAMPLE = re.compile(r"\bdags_examples/([\w-]+\.py)\b")


def pages() -> list[tuple[str, str]]:
    """``(name, text)`` of the README and every page under docs/."""
    found = [("README.md", (ROOT / "README.md").read_text(encoding="utf-8"))]
    found += [(f"docs/{p.name}", p.read_text(encoding="utf-8")) for p in sorted((ROOT / "docs").glob("*.md"))]
    return found


@cache
def package_names() -> frozenset[str]:
    """Every class, function and name the package's modules define or import (read, not imported)."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return frozenset(names)


def version() -> str:
    """The package's version, as ``make dist`` names its files."""
    from airflow_provider_docsign import __version__

    return __version__


def wheel_problems(text: str, page: str) -> list[str]:
    """Wheel and sdist file names that name another version than the package's."""
    current = version()
    return [
        f"{page} line {_line(text, m.start())}: {m.group(0)} names version {m.group(1)}; "
        f"`make dist` builds {current}"
        for m in _DIST.finditer(text)
        if m.group(1) != current
    ]


def name_problems(text: str, page: str) -> list[str]:
    """Names that look like ours (``Docsign...``, ``...Error``, ``...Failure``) and exist nowhere."""
    known = package_names()
    problems = []
    seen: set[str] = set()
    for match in _OURS.finditer(text):
        name = match.group(1)
        if name in seen or name in known or name in EXTERNAL_NAMES or hasattr(builtins, name):
            continue
        seen.add(name)
        problems.append(f"{page} line {_line(text, match.start())}: {name} is not defined in the package")
    return problems


def parameter_problems(text: str, page: str) -> list[str]:
    """Keywords a Python sample passes to one of our classes that the class does not take."""
    problems = []
    for block in python_blocks(text, page):
        try:
            tree = ast.parse(block.source)
        except SyntaxError:
            continue  # readme_check reports it
        imported = _imported_classes(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            cls = imported.get(node.func.id)
            if cls is None:
                continue
            accepted = _parameters(cls)
            if accepted is None:
                continue
            problems += [
                f"{page} line {block.line + node.lineno - 1}: {node.func.id} takes no parameter {kw.arg!r}"
                for kw in node.keywords
                if kw.arg is not None and kw.arg not in accepted
            ]
    return problems


def _imported_classes(tree: ast.Module) -> dict[str, type]:
    """Our classes a block imports from the package, by the name it binds."""
    found: dict[str, type] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("airflow_provider_docsign"):
            try:
                module = importlib.import_module(node.module or "")
            except ImportError:
                continue  # readme_check reports it (or an Airflow 3 module on 2.11)
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if inspect.isclass(value):
                    found[alias.asname or alias.name] = value
    return found


def _parameters(cls: type) -> set[str] | None:
    """The keyword parameters of ``cls`` and its bases; None when one of them takes any (``**kwargs``
    reaching no base that names its own)."""
    accepted: set[str] = set()
    for base in cls.__mro__:
        init = base.__dict__.get("__init__")
        if init is None:
            continue
        try:
            signature = inspect.signature(init)
        except (TypeError, ValueError):
            return None
        params = signature.parameters.values()
        accepted |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return accepted
    return accepted or None


def make_and_example_problems(text: str, page: str) -> list[str]:
    """``make X`` named in prose that is no target, and ``dags_examples/`` files that do not exist."""
    targets = makefile_targets((ROOT / "Makefile").read_text(encoding="utf-8"))
    problems = [
        f"{page} line {_line(text, m.start())}: make {m.group(1)} is not a target of the Makefile"
        for m in _MAKE.finditer(text)
        if m.group(1) not in targets
    ]
    problems += [
        f"{page} line {_line(text, m.start())}: dags_examples/{m.group(1)} does not exist"
        for m in _EXAMPLE.finditer(text)
        if not (ROOT / "dags_examples" / m.group(1)).is_file()
    ]
    return problems


def guide_list_problems(readme: str, index: str, mkdocs: str, guides: list[str]) -> list[str]:
    """Guides (``waiting.md``) missing from the README's table, docs/index.md's or mkdocs.yml's nav."""
    listed = {
        "README.md": set(re.findall(r"\]\(docs/([\w-]+\.md)\)", readme)),
        "docs/index.md": set(re.findall(r"\]\(([\w-]+\.md)\)", index)),
        "mkdocs.yml": set(re.findall(r":\s*([\w-]+\.md)\s*$", mkdocs, re.MULTILINE)),
    }
    problems = []
    for where, names in listed.items():
        problems += [f"{where} does not list the guide docs/{g}" for g in guides if g not in names]
        problems += [
            f"{where} lists docs/{g}, which does not exist" for g in sorted(names - {*guides, "index.md"})
        ]
    return problems


def docs_problems() -> list[str]:
    """Every problem of every page, and of the three guide lists."""
    problems: list[str] = []
    for page, text in pages():
        problems += wheel_problems(text, page)
        problems += name_problems(text, page)
        problems += parameter_problems(text, page)
        problems += make_and_example_problems(text, page)
    guides = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "index.md")
    problems += guide_list_problems(
        (ROOT / "README.md").read_text(encoding="utf-8"),
        (ROOT / "docs" / "index.md").read_text(encoding="utf-8"),
        (ROOT / "mkdocs.yml").read_text(encoding="utf-8"),
        guides,
    )
    return problems


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1
