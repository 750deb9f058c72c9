"""Many DocsignEnvelopeTriggers in one event loop share one poller: ⌈n/20⌉ get-many requests per cycle.

Driven with asyncio against the sandbox over real HTTP; requests are counted at the sandbox's request
log. Each trigger must still yield its own event (completed, rejected with the reason, cancelled), a
429 storm on get-many must slow the poller down without losing any wait, and triggers asking for
different poll intervals are not forced onto the fastest one's schedule. The connection is looked up
once (with ``aget_connection``) for all the triggers of one connection id, not once per trigger; a
connection that cannot be found ends each waiting trigger with an error event naming it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import numbered_signers

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.triggers import DocsignEnvelopeTrigger
from airflow_provider_docsign.triggers._poller import EnvelopePoller, active_pollers

pytestmark = pytest.mark.integration

GET_MANY = "/envelope/get-many"


def _pending(hook: DocsignHook, pdf: Path, count: int) -> list[str]:
    ids = []
    for i in range(count):
        envelope_id = hook.create_envelope(
            title=f"Coalesced {i}", files=[pdf], recipients=numbered_signers(1)
        )
        hook.distribute_envelope(envelope_id)
        ids.append(envelope_id)
    return ids


def _get_many_requests(sandbox: SandboxServer) -> list[dict[str, Any]]:
    return [r for r in sandbox.requests() if r["path"] == GET_MANY]


async def _poller(expected_subscriptions: int) -> EnvelopePoller:
    for _ in range(400):  # bounded: at most ~20 s
        pollers = active_pollers()
        if pollers and pollers[0].subscriptions >= expected_subscriptions:
            return pollers[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no poller with {expected_subscriptions} subscriptions appeared")


async def _until(check: Callable[[], bool], what: str) -> None:
    for _ in range(1200):  # bounded: at most ~60 s
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


def test_200_triggers_share_one_poller_and_each_gets_its_own_event(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    ids = _pending(hook, make_pdf(), 200)
    rejected = {envelope_id: f"Clause {i} is wrong" for i, envelope_id in enumerate(ids[180:190])}
    cancelled = set(ids[190:])
    sandbox.clear_requests()
    triggers = [DocsignEnvelopeTrigger([e], poll_interval=0.5, deadline=time.time() + 180) for e in ids]

    async def scenario() -> tuple[list[list[dict[str, Any]]], EnvelopePoller]:
        async def collect(trigger: DocsignEnvelopeTrigger) -> list[dict[str, Any]]:
            return [event.payload async for event in trigger.run()]

        tasks = [asyncio.create_task(collect(t)) for t in triggers]
        poller = await _poller(200)
        await _until(lambda: poller.stats.cycles >= 2, "two poll cycles")
        # Everything is still pending: each full cycle read 200 envelopes with 10 requests.
        assert list(poller.stats.history)[:2] == [(200, 10), (200, 10)]
        # The two cycles' requests, and at most the next cycle's if a busy machine let it begin since
        # (counted in the stats when answered); the exact count is checked once all have ended.
        done = poller.stats.requests
        assert done <= len(_get_many_requests(sandbox)) <= done + 10
        # Now the signers act, while the triggers are waiting.
        loop = asyncio.get_running_loop()
        for envelope_id in ids[:180]:
            await loop.run_in_executor(None, sandbox.complete, envelope_id)
        for envelope_id, reason in rejected.items():
            recipient = (await loop.run_in_executor(None, hook.get_envelope, envelope_id)).recipients[0]
            await loop.run_in_executor(None, sandbox.reject, envelope_id, recipient.id, reason)
        for envelope_id in cancelled:
            await loop.run_in_executor(None, lambda e=envelope_id: hook.cancel_envelope(e, reason="Deal off"))
        results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=180)
        return results, poller

    results, poller = asyncio.run(scenario())

    # Counted at the sandbox: every get-many the poller sent, and nothing else read the envelopes.
    reads = _get_many_requests(sandbox)
    assert len(reads) == poller.stats.requests
    assert all(r["status"] == 200 for r in reads)
    for envelopes, requests in poller.stats.history:
        assert requests == math.ceil(envelopes / 20), poller.stats.history
    assert sum(r for _, r in poller.stats.history) == len(reads)
    # Far fewer than one request per trigger per cycle.
    assert len(reads) < 200 * poller.stats.cycles / 10 + poller.stats.cycles
    # The poller stopped once the last trigger ended.
    assert poller.subscriptions == 0
    # 200 triggers, one connection look-up.
    assert poller.stats.lookups == 1

    for envelope_id, events in zip(ids, results, strict=True):
        assert len(events) == 1, events
        event = events[0]
        assert event["envelope_ids"] == [envelope_id]
        assert [s["envelope_id"] for s in event["envelopes"]] == [envelope_id]
        if envelope_id in rejected:
            assert event["status"] == "failure", event
            assert f"envelope {envelope_id} is REJECTED" in event["message"]
            assert rejected[envelope_id] in event["message"]
            assert event["envelopes"][0]["rejections"][0]["reason"] == rejected[envelope_id]
        elif envelope_id in cancelled:
            assert event["status"] == "failure", event
            assert f"envelope {envelope_id} is CANCELLED" in event["message"]
        else:
            assert event["status"] == "success", event
            assert event["envelopes"][0]["status"] == "COMPLETED"


def test_429_storm_slows_the_poller_and_every_wait_ends(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    ids = _pending(hook, make_pdf(), 60)
    for envelope_id in ids:
        sandbox.complete(envelope_id)
    for envelope_id in ids:
        sandbox.wait_status(envelope_id, "COMPLETED", timeout=30)
    sandbox.clear_requests()
    storm = 4
    sandbox.inject_fault(
        method="POST", path=GET_MANY, action="status", status=429, retry_after=1, count=storm
    )
    triggers = [DocsignEnvelopeTrigger([e], poll_interval=0.2, deadline=time.time() + 120) for e in ids]

    async def scenario() -> tuple[list[list[dict[str, Any]]], EnvelopePoller]:
        async def collect(trigger: DocsignEnvelopeTrigger) -> list[dict[str, Any]]:
            return [event.payload async for event in trigger.run()]

        tasks = [asyncio.create_task(collect(t)) for t in triggers]
        poller = await _poller(1)
        results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=120)
        return results, poller

    results, poller = asyncio.run(scenario())

    assert [events[0]["status"] for events in results] == ["success"] * 60
    statuses = [r["status"] for r in _get_many_requests(sandbox)]
    # Every 429 paused the whole poller for its Retry-After (1 s), and the poller really slept
    # before sending again (its 0.2 s interval would otherwise have gone on).
    assert statuses.count(429) == storm
    assert poller.stats.throttled == storm
    assert list(poller.stats.throttle_pauses) == [1.0] * storm
    assert poller.stats.paused_seconds >= 0.9
    # After a 429 it probes with one batch at a time, so the storm cost no more than the 429s the
    # sandbox had queued; then the three batches of the 60 envelopes were read once each.
    assert statuses.count(200) == 3
    assert len(statuses) == storm + 3


def test_different_intervals_are_grouped_not_forced_onto_the_fastest(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    fast, slow = _pending(hook, make_pdf(), 2)
    sandbox.clear_requests()
    fast_trigger = DocsignEnvelopeTrigger([fast], poll_interval=0.2, deadline=time.time() + 60)
    slow_trigger = DocsignEnvelopeTrigger([slow], poll_interval=3600, deadline=time.time() + 60)

    async def scenario() -> EnvelopePoller:
        tasks = [asyncio.create_task(_drain(t)) for t in (fast_trigger, slow_trigger)]
        poller = await _poller(2)
        await _until(lambda: poller.stats.cycles >= 6, "six poll cycles")
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return poller

    poller = asyncio.run(scenario())

    history = list(poller.stats.history)
    # The first cycle read both new envelopes together; after it only the fast group was due.
    assert history[0] == (2, 1)
    assert all(entry == (1, 1) for entry in history[1:]), history
    assert len(_get_many_requests(sandbox)) == poller.stats.requests
    # Cancelling the triggers unregistered them and left the envelopes alone.
    assert poller.subscriptions == 0
    assert hook.get_envelope(fast).status == "PENDING"


async def _drain(trigger: DocsignEnvelopeTrigger) -> None:
    async for _ in trigger.run():
        pass


def test_poller_slows_down_on_rate_limit_headers_before_any_429(
    tmp_path: Path, api_key: str, monkeypatch: pytest.MonkeyPatch, make_pdf: Callable[..., Path]
) -> None:
    """A sandbox enforcing 60 requests a minute: the poller paces itself on X-RateLimit-*, never a 429."""
    from helpers import conn_json

    with SandboxServer(tmp_path / "limited", api_key=api_key, extra_args=["--rate-limit", "60"]) as limited:
        monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(limited))
        hook = DocsignHook()
        ids = _pending(hook, make_pdf(), 3)
        # 0.1 s between reads would be 600 requests a minute against a limit of 60.
        triggers = [DocsignEnvelopeTrigger([e], poll_interval=0.1, deadline=time.time() + 300) for e in ids]

        async def scenario() -> tuple[list[list[dict[str, Any]]], EnvelopePoller]:
            async def collect(trigger: DocsignEnvelopeTrigger) -> list[dict[str, Any]]:
                return [event.payload async for event in trigger.run()]

            tasks = [asyncio.create_task(collect(t)) for t in triggers]
            poller = await _poller(3)
            await _until(lambda: poller.stats.paused_seconds > 0, "the poller to pace itself")
            loop = asyncio.get_running_loop()
            for envelope_id in ids:  # the control API is not rate-limited
                await loop.run_in_executor(None, limited.complete, envelope_id)
            results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=240)
            return results, poller

        results, poller = asyncio.run(scenario())
        statuses = [r["status"] for r in limited.requests()]

    assert [events[0]["status"] for events in results] == ["success"] * 3
    assert 429 not in statuses
    assert poller.stats.throttled == 0
    assert poller.stats.paused_seconds > 0


def test_one_look_up_per_connection_id_and_a_missing_connection_is_an_error_event(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two connection ids of one service share a poller and are looked up once each; a missing one fails."""
    from helpers import conn_json

    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_SECOND", conn_json(sandbox))
    hook = DocsignHook()
    ids = _pending(hook, make_pdf(), 6)
    for envelope_id in ids:
        sandbox.complete(envelope_id)
    deadline = time.time() + 60
    triggers = [
        *(DocsignEnvelopeTrigger([e], poll_interval=0.2, deadline=deadline) for e in ids[:3]),
        *(
            DocsignEnvelopeTrigger(
                [e], docsign_conn_id="docsign_second", poll_interval=0.2, deadline=deadline
            )
            for e in ids[3:]
        ),
    ]
    missing = [
        DocsignEnvelopeTrigger([ids[0]], docsign_conn_id="docsign_nowhere", deadline=deadline)
        for _ in range(2)
    ]

    async def scenario() -> tuple[
        list[list[dict[str, Any]]], list[list[dict[str, Any]]], list[EnvelopePoller]
    ]:
        async def collect(trigger: DocsignEnvelopeTrigger) -> list[dict[str, Any]]:
            return [event.payload async for event in trigger.run()]

        waits = [asyncio.create_task(collect(t)) for t in triggers]
        failed = [asyncio.create_task(collect(t)) for t in missing]
        poller = await _poller(1)
        results = await asyncio.wait_for(asyncio.gather(*waits), timeout=60)
        errors = await asyncio.wait_for(asyncio.gather(*failed), timeout=60)
        return results, errors, [poller, *active_pollers()]

    results, errors, pollers = asyncio.run(scenario())

    assert [events[0]["status"] for events in results] == ["success"] * 6
    poller = pollers[0]
    assert all(p is poller for p in pollers[1:])  # one poller for the one service
    assert poller.stats.lookups == 2  # docsign_default and docsign_second, once each
    for events in errors:
        (event,) = events
        assert event["status"] == "error", event
        assert "docsign_nowhere" in event["message"]


