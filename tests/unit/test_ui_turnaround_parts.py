"""The Contracts page's numbers without a server: each row's send time and time to sign, the summary over
the rows shown, the template id, and the campaign send times a result table gives (issue 48)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.service.models import EnvelopeSummary
from airflow_provider_docsign.ui.cache import TtlCache
from airflow_provider_docsign.ui.locations import Allowed, read_table
from airflow_provider_docsign.ui.lookup import CampaignRun, TaskRef
from airflow_provider_docsign.ui.reader import contract_row, contracts_summary, template_id
from airflow_provider_docsign.ui.sent import SendTimes
from airflow_provider_docsign.ui.settings import UiSettings

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def envelope(
    status: str = "COMPLETED",
    *,
    signed_hours_ago: list[float] | None = None,
    created_days_ago: float = 3,
    template: Any = None,
    roles: list[str] | None = None,
) -> EnvelopeSummary:
    signed = signed_hours_ago or []
    roles = roles or ["SIGNER"] * max(1, len(signed))
    recipients = []
    for n, role in enumerate(roles):
        person: dict[str, Any] = {"id": n + 1, "email": f"p{n}@x.example", "role": role}
        if n < len(signed):
            person.update(signingStatus="SIGNED", signedAt=_iso(NOW - timedelta(hours=signed[n])))
        else:
            person.update(signingStatus="NOT_SIGNED")
        recipients.append(person)
    data: dict[str, Any] = {
        "id": f"envelope_{id(recipients)}",
        "status": status,
        "title": "T",
        "createdAt": _iso(NOW - timedelta(days=created_days_ago)),
        "recipients": recipients,
    }
    if status == "COMPLETED":
        data["completedAt"] = _iso(NOW - timedelta(hours=min(signed or [0])))
    if template is not None:
        data["templateId"] = template
    return EnvelopeSummary.from_json(data)


def row_of(env: EnvelopeSummary, sent: turnaround.Sent | None) -> dict[str, Any]:
    return contract_row(env, folders={}, web_url="", now=NOW, stalled_days=7, sent=sent)


def test_a_row_times_the_signing_from_its_send_time_to_the_last_signature() -> None:
    env = envelope(signed_hours_ago=[30, 10], template=12)  # two signers: the later one counts
    sent = turnaround.sent(campaign=_iso(NOW - timedelta(hours=50)))
    row = row_of(env, sent)
    assert row["sent"] == {"at": turnaround.iso(NOW - timedelta(hours=50)), "source": "campaign"}
    assert row["sent_at"] == row["sent"]["at"]
    assert row["seconds_to_sign"] == 40 * 3600
    assert row["template_id"] == 12
    unknown = row_of(env, None)
    assert (unknown["sent"], unknown["sent_at"], unknown["seconds_to_sign"]) == (None, None, None)
    # A pending envelope has no time to sign, whatever its send time.
    assert row_of(envelope("PENDING"), sent)["seconds_to_sign"] is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (7, 7),
        ("42", 42),
        (None, None),
        (True, None),
        (-1, None),
        (2**60, None),
        ("12abc", None),
        ("٣", None),  # a digit, but not an ASCII one
        ("9" * 40, None),
        ({"id": 1}, None),
        (1.5, None),
    ],
)
def test_only_a_plain_template_id_is_kept(raw: Any, expected: int | None) -> None:
    env = envelope(template=raw) if raw is not None else envelope()
    assert template_id(env) == expected


def test_the_summary_counts_and_times_what_is_shown_with_turnaround_definitions() -> None:
    hours = [0.5, 2, 5, 20, 30, 80, 200, 400, 3, 1]
    shown = []
    for h in hours:  # each signed h hours after sending, sent 500 hours ago
        env = envelope(signed_hours_ago=[500 - h])
        sent = turnaround.sent(task=NOW - timedelta(hours=500))
        shown.append((row_of(env, sent), env, sent))
    unsent = envelope(signed_hours_ago=[1])  # completed, sent by a person: no send time
    shown.append((row_of(unsent, None), unsent, None))
    for status, days in (("PENDING", 10), ("PENDING", 1), ("DRAFT", 30), ("REJECTED", 2)):
        env = envelope(status, created_days_ago=days)
        shown.append((row_of(env, None), env, None))
    summary = contracts_summary(shown)
    assert summary["shown"] == 15
    assert summary["counts"] == {"COMPLETED": 11, "DRAFT": 1, "PENDING": 2, "REJECTED": 1}
    assert summary["stalled"] == 1  # pending 10 days
    assert summary["without_sent"] == 4  # the person's, two pending, the rejected (never the draft)
    ordered = sorted(h * 3600 for h in hours)
    assert summary["time_to_sign"] == {
        "count": 10,
        "median_seconds": ordered[4],  # nearest rank: the lower middle of ten
        "p90_seconds": ordered[8],
        "completed_without_sent": 1,
    }
    assert summary["histogram"] == turnaround.histogram(ordered)
    assert [b["count"] for b in summary["histogram"]] == [2, 3, 1, 1, 1, 1, 1]
    assert contracts_summary([])["time_to_sign"]["median_seconds"] is None
    json.dumps(summary)  # JSON-safe


def test_a_signature_before_the_send_time_is_zero_never_negative() -> None:
    env = envelope(signed_hours_ago=[10])
    sent = turnaround.sent(task=NOW)  # a task's clock after the service's signature
    assert row_of(env, sent)["seconds_to_sign"] == 0


def _table_file(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_result_table_keeps_each_sent_rows_time_and_drops_what_is_no_time(tmp_path: Path) -> None:
    rows = [
        {"status": "sent", "envelope_id": "envelope_a", "sent_at": "2026-11-20T10:00:00.250Z"},
        {"status": "sent", "envelope_id": "envelope_b", "sent_at": "2026-11-20T12:00:00+02:00"},
        {"status": "sent", "envelope_id": "envelope_c", "sent_at": "yesterday"},
        {"status": "sent", "envelope_id": "envelope_d", "sent_at": 1764000000},
        {"status": "sent", "envelope_id": "envelope_e", "sent_at": "2026-11-20T10:00:00Z" + " " * 100},
        {"status": "sent", "envelope_id": "envelope_f", "sent_at": "0001-01-01T00:00:00+05:00"},
        {"status": "sent", "envelope_id": "envelope_g"},
        {"status": "failed", "envelope_id": None, "sent_at": "2026-11-20T10:00:00Z", "row_key": "k"},
        {"status": "sent", "envelope_id": "envelope_a", "sent_at": "2026-11-21T10:00:00Z"},  # repeated
    ]
    table = read_table(Allowed(str(_table_file(tmp_path, rows)), True), "jsonl")
    assert table.envelope_ids == [f"envelope_{c}" for c in "abcdefg"]
    assert table.sent_at == {
        "envelope_a": "2026-11-20T10:00:00.250Z",  # the first row of an id wins
        "envelope_b": "2026-11-20T10:00:00.000Z",
    }


def _campaign(result_table: str, stopped: bool = False) -> CampaignRun:
    result = {"campaign_id": "camp", "docsign_conn_id": "docsign_ui", "result_table": result_table}
    if stopped:
        result["stopped"] = "x"
    return CampaignRun("d", "r", "send", -1, "2026-11-25T08:00:00+00:00", result)


def test_a_campaigns_row_is_sent_at_its_own_time_never_at_the_bulk_tasks_end(tmp_path: Path) -> None:
    table = _table_file(
        tmp_path, [{"status": "sent", "envelope_id": "envelope_a", "sent_at": "2026-11-20T10:00:00Z"}]
    )
    state = SimpleNamespace(settings=UiSettings(result_locations=(str(tmp_path),)), tables=TtlCache(60))
    run = _campaign(str(table))
    times = SendTimes(state, [run], "docsign_ui")
    bulk = TaskRef("d", "r", "send", -1, "sent", run.finished)
    distribute = TaskRef("d2", "r2", "distribute", -1, "sent", "2026-11-19T09:00:00+00:00")
    created = TaskRef("d2", "r2", "create", -1, "created", "2026-11-18T09:00:00+00:00")
    # The campaign's own time is trusted before a task's.
    got = times("envelope_a", [created, distribute], [bulk])
    assert got == turnaround.Sent(datetime(2026, 11, 20, 10, tzinfo=timezone.utc), "campaign")
    # Not in the table (or the table says no time): no send time, never the bulk task's end.
    assert times("envelope_z", [], [bulk]) is None
    # A distribute task's time, when no campaign sent it: the earliest of them.
    later = TaskRef("d3", "r3", "distribute", -1, "sent", "2026-11-19T11:00:00+00:00")
    got = times("envelope_q", [later, distribute, created], [])
    assert got == turnaround.Sent(datetime(2026, 11, 19, 9, tzinfo=timezone.utc), "task")
    assert times.unread == set()


def test_a_campaign_whose_table_cannot_be_read_gives_no_send_time_and_is_named(tmp_path: Path) -> None:
    state = SimpleNamespace(
        settings=UiSettings(result_locations=(str(tmp_path / "allowed"),)), tables=TtlCache(60)
    )
    run = _campaign("/etc/passwd")  # outside the configured places: refused, nothing opened
    times = SendTimes(state, [run], "docsign_ui")
    bulk = TaskRef("d", "r", "send", -1, "sent", run.finished)
    assert times("envelope_a", [], [bulk]) is None
    assert times.unread == {"camp"}
    # Another connection's campaign is not this page's: its table is not even looked at.
    other = SendTimes(state, [run], "docsign_other")
    assert other("envelope_a", [], [bulk]) is None
    assert other.unread == set()
