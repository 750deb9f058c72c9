"""Unit tests of DocsignEnvelopeSensor's construction, its event checks and the trigger's serialization.

Nothing here talks to a service: these are the parts decided before the first request, and the
checks execute_complete applies to whatever event comes back from the triggerer.
"""

from __future__ import annotations

import importlib
import json
from datetime import timedelta
from typing import Any

import pendulum
import pytest

from airflow_provider_docsign._compat import AirflowFailException, AirflowSensorTimeout
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor
from airflow_provider_docsign.triggers import DocsignEnvelopeTrigger


def _sensor(**kwargs: Any) -> DocsignEnvelopeSensor:
    kwargs.setdefault("task_id", "wait")
    return DocsignEnvelopeSensor(**kwargs)


def _state(envelope_id: str, status: str, **extra: Any) -> dict[str, Any]:
    state = {
        "envelope_id": envelope_id,
        "status": status,
        "completed_at": "2026-11-21T06:00:00Z" if status != "PENDING" else None,
        "item_ids": [f"{envelope_id}_item_1", f"{envelope_id}_item_2"],
        "deleted": False,
        "rejections": [],
    }
    state.update(extra)
    return state


# ---------------------------------------------------------------------------------- construction
def test_constructor_needs_exactly_one_id_argument() -> None:
    with pytest.raises(ValueError, match="pass envelope_id, envelope_ids or result_table"):
        _sensor()
    with pytest.raises(ValueError, match=r"not \['envelope_id', 'envelope_ids'\]"):
        _sensor(envelope_id="envelope_a", envelope_ids=["envelope_b"])
    with pytest.raises(ValueError, match=r"not \['envelope_ids', 'result_table'\]"):
        _sensor(envelope_ids=["envelope_b"], result_table="s3://bucket/results.jsonl")


def test_constructor_checks_statuses_at_parse_time() -> None:
    with pytest.raises(ValueError, match="not an envelope status"):
        _sensor(envelope_id="envelope_a", target_status="DONE")
    with pytest.raises(ValueError, match="also listed"):
        _sensor(envelope_id="envelope_a", target_status="CANCELLED")


@pytest.mark.parametrize(
    "timeout",
    [90, 90.0, timedelta(seconds=90), pendulum.duration(minutes=1, seconds=30)],
)
def test_timeout_accepts_seconds_timedelta_and_duration(timeout: Any) -> None:
    assert _sensor(envelope_id="envelope_a", timeout=timeout).timeout == 90


def test_construction_makes_no_hook_and_keeps_defaults() -> None:
    sensor = _sensor(envelope_id="envelope_a")
    assert "hook" not in sensor.__dict__  # created lazily, never while parsing
    assert sensor.target_status == "COMPLETED"
    assert sensor.failure_statuses == ["REJECTED", "CANCELLED"]
    assert sensor.poke_interval == 60
    assert sensor.deferrable is False  # [operators] default_deferrable is not set in tests
    assert set(sensor.template_fields) == {"envelope_id", "envelope_ids", "result_table"}


def test_default_deferrable_follows_airflow_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "True")
    import airflow_provider_docsign.sensors.envelope as module

    reloaded = importlib.reload(module)
    try:
        assert reloaded.DocsignEnvelopeSensor(task_id="w", envelope_id="envelope_a").deferrable is True
    finally:
        monkeypatch.delenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE")
        importlib.reload(module)


# ------------------------------------------------------------------------------ execute_complete
def test_success_event_returns_the_xcom_in_order() -> None:
    sensor = _sensor(envelope_ids=["envelope_b", {"envelope_id": "envelope_a"}])
    event = {
        "status": "success",
        "envelope_ids": ["envelope_b", "envelope_a"],
        "envelopes": [_state("envelope_b", "COMPLETED"), _state("envelope_a", "COMPLETED")],
        "message": "all 2 envelope(s) reached COMPLETED",
    }
    result = sensor.execute_complete({}, json.loads(json.dumps(event)))
    assert [r["envelope_id"] for r in result] == ["envelope_b", "envelope_a"]
    assert result[0] == {
        "envelope_id": "envelope_b",
        "status": "COMPLETED",
        "completed_at": "2026-11-21T06:00:00Z",
        "item_ids": ["envelope_b_item_1", "envelope_b_item_2"],
    }