def test_a_batch_wait_drops_its_settled_envelopes_from_the_shared_reads(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    """A campaign's trigger beside a single wait: its settled envelopes leave the poller's reads."""
    hook = DocsignHook()
    settled = sandbox.seed([{"title": f"Done {i}", "status": "COMPLETED"} for i in range(25)])
    open_ids = _pending(hook, make_pdf(), 16)  # 15 for the campaign, 1 for the single wait
    campaign, single = [*settled, *open_ids[:15]], open_ids[15]
    deadline = time.time() + 2
    batch = DocsignEnvelopeTrigger(campaign, batch=True, poll_interval=0.3, deadline=deadline)
    alone = DocsignEnvelopeTrigger([single], poll_interval=0.3, deadline=deadline)
    sandbox.clear_requests()

    async def scenario() -> tuple[list[list[dict[str, Any]]], EnvelopePoller]:
        async def collect(trigger: DocsignEnvelopeTrigger) -> list[dict[str, Any]]:
            return [event.payload async for event in trigger.run()]

        tasks = [asyncio.create_task(collect(t)) for t in (batch, alone)]
        poller = await _poller(1)
        results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)
        return results, poller

    (batch_events, alone_events), poller = asyncio.run(scenario())

    history = list(poller.stats.history)
    # The campaign's 40 were read once; from then on only its 15 open ones, with the single wait's.
    assert max(n for n, _ in history) <= 41
    assert (16, 1) in history, history
    later = history[history.index((16, 1)) :]
    assert all(n <= 16 for n, _ in later), history
    assert sum(1 for n, _ in history if n > 16) <= 2  # the first cycle (or two, if they did not gather)
    assert len(_get_many_requests(sandbox)) == poller.stats.requests
    (timeout,) = batch_events
    assert (timeout["status"], timeout["by_status"], timeout["open"]) == (
        "timeout",
        {"COMPLETED": 25},
        campaign[25:],
    )
    assert [e["status"] for e in alone_events] == ["timeout"]
    assert alone_events[0]["envelopes"][0]["status"] == "PENDING"  # the single wait's event is unchanged
