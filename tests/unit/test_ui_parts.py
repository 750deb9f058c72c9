"""The Contracts pages' parts that need no server: the stalled rule, the cache, the rows, the plugin's
registration on each Airflow version."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign import get_provider_info
from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.service.models import EnvelopeSummary
from airflow_provider_docsign.service.stalled import earliest_expiry, stalled

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def envelope(status: str = "PENDING", age_days: float = 1, **recipient: Any) -> EnvelopeSummary:
    person = {
        "id": 1,
        "email": "jane.doe@acme.example",
        "role": "SIGNER",
        "signingStatus": "NOT_SIGNED",
        "token": "signing-token-secret",
        **recipient,
    }
    return EnvelopeSummary.from_json(
        {
            "id": "envelope_abc",
            "status": status,
            "title": "T",
            "createdAt": _iso(NOW - timedelta(days=age_days)),
            "recipients": [person],
            "team": {"url": "acme"},
        }
    )


def test_pending_longer_than_the_threshold_is_stalled() -> None:
    verdict = stalled(envelope(age_days=8), NOW, older_than_days=7)
    assert verdict is not None
    assert verdict.older
    assert verdict.expired == 0
    assert verdict.reason() == "pending 8 days"
    assert stalled(envelope(age_days=6.9), NOW, older_than_days=7) is None


def test_an_expired_link_is_stalled_however_young() -> None:
    verdict = stalled(envelope(age_days=1, expiresAt=_iso(NOW - timedelta(minutes=1))), NOW)
    assert verdict is not None
    assert verdict.expired == 1
    assert not verdict.older
    # A signed recipient's old expiry is not an expired link.
    assert (
        stalled(envelope(age_days=1, signingStatus="SIGNED", expiresAt=_iso(NOW - timedelta(days=1))), NOW)
        is None
    )


def test_the_services_verdict_wins_over_this_machines_clock() -> None:
    ahead = envelope(age_days=1, expiresAt=_iso(NOW + timedelta(minutes=5)))
    verdict = stalled(ahead, NOW, has_expired=True)
    assert verdict is not None
    assert verdict.expired == 1
    behind = envelope(age_days=1, expiresAt=_iso(NOW - timedelta(minutes=5)))
    assert stalled(behind, NOW, has_expired=False) is None


@pytest.mark.parametrize("status", ["DRAFT", "COMPLETED", "REJECTED", "CANCELLED"])
def test_what_is_not_pending_is_never_stalled(status: str) -> None:
    assert stalled(envelope(status, age_days=400, expiresAt=_iso(NOW - timedelta(days=300))), NOW) is None


@pytest.mark.parametrize("bad", [-1, float("nan"), "7"])
def test_a_threshold_that_is_not_a_number_of_days_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="older_than_days must be a number >= 0"):
        stalled(envelope(), NOW, older_than_days=bad)


def test_the_earliest_expiry_is_of_those_who_still_sign() -> None:
    data = envelope().raw
    data["recipients"] = [
        {"id": 1, "role": "SIGNER", "signingStatus": "SIGNED", "expiresAt": "2026-11-20T00:00:00.000Z"},
        {"id": 2, "role": "SIGNER", "signingStatus": "NOT_SIGNED", "expiresAt": "2026-12-20T00:00:00.000Z"},
        {"id": 3, "role": "CC", "signingStatus": "NOT_SIGNED", "expiresAt": "2026-11-21T00:00:00.000Z"},
        {"id": 4, "role": "SIGNER", "signingStatus": "NOT_SIGNED", "expiresAt": "2026-12-10T00:00:00.000Z"},
    ]
    assert earliest_expiry(EnvelopeSummary.from_json(data)) == "2026-12-10T00:00:00.000Z"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_cache_serves_one_load_to_every_viewer_for_its_time() -> None:
    from airflow_provider_docsign.ui.cache import TtlCache

    clock = FakeClock()
    cache: TtlCache[int] = TtlCache(30, clock=clock)
    loads: list[int] = []

    def load() -> int:
        loads.append(1)
        return len(loads)

    assert cache.get("k", load) == (1, 0.0)
    clock.now += 29
    assert cache.get("k", load) == (1, 29.0)
    clock.now += 1
    assert cache.get("k", load)[0] == 2
    assert len(loads) == 2


def test_concurrent_viewers_of_a_cold_cache_cost_one_load() -> None:
    from airflow_provider_docsign.ui.cache import TtlCache

    cache: TtlCache[str] = TtlCache(30)
    started, release = threading.Event(), threading.Event()
    loads: list[int] = []

    def slow() -> str:
        loads.append(1)
        started.set()
        assert release.wait(10)
        return "value"

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("k", slow)[0])) for _ in range(10)]
    for t in threads:
        t.start()
    assert started.wait(10)
    release.set()
    for t in threads:
        t.join(10)
    assert results == ["value"] * 10
    assert loads == [1]


def test_a_failed_load_is_remembered_briefly_then_tried_again() -> None:
    from airflow_provider_docsign.ui.cache import ERROR_SECONDS, TtlCache

    clock = FakeClock()
    cache: TtlCache[int] = TtlCache(60, clock=clock)
    calls: list[int] = []

    def failing() -> int:
        calls.append(1)
        raise RuntimeError("the service is down")

    for _ in range(3):
        with pytest.raises(RuntimeError, match="down"):
            cache.get("k", failing)
    assert len(calls) == 1
    clock.now += ERROR_SECONDS
    with pytest.raises(RuntimeError):
        cache.get("k", failing)
    assert len(calls) == 2


def test_a_zero_cache_time_never_keeps_a_value_and_a_negative_one_is_refused() -> None:
    from airflow_provider_docsign.ui.cache import TtlCache

    cache: TtlCache[int] = TtlCache(0)
    calls: list[int] = []
    for _ in range(3):
        cache.get("k", lambda: calls.append(1) or 1)
    assert len(calls) == 3
    with pytest.raises(ValueError, match="cache time must be >= 0"):
        TtlCache(-1)


def test_a_row_holds_no_token_no_raw_json_and_no_plain_email() -> None:
    from airflow_provider_docsign.service.turnaround import sent
    from airflow_provider_docsign.ui.reader import contract_row

    task = {"relation": "sent", "at": "2026-11-20T10:00:00+00:00", "dag_id": "d"}
    row = contract_row(
        envelope(age_days=9),
        folders={},
        web_url="https://sign.example",
        now=NOW,
        stalled_days=7,
        tasks=[task],
        sent=sent(task=task["at"]),
    )
    text = repr(row)
    assert "signing-token-secret" not in text
    assert "jane.doe@acme.example" not in text
    assert row["unsigned"] == [{"role": "SIGNER", "email": "j***@acme.example"}]
    assert row["stalled"] is True
    assert row["sent_at"] == "2026-11-20T10:00:00.000Z"
    assert row["sent"] == {"at": "2026-11-20T10:00:00.000Z", "source": "task"}
    assert row["url"] == "https://sign.example/t/acme/documents/envelope_abc"
    # A connection whose web URL is not http(s) gives no link at all.
    assert (
        contract_row(envelope(), folders={}, web_url="javascript:alert(1)", now=NOW, stalled_days=7)["url"]
        is None
    )


def test_emails_inside_row_keys_and_reasons_are_masked() -> None:
    from airflow_provider_docsign.service.expiry import mask_text

    assert (
        mask_text("invalid e-mail 'bob.smith@corp.example' in row 3")
        == "invalid e-mail 'b***@corp.example' in row 3"
    )
    assert mask_text("no address here") == "no address here"
    assert mask_text(7) == 7


@pytest.mark.parametrize(
    ("field", "value"),
    [("cache_seconds", -1), ("cache_seconds", 7200), ("stalled_days", -0.5), ("lookback_days", 0)],
)
def test_settings_out_of_range_are_refused_naming_the_option(field: str, value: float) -> None:
    from airflow_provider_docsign.ui.settings import UiSettings

    with pytest.raises(ValueError, match=r"\[docsign\] ui_"):
        UiSettings(**{field: value})


def test_the_plugin_is_offered_only_where_the_ui_can_load_it() -> None:
    from airflow_provider_docsign.ui.plugin import DocsignUiPlugin

    info = get_provider_info()
    if AIRFLOW_V_3_1_PLUS:
        assert info["plugins"] == [
            {"name": "docsign", "plugin-class": "airflow_provider_docsign.ui.plugin.DocsignUiPlugin"}
        ]
        assert [v["destination"] for v in DocsignUiPlugin.external_views] == ["nav", "task_instance"]
        assert DocsignUiPlugin.listeners == []  # Airflow 3 logs moved imports in the task log itself
    else:  # Airflow 2.11: not offered, and importing the module registers no view
        assert "plugins" not in info
        assert DocsignUiPlugin.fastapi_apps == []
        assert DocsignUiPlugin.external_views == []
        # only the listener that puts moved-import warnings in the task log (the live-stack test)
        assert [m.__name__ for m in DocsignUiPlugin.listeners] == [
            "airflow_provider_docsign.ui.moved_listener"
        ]


def test_a_campaign_file_is_opened_only_in_a_configured_place_with_its_connection(tmp_path: Path) -> None:
    from airflow_provider_docsign.ui.locations import Refused, allow, parse_places

    places = parse_places([str(tmp_path), "s3://results_s3@bucket/runs"])
    s3 = allow(places, "s3://bucket/runs/c/results.jsonl", "results_s3")
    assert s3.target == "s3://results_s3@bucket/runs/c/results.jsonl"
    assert not s3.local
    assert allow(places, f"file://{tmp_path}/r.jsonl").target == str(tmp_path.resolve() / "r.jsonl")
    for value, conn in [
        ("s3://bucket/runs/r.jsonl", "someone_elses"),
        ("s3://other/runs/r.jsonl", None),
        ("s3://bucket/runs/../r.jsonl", None),
        ("s3://bucket/elsewhere/r.jsonl", None),
        ("http://127.0.0.1:1/r.jsonl", None),
        ("/proc/self/environ", None),
        (f"{tmp_path}/../r.jsonl", None),
        ("relative.jsonl", None),
        (None, None),
    ]:
        with pytest.raises(Refused):
            allow(places, value, conn)
    with pytest.raises(Refused, match="none is configured"):
        allow((), str(tmp_path / "r.jsonl"))
    with pytest.raises(ValueError, match="names no connection"):
        parse_places(["s3://bucket/runs"])


@pytest.mark.parametrize("status", ["DRAFT", "CANCELLED"])
def test_only_a_sent_envelope_has_unsigned_recipients(status: str) -> None:
    from airflow_provider_docsign.ui.reader import contract_row

    row = contract_row(envelope(status), folders={}, web_url="", now=NOW, stalled_days=7)
    assert row["unsigned"] == []


@pytest.mark.parametrize(
    ("status", "completed", "ended"),
    [
        ("COMPLETED", True, False),
        ("REJECTED", False, True),
        ("CANCELLED", False, True),
        ("PENDING", False, False),
    ],
)
def test_only_a_completed_row_says_completed_the_others_say_when_they_ended(
    status: str, completed: bool, ended: bool
) -> None:
    from airflow_provider_docsign.ui.reader import contract_row

    data = envelope(status).raw
    data["completedAt"] = "2026-11-09T12:00:00.000Z"  # the service sets it on a rejection too
    row = contract_row(EnvelopeSummary.from_json(data), folders={}, web_url="", now=NOW, stalled_days=7)
    assert (row["completed_at"] is not None, row["ended_at"] is not None) == (completed, ended)


class _ReadOnly:
    """A stream with ``read(n)`` only, as an object store's file (fsspec's ``readline`` takes no size)."""

    def __init__(self, data: bytes) -> None:
        import io

        self._data = io.BytesIO(data)
        self.asked = 0

    def read(self, size: int = -1) -> bytes:
        self.asked += 1
        return self._data.read(size)


def test_a_tables_lines_are_read_with_read_only_and_a_long_line_is_cut() -> None:
    from airflow_provider_docsign.ui.locations import CHUNK_BYTES, lines

    rows = [b'{"n": %d}\n' % n for n in range(20_000)] + [b"last, no newline"]
    assert list(lines(_ReadOnly(b"".join(rows)), 100)) == rows  # type: ignore[arg-type]
    huge = _ReadOnly(b"x" * (10 * CHUNK_BYTES) + b"\nnever read\n")
    (cut,) = lines(huge, CHUNK_BYTES + 10)  # type: ignore[arg-type]
    assert len(cut) == CHUNK_BYTES + 11
    assert huge.asked == 2  # nothing after the line that is too long


def test_a_result_tables_place_is_one_with_or_without_its_connection() -> None:
    from airflow_provider_docsign.ui.batches import place_key

    assert place_key("s3://docsign_s3@work/runs/a/../b/results.jsonl") == "s3://work/runs/b/results.jsonl"
    assert place_key("s3://work/runs/b/results.jsonl") == "s3://work/runs/b/results.jsonl"
    assert place_key("file:///srv/c/./results.jsonl") == place_key("/srv/c/results.jsonl")
    assert place_key("gs://work/runs/b/results.jsonl") != place_key("s3://work/runs/b/results.jsonl")
    assert [place_key(v) for v in (None, "", "  ", 3)] == [None] * 4
