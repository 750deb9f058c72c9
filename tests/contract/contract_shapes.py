"""Helpers for the contract tests: JSON shape comparison and OpenAPI response-schema validation."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def shape_diff(recorded: Any, actual: Any, path: str = "$") -> list[str]:
    """Every place where ``actual`` differs from ``recorded`` in key set or JSON type (any depth).

    Arrays: element ``i`` of ``actual`` is compared with recorded element ``i`` (or the first one when the
    recording is shorter), so both lists of records and tuple-like arrays (zod issue paths) are covered.
    """
    rt, at = json_type(recorded), json_type(actual)
    if rt != at:
        return [f"{path}: type {at}, recorded {rt}"]
    problems: list[str] = []
    if rt == "object":
        missing = sorted(set(recorded) - set(actual))
        extra = sorted(set(actual) - set(recorded))
        if missing:
            problems.append(f"{path}: missing keys {missing}")
        if extra:
            problems.append(f"{path}: extra keys {extra}")
        for key in sorted(set(recorded) & set(actual)):
            problems += shape_diff(recorded[key], actual[key], f"{path}.{key}")
    elif rt == "array" and recorded:
        for i, item in enumerate(actual):
            problems += shape_diff(recorded[i] if i < len(recorded) else recorded[0], item, f"{path}[{i}]")
    return problems


def _nullable_to_jsonschema(schema: Any) -> Any:
    """OpenAPI 3.0 ``nullable: true`` -> JSON Schema ``anyOf [schema, null]`` (recursively)."""
    if isinstance(schema, list):
        return [_nullable_to_jsonschema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _nullable_to_jsonschema(v) for k, v in schema.items() if k not in ("nullable", "example")}
    if schema.get("nullable") is True:
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return {"anyOf": [out, {"type": "null"}]}
    return out


@cache
def _openapi(spec_file: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(spec_file).read_text())
    return data


def response_schema(spec_dir: Path, method: str, template: str, status: int) -> dict[str, Any] | None:
    """The JSON response schema the OpenAPI document declares (None if it declares none)."""
    doc = _openapi(str(spec_dir / "openapi-facts.json"))
    operation = doc["paths"][template][method.lower()]
    response = operation["responses"].get(str(status))
    if response is None and status >= 400:
        # Some routes answer errors the document does not list (e.g. 404 on folder/delete); every
        # declared error of an operation has the same schema, so use the first one declared.
        errors = [code for code in operation["responses"] if code[0] in "45"]
        response = operation["responses"][errors[0]] if errors else None
    if response is None:
        return None
    content = response.get("content", {}).get("application/json")
    if content is None:
        return None
    return copy.deepcopy(_nullable_to_jsonschema(content["schema"]))


def validate_response(spec_dir: Path, method: str, template: str, status: int, body: Any) -> list[str]:
    """Schema errors of ``body`` against the declared response (an undeclared status is an error)."""
    schema = response_schema(spec_dir, method, template, status)
    if schema is None:
        return [f"{method} {template}: status {status} has no JSON response schema in the OpenAPI document"]
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]
