"""The sandbox's rate limiter is the real service's fixed window, per client address (pure bookkeeping)."""

from __future__ import annotations

from airflow_provider_docsign.sandbox.faults import RateWindow

T0 = 1_800_000_000.0  # a multiple of 60 and of 3600


def test_the_request_reaching_the_limit_is_refused_and_remaining_counts_down() -> None:
    window = RateWindow(limit=1000)
    answers = [window.count("10.0.0.1", T0 + 1) for _ in range(1001)]
    assert answers[0] == (999, int(T0) + 60, False)
    assert answers[998] == (1, int(T0) + 60, False)  # the 999th request is the last one let through
    assert answers[999] == (0, int(T0) + 60, True)
    assert answers[1000] == (0, int(T0) + 60, True)


def test_windows_are_fixed_buckets_aligned_to_the_clock() -> None:
    window = RateWindow(limit=2, window=60)
    assert window.count("a", T0 + 59.9)[2] is False
    assert window.count("a", T0 + 59.95)[2] is True
    # A new bucket starts at the boundary, whatever happened just before it.
    assert window.count("a", T0 + 60.0) == (1, int(T0) + 120, False)


def test_each_client_address_has_its_own_window() -> None:
    window = RateWindow(limit=2)
    assert window.count("a", T0)[2] is False
    assert window.count("a", T0)[2] is True
    assert window.count("b", T0) == (1, int(T0) + 60, False)


def test_not_enforced_reports_but_never_refuses() -> None:
    window = RateWindow(limit=2, enforce=False)
    answers = [window.count("a", T0) for _ in range(4)]
    assert [a[2] for a in answers] == [False] * 4
    assert [a[0] for a in answers] == [1, 0, 0, 0]


def test_a_fractional_window_resets_at_a_whole_second() -> None:
    window = RateWindow(limit=5, window=2.5)
    remaining, reset, refused = window.count("a", T0 + 0.1)
    assert (remaining, refused) == (4, False)
    assert reset == int(T0) + 3  # ceil(T0 + 2.5)
