"""Make the facts-only extract of a Documenso OpenAPI document that the contract tests validate against.

Usage::

    python scripts/extract_contract.py OPENAPI.json OUT_DIR [--rules MODULE.py]

``OPENAPI.json`` is a saved copy of a real instance's ``GET /api/v2/openapi.json``. The script writes
``OUT_DIR/openapi-facts.json``: the paths, methods, parameters, request bodies, status codes and schemas
(field names, types, formats, enums, required lists, bounds, nullability), with every description,
summary, example, title and tag removed. The full document is prose from an AGPL project and is never
committed; the extract holds only facts about the interface.

The output is deterministic (sorted keys, fixed indentation, trailing newline), so running the script
again on the same document reproduces the committed extract byte for byte. To follow a new service
version, save its document, run the script into ``tests/contract/data/documenso-<version>/`` and point
the contract tests at that folder.

``--rules`` also writes the package's table of the service's string rules
(``airflow_provider_docsign/service/_rules.py``: each request field's ``maxLength``, and which fields
hold e-mail addresses or URLs), which the hook checks every outgoing request against. The package cannot
read test fixtures, so the table is generated; ``tests/unit/test_service_rules.py`` checks that it is
what :func:`rules_module` makes of the committed extract. The extract alone is enough input::

    python scripts/extract_contract.py tests/contract/data/documenso-2.17/openapi-facts.json /tmp/x \
        --rules airflow_provider_docsign/service/_rules.py
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


# -- the package's table of string rules -----------------------------------------------------------

#: The service's e-mail schemas carry this in their ``pattern`` (and nothing else does).
_EMAIL_MARK = "+@["


class _Rule:
    """What the schema says about one string field, merged over the alternatives of a union."""

    def __init__(self) -> None:
        self.unbounded = False
        self.max_length = 0
        self.email = False
        self.empty_email = False
        self.url = False

    def add(self, node: dict[str, Any]) -> None:
        if "maxLength" in node:
            self.max_length = max(self.max_length, int(node["maxLength"]))
        elif "enum" in node:  # a fixed choice: the service checks it; no length of its own
            self.empty_email = self.empty_email or "" in node["enum"]
        else:
            self.unbounded = True
        if _EMAIL_MARK in str(node.get("pattern", "")):
            self.email = True
        if node.get("format") == "uri":
            self.url = True


def _strings(node: Any, path: str, rules: dict[str, _Rule], depth: int = 0) -> None:
    """Record every string field under ``node`` at ``path`` (``a.b``, ``a[]``, ``a.*``)."""
    if not isinstance(node, dict) or depth > 64:
        return
    for key in ("anyOf", "oneOf", "allOf"):
        for alternative in node.get(key) or ():
            _strings(alternative, path, rules, depth + 1)
    kind = node.get("type")
    if kind == "string":
        rules.setdefault(path, _Rule()).add(node)
    for name, sub in (node.get("properties") or {}).items():
        _strings(sub, f"{path}.{name}" if path else name, rules, depth + 1)
    if "items" in node:
        _strings(node["items"], f"{path}[]", rules, depth + 1)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        _strings(extra, f"{path}.*" if path else "*", rules, depth + 1)


def request_rules(document: dict[str, Any]) -> dict[str, dict[str, _Rule]]:
    """The string fields of every JSON request body (for multipart: its ``payload`` part) by route."""
    facts = extract(document)  # the same on the whole document and on its extract
    out: dict[str, dict[str, _Rule]] = {}
    for path, item in facts["paths"].items():
        for method, operation in item.items():
            content = (operation.get("requestBody") or {}).get("content") or {}
            schema = (content.get("application/json") or {}).get("schema")
            form = (content.get("multipart/form-data") or {}).get("schema") or {}
            if schema is None and "payload" in (form.get("properties") or {}):
                schema = form["properties"]["payload"]
            if schema is None:
                continue
            rules: dict[str, _Rule] = {}
            _strings(schema, "", rules)
            if rules:
                out[f"{method.upper()} {path}"] = rules
    return out


def _table(name: str, kind: str, doc: str, rows: dict[str, dict[str, Any]]) -> list[str]:
    lines = [f"#: {doc}", f"{name}: {kind} = {{"]
    for route in sorted(rows):
        if not rows[route]:
            continue
        lines.append(f"    {json.dumps(route)}: {{")
        lines.extend(f"        {json.dumps(p)}: {v!r}," for p, v in sorted(rows[route].items()))
        lines.append("    },")
    lines.append("}")
    return lines


def rules_module(document: dict[str, Any]) -> str:
    """The text of ``airflow_provider_docsign/service/_rules.py`` for an OpenAPI document or its extract."""
    rules = request_rules(document)
    lengths = {
        r: {p: x.max_length for p, x in f.items() if x.max_length and not x.unbounded}
        for r, f in rules.items()
    }
    emails = {r: {p: x.empty_email for p, x in f.items() if x.email} for r, f in rules.items()}
    urls = {r: {p: True for p, x in f.items() if x.url} for r, f in rules.items()}
    lines = [
        '"""The real service\'s rules for the strings of each request (generated: do not edit by hand).',
        "",
        "Made by ``scripts/extract_contract.py --rules`` from the facts-only extract of the service's",
        "OpenAPI document (``tests/contract/data/documenso-<version>/openapi-facts.json``);",
        "``tests/unit/test_service_rules.py`` checks that this file is what the script makes of it.",
        'Routes are ``"METHOD /path"`` as the OpenAPI document writes them; a field is named by its path',
        "in the JSON body (for a multipart route, in its ``payload`` part): ``.`` between keys, ``[]`` for",
        "the items of a list, ``*`` for any key of a map.",
        ":mod:`airflow_provider_docsign.service.outgoing` applies them.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"OPENAPI_VERSION = {json.dumps(str(document.get('info', {}).get('version')))}",
        "",
        *_table(
            "MAX_LENGTH",
            "dict[str, dict[str, int]]",
            "The ``maxLength`` of each string field that declares one (in JavaScript's UTF-16 units).",
            lengths,
        ),
        "",
        *_table(
            "EMAIL",
            "dict[str, dict[str, bool]]",
            "Fields that hold an e-mail address; the value says whether the empty string is allowed too.",
            emails,
        ),
        "",
        *_table("URL", "dict[str, dict[str, bool]]", "Fields that hold a URL (``format: uri``).", urls),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("openapi", type=Path, help="a saved copy of GET /api/v2/openapi.json")
    parser.add_argument("out_dir", type=Path, help=f"folder to write {OUTPUT_NAME} into")
    parser.add_argument("--rules", type=Path, help="also write the package's string rules module here")
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
    if args.rules is not None:
        module = rules_module(document)
        tmp = args.rules.with_suffix(".py.tmp")
        tmp.write_text(module, encoding="utf-8")
        tmp.replace(args.rules)
        print(f"wrote {args.rules} ({len(module)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
