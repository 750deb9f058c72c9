"""Make the facts-only extract of a Documenso OpenAPI document that the contract tests validate against.

Usage::

    python scripts/extract_contract.py OPENAPI.json OUT_DIR

``OPENAPI.json`` is a saved copy of a real instance's ``GET /api/v2/openapi.json``. The script writes
``OUT_DIR/openapi-facts.json``: the paths, methods, parameters, request bodies, status codes and schemas
(field names, types, formats, enums, required lists, bounds, nullability), with every description,
summary, example, title and tag removed. The full document is prose from an AGPL project and is never
committed; the extract holds only facts about the interface.

The output is deterministic (sorted keys, fixed indentation, trailing newline), so running the script
again on the same document reproduces the committed extract byte for byte. To follow a new service
version, save its document, run the script into ``tests/contract/data/documenso-<version>/`` and point
the contract tests at that folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

OUTPUT_NAME = "openapi-facts.json"

# JSON Schema / OpenAPI schema keywords that state a fact about the shape of a value.
_SCHEMA_SCALARS = frozenset(
    {
        "type",
        "format",
        "enum",
        "const",
        "required",
        "nullable",
        "default",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "pattern",
        "multipleOf",
        "$ref",
    }
)
_SCHEMA_ONE = frozenset({"items", "not", "additionalProperties", "propertyNames"})
_SCHEMA_MANY = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def _schema(node: Any) -> Any:
    """A schema with only its structural keywords, recursively."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_SCALARS:
            out[key] = value
        elif key in _SCHEMA_ONE:
            out[key] = _schema(value)
        elif key in _SCHEMA_MANY:
            out[key] = [_schema(v) for v in value]
        elif key == "properties":
            out[key] = {name: _schema(sub) for name, sub in value.items()}
    return out


def _content(node: dict[str, Any]) -> dict[str, Any]:
    """``content`` of a request body or response: media type -> its schema only."""
    return {media: {"schema": _schema(body.get("schema", {}))} for media, body in node.items()}


def _parameter(node: dict[str, Any]) -> dict[str, Any]:
    out = {key: node[key] for key in ("name", "in", "required", "$ref") if key in node}
    if "schema" in node:
        out["schema"] = _schema(node["schema"])
    return out


def _operation(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "operationId" in node:
        out["operationId"] = node["operationId"]
    if "parameters" in node:
        out["parameters"] = [_parameter(p) for p in node["parameters"]]
    body = node.get("requestBody")
    if body is not None:
        out["requestBody"] = {
            key: value
            for key, value in (("required", body.get("required")), ("content", body.get("content")))
            if value is not None
        }
        if "content" in out["requestBody"]:
            out["requestBody"]["content"] = _content(out["requestBody"]["content"])
    out["responses"] = {
        status: ({"content": _content(resp["content"])} if "content" in resp else {})
        for status, resp in node.get("responses", {}).items()
    }
    return out


def extract(document: dict[str, Any]) -> dict[str, Any]:
    """The facts-only extract of a whole OpenAPI document."""
    if "paths" not in document or "openapi" not in document:
        raise ValueError("not an OpenAPI document: it has no 'openapi' version or no 'paths'")
    paths: dict[str, Any] = {}
    for path, item in document["paths"].items():
        paths[path] = {method: _operation(item[method]) for method in _METHODS if method in item}
    out: dict[str, Any] = {
        "openapi": document["openapi"],
        "info": {"version": document.get("info", {}).get("version")},
        "paths": paths,
    }
    schemas = document.get("components", {}).get("schemas")
    if schemas:
        out["components"] = {"schemas": {name: _schema(s) for name, s in schemas.items()}}
    return out


def render(document: dict[str, Any]) -> str:
    """The extract as the exact text that is committed."""
    return json.dumps(extract(document), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("openapi", type=Path, help="a saved copy of GET /api/v2/openapi.json")
    parser.add_argument("out_dir", type=Path, help=f"folder to write {OUTPUT_NAME} into")
    args = parser.parse_args(argv)
    try:
        document = json.loads(args.openapi.read_text(encoding="utf-8"))
        text = render(document)
    except (OSError, ValueError) as exc:
        print(f"extract_contract: {args.openapi}: {exc}", file=sys.stderr)
        return 2
    args.out_dir.mkdir(parents=True, exist_ok=True)
    target = args.out_dir / OUTPUT_NAME
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
    print(f"wrote {target} ({len(text)} bytes, {len(document['paths'])} paths)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
