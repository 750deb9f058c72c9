"""System tests: the provider under the organisation's own API rate limit of a real Documenso (opt-in).

Documenso v2.17 loads the organisation's claim with the API token on every request and counts each
request in fixed windows (``OrganisationClaim.apiRateLimits``, items ``{"window": "<n>[smhd]", "max": n}``;
the window is aligned to the epoch). Over the limit it answers 429 with ``Retry-After`` (whole seconds
to the end of the window, at least 1) before doing anything. These tests set a tight window for the API
key's organisation in the instance's database (``system_db``) and always put the previous value back.

Each test records every answer through the hook's ``after_response`` callback, per thread: a 429 must be
followed by a pause of at least its ``Retry-After`` and never by a second 429 for the same request.
Note: the window counts every request of the organisation, so another client using the same API key at
the same time takes from it too.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, sig, signer
from peer import raw_envelope, sign_prefetched
from template_helpers import field

import airflow_provider_docsign.operators.bulk as bulk_module
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.bulk import DocsignBulkSendOperator
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

NO_EMAIL = {"distributionMethod": "NONE"}
Db = Callable[..., list[tuple[Any, ...]]]


# -- the organisation's window ------------------------------------------------------------------------


def _claim_of_the_api_key(db: Db) -> tuple[str, str]:
    """The id and current ``apiRateLimits`` (JSON text) of the claim of the API key's organisation.

    ApiToken (SHA-512 of the key) -> Team -> Organisation -> OrganisationClaim (schema.prisma, v2.17.0).
    """
    digest = hashlib.sha512(os.environ["DOCSIGN_SYSTEM_API_KEY"].encode()).hexdigest()
    rows = db(
        'SELECT c.id, c."apiRateLimits"::text FROM "ApiToken" k '
        'JOIN "Team" t ON t.id = k."teamId" '
        'JOIN "Organisation" o ON o.id = t."organisationId" '
        'JOIN "OrganisationClaim" c ON c.id = o."organisationClaimId" '
        "WHERE k.token = %s",
        digest,
    )
    assert len(rows) == 1, f"the API key's organisation claim was not found ({len(rows)} rows)"
    return str(rows[0][0]), str(rows[0][1])


@contextmanager
def org_window(db: Db, limits: list[dict[str, Any]]) -> Iterator[None]:
    """Set the organisation's ``apiRateLimits`` to ``limits``; always put the previous value back."""
    claim_id, previous = _claim_of_the_api_key(db)
    db(
        'UPDATE "OrganisationClaim" SET "apiRateLimits" = %s::jsonb WHERE id = %s',
        json.dumps(limits),
        claim_id,
    )
    try:
        yield
    finally:
        db('UPDATE "OrganisationClaim" SET "apiRateLimits" = %s::jsonb WHERE id = %s', previous, claim_id)
        assert _claim_of_the_api_key(db) == (claim_id, previous)


# -- what the service answered --------------------------------------------------------------------------


