"""Every public operator, sensor and notifier has a hostile test under ``tests/hostile/``.

"A capability is done when its hostile module exists" (docs/development.md): this test lists the public
classes the provider exports (the operator and sensor modules of ``get_provider_info()`` and
``airflow_provider_docsign.notifications``) and fails, naming them, for each one that no
``tests/hostile/test_*.py`` module uses in its code (an import or a name; a mention in a docstring or
comment does not count).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from airflow_provider_docsign import get_provider_info
from airflow_provider_docsign._compat import BaseNotifier, BaseOperator, BaseSensorOperator

HOSTILE = Path(__file__).resolve().parents[1] / "hostile"


def _modules() -> list[str]:
    info = get_provider_info()
    names = [
        m for group in ("operators", "sensors") for entry in info[group] for m in entry["python-modules"]
    ]
    return [*names, "airflow_provider_docsign.notifications"]


def public_classes() -> dict[str, str]:
    """Public operator, sensor and notifier classes: name -> the module that exports them."""
    found: dict[str, str] = {}
    for module_name in _modules():
        module = importlib.import_module(module_name)
        exported = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
        for name in exported:
            obj = getattr(module, name)
            if name.startswith("_") or not inspect.isclass(obj):
                continue
            if not issubclass(obj, (BaseOperator, BaseSensorOperator, BaseNotifier)):
                continue
            if not obj.__module__.startswith("airflow_provider_docsign."):
                continue  # Airflow's own base classes imported into the module
            found.setdefault(name, module_name)
    return found


def names_used(path: Path) -> set[str]:
    """The identifiers a module's code uses: imported names, names, attributes (not text)."""
    used: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.alias):
            used.add(node.asname or node.name.rpartition(".")[2])
            used.add(node.name.rpartition(".")[2])
        elif isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
    return used


def test_the_list_of_public_classes_is_complete() -> None:
    classes = public_classes()
    # A floor, so that a broken discovery (nothing found) cannot pass the test below.
    assert {"DocsignCreateEnvelopeOperator", "DocsignEnvelopeSensor", "DocsignNotifier"} <= set(classes)
    operators = importlib.import_module("airflow_provider_docsign.operators")
    assert set(operators.__all__) <= set(classes), set(operators.__all__) - set(classes)
    assert len(classes) >= len(operators.__all__) + 2


def test_every_public_operator_sensor_and_notifier_has_a_hostile_test() -> None:
    modules = sorted(HOSTILE.glob("test_*.py"))
    assert modules, f"no hostile modules under {HOSTILE}"
    covered: set[str] = set()
    for module in modules:
        covered |= names_used(module)
    missing = sorted(f"{name} ({where})" for name, where in public_classes().items() if name not in covered)
    assert not missing, (
        f"{len(missing)} public classes have no hostile test in tests/hostile/test_*.py "
        f"(docs/development.md: a capability is done when its hostile module exists): " + ", ".join(missing)
    )
