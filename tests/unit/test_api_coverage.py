"""Every current operation of the service's API is called by the hook, or deliberately left out.

The operations come from the OpenAPI extract of Documenso v2.17 (``openapi-facts.json``). The deprecated
``/document/*`` and ``/template/*`` routes (the v1-compatible API) are out of scope. What the hook calls
is found from the hook itself, not from a list kept by hand: every endpoint builder of
``hooks/_endpoints.py`` is called with placeholder arguments, and the method and path of the
:class:`Call` it returns are matched against the extract's path templates; a builder counts only if a
hook module (``hooks/*.py`` other than ``_endpoints.py``) calls it.
"""

from __future__ import annotations

import ast
import collections.abc
import inspect
import json
import re
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

import pytest
from helpers import SPEC_DIR

from airflow_provider_docsign.hooks import _endpoints as ep

HOOKS = Path(ep.__file__).resolve().parent

#: Current operations the hook does not call, on purpose. Keep this short and say why.
NOT_COVERED = {
    ("POST", "/embedding/create-presign-token"): (
        "mints a short-lived token for embedding Documenso's signing or authoring UI in a web page; a "
        "DAG has no page to embed it in, and the token is a bearer credential that must not travel "
        "through XCom or task logs"
    ),
    ("POST", "/embedding/verify-presign-token"): (
        "checks such an embedding token, which only the web page that embeds the UI holds"
    ),
}
DEPRECATED_PREFIXES = ("/document", "/template")


def current_operations() -> set[tuple[str, str]]:
    doc = json.loads((SPEC_DIR / "openapi-facts.json").read_text())
    return {
        (method.upper(), path)
        for path, item in doc["paths"].items()
        if not path.startswith(DEPRECATED_PREFIXES)
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }


def _template_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", template)
    return re.compile("^" + "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts) + "$")


def _placeholder(name: str, annotation: Any) -> Any:
    """A value of the parameter's type that the builder's own checks accept."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, UnionType):
        annotation = next(a for a in args if a is not type(None))
        origin, args = get_origin(annotation), get_args(annotation)
    if name == "version":
        return "signed"
    if origin is collections.abc.Sequence:
        inner = get_origin(args[0]) or args[0]
        if inner in (collections.abc.Mapping, dict):
            return [{"id": 1}]
        return [1] if inner is int else ["envelope_placeholder"]
    if origin in (collections.abc.Mapping, dict) or annotation is dict:
        return {"title": "x"}
    if annotation is bool:
        return True
    if annotation is int:
        return 1
    return f"{name}_placeholder"


def builders() -> dict[str, Any]:
    """Every function of ``_endpoints`` whose return annotation is ``Call``."""
    out = {}
    for name, func in inspect.getmembers(ep, inspect.isfunction):
        if func.__module__ == ep.__name__ and get_type_hints(func).get("return") is ep.Call:
            out[name] = func
    return out


def build(func: Any) -> ep.Call:
    hints = get_type_hints(func)
    args: dict[str, Any] = {}
    for name, param in inspect.signature(func).parameters.items():
        if param.default is not inspect.Parameter.empty and name != "page":
            continue
        args[name] = _placeholder(name, hints.get(name))
    call: ep.Call = func(**args)
    return call


def called_by_the_hook() -> set[str]:
    """Names of ``_endpoints`` builders some hook module calls as ``ep.<name>(...)``."""
    names: set[str] = set()
    for path in HOOKS.glob("*.py"):
        if path.name == "_endpoints.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "ep"
            ):
                names.add(node.func.attr)
    return names


def covered_operations() -> dict[tuple[str, str], str]:
    """``{(method, path template): builder}`` for the builders the hook calls."""
    templates = {path: _template_regex(path) for _, path in current_operations()}
    used = called_by_the_hook()
    out: dict[tuple[str, str], str] = {}
    for name, func in builders().items():
        if name not in used:
            continue
        call = build(func)
        matches = [t for t, rx in templates.items() if rx.match(call.path)]
        # /envelope/attachment matches both itself and /envelope/{envelopeId}: the literal wins.
        exact = [t for t in matches if "{" not in t]
        for template in exact or matches:
            out[(call.method, template)] = name
    return out


def test_every_current_operation_is_called_by_the_hook_or_left_out_for_a_reason() -> None:
    operations = current_operations()
    covered = covered_operations()
    missing = sorted(op for op in operations if op not in covered and op not in NOT_COVERED)
    assert missing == [], f"operations neither called by the hook nor listed in NOT_COVERED: {missing}"


def test_the_exclusions_are_few_reasoned_and_really_not_covered() -> None:
    operations = current_operations()
    covered = covered_operations()
    assert len(NOT_COVERED) <= 3
    for operation, reason in NOT_COVERED.items():
        assert operation in operations, f"{operation} is not an operation of the extract"
        assert operation not in covered, f"{operation} is covered: remove it from NOT_COVERED"
        assert len(reason) > 40


def test_the_count_matches_the_issue() -> None:
    """37 current operations (52 deprecated ones are skipped); all but the two embedding ones are called."""
    doc = json.loads((SPEC_DIR / "openapi-facts.json").read_text())
    every = sum(len([m for m in item if m in {"get", "post"}]) for item in doc["paths"].values())
    assert every == 89
    assert len(current_operations()) == 37
    assert len(set(covered_operations()) & current_operations()) == 35


def test_each_builder_maps_to_one_real_operation() -> None:
    """A builder whose path matches no operation of the extract would be a route the service lacks."""
    templates = [_template_regex(p) for _, p in current_operations()]
    for name, func in builders().items():
        call = build(func)
        assert any(rx.match(call.path) for rx in templates), f"{name} builds {call.method} {call.path}"
        assert (call.method, call.path) != ("", "")


@pytest.mark.parametrize(
    "name", ["find_attachments", "create_attachment", "update_attachment", "delete_attachment"]
)
def test_the_attachment_routes_are_called_by_the_attachment_mixin(name: str) -> None:
    source = (HOOKS / "_attachments.py").read_text()
    assert f"ep.{name}(" in source
