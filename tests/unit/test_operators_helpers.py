"""Pure helpers of the operators: JSON-safe XCom values, file arguments, local checks (no network)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign._compat import AirflowFailException, ObjectStoragePath
from airflow_provider_docsign.operators._base import field_problems, json_safe, resolve_files
from airflow_provider_docsign.operators.items import DocsignUpdateEnvelopeItemsOperator
from airflow_provider_docsign.operators.recipients import field_shape_problems, recipient_problems
from airflow_provider_docsign.service.models import Envelope, EnvelopeStatus


def test_json_safe_converts_records_enums_dates_and_paths(spec_dir: Path) -> None:
    envelope = Envelope.from_json(json.loads((spec_dir / "recorded" / "02_get_envelope.json").read_text()))
    value = {
        "status": EnvelopeStatus.PENDING,
        "when": datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.timezone.utc),
        "path": Path("/tmp/x.pdf"),
        "items": (envelope.items[0],),
        "ids": {3},
    }
    safe = json_safe(value)
    assert json.loads(json.dumps(safe)) == safe
    assert safe["status"] == "PENDING"
    assert safe["when"] == "2024-05-01T12:00:00+00:00"
    assert safe["path"] == "/tmp/x.pdf"
    assert safe["items"][0]["id"] == envelope.items[0].id
    assert "token" not in json.dumps(json_safe(envelope))  # records leave the signing token out
    assert safe["ids"] == [3]


def test_json_safe_refuses_arbitrary_objects() -> None:
    with pytest.raises(TypeError, match="object"):
        json_safe({"x": object()})


def test_resolve_files_accepts_paths_uris_and_single_values(tmp_path: Path) -> None:
    local = tmp_path / "a b.pdf"
    files = resolve_files([str(local), f"file://{tmp_path}/a%20b.pdf", "memory://bucket/c.pdf", local])
    assert files[0] == local
    assert files[1] == local  # file:// URIs become plain local paths
    assert isinstance(files[2], ObjectStoragePath)
    assert str(files[2]).endswith("bucket/c.pdf")
    assert files[3] is local
    assert resolve_files(str(local)) == [local]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "empty"),
        ([""], r"files\[0\] is an empty string"),
        ([3], r"files\[0\] must be"),
        (5, "files must"),
    ],
)
def test_resolve_files_rejects_bad_values(value: Any, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        resolve_files(value)


def test_recipient_problems_name_the_recipient_and_key() -> None:
    problems = recipient_problems(
        [
            {"email": "ok@example.test", "name": "Ok", "role": "SIGNER"},
            {"email": "not-an-email", "name": "Bad", "role": "BOSS", "fields": [{}]},
            "nope",
        ]
    )
    text = "\n".join(problems)
    assert "recipients[1] (not-an-email): email" in text
    assert "recipients[1] (not-an-email): role 'BOSS'" in text
    assert "DocsignAddFieldsOperator" in text
    assert "recipients[2]: must be an object" in text
    assert not any(p.startswith("recipients[0]") for p in problems)
    assert recipient_problems([]) == ["recipients: must be a non-empty list"]


def test_field_shape_problems_cover_every_rule() -> None:
    good = {"recipientId": 1, "type": "SIGNATURE", "page": 1, "positionX": 10, "positionY": 10,
            "width": 10, "height": 10}  # fmt: skip
    problems = field_shape_problems(
        [
            good,
            {**good, "recipientId": " 1"},  # "1" is recipient 1; " 1" is not an id
            {**good, "type": "SCRIBBLE"},
            {**good, "page": 0},
            {**good, "positionX": 101},
            {**good, "positionX": 95},
            {**good, "positionY": 96, "height": 5},
            {**good, "width": "wide"},
            {"recipientId": 1, "type": "TEXT", "placeholder": "{{sign}}"},
        ]
    )
    text = "\n".join(problems)
    assert "fields[1]: recipientId must be a recipient id (an integer, or its digits" in text
    assert "fields[2]: type 'SCRIBBLE'" in text
    assert "fields[3]: page must be an integer >= 1" in text
    assert "fields[4]: positionX=101 is outside 0-100" in text
    assert "fields[5]: positionX + width = 105 exceeds 100" in text
    assert "fields[6]: positionY + height = 101 exceeds 100" in text
    assert "fields[7]: width must be a number" in text
    assert not any(p.startswith(("fields[0]", "fields[8]")) for p in problems)


def test_field_problems_against_envelope(spec_dir: Path) -> None:
    envelope = Envelope.from_json(json.loads((spec_dir / "recorded" / "02_get_envelope.json").read_text()))
    item = envelope.items[0].id
    rid = envelope.recipients[0].id
    problems = field_problems(
        [
            {"recipientId": rid, "envelopeItemId": item, "page": 2},
            {"recipientId": rid, "page": 3},  # defaults to the first item
            {"recipientId": 42, "envelopeItemId": item, "page": 1},
            {"recipientId": rid, "envelopeItemId": "envelope_item_other", "page": 1},
        ],
        envelope=envelope,
        page_counts={item: 2},
    )
    assert len(problems) == 3
    assert problems[0].startswith("fields[1]: page 3 is outside item")
    assert "which has 2 pages" in problems[0]
    assert problems[1].startswith("fields[2]: recipientId 42")
    assert problems[2].startswith("fields[3]: envelopeItemId 'envelope_item_other'")


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([], "non-empty list"),
        ([{"envelopeItemId": "a"}], r"items\[0\]: give a title, an order, or both"),
        ([{"envelopeItemId": "a", "order": 0}], r"items\[0\]: order must be an integer >= 1"),
        ([{"envelopeItemId": "a", "order": True}], "order must be an integer"),
        ([{"envelopeItemId": "a", "title": ""}], "title must be a string of 1-255"),
        ([{"envelopeItemId": "a", "order": 1}, {"envelopeItemId": "a", "order": 2}], "listed twice"),
        ([{"envelopeItemId": "a", "order": 1}, {"envelopeItemId": "b", "order": 1}], "same order"),
        ([{"envelopeItemId": "a", "order": 1, "colour": "red"}], "unknown key"),
        ([{"title": "x"}], "envelopeItemId must be"),
    ],
)
def test_update_items_are_checked_before_any_request(items: list[Any], message: str) -> None:
    op = DocsignUpdateEnvelopeItemsOperator(task_id="u", envelope_id="envelope_x", items=items)
    with pytest.raises(AirflowFailException, match=message):
        op.execute({})  # type: ignore[arg-type]
    assert "hook" not in vars(op)  # failed before the hook (and any request) was created
