"""Unit tests of the waiting rules shared by the sensor's poke, the trigger and execute_complete."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign.exceptions import (
    DocsignAPIError,
    DocsignAuthError,
    DocsignError,
    DocsignInvalidRequestError,
    DocsignNotFoundError,
    DocsignRateLimitError,
    DocsignServerError,
)
from airflow_provider_docsign.sensors._evaluate import (
    EnvelopeState,
    classify_error,
    evaluate,
    normalize_envelope_ids,
    normalize_statuses,
    snapshot,
)
from airflow_provider_docsign.service.models import Envelope

FAILS = ["REJECTED", "CANCELLED"]


@pytest.fixture
def completed_json(spec_dir: Path) -> dict[str, Any]:
    """The real service's answer for a COMPLETED envelope with two items."""
    return json.loads((spec_dir / "recorded" / "10_get_completed.json").read_text())


def _variant(base: dict[str, Any], envelope_id: str, status: str, **changes: Any) -> Envelope:
    data = copy.deepcopy(base)
    data["id"] = envelope_id
    data["status"] = status
    data.update(changes)
    return Envelope.from_json(data)


# ------------------------------------------------------------------------------------------- ids
def test_ids_from_single_id_and_dict() -> None:
    assert normalize_envelope_ids("envelope_a") == ["envelope_a"]
    assert normalize_envelope_ids({"envelope_id": "envelope_b", "item_ids": []}) == ["envelope_b"]


def test_ids_from_list_of_mixed_entries_deduplicated_in_order() -> None:
    ids = normalize_envelope_ids(
        envelope_ids=["envelope_b", {"envelope_id": "envelope_a"}, "envelope_b", " envelope_c "]
    )
    assert ids == ["envelope_b", "envelope_a", "envelope_c"]