def test_failure_event_raises_fail_with_the_reason() -> None:
    sensor = _sensor(envelope_id="envelope_a")
    rejection = {"recipient_id": 4, "name": "Ria", "email": "ria@example.com", "reason": "Not my contract"}
    event = {
        "status": "failure",
        "envelope_ids": ["envelope_a"],
        "envelopes": [_state("envelope_a", "REJECTED", rejections=[rejection])],
        "message": "whatever the trigger said",
    }
    with pytest.raises(AirflowFailException, match="Not my contract") as info:
        sensor.execute_complete({}, event)
    # The message is rebuilt from the states by the same rules as poke mode.
    assert "envelope envelope_a is REJECTED: rejected by recipient 4 'Ria' (r***@example.com)" in str(
        info.value
    )


def test_timeout_and_error_events() -> None:
    sensor = _sensor(envelope_id="envelope_a")
    with pytest.raises(AirflowSensorTimeout, match="deadline"):
        sensor.execute_complete(
            {}, {"status": "timeout", "envelope_ids": ["envelope_a"], "message": "past the deadline"}
        )
    with pytest.raises(AirflowFailException, match="refused the API key"):
        sensor.execute_complete(
            {},
            {"status": "error", "envelope_ids": ["envelope_a"], "message": "refused the API key"},
        )


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (None, "does not understand"),
        ({"status": "maybe", "envelope_ids": ["envelope_a"]}, "does not understand"),
        ({"status": "success", "envelope_ids": ["envelope_z"], "envelopes": []}, "other envelopes"),
        ({"status": "success", "envelope_ids": ["envelope_a"], "envelopes": [{"status": 1}]}, "malformed"),
        ({"status": "success", "envelope_ids": ["envelope_a"], "envelopes": []}, "does not cover"),
        (
            {
                "status": "success",
                "envelope_ids": ["envelope_a"],
                "envelopes": [_state("envelope_a", "PENDING")],
            },
            "reported 'success' but its envelope states say 'waiting'",
        ),
    ],
)
def test_bad_events_fail_clearly(event: Any, expected: str) -> None:
    with pytest.raises(AirflowFailException, match=expected):
        _sensor(envelope_id="envelope_a").execute_complete({}, event)


# ------------------------------------------------------------------------------------- serialize
def test_trigger_serialize_round_trips_through_json() -> None:
    trigger = DocsignEnvelopeTrigger(
        ["envelope_a", "envelope_b"],
        docsign_conn_id="docsign_other",
        target_status="COMPLETED",
        failure_statuses=("REJECTED",),
        on_expired="wait",
        poll_interval=5,
        deadline=1_900_000_000.5,
    )
    classpath, kwargs = trigger.serialize()
    text = json.dumps(kwargs)  # JSON-safe: no tuples, enums, datetimes or objects
    module_name, _, class_name = classpath.rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    assert cls is DocsignEnvelopeTrigger
    rebuilt = cls(**json.loads(text))
    assert rebuilt.serialize() == (classpath, kwargs)
    assert kwargs == {
        "envelope_ids": ["envelope_a", "envelope_b"],
        "docsign_conn_id": "docsign_other",
        "target_status": "COMPLETED",
        "failure_statuses": ["REJECTED"],
        "on_expired": "wait",
        "poll_interval": 5.0,
        "deadline": 1_900_000_000.5,
    }


def test_trigger_takes_a_single_id_string_as_one_envelope() -> None:
    assert DocsignEnvelopeTrigger("envelope_a").envelope_ids == ["envelope_a"]
    with pytest.raises(ValueError, match="empty"):
        DocsignEnvelopeTrigger([])
