"""The package's imports form no circle, type-only and deferred imports included, and point down the layers.

The graph is read from the source with ``ast`` (nothing is imported), so an ``import`` under
``if TYPE_CHECKING:`` or inside a function counts like one at the top of a module: a circle that only
type checkers follow today is one refactoring away from a real one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "airflow_provider_docsign"
#: The Airflow-facing layers. Everything else (the hook, the pure modules, the sandbox) sits below them.
UPPER_LAYERS = ("operators", "sensors", "triggers", "notifications")


def modules(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _targets(name: str, path: Path, node: ast.AST, known: dict[str, Path], package: str) -> Iterable[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            yield submodule if submodule in known else base


def import_graph(root: Path, package: str = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its source."""
    known = modules(root, package)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for target in _targets(name, path, node, known, package):
                while target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in known and target != name and target.startswith(package):
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_package_has_no_import_circle() -> None:
    assert circles(import_graph(ROOT)) == []


def test_the_lower_layers_never_import_operators_sensors_or_triggers() -> None:
    upward = []
    for module, targets in import_graph(ROOT).items():
        layer = module.split(".")[1] if "." in module else ""
        if layer in UPPER_LAYERS or layer == "cli":
            continue
        upward += [
            f"{module} -> {t}" for t in targets if t.split(".")[1:2] and t.split(".")[1] in UPPER_LAYERS
        ]
    assert upward == []


def test_the_hook_is_assembled_from_mixins_that_never_import_it() -> None:
    graph = import_graph(ROOT)
    mixins = [m for m in graph if m.startswith(f"{PACKAGE}.hooks._")]
    assert len(mixins) >= 8
    assert [m for m in mixins if f"{PACKAGE}.hooks.docsign" in graph[m]] == []


@pytest.mark.parametrize("guard", ["if TYPE_CHECKING:\n    ", "def later():\n    "])
def test_a_circle_through_a_type_only_or_deferred_import_is_found(tmp_path: Path, guard: str) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text(f"from typing import TYPE_CHECKING\n{guard}from ..a import thing\n")
    (package / "c.py").write_text("import pkg.a\n")
    assert circles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.sub.b"]]