def test_ids_from_any_iterable_and_rendered_text() -> None:
    assert normalize_envelope_ids(envelope_ids=(f"envelope_{i}" for i in range(3))) == [
        "envelope_0",
        "envelope_1",
        "envelope_2",
    ]
    # Jinja without native rendering turns a list into its repr; JSON text works too.
    assert normalize_envelope_ids(envelope_ids="['envelope_x', 'envelope_y']") == ["envelope_x", "envelope_y"]
    assert normalize_envelope_ids(envelope_ids='[{"envelope_id": "envelope_z"}]') == ["envelope_z"]
    assert normalize_envelope_ids(envelope_ids="envelope_only") == ["envelope_only"]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "no envelope"),
        ({"envelope_id": "envelope_a", "envelope_ids": ["envelope_b"]}, "not both"),
        ({"envelope_ids": []}, "empty"),
        ({"envelope_ids": ["envelope_a", ""]}, r"envelope_ids\[1\] is an empty"),
        ({"envelope_ids": ["envelope_a", 7]}, r"envelope_ids\[1\] must be an envelope id string"),
        ({"envelope_ids": [{"title": "x"}]}, r"envelope_ids\[0\] is a mapping without an 'envelope_id'"),
        ({"envelope_id": "envelope a"}, "not a valid envelope id"),
        ({"envelope_id": "../envelope"}, "not a valid envelope id"),
        ({"envelope_ids": "[not a list"}, "not a list of envelope ids"),
    ],
)
def test_bad_ids_are_refused_with_their_position(kwargs: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        normalize_envelope_ids(**kwargs)


def test_statuses_are_validated() -> None:
    assert normalize_statuses("completed", ("REJECTED", "rejected", "CANCELLED")) == ("COMPLETED", FAILS)
    assert normalize_statuses("PENDING", "CANCELLED") == ("PENDING", ["CANCELLED"])
    with pytest.raises(ValueError, match="not an envelope status"):
        normalize_statuses("SIGNED", FAILS)
    with pytest.raises(ValueError, match="also listed in failure_statuses"):
        normalize_statuses("REJECTED", FAILS)


# -------------------------------------------------------------------------------------- verdicts
def test_all_completed_is_success_with_items_in_order(completed_json: dict[str, Any]) -> None:
    # Items deliberately listed out of order: the XCom must follow ``order``.
    completed_json["envelopeItems"].reverse()
    envelope = Envelope.from_json(completed_json)
    verdict = evaluate(snapshot([envelope], [envelope.id]), "COMPLETED", FAILS)
    assert verdict.outcome == "success"
    assert verdict.xcom_value() == [
        {
            "envelope_id": "envelope_nlzzzvvhtcxfucxw",
            "status": "COMPLETED",
            "completed_at": "2026-11-21T05:35:54.841Z",
            "item_ids": ["envelope_item_xfhuofdoonvhxhyx", "envelope_item_yeedibufkteseftz"],
        }
    ]
    # The success event is JSON-safe and round-trips to the same decision.
    event = json.loads(json.dumps(verdict.to_event()))
    again = evaluate([EnvelopeState.from_dict(e) for e in event["envelopes"]], "COMPLETED", FAILS)
    assert again == verdict


def test_one_pending_means_waiting(completed_json: dict[str, Any]) -> None:
    envelopes = [
        _variant(completed_json, "envelope_1", "COMPLETED"),
        _variant(completed_json, "envelope_2", "PENDING", completedAt=None),
    ]
    verdict = evaluate(snapshot(envelopes, ["envelope_1", "envelope_2"]), "COMPLETED", FAILS)
    assert verdict.outcome == "waiting"
    assert not verdict.done
    assert "1 of 2" in verdict.message


def test_rejection_names_envelope_recipient_and_reason(completed_json: dict[str, Any]) -> None:
    rejected = copy.deepcopy(completed_json)
    rejected["recipients"][0].update(signingStatus="REJECTED", rejectionReason="Wrong salary figure")
    envelopes = [
        _variant(completed_json, "envelope_ok", "PENDING"),
        _variant(rejected, "envelope_bad", "REJECTED"),
    ]
    verdict = evaluate(snapshot(envelopes, ["envelope_ok", "envelope_bad"]), "COMPLETED", FAILS)
    assert verdict.outcome == "failure"
    assert "envelope envelope_bad is REJECTED" in verdict.message
    assert "recipient 1 'Sam Signer' (SIGNER, s***@peer.test)" in verdict.message
    assert "signer@peer.test" not in verdict.message
    assert "'Wrong salary figure'" in verdict.message
    assert "envelope_ok" not in verdict.message


def test_missing_and_soft_deleted_envelopes_fail(completed_json: dict[str, Any]) -> None:
    soft_deleted = _variant(completed_json, "envelope_soft", "COMPLETED", deletedAt="2026-11-21T06:00:00Z")
    verdict = evaluate(snapshot([soft_deleted], ["envelope_gone", "envelope_soft"]), "COMPLETED", FAILS)
    assert verdict.outcome == "failure"
    assert "envelope envelope_gone was not found" in verdict.message
    assert "envelope envelope_soft (COMPLETED) was deleted" in verdict.message
    assert len(verdict.problems) == 2


def test_cancelled_fails_and_terminal_non_target_fails_even_when_not_listed(
    completed_json: dict[str, Any],
) -> None:
    cancelled = [_variant(completed_json, "envelope_c", "CANCELLED")]
    verdict = evaluate(snapshot(cancelled, ["envelope_c"]), "COMPLETED", FAILS)
    assert verdict.outcome == "failure"
    assert "envelope envelope_c is CANCELLED" in verdict.message
    # CANCELLED is not a failure status here, but it can never become COMPLETED.
    verdict = evaluate(snapshot(cancelled, ["envelope_c"]), "COMPLETED", ["REJECTED"])
    assert verdict.outcome == "failure"
    assert "can never become COMPLETED" in verdict.message


def test_other_target_status(completed_json: dict[str, Any]) -> None:
    pending = [_variant(completed_json, "envelope_p", "PENDING")]
    assert evaluate(snapshot(pending, ["envelope_p"]), "PENDING", FAILS).outcome == "success"
    draft = [_variant(completed_json, "envelope_d", "DRAFT")]
    assert evaluate(snapshot(draft, ["envelope_d"]), "PENDING", FAILS).outcome == "waiting"


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"status": "COMPLETED"},
        {"envelope_id": "envelope_a", "status": 3},
        {"envelope_id": "envelope_a", "status": "COMPLETED", "item_ids": "envelope_item_1"},
        {"envelope_id": "envelope_a", "status": "COMPLETED", "rejections": ["x"]},
    ],
)
def test_malformed_states_are_refused(data: Any) -> None:
    with pytest.raises(ValueError, match="envelope"):
        EnvelopeState.from_dict(data)


# ---------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (DocsignAuthError("bad key", status_code=401), "auth"),
        (DocsignNotFoundError("no route", status_code=404), "not_found"),
        (DocsignRateLimitError("slow down", status_code=429, retry_after=3), "transient"),
        (DocsignServerError("down", status_code=503), "transient"),
        (DocsignInvalidRequestError("bad", status_code=400), "permanent"),
        (DocsignAPIError("no response", status_code=None), "transient"),
        (DocsignError("connection dropped"), "transient"),
        (ConnectionResetError("reset"), "transient"),
        (TimeoutError(), "transient"),
        (KeyError("bug"), "permanent"),
    ],
)
def test_error_classification(error: BaseException, kind: str) -> None:
    assert classify_error(error) == kind
