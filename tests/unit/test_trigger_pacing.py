"""The shared poller's pacing: it slows down before the rate-limit window runs dry, and after a 429."""

from __future__ import annotations

import itertools

import pytest

from airflow_provider_docsign.hooks._http import RateLimit, parse_rate_limit
from airflow_provider_docsign.hooks._pacing import MAX_BACKOFF, MAX_PAUSE, Pacer, SharedPacer

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


def test_the_real_services_doubled_headers_give_the_tightest_window() -> None:
    """Refused by the organisation's window, v2.17 sends each header twice (recorded in ops/*.429)."""
    headers = {
        "x-ratelimit-limit": "1000, 5",
        "x-ratelimit-remaining": "836, 0",
        "x-ratelimit-reset": f"{NOW + 40:.0f}, {NOW + 7:.0f}",
    }
    assert parse_rate_limit(headers) == RateLimit(limit=5, remaining=0, reset=NOW + 7)
    # Lists of different lengths are garbled: no window at all rather than a wrong one.
    assert parse_rate_limit({"x-ratelimit-remaining": "1, 2", "x-ratelimit-reset": str(NOW)}) is None


def test_a_500_too_many_requests_is_a_rate_limit_error() -> None:
    from airflow_provider_docsign.exceptions import DocsignRateLimitError, DocsignServerError
    from airflow_provider_docsign.hooks._http import Redactor, api_error

    body = b'{"error":"Something went wrong","code":"TOO_MANY_REQUESTS"}'
    common = {
        "headers": {"content-type": "application/json"},
        "method": "GET",
        "path": "/x",
        "redact": Redactor(None),
    }
    limited = api_error(status=500, body=body, **common)  # type: ignore[arg-type]
    assert isinstance(limited, DocsignRateLimitError)
    assert limited.status_code == 500
    other = api_error(status=500, body=b'{"error":"Something went wrong"}', **common)  # type: ignore[arg-type]
    assert isinstance(other, DocsignServerError)


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


# -- SharedPacer: many threads, one window ---------------------------------------------------------


class FakeClock:
    """A clock that moves only when someone sleeps (so the test measures waits, not wall time)."""

    def __init__(self, start: float = NOW) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_shared_pacer_lets_requests_out_at_full_speed_while_the_window_is_comfortable() -> None:
    clock = FakeClock()
    pacer = SharedPacer(clock=clock, sleep=clock.sleep)
    pacer.observe(RateLimit(limit=1000, remaining=900, reset=NOW + 60))
    assert [pacer.acquire() for _ in range(100)] == [0.0] * 100
    assert pacer.requests == 100
    # Each request was counted against the window before any answer came back.
    assert pacer.rate_limit == RateLimit(limit=1000, remaining=800, reset=NOW + 60)


def test_shared_pacer_spreads_the_low_part_of_the_window_and_stops_at_the_reserve() -> None:
    clock = FakeClock()
    pacer = SharedPacer(clock=clock, sleep=clock.sleep)
    pacer.observe(RateLimit(limit=1000, remaining=200, reset=NOW + 60))
    sent_at = []
    for _ in range(100):
        pacer.acquire()
        sent_at.append(clock.now)
    # 200 left, 100 in reserve: the 100 spread evenly over the minute, the last one at the reset.
    assert sent_at[-1] == pytest.approx(NOW + 60)
    gaps = [b - a for a, b in itertools.pairwise(sent_at)]
    assert min(gaps) == pytest.approx(0.6)
    assert max(gaps) == pytest.approx(0.6)
    # One more with the reserve reached and the window not yet over: it waits for the reset.
    pacer.observe(RateLimit(limit=1000, remaining=100, reset=NOW + 120))
    assert pacer.acquire() == pytest.approx(60)


def test_shared_pacer_keeps_the_smallest_remaining_of_one_window_and_ignores_old_windows() -> None:
    pacer = SharedPacer()
    pacer.observe(RateLimit(limit=1000, remaining=500, reset=NOW + 60))
    pacer.observe(RateLimit(limit=1000, remaining=507, reset=NOW + 60))  # an earlier request answered late
    assert pacer.rate_limit == RateLimit(limit=1000, remaining=500, reset=NOW + 60)
    pacer.observe(RateLimit(limit=1000, remaining=499, reset=NOW))  # from the window before: ignored
    assert pacer.rate_limit == RateLimit(limit=1000, remaining=500, reset=NOW + 60)
    pacer.observe(RateLimit(limit=1000, remaining=999, reset=NOW + 120))  # the next window
    assert pacer.rate_limit == RateLimit(limit=1000, remaining=999, reset=NOW + 120)


def test_a_429_seen_by_one_thread_pauses_every_thread() -> None:
    clock = FakeClock()
    pacer = SharedPacer(clock=clock, sleep=clock.sleep)
    assert pacer.on_throttled(7.0) == 7.0
    # Any thread's next request waits for the pause; the requests after it do not wait again.
    assert pacer.acquire() == pytest.approx(7.0)
    assert pacer.acquire() == 0.0
    assert pacer.throttled == 1


def test_shared_pacer_serialises_real_threads_through_one_window() -> None:
    import threading

    clock = FakeClock()
    lock = threading.Lock()

    def sleep(seconds: float) -> None:
        with lock:
            clock.sleep(seconds)

    pacer = SharedPacer(clock=clock, sleep=sleep)
    pacer.observe(RateLimit(limit=100, remaining=99, reset=NOW + 60))
    got: list[float] = []

    def worker() -> None:
        for _ in range(25):
            pacer.acquire()
            with lock:
                got.append(clock.now)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(got) == 200
    # 99 left, 10 in reserve: at most 89 before the reset, in total across the 8 threads (a thread may
    # note its time a little after its request was let out, so fewer may be counted).
    assert 80 <= sum(1 for t in got if t < NOW + 60) <= 89
    assert pacer.requests == 200
