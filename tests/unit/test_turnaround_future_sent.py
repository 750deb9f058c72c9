"""A send time later than the time it is judged at is not believed (``turnaround.sent(now=...)``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from airflow_provider_docsign.service import turnaround

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)


def test_a_future_campaign_time_falls_through_to_the_next_source() -> None:
    tomorrow = NOW + timedelta(days=1)
    found = turnaround.sent(campaign=tomorrow, task="2026-11-23T10:00:00.000Z", now=NOW)
    assert found == turnaround.Sent(datetime(2026, 11, 23, 10, 0, tzinfo=timezone.utc), "task")
    assert turnaround.sent(campaign=tomorrow, now=NOW) is None


def test_clocks_a_little_apart_are_believed_and_without_now_nothing_is_judged() -> None:
    skewed = NOW + timedelta(seconds=turnaround.CLOCK_SKEW_SECONDS - 1)
    assert turnaround.sent(campaign=skewed, now=NOW) == turnaround.Sent(skewed, "campaign")
    later = NOW + timedelta(days=3)
    assert turnaround.sent(campaign=later) == turnaround.Sent(later, "campaign")


def test_text_that_is_not_a_time_is_not_a_send_time() -> None:
    for garbage in ("yesterday", "", "2026-13-45T00:00:00Z", 12, None, ["2026-11-23"]):
        assert turnaround.sent(campaign=garbage, now=NOW) is None, garbage
