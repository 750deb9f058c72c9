"""Hostile tests of a campaign's wait (issue 37): a campaign outlives its rejections.

``DocsignEnvelopeSensor(result_table=...)`` waits until every envelope is settled, reading only the
ones still open, then passes unless more than ``max_unsigned`` did not complete; the report beside the
table lists every envelope. Requests are counted at the sandbox (and, under the trigger, by the shared
poller's own record of what each cycle read); no test waits on a timer: every step happens after the
wait was seen reading.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx

from airflow_provider_docsign._compat import (
    AirflowFailException,
    AirflowSkipException,
    PokeReturnValue,
    TaskDeferred,
)
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor
from airflow_provider_docsign.triggers import DocsignEnvelopeTrigger
from airflow_provider_docsign.triggers._poller import EnvelopePoller, active_pollers

GET_MANY = "/envelope/get-many"
DONE_AT = "2026-11-20T10:00:00.000Z"


# -------------------------------------------------------------------------------------------- helpers
def seed(sandbox: SandboxServer, statuses: list[str], *, first: int = 0) -> list[str]:
    """One envelope per status, each with one signer ``signer<i>@example.test`` (COMPLETED ones signed)."""
    specs = []
    for i, status in enumerate(statuses, start=first):
        signed = status == "COMPLETED"
        recipient = {
            "email": f"signer{i}@example.test",
            "name": f"Signer {i}",
            "role": "SIGNER",
            "sendStatus": "SENT",
            "signingStatus": "SIGNED" if signed else "NOT_SIGNED",
            "signedAt": DONE_AT if signed else None,
        }
        spec = {
            "title": f"Renewal {i}",
            "status": status,
            "externalId": f"camp(r{i:03d})",
            "recipients": [recipient],
        }
        if signed:
            spec["completedAt"] = DONE_AT
        specs.append(spec)
    return sandbox.seed(specs)


def write_table(path: Path, rows: list[dict[str, Any]]) -> Path:
    """A result table as the bulk operator writes it (JSON Lines, every column)."""
    columns = ("row_key", "external_id", "envelope_id", "status", "error", "attempts", "sent_at")
    path.write_text("".join(json.dumps({c: row.get(c) for c in columns}) + "\n" for row in rows))
    return path


def sent_rows(ids: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "row_key": f"r{i:03d}",
            "external_id": f"camp(r{i:03d})",
            "envelope_id": e,
            "status": "sent",
            "attempts": 1,
        }
        for i, e in enumerate(ids)
    ]


def get_many(sandbox: SandboxServer) -> int:
    return sum(1 for r in sandbox.requests() if r["path"] == GET_MANY)


def recipient_of(sandbox: SandboxServer, envelope_id: str) -> int:
    return int(sandbox.get_envelope(envelope_id)["recipients"][0]["id"])


def sensor(table: Path | str, **kwargs: Any) -> DocsignEnvelopeSensor:
    kwargs.setdefault("poke_interval", 0.2)
    kwargs.setdefault("timeout", 600)
    return DocsignEnvelopeSensor(task_id="wait", result_table=str(table), **kwargs)


class Campaign:
    """100 sent envelopes: 72 already COMPLETED, 28 PENDING (rows r000-r027) that end, in three steps,
    as 5 REJECTED (r000-r004), 3 EXPIRED (r005-r007) and 20 more COMPLETED: 92 completed in all.

    Open after each step: 28, then 16 (A), 6 (B), 0 (C): a wait that reads only the open envelopes
    sends 5, 2, 1 and 1 get-many requests at its four polls.
    """

    def __init__(self, sandbox: SandboxServer, tmp_path: Path) -> None:
        self.sandbox = sandbox
        self.ids = seed(sandbox, ["PENDING"] * 28) + seed(sandbox, ["COMPLETED"] * 72, first=28)
        self.table = write_table(tmp_path / "results.jsonl", sent_rows(self.ids))
        self.report = tmp_path / "results.jsonl.outcome.jsonl"

    def _complete(self, ids: list[str]) -> None:
        for envelope_id in ids:
            self.sandbox.complete(envelope_id)
        for envelope_id in ids:
            self.sandbox.wait_status(envelope_id, "COMPLETED", timeout=60)

    def step_a(self) -> None:
        """Five rejections, three expired links, four signatures: 16 open."""
        for i, envelope_id in enumerate(self.ids[:5]):
            self.sandbox.reject(envelope_id, recipient_of(self.sandbox, envelope_id), f"Reason {i}")
        for envelope_id in self.ids[5:8]:
            self.sandbox.expire(envelope_id)
        self._complete(self.ids[8:12])
        for envelope_id in self.ids[:5]:
            self.sandbox.wait_status(envelope_id, "REJECTED", timeout=30)

    def step_b(self) -> None:
        """Ten signatures: 6 open."""
        self._complete(self.ids[12:22])

    def step_c(self) -> None:
        """The last six sign: none open."""
        self._complete(self.ids[22:28])

    def check_report(self) -> None:
        """The report lists all 100, in table order, each with its final status."""
        lines = [json.loads(x) for x in self.report.read_text().splitlines()]
        assert [x["envelope_id"] for x in lines] == self.ids
        assert [x["row_key"] for x in lines] == [f"r{i:03d}" for i in range(100)]
        assert [x["external_id"] for x in lines] == [f"camp(r{i:03d})" for i in range(100)]
        assert [x["status"] for x in lines] == ["REJECTED"] * 5 + ["EXPIRED"] * 3 + ["COMPLETED"] * 92
        for i, line in enumerate(lines[:5]):
            who = recipient_of(self.sandbox, self.ids[i])
            assert line["reason"] == f"rejected by recipient {who} (SIGNER, s***@example.test): 'Reason {i}'"
        assert all("signing link of recipient" in x["reason"] for x in lines[5:8])
        assert all(x["reason"] is None and x["completed_at"] for x in lines[8:])
        assert "signer0@example.test" not in self.report.read_text()  # masked


# --------------------------------------------------------------------------------- the 100 envelopes
def test_a_hundred_envelope_campaign_is_waited_for_to_the_last_then_counted(
    sandbox: SandboxServer, docsign_conn: str, tmp_path: Path
) -> None:
    campaign = Campaign(sandbox, tmp_path)
    sensors = {allowed: sensor(campaign.table, max_unsigned=allowed) for allowed in (0, 10, 0.1)}
    requests: dict[Any, list[int]] = {allowed: [] for allowed in sensors}

    def poke_all() -> dict[Any, Any]:
        results: dict[Any, Any] = {}
        for allowed, wait in sensors.items():
            sandbox.clear_requests()
            try:
                results[allowed] = wait.poke(ctx())
            except AirflowFailException as error:
                results[allowed] = error
            requests[allowed].append(get_many(sandbox))
        return results

    assert poke_all() == {0: False, 10: False, 0.1: False}
    campaign.step_a()  # 5 rejected and 3 expired: none of them ends the wait
    assert poke_all() == {0: False, 10: False, 0.1: False}
    # A wait that starts afresh (reschedule mode: nothing kept between pokes) re-derives from the service.
    sandbox.clear_requests()
    assert sensor(campaign.table, max_unsigned=0, mode="reschedule").poke(ctx()) is False
    assert get_many(sandbox) == 5
    assert not campaign.report.exists()  # no report while envelopes are open
    campaign.step_b()
    assert poke_all() == {0: False, 10: False, 0.1: False}
    campaign.step_c()
    final = poke_all()

    # Each poll read only the envelopes still open: 100, then 28, 16 and 6.
    assert requests == {allowed: [5, 2, 1, 1] for allowed in sensors}
    failure = final[0]
    assert isinstance(failure, AirflowFailException)
    text = str(failure)
    assert text.startswith(
        "8 of 100 envelope(s) did not reach COMPLETED (3 EXPIRED, 5 REJECTED); max_unsigned allows 0"
    )
    assert campaign.report.as_uri() in text
    first = campaign.ids[0]
    assert f"envelope {first} (row r000) is REJECTED: rejected by recipient" in text
    assert text.count("\n  - ") == 5
    assert "... and 3 more" in text
    assert "signer0@example.test" not in text
    for allowed in (10, 0.1):
        result = final[allowed]
        assert isinstance(result, PokeReturnValue)
        value = result.xcom_value
        assert {k: v for k, v in value.items() if k != "not_completed"} == {
            "result_table": str(campaign.table),
            "envelopes": 100,
            "status": "COMPLETED",
            "completed": 92,
            "unsigned": 8,
            "max_unsigned": 10,
            "by_status": {"COMPLETED": 92, "EXPIRED": 3, "REJECTED": 5},
            "report": campaign.report.as_uri(),
        }
        assert [(x["envelope_id"], x["row_key"], x["status"]) for x in value["not_completed"]] == [
            (e, f"r{i:03d}", "REJECTED" if i < 5 else "EXPIRED") for i, e in enumerate(campaign.ids[:8])
        ]
        assert json.loads(json.dumps(value)) == value
    campaign.check_report()


async def _poller() -> EnvelopePoller:
    for _ in range(400):  # bounded: at most ~20 s
        pollers = active_pollers()
        if pollers and pollers[0].subscriptions:
            return pollers[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no poller appeared")


async def _until_a_cycle_read(poller: EnvelopePoller, count: int) -> None:
    for _ in range(2400):  # bounded: at most ~2 minutes
        if poller.stats.history and poller.stats.history[-1][0] == count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no poll cycle read {count} envelope(s): {list(poller.stats.history)}")


def test_the_same_campaign_deferred_under_the_real_trigger(
    sandbox: SandboxServer, docsign_conn: str, tmp_path: Path
) -> None:
    campaign = Campaign(sandbox, tmp_path)
    wait = sensor(campaign.table, max_unsigned=0, deferrable=True)
    sandbox.clear_requests()
    with pytest.raises(TaskDeferred) as deferred:
        wait.execute(ctx())
    assert get_many(sandbox) == 5  # the first poke read all 100
    trigger = deferred.value.trigger
    _, kwargs = trigger.serialize()
    # The trigger carries only the 28 open envelopes, each id once.
    assert kwargs["envelope_ids"] == campaign.ids[:28]
    assert sum(json.dumps(kwargs).count(e) for e in campaign.ids) == 28

    async def scenario() -> tuple[list[dict[str, Any]], list[tuple[int, int]], int]:
        run = asyncio.ensure_future(_collect(trigger))
        poller = await _poller()
        loop = asyncio.get_running_loop()
        await _until_a_cycle_read(poller, 28)
        await loop.run_in_executor(None, campaign.step_a)
        await _until_a_cycle_read(poller, 16)  # the 12 settled ones are read no more
        await loop.run_in_executor(None, campaign.step_b)
        await _until_a_cycle_read(poller, 6)
        assert not run.done()  # 8 can never complete, and still the wait goes on
        await loop.run_in_executor(None, campaign.step_c)
        events = await asyncio.wait_for(run, timeout=120)
        return events, list(poller.stats.history), poller.stats.requests

    sandbox.clear_requests()
    events, history, sent = asyncio.run(scenario())

    (event,) = events
    assert event["status"] == "settled", event
    assert event["by_status"] == {"COMPLETED": 20, "EXPIRED": 3, "REJECTED": 5}
    assert event["envelopes"] == 28
    assert "envelope_ids" not in event  # small: counts, no list of ids, no states
    assert len(json.dumps(event)) < 400
    # Every cycle read only what was open, fewer and fewer: 28, then 16, then 6 (then fewer as the last
    # six sign one by one), and the settled ones never again.
    reads = [n for n, _ in history]
    assert reads == sorted(reads, reverse=True)
    assert reads[0] == 28
    assert {16, 6} <= set(reads)
    assert 1 <= reads[-1] <= 6
    assert all(r == math.ceil(n / 20) for n, r in history)
    assert get_many(sandbox) == sent == sum(r for _, r in history)

    # The task resumes (a new instance, as in a worker): it reads every envelope once, decides, reports.
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match=r"8 of 100 envelope\(s\) did not reach COMPLETED"):
        sensor(campaign.table, max_unsigned=0, deferrable=True).execute_complete(ctx(), event)
    assert get_many(sandbox) == 5
    campaign.check_report()
    for allowed in (10, 0.1):
        value = sensor(campaign.table, max_unsigned=allowed, deferrable=True).execute_complete(ctx(), event)
        assert (value["completed"], value["unsigned"], value["max_unsigned"]) == (92, 8, 10)


async def _collect(trigger: DocsignEnvelopeTrigger) -> list[dict[str, Any]]:
    return [e.payload async for e in trigger.run()]


# ---------------------------------------------------------------------------- failure_statuses, soft_fail
def test_failure_statuses_end_nothing_early_and_soft_fail_skips_only_a_failed_batch(
    sandbox: SandboxServer, docsign_conn: str, tmp_path: Path
) -> None:
    ids = seed(sandbox, ["PENDING", "PENDING", "COMPLETED"])
    sandbox.reject(ids[0], recipient_of(sandbox, ids[0]), "No")
    sandbox.wait_status(ids[0], "REJECTED")
    table = write_table(tmp_path / "results.jsonl", sent_rows(ids))
    for failures in (("REJECTED", "CANCELLED"), (), ("REJECTED",)):
        # Listed or not, a rejection does not end a batch wait while another envelope is open.
        assert sensor(table, failure_statuses=failures).poke(ctx()) is False
    sandbox.complete(ids[1])
    sandbox.wait_status(ids[1], "COMPLETED", timeout=30)
    for failures in (("REJECTED", "CANCELLED"), ()):
        # Unlisted, it is still an envelope that did not complete: it counts against max_unsigned.
        with pytest.raises(AirflowFailException, match=r"1 of 3 envelope\(s\) did not reach COMPLETED"):
            sensor(table, failure_statuses=failures).poke(ctx())

    # soft_fail turns the failed batch into a skip, in poke mode and deferred, and nothing else.
    with pytest.raises(AirflowSkipException):
        sensor(table, soft_fail=True).execute(ctx())
    with pytest.raises(AirflowSkipException):
        sensor(table, soft_fail=True, deferrable=True).execute(ctx())
    event = {
        "status": "settled",
        "batch": True,
        "envelopes": 1,
        "deadline": 4e9,
        "message": "",
        "by_status": {},
    }
    with pytest.raises(AirflowSkipException):
        sensor(table, soft_fail=True, deferrable=True).resume_execution(
            "execute_complete", {"event": event}, ctx()
        )
    passed = sensor(table, soft_fail=True, max_unsigned=1).execute(ctx())
    assert (passed["unsigned"], passed["by_status"]) == (1, {"COMPLETED": 2, "REJECTED": 1})


# ------------------------------------------------------------------------------------ odd result tables
def test_duplicate_envelope_ids_are_waited_for_counted_and_reported_once(
    sandbox: SandboxServer, docsign_conn: str, tmp_path: Path
) -> None:
    done, rejected = seed(sandbox, ["COMPLETED", "PENDING"])
    sandbox.reject(rejected, recipient_of(sandbox, rejected), "Twice asked")
    sandbox.wait_status(rejected, "REJECTED")
    rows = sent_rows([done, rejected, rejected, rejected])  # r001, r002 and r003 name one envelope
    table = write_table(tmp_path / "results.jsonl", rows)

    sandbox.clear_requests()
    value = sensor(table, max_unsigned=1).execute(ctx())
    assert get_many(sandbox) == 1
    assert (value["envelopes"], value["completed"], value["unsigned"]) == (2, 1, 1)
    assert value["not_completed"] == [
        {
            "envelope_id": rejected,
            "row_key": "r001",
            "status": "REJECTED",
            "reason": f"rejected by recipient {recipient_of(sandbox, rejected)} (SIGNER, s***@example.test): "
            "'Twice asked'",
        }
    ]
    report = [json.loads(x) for x in (tmp_path / "results.jsonl.outcome.jsonl").read_text().splitlines()]
    assert [(x["envelope_id"], x["row_key"]) for x in report] == [(done, "r000"), (rejected, "r001")]
    # A fraction counts envelopes, not rows: 40 % of 2 envelopes allows none (of 4 rows it would be 1).
    with pytest.raises(AirflowFailException, match=r"1 of 2 envelope\(s\).*max_unsigned allows 0"):
        sensor(table, max_unsigned=0.4).execute(ctx())


def test_a_deleted_or_unknown_envelope_counts_as_deleted(
    sandbox: SandboxServer, docsign_conn: str, hook: DocsignHook, tmp_path: Path
) -> None:
    done, gone = seed(sandbox, ["COMPLETED", "PENDING"])
    hook.delete_envelope(gone)  # PENDING: deleted at the service, get-many leaves it out
    unknown = "envelope_neverexistedatall"
    table = write_table(tmp_path / "results.jsonl", sent_rows([done, gone, unknown]))

    with pytest.raises(
        AirflowFailException, match=r"2 of 3 envelope\(s\) did not reach COMPLETED \(2 DELETED\)"
    ):
        sensor(table, max_unsigned=1).execute(ctx())
    value = sensor(table, max_unsigned=2, deferrable=True).execute(
        ctx()
    )  # settled at the first poke: no deferral
    assert value["by_status"] == {"COMPLETED": 1, "DELETED": 2}
    assert [(x["envelope_id"], x["status"]) for x in value["not_completed"]] == [
        (gone, "DELETED"),
        (unknown, "DELETED"),
    ]
    assert all(x["reason"].startswith("not found: deleted") for x in value["not_completed"])


def test_rows_that_are_not_sent_are_not_waited_for(
    sandbox: SandboxServer, docsign_conn: str, tmp_path: Path
) -> None:
    done, draft = seed(sandbox, ["COMPLETED", "DRAFT"])  # a DRAFT never settles by itself
    rows = [
        {"row_key": "a", "envelope_id": done, "status": "sent"},
        {"row_key": "b", "envelope_id": draft, "status": "created", "error": "not sent: 503"},
        {"row_key": "c", "envelope_id": None, "status": "invalid", "error": "bad e-mail"},
        {"row_key": "d", "envelope_id": None, "status": "failed", "error": "409"},
        {"row_key": "e", "envelope_id": "", "status": "sent"},
    ]
    table = write_table(tmp_path / "results.jsonl", rows)
    sandbox.clear_requests()
    value = sensor(table, deferrable=True).execute(
        ctx()
    )  # done at the first poke: the draft is not waited for
    assert (value["envelopes"], value["completed"], value["not_completed"]) == (1, 1, [])
    assert get_many(sandbox) == 1
    report = [json.loads(x) for x in (tmp_path / "results.jsonl.outcome.jsonl").read_text().splitlines()]
    assert [(x["envelope_id"], x["row_key"], x["status"]) for x in report] == [(done, "a", "COMPLETED")]


# ----------------------------------------------------------------------------------- bad max_unsigned
@pytest.fixture
def quiet(sandbox: SandboxServer) -> Iterator[SandboxServer]:
    sandbox.clear_requests()
    yield sandbox
    assert sandbox.requests() == []  # refused when the DAG is parsed: nothing was sent


@pytest.mark.parametrize(
    ("value", "words"),
    [(-1, "count >= 0, not -1"), (1.5, "between 0 and 1"), ("ten", "not str 'ten'"), (True, "not bool True")],
)
def test_a_malformed_max_unsigned_is_refused_when_the_dag_is_parsed(
    quiet: SandboxServer, docsign_conn: str, tmp_path: Path, value: Any, words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        sensor(tmp_path / "results.jsonl", max_unsigned=value)
    with pytest.raises(ValueError, match=words):
        DocsignEnvelopeSensor(task_id="wait", envelope_ids=["envelope_a"], max_unsigned=value)
