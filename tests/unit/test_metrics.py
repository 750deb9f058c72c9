"""The metrics' names and tags follow Airflow's rules, and the wrappers never raise into a task."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_docsign import metrics
from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS, ready_stats
from airflow_provider_docsign.hooks import _endpoints as ep

if AIRFLOW_V_3_0_PLUS:
    from airflow.sdk._shared.observability.metrics.validators import stat_name_default_handler
else:  # Airflow 2.11
    from airflow.metrics.validators import stat_name_default_handler  # type: ignore[no-redef]

DOCS = Path(metrics.__file__).resolve().parents[1] / "docs" / "metrics.md"


@pytest.fixture
def metrics_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(metrics, "_state", {"on": True, "tagged": False, "warned": False})
    yield
    metrics.reset()


def _operations() -> set[str]:
    """Every endpoint's ``what`` in ``hooks/_endpoints.py``, as a metric word."""
    source = Path(ep.__file__).read_text(encoding="utf-8")
    found = {metrics.word(w) for w in re.findall(r'what="([^"{]+)"', source)}
    found |= {metrics.word(f"download envelope item ({v})") for v in ep.DOWNLOAD_VERSIONS}
    return found


def test_every_name_passes_airflows_own_check_with_its_default_prefix() -> None:
    names = [n for n in metrics.NAMES if "<" not in n]
    for operation in _operations():
        for klass in metrics.STATUS_CLASSES:
            full = metrics.name("requests", operation, klass)
            assert full is not None
            names.append(full)
        names += [metrics.name("rate_limited", operation) or "", metrics.name("retries", operation) or ""]
    for full in names:
        assert full == full.lower()
        assert full.startswith("docsign.")
        assert stat_name_default_handler(f"airflow.{full}") == f"airflow.{full}"


def test_operations_are_the_endpoints_fixed_vocabulary() -> None:
    operations = _operations()
    assert {"create_envelope", "get_envelopes", "get_audit_log", "download_envelope_item_signed"} <= (
        operations
    )
    assert "other" not in operations
    assert metrics.word("get envelope") == "get_envelope"
    assert metrics.word("{{ ds }}") == "ds"  # never braces; still only a word
    assert metrics.word("ümlaut@x") == "mlaut_x"
    assert metrics.word("x" * 65) == "other"
    assert metrics.word("") == "other"


@pytest.mark.parametrize(
    ("status", "klass"),
    [(200, "2xx"), (204, "2xx"), (302, "3xx"), (404, "4xx"), (429, "4xx"), (503, "5xx"), (None, "error")],
)
def test_status_classes(status: int | None, klass: str) -> None:
    assert metrics.status_class(status) == klass
    assert klass in metrics.STATUS_CLASSES


def test_a_name_with_a_part_that_is_not_a_word_is_never_sent() -> None:
    assert metrics.name("campaign", "rows", "sent") == "docsign.campaign.rows.sent"
    assert metrics.name("envelopes", "a@b.c") is None
    assert metrics.name("envelopes", "x" * 300) is None
    assert metrics.name("envelopes", "") is None


def test_plain_tags_pass_and_others_become_a_stable_digest() -> None:
    assert metrics.safe_tag("docsign_default") == "docsign_default"
    assert metrics.safe_tag("spring-2026.batch_1") == "spring-2026.batch_1"
    digest = metrics.safe_tag("jane@example.com")
    assert re.fullmatch(r"c-[0-9a-f]{12}", digest)
    assert metrics.safe_tag("jane@example.com") == digest
    assert metrics.safe_tag("jane@example.org") != digest
    assert metrics.tags("c", "x y", operation="get_envelope") == {
        "conn_id": "c",
        "campaign": metrics.safe_tag("x y"),
        "operation": "get_envelope",
    }
    assert metrics.tags(operation="not a word") == {"operation": "other"}


def test_every_catalogued_name_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for full in metrics.NAMES:
        assert f"`{full}`" in text, full


def test_off_returns_at_once_without_touching_airflow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_state", {"on": False, "tagged": False, "warned": False})
    stats = ready_stats()

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("Airflow's Stats was called with metrics off")

    for method in ("incr", "timing", "gauge"):
        monkeypatch.setattr(stats, method, boom, raising=False)
    metrics.request("c", "get envelope", 429)
    metrics.retry("c", "get envelope", 1.0)
    metrics.campaign_totals("c", "x", {"sent": 1})
    metrics.timing("docsign.retry_wait", 1.0)
    assert not metrics.enabled()


def test_a_failing_backend_never_raises_into_the_task(
    metrics_on: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    stats = ready_stats()

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("no route to StatsD")

    for method in ("incr", "timing", "gauge"):
        monkeypatch.setattr(stats, method, broken, raising=False)
    with caplog.at_level("DEBUG", logger="airflow_provider_docsign.metrics"):
        metrics.request("c", "get envelope", 200)
        metrics.timing("docsign.retry_wait", 2.0)
        metrics.gauge("docsign.campaign.sent", 3)
    assert [r.levelname for r in caplog.records] == ["DEBUG"]  # logged once, then quiet
