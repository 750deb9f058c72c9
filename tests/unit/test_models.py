from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from airflow_provider_docsign.exceptions import (
    DocsignAPIError,
    DocsignNotFoundError,
    DocsignRateLimitError,
    DocsignValidationError,
)
from airflow_provider_docsign.service.models import (
    FAILURE_STATUSES,
    TERMINAL_STATUSES,
    DownloadResult,
    Envelope,
    EnvelopeItem,
    EnvelopeStatus,
    EnvelopeSummary,
    Field,
    Folder,
    Recipient,
)


def _recorded(spec_dir: Path, name: str) -> dict:
    return json.loads((spec_dir / "recorded" / name).read_text())


def test_envelope_parses_recorded_get(spec_dir: Path) -> None:
    raw = _recorded(spec_dir, "02_get_envelope.json")
    env = Envelope.from_json(raw)
    assert env.id == raw["id"]
    assert env.status is EnvelopeStatus.DRAFT
    assert env.external_id == raw["externalId"]
    assert env.folder_id is None
    assert env.items[0].id == raw["envelopeItems"][0]["id"]
    assert env.recipients[0].email == raw["recipients"][0]["email"]
    assert env.recipients[0].signing_status == "NOT_SIGNED"
    assert env.raw == raw


def test_field_coordinates_from_strings_are_floats(spec_dir: Path) -> None:
    raw = _recorded(spec_dir, "02_get_envelope.json")["fields"][0]
    assert isinstance(raw["positionX"], str)  # the real service sends Decimal strings
    field = Field.from_json(raw)
    assert field.position_x == float(raw["positionX"])
    assert isinstance(field.position_y, float)
    assert isinstance(field.width, float)
    assert isinstance(field.height, float)
    assert field.recipient_id == raw["recipientId"]
    assert field.envelope_item_id == raw["envelopeItemId"]


def test_field_fractional_string_coordinates() -> None:
    field = Field.from_json(
        {"id": 7, "positionX": "12.5", "positionY": "0.25", "width": "20", "height": "5.75"}
    )
    assert (field.position_x, field.position_y, field.width, field.height) == (12.5, 0.25, 20.0, 5.75)


def test_items_sorted_by_order() -> None:
    raw = {
        "id": "envelope_x",
        "status": "DRAFT",
        "envelopeItems": [
            {"id": "envelope_item_c", "order": 3, "title": "c.pdf"},
            {"id": "envelope_item_a", "order": 1, "title": "a.pdf"},
            {"id": "envelope_item_b", "order": 2, "title": "b.pdf"},
        ],
    }
    env = Envelope.from_json(raw)
    assert [i.id for i in env.items] == ["envelope_item_a", "envelope_item_b", "envelope_item_c"]
    assert env.item_ids == ["envelope_item_a", "envelope_item_b", "envelope_item_c"]


def test_summary_parses_recorded_find(spec_dir: Path) -> None:
    raw = _recorded(spec_dir, "05_find.json")["data"][0]
    summary = EnvelopeSummary.from_json(raw)
    assert summary.id == raw["id"]
    assert summary.status == EnvelopeStatus.DRAFT
    assert summary.external_id == raw["externalId"]


def test_status_enum_and_sets() -> None:
    assert {s.value for s in EnvelopeStatus} == {"DRAFT", "PENDING", "COMPLETED", "REJECTED", "CANCELLED"}
    assert EnvelopeStatus.TERMINAL_STATUSES == TERMINAL_STATUSES
    assert EnvelopeStatus.FAILURE_STATUSES == FAILURE_STATUSES
    assert EnvelopeStatus.COMPLETED in TERMINAL_STATUSES
    assert EnvelopeStatus.PENDING not in TERMINAL_STATUSES
    assert {EnvelopeStatus.REJECTED, EnvelopeStatus.CANCELLED} == FAILURE_STATUSES
    assert EnvelopeStatus("COMPLETED") == "COMPLETED"
    assert str(EnvelopeStatus.PENDING) == "PENDING"
    assert EnvelopeStatus.REJECTED.is_failure
    assert not EnvelopeStatus.DRAFT.is_terminal


def test_unknown_status_kept_as_string() -> None:
    env = Envelope.from_json({"id": "envelope_x", "status": "ARCHIVED"})
    assert env.status == "ARCHIVED"
    assert not isinstance(env.status, EnvelopeStatus)


def test_to_dict_is_json_safe_and_has_no_token(spec_dir: Path) -> None:
    env = Envelope.from_json(_recorded(spec_dir, "07_get_after_distribute.json"))
    data = env.to_dict()
    text = json.dumps(data)
    assert data["status"] == env.status.value if isinstance(env.status, EnvelopeStatus) else env.status
    token = env.recipients[0].raw.get("token")
    assert token
    assert token not in text


def test_recipient_folder_item_download_result() -> None:
    rec = Recipient.from_json(
        {
            "id": 3,
            "email": "x@y.z",
            "name": "X",
            "role": "SIGNER",
            "signingStatus": "REJECTED",
            "rejectionReason": "no",
        }
    )
    assert (rec.id, rec.role, rec.signing_status, rec.rejection_reason) == (3, "SIGNER", "REJECTED", "no")
    folder = Folder.from_json({"id": "cf1", "name": "Contracts", "parentId": None, "type": "DOCUMENT"})
    assert (folder.id, folder.name, folder.parent_id, folder.type) == ("cf1", "Contracts", None, "DOCUMENT")
    item = EnvelopeItem.from_json({"id": "envelope_item_1", "title": "a.pdf", "order": "2"})
    assert item.order == 2
    result = DownloadResult(uri="/tmp/a.pdf", sha256="ab", size=3, content_type="application/pdf")
    assert json.loads(json.dumps(result.to_dict()))["size"] == 3


def test_models_are_frozen() -> None:
    item = EnvelopeItem(id="envelope_item_1")
    with pytest.raises(AttributeError):
        item.title = "x"  # type: ignore[misc]


def test_exceptions_pickle_and_str() -> None:
    err = DocsignNotFoundError(
        "Envelope could not be found",
        status_code=404,
        error_code="NOT_FOUND",
        method="GET",
        path="/envelope/envelope_x",
        request_id="req-1",
    )
    copy = pickle.loads(pickle.dumps(err))  # noqa: S301 - our own bytes
    assert isinstance(copy, DocsignNotFoundError)
    assert (copy.status_code, copy.error_code, copy.path, copy.request_id) == (
        404,
        "NOT_FOUND",
        "/envelope/envelope_x",
        "req-1",
    )
    assert "404" in str(copy)
    assert "NOT_FOUND" in str(copy)
    assert "req-1" in str(copy)
    rate = pickle.loads(pickle.dumps(DocsignRateLimitError("slow down", retry_after=7.0, status_code=429)))  # noqa: S301 - our own bytes
    assert rate.retry_after == 7.0
    assert isinstance(rate, DocsignAPIError)
    val = pickle.loads(pickle.dumps(DocsignValidationError(["a", "b"], "ctx")))  # noqa: S301 - our own bytes
    assert val.problems == ["a", "b"]
    assert "ctx" in str(val)
    assert "2 problems" in str(val)
