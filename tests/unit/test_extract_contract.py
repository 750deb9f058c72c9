"""scripts/extract_contract.py keeps the interface facts of an OpenAPI document and drops its prose."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from helpers import SPEC_DIR, load_script


@pytest.fixture(scope="module")
def extract_contract() -> ModuleType:
    return load_script("extract_contract")


DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "Some API", "description": "Long prose.", "version": "1.0.0"},
    "servers": [{"url": "https://example.test"}],
    "paths": {
        "/thing/{id}": {
            "summary": "path prose",
            "get": {
                "operationId": "thing-get",
                "summary": "Get a thing",
                "description": "More prose.",
                "tags": ["Things"],
                "parameters": [
                    {
                        "name": "id",
                        "in": "path",
                        "required": True,
                        "description": "prose",
                        "schema": {"type": "string", "example": "t_1"},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "OK",
                        "content": {
                            "application/json": {
                                "example": {"id": "t_1"},
                                "schema": {
                                    "type": "object",
                                    "title": "Thing",
                                    "properties": {
                                        "id": {"type": "string", "description": "The id"},
                                        "description": {"type": "string", "nullable": True},
                                        "status": {"type": "string", "enum": ["A", "B"]},
                                    },
                                    "required": ["id", "status"],
                                    "additionalProperties": False,
                                },
                            }
                        },
                    },
                    "404": {"description": "Not found"},
                },
            },
        }
    },
}


def test_keeps_facts_and_drops_prose(extract_contract: ModuleType) -> None:
    out = extract_contract.extract(DOCUMENT)
    operation = out["paths"]["/thing/{id}"]["get"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "description": {"type": "string", "nullable": True},  # a field *named* description stays
            "status": {"type": "string", "enum": ["A", "B"]},
        },
        "required": ["id", "status"],
        "additionalProperties": False,
    }
    assert operation["parameters"] == [
        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    ]
    assert operation["responses"]["404"] == {}
    text = extract_contract.render(DOCUMENT)
    for prose in (
        "Long prose",
        "More prose",
        "Get a thing",
        "path prose",
        "The id",
        "t_1",
        "Things",
        'Thing"',
    ):
        assert prose not in text
    assert out["info"] == {"version": "1.0.0"}


def test_the_committed_extract_is_a_fixed_point(extract_contract: ModuleType) -> None:
    """Extracting the committed extract again gives the same bytes: nothing in it is prose to drop."""
    committed = (SPEC_DIR / "openapi-facts.json").read_text(encoding="utf-8")
    assert extract_contract.render(json.loads(committed)) == committed


def test_committed_extract_has_no_prose_keys() -> None:
    seen: set[str] = set()

    def walk(node: object, parent: str = "") -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if parent != "properties":
                    seen.add(key)
                walk(value, key)
        elif isinstance(node, list):
            for value in node:
                walk(value, parent)

    walk(json.loads((SPEC_DIR / "openapi-facts.json").read_text(encoding="utf-8")))
    assert not seen & {"description", "summary", "example", "examples", "title", "tags"}


def test_cli_writes_the_extract_and_refuses_a_non_openapi_file(
    extract_contract: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "openapi.json"
    source.write_text(json.dumps(DOCUMENT))
    assert extract_contract.main([str(source), str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "openapi-facts.json").read_text() == extract_contract.render(DOCUMENT)
    source.write_text(json.dumps({"hello": "world"}))
    assert extract_contract.main([str(source), str(tmp_path / "bad")]) == 2
    assert "not an OpenAPI document" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