class Answers:
    """Every answer a hook got, per thread: ``(time.time() when answered, status, Retry-After seconds)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_thread: dict[int, list[tuple[float, int, float | None]]] = defaultdict(list)

    def __call__(self, status: int, rate_limit: Any, retry_after: float | None) -> None:
        with self._lock:
            self.by_thread[threading.get_ident()].append((time.time(), status, retry_after))

    @property
    def statuses(self) -> Counter[int]:
        return Counter(status for answers in self.by_thread.values() for _, status, _ in answers)

    def check_paced(self) -> None:
        """Each 429 carried ``Retry-After``, its request waited that long, and was not refused again."""
        for answers in self.by_thread.values():
            for (at, status, retry_after), (next_at, next_status, _) in pairwise(answers):
                if status != 429:
                    continue
                assert retry_after is not None, "a 429 without Retry-After"
                assert 1 <= retry_after <= 60, retry_after
                assert next_at - at >= retry_after - 0.05, (next_at - at, retry_after)
                assert next_status != 429, (
                    f"a request was answered 429 twice in a row: {dict(self.by_thread)}"
                )
            assert answers[-1][1] != 429, "the last answer was a 429"


def window_floor(answered: int, per_window: int, seconds: float = 2.0) -> float:
    """The least time ``answered`` requests take at ``per_window`` per epoch-aligned window of ``seconds``.

    They span at least ``ceil(answered / per_window)`` windows; the first and the last may be cut short.
    """
    return seconds * max(0, math.ceil(answered / per_window) - 2)


def watch(hook: DocsignHook) -> Answers:
    """Record every answer of ``hook`` (its ``after_response`` callback)."""
    answers = Answers()
    hook.after_response = answers
    return answers


# -- tests ----------------------------------------------------------------------------------------------


def test_a_sensor_poke_loop_slows_down_on_429_and_sees_the_envelope_complete(
    system_hook: DocsignHook,
    system_db: Db,
    system_conn: str,
    new_envelope: Callable[..., str],
    pdf: Callable[..., Path],
) -> None:
    envelope_id = new_envelope("limited-sensor", [pdf("wait.pdf")], [signer(email="limited@example.com")])
    system_hook.distribute_envelope(envelope_id, meta=NO_EMAIL)
    tokens = raw_envelope(envelope_id)  # read before the window is tightened: signing needs no API call
    sensor = DocsignEnvelopeSensor(
        task_id="wait", envelope_id=envelope_id, docsign_conn_id=system_conn, poke_interval=1, timeout=120
    )
    answers = watch(sensor.hook)
    outcome: Any = False
    pokes = 0
    started = time.monotonic()
    with org_window(system_db, [{"window": "2s", "max": 8}]):
        deadline = started + 60
        while not outcome and pokes < 40 and time.monotonic() < deadline:
            outcome = sensor.poke(ctx())  # no sleep between pokes: only the 429s slow the loop
            pokes += 1
            if pokes == 12:
                assert not outcome
                assert sign_prefetched(tokens) == ["limited@example.com"]
    elapsed = time.monotonic() - started

    assert outcome, f"the sensor did not see the envelope complete in {pokes} pokes ({elapsed:.0f}s)"
    [result] = outcome.xcom_value
    assert (result["envelope_id"], result["status"]) == (envelope_id, "COMPLETED")
    statuses = answers.statuses
    assert statuses[429] >= 1, statuses  # the loop went faster than the window: it was limited
    assert set(statuses) <= {200, 429}, statuses
    assert statuses[200] == pokes  # every poke ended in a read, none in a failure
    answers.check_paced()
    assert elapsed >= window_floor(statuses[200], 8), (elapsed, statuses)  # at most 8 reads per 2 s


def test_hook_reads_wait_for_retry_after_and_all_finish(
    system_hook: DocsignHook,
    system_db: Db,
    system_conn: str,
    system_run: Any,
    new_envelope: Callable[..., str],
    pdf: Callable[..., Path],
) -> None:
    envelope_id = new_envelope("limited-reads", [pdf("read.pdf")], [signer(sig(), email="reads@example.com")])
    reads = 30
    with DocsignHook(system_conn) as hook:
        answers = watch(hook)
        started = time.monotonic()
        with org_window(system_db, [{"window": "2s", "max": 10}]):
            titles = [hook.get_envelope(envelope_id).title for _ in range(reads)]
            listed = [e.id for e in hook.find_envelopes(folder_id=system_run.folder_id)]
        elapsed = time.monotonic() - started
    assert titles == [system_hook.get_envelope(envelope_id).title] * reads
    assert envelope_id in listed
    statuses = answers.statuses
    assert statuses[200] == reads + 1
    assert statuses[429] >= 1, statuses
    answers.check_paced()
    assert elapsed >= window_floor(reads + 1, 10), (elapsed, statuses)  # at most 10 reads per 2 s


@pytest.fixture(scope="module")
def bulk_template(system_hook: DocsignHook, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A one-signer template with a ``company`` text field (at the root), deleted after the module."""
    from airflow_provider_docsign.samples import write_sample_pdf

    source = write_sample_pdf(tmp_path_factory.mktemp("tpl") / "limited.pdf", title="limited")
    template = system_hook.create_template(
        title="docsign system rate-limit template",
        files=[source],
        recipients=[
            {
                "email": "customer@placeholder.test",
                "name": "Customer",
                "role": "SIGNER",
                "fields": [field("TEXT", 1, 10, "company"), field("SIGNATURE", 1, 80)],
            }
        ],
        meta=NO_EMAIL,
    )
    try:
        yield template
    finally:
        system_hook.delete_envelope(template)


def test_a_bulk_campaign_under_a_tight_window_slows_down_and_sends_each_row_once(
    system_hook: DocsignHook,
    system_db: Db,
    system_conn: str,
    system_run: Any,
    bulk_template: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    campaign = f"{system_run.prefix}-limited"
    keys = [f"L-{i}" for i in range(16)]
    answers = Answers()
    real_install = bulk_module.install_pacer

    def install_and_watch(hook: DocsignHook, reserve_fraction: float, log: Any) -> Any:
        pacer = real_install(hook, reserve_fraction, log)
        pace = hook.after_response
        assert pace is not None

        def both(status: int, rate_limit: Any, retry_after: float | None) -> None:
            answers(status, rate_limit, retry_after)
            pace(status, rate_limit, retry_after)

        hook.after_response = both
        return pacer

    monkeypatch.setattr(bulk_module, "install_pacer", install_and_watch)
    operator = DocsignBulkSendOperator(
        task_id="bulk_limited",
        docsign_conn_id=system_conn,
        rows=[
            {"row_key": k, "email": f"limited{i}@example.com", "name": f"Customer {i}", "company": f"Co {i}"}
            for i, k in enumerate(keys)
        ],
        result_table=str(tmp_path / "limited.jsonl"),
        campaign_id=campaign,
        folder_id=system_run.folder_id,
        template_id=bulk_template,
        recipients=[{"placeholder": "Customer", "email": "{email}", "name": "{name}"}],
        prefill_fields={"company": "{company}"},
        title="Limited {name}",
        meta=NO_EMAIL,
        max_in_flight=4,
    )
    started = time.monotonic()
    with org_window(system_db, [{"window": "2s", "max": 8}]):
        result = operator.execute(ctx())
    elapsed = time.monotonic() - started

    lines = [json.loads(line) for line in (tmp_path / "limited.jsonl").read_text().splitlines()]
    system_run.envelope_ids.extend(r["envelope_id"] for r in lines if r.get("envelope_id"))
    assert result["counts"]["sent"] == len(keys), result
    assert [r["row_key"] for r in lines] == keys
    assert {r["status"] for r in lines} == {"sent"}
    statuses = answers.statuses
    assert statuses[429] >= 1, statuses
    assert result["answered_429"] == statuses[429]  # the operator's pacer saw each of them
    answers.check_paced()
    assert elapsed >= window_floor(statuses[200], 8), (elapsed, statuses)  # at most 8 per 2 s

    prefix = f"{campaign}("
    made = Counter(
        e.external_id or ""
        for e in system_hook.find_envelopes(query=prefix, folder_id=system_run.folder_id)
        if (e.external_id or "").startswith(prefix)
    )
    assert made == Counter({f"{campaign}({k})": 1 for k in keys})
