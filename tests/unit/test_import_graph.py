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
#: The Airflow face. Everything else (the domain packages, the hook, the sandbox) sits below it.
UPPER_LAYERS = ("operators", "sensors", "triggers", "notifications", "cli", "ui")
#: The pure domain packages: neither Airflow nor an HTTP client, and nothing of the layers above.
PURE_PACKAGES = ("service", "evidence")
#: The domain packages that may use the hook (never the face).
DOMAIN_PACKAGES = ("archive", "bulk", "export")
#: Top-level modules everything may use. ``_compat`` is Airflow itself, so the pure packages may not.
SHARED = ("exceptions", "_sources", "_text", "samples", "assets", "_moved")
#: Third-party and standard-library modules that speak HTTP, or are Airflow.
AIRFLOW_OR_HTTP = (
    "airflow",
    "requests",
    "requests_toolbelt",
    "httpx",
    "aiohttp",
    "urllib3",
    "h11",
    "http.client",
    "urllib.request",
    "fastapi",
    "uvicorn",
    "starlette",
)
#: Which of the package's layers each lower layer may import (besides itself and the shared modules).
MAY_IMPORT = {
    "service": set(),
    "evidence": {"service"},
    "hooks": {"service", "evidence", "_compat", "__init__", "metrics"},
    "archive": {"service", "evidence", "hooks", "_compat"},
    "bulk": {"service", "evidence", "hooks", "_compat", "archive", "export"},
    "export": {"service", "evidence", "hooks", "_compat", "archive"},
    "sandbox": {"service", "evidence", "_compat"},
    "preview": {"service", "hooks", "_compat"},
    # Airflow's Stats behind thin wrappers: the hook's request loop and the Airflow face send through it.
    "metrics": {"_compat"},
}


def modules(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def layer_of(module: str) -> str:
    """``airflow_provider_docsign.service.models`` -> ``service``; the package itself -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def is_entry_point(module: str) -> bool:
    """``python -m`` entry modules (``sandbox/__main__``) are the command line's face, wherever they are."""
    return module.endswith(".__main__")


def external_imports(path: Path) -> set[str]:
    """Every absolute module name a file imports that is not the package's (anywhere in its source)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return {name for name in found if not name.startswith(PACKAGE)}


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


def test_the_lower_layers_never_import_the_airflow_face() -> None:
    upward = []
    for module, targets in import_graph(ROOT).items():
        if layer_of(module) in UPPER_LAYERS or is_entry_point(module):
            continue
        upward += [f"{module} -> {t}" for t in targets if layer_of(t) in UPPER_LAYERS]
    assert upward == []


def test_each_lower_layer_imports_only_the_layers_below_it() -> None:
    wrong = []
    for module, targets in import_graph(ROOT).items():
        layer = layer_of(module)
        if layer not in MAY_IMPORT or is_entry_point(module):
            continue
        allowed = MAY_IMPORT[layer] | {layer, *SHARED}
        wrong += [f"{module} -> {t}" for t in sorted(targets) if layer_of(t) not in allowed]
    assert wrong == []


@pytest.mark.parametrize("package", PURE_PACKAGES)
def test_the_pure_packages_import_neither_airflow_nor_http(package: str) -> None:
    found = []
    for path in sorted((ROOT / PACKAGE / package).rglob("*.py")):
        for name in sorted(external_imports(path)):
            if any(name == banned or name.startswith(banned + ".") for banned in AIRFLOW_OR_HTTP):
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    assert found == []


def test_the_top_level_holds_only_what_everything_uses() -> None:
    top = sorted(p.name for p in (ROOT / PACKAGE).glob("*.py") if p.name != "__init__.py")
    assert len(top) <= 8, top
    assert {p.removesuffix(".py") for p in top} <= {*SHARED, "_compat", "metrics"}, top


def test_every_package_says_what_it_is_for_and_what_it_may_import() -> None:
    for init in sorted((ROOT / PACKAGE).glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert len(doc.splitlines()) >= 3, f"{init.relative_to(ROOT)} needs a docstring"
        assert "May import" in doc, f"{init.relative_to(ROOT)} does not say what it may import"


def test_no_module_is_over_500_lines_but_the_hook_facade() -> None:
    limits = {f"{PACKAGE}/hooks/docsign.py": 800}
    paths = [
        *(ROOT / PACKAGE).rglob("*.py"),
        *(ROOT / "scripts").glob("*.py"),
        *(ROOT / "bench").glob("*.py"),
    ]
    long = []
    for path in sorted(paths):
        rel = str(path.relative_to(ROOT))
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limits.get(rel, 500):
            long.append(f"{rel}: {lines}")
    assert long == []


def test_a_pure_module_that_imports_airflow_is_found(tmp_path: Path) -> None:
    pure = tmp_path / "bad.py"
    pure.write_text("def later():\n    from airflow.sdk import BaseHook\n    import requests.adapters\n")
    assert external_imports(pure) == {"airflow.sdk", "requests.adapters"}


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
