"""The package's table of the service's string rules is what the script makes of the committed extract."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import SPEC_DIR, load_script

from airflow_provider_docsign.service import _rules as _service_rules

MODULE = Path(_service_rules.__file__)


def test_the_table_is_generated_from_the_openapi_extract() -> None:
    script = load_script("extract_contract")
    facts = json.loads((SPEC_DIR / "openapi-facts.json").read_text(encoding="utf-8"))
    assert MODULE.read_text(encoding="utf-8") == script.rules_module(facts), (
        "airflow_provider_docsign/service/_rules.py is stale: regenerate it with "
        "python scripts/extract_contract.py tests/contract/data/documenso-2.17/openapi-facts.json /tmp/x "
        "--rules airflow_provider_docsign/service/_rules.py"
    )


def test_the_table_holds_the_limits_the_issues_name() -> None:
    # The facts the outgoing check relies on, read from the real service's schema (v2.17).
    assert _service_rules.MAX_LENGTH["POST /envelope/create"]["meta.subject"] == 254
    assert _service_rules.MAX_LENGTH["POST /envelope/update"]["meta.message"] == 5000
    assert _service_rules.MAX_LENGTH["POST /envelope/use"]["override.title"] == 255
    assert _service_rules.MAX_LENGTH["POST /folder/create"]["name"] == 100
    assert _service_rules.EMAIL["POST /envelope/recipient/update-many"] == {"data[].email": True}
    assert _service_rules.EMAIL["POST /envelope/update"] == {"meta.emailReplyTo": False}
    assert _service_rules.URL["POST /envelope/create"] == {"attachments[].data": True}
    # A label has no bound in the schema, so it is held to the outgoing check's default instead.
    assert "data[].fieldMeta.label" not in _service_rules.MAX_LENGTH.get(
        "POST /envelope/field/create-many", {}
    )


def test_the_script_collapses_unions_and_keeps_the_payload_part(tmp_path: Path) -> None:
    script = load_script("extract_contract")
    document = {
        "openapi": "3.0.3",
        "info": {"version": "9"},
        "paths": {
            "/x/{id}/create": {
                "post": {
                    "requestBody": {
                        "content": {
                            "multipart/form-data": {
                                "schema": {
                                    "properties": {
                                        "payload": {
                                            "properties": {
                                                "email": {
                                                    "anyOf": [
                                                        {"enum": [""], "type": "string"},
                                                        {
                                                            "type": "string",
                                                            "maxLength": 9,
                                                            "pattern": "^a+@[b]$",
                                                        },
                                                    ]
                                                },
                                                "note": {"type": "string"},
                                                "tags": {"items": {"type": "string", "maxLength": 3}},
                                                "map": {
                                                    "additionalProperties": {
                                                        "format": "uri",
                                                        "type": "string",
                                                    }
                                                },
                                            }
                                        },
                                        "files": {"type": "array"},
                                    }
                                }
                            }
                        }
                    },
                    "responses": {},
                }
            }
        },
    }
    namespace: dict[str, object] = {}
    exec(compile(script.rules_module(document), "rules", "exec"), namespace)  # noqa: S102 - our own output
    assert namespace["MAX_LENGTH"] == {"POST /x/{id}/create": {"email": 9, "tags[]": 3}}
    assert namespace["EMAIL"] == {"POST /x/{id}/create": {"email": True}}
    assert namespace["URL"] == {"POST /x/{id}/create": {"map.*": True}}
