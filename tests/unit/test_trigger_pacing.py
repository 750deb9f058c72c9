"""The shared poller's pacing: it slows down before the rate-limit window runs dry, and after a 429."""

from __future__ import annotations

import pytest

from airflow_provider_docsign.hooks._http import RateLimit, parse_rate_limit
from airflow_provider_docsign.hooks._pacing import MAX_BACKOFF, MAX_PAUSE, Pacer

NOW = 1_800_000_000.0


def test_rate_limit_headers_are_parsed_and_garbage_ignored() -> None:
    headers = {"x-ratelimit-limit": "1000", "x-ratelimit-remaining": "12", "x-ratelimit-reset": str(NOW + 30)}
    assert parse_rate_limit(headers) == RateLimit(limit=1000, remaining=12, reset=NOW + 30)
    assert parse_rate_limit({}) is None
    assert parse_rate_limit({"x-ratelimit-remaining": "x", "x-ratelimit-reset": "1"}) is None
    # A small reset is a delta from now, not an epoch.
    delta = parse_rate_limit({"x-ratelimit-remaining": "5", "x-ratelimit-reset": "30"})
    assert delta is not None
    assert delta.reset > NOW - 10**8
    assert delta.limit is None


def test_no_pause_while_the_budget_is_comfortable() -> None:
    pacer = Pacer()
    assert pacer.delay(NOW) == 0
    pacer.observe(RateLimit(limit=1000, remaining=900, reset=NOW + 60))
    assert pacer.delay(NOW) == 0


def test_low_budget_spreads_the_rest_over_the_window() -> None:
    pacer = Pacer()
    pacer.observe(RateLimit(limit=1000, remaining=200, reset=NOW + 60))
    # 200 left, 100 kept in reserve: the other 100 spread over the 60 s left.
    assert pacer.delay(NOW) == pytest.approx(60 / 100)


def test_reserve_reached_waits_for_the_reset_before_any_429() -> None:
    pacer = Pacer()
    pacer.observe(RateLimit(limit=1000, remaining=100, reset=NOW + 42))
    assert pacer.delay(NOW) == pytest.approx(42)
    # Each request sent is counted against the remembered window until the next answer corrects it.
    pacer.observe(RateLimit(limit=1000, remaining=102, reset=NOW + 42))
    assert pacer.delay(NOW) == pytest.approx(21)
    pacer.spend()
    assert pacer.delay(NOW) == pytest.approx(42)
    pacer.spend()
    assert pacer.delay(NOW) == pytest.approx(42)
    # A window that is over no longer slows anything.
    assert pacer.delay(NOW + 43) == 0


def test_429_honours_retry_after_and_otherwise_backs_off() -> None:
    pacer = Pacer()
    assert pacer.on_throttled(NOW, 7.0) == 7.0
    assert pacer.delay(NOW) == pytest.approx(7.0)
    assert pacer.delay(NOW + 7) == 0
    pauses = [pacer.on_throttled(NOW, None) for _ in range(12)]
    assert pauses[:3] == [2.0, 4.0, 8.0]
    assert max(pauses) == MAX_BACKOFF
    pacer.on_success()
    assert pacer.on_throttled(NOW, None) == 1.0
    # A huge Retry-After is capped: a wait must always end.
    assert Pacer().on_throttled(NOW, 10**9) == MAX_PAUSE
