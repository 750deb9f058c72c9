"""The bulk operator's engine: a bounded pool of requests through one hook, one pacer, one checkpoint.

No Airflow here (the operator passes in the hook, the logger and the checkpoint): the engine runs the same
under a test and a task. One dispatcher (the calling thread) owns every row's state and the checkpoint;
``max_in_flight`` worker threads only call the hook. Every row is leased before its request goes out (the
dispatcher marks a batch ``in_flight`` and writes the checkpoint, then hands it to the pool). A row whose
create may have reached the service but whose answer was lost is looked up by ``externalId`` once the
service has surely finished with it (the read timeout later), never sent again blindly.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from airflow_provider_docsign import metrics
from airflow_provider_docsign.bulk.confine import open_under_root
from airflow_provider_docsign.bulk.plan import CampaignPlan, classify_error
from airflow_provider_docsign.bulk.state import (
    CREATED,
    FAILED,
    IN_FLIGHT,
    PENDING,
    SENT,
    CampaignState,
    Throughput,
    progress_line,
    utc_now,
)
from airflow_provider_docsign.exceptions import DocsignAPIError, DocsignError
from airflow_provider_docsign.operators._bulk_steps import install_pacer
from airflow_provider_docsign.service.models import EnvelopeStatus

__all__ = ["BulkStopped", "CampaignRunner", "install_pacer"]

SEND, RESOLVE, FINISH = "send", "resolve", "finish"
#: A row's transient errors (429 after the hook's retries, no connection) before the campaign stops.
MAX_TRANSIENT = 3
#: The checkpoint is written at least this often while rows are in flight (seconds).
HEARTBEAT = 10.0
#: Seconds added to the heartbeat for the dispatcher's own delay in writing it.
SETTLE_MARGIN = 2.0
#: Rows leased per checkpoint write: enough for about this many seconds of sending.
LEASE_SECONDS = 5.0
MAX_LEASE = 500


class BulkStopped(DocsignError):
    """The campaign stopped before every row was done; the checkpoint lets the next try resume.

    :param message: Why.
    :param kind: ``"failures"`` (past ``max_failures``), ``"transient"`` (the service kept failing),
        ``"auth"`` (the API key was refused: no retry can help), or ``"lease"`` (another try took the
        campaign over).
    """

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class _Outcome:
    index: int
    action: str
    state: str | None = None
    envelope_id: str | None = None
    sent_at: str | None = None
    error: BaseException | None = None
    #: Write requests made (create, use, distribute).
    writes: int = 0
    #: Whether ``error`` proves nothing was created (the create or use itself was refused or not sent).
    nothing_created: bool = False


class CampaignRunner:
    """Send every row of a campaign that is not done yet.

    :param hook: The :class:`~airflow_provider_docsign.hooks.docsign.DocsignHook`, shared by every thread.
    :param plan: What each row sends.
    :param rows: The input rows, in order.
    :param state: Each row's state (restored from a checkpoint, or fresh).
    :param templates: The campaign's templates, by id, as read.
    :param save: Writes the checkpoint's bytes.
    :param pacer: The :class:`~airflow_provider_docsign.hooks._pacing.SharedPacer` of the hook.
    :param max_in_flight: Requests at most in flight at once.
    :param max_failures: Failed rows (this try) the campaign tolerates before it stops.
    :param settle: Seconds after which a request the service received is surely finished (the
        connection's read timeout): an ambiguous row is looked up no earlier.
    :param log: Where progress goes.
    :param progress_every: A progress line every N rows done...
    :param progress_seconds: ...or every this many seconds.
    :param owner: The campaign's :class:`~airflow_provider_docsign.bulk.lease.CampaignLease`: no batch
        is leased once it is lost.
    """

    def __init__(
        self,
        *,
        hook: Any,
        plan: CampaignPlan,
        rows: Sequence[Mapping[str, Any]],
        state: CampaignState,
        templates: Mapping[str, Any],
        save: Callable[[bytes], None],
        pacer: Any,
        max_in_flight: int,
        max_failures: int,
        settle: float,
        log: logging.Logger | Any,
        progress_every: int = 500,
        progress_seconds: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        owner: Any = None,
    ) -> None:
        self.hook = hook
        self.owner = owner
        self.plan = plan
        self.rows = rows
        self.state = state
        self.templates = templates
        self._save = save
        self.pacer = pacer
        self.max_in_flight = max_in_flight
        self.max_failures = max_failures
        self.settle = settle
        self.log = log
        self.progress_every = max(1, progress_every)
        self.progress_seconds = progress_seconds
        self._clock = clock
        self._fresh: deque[int] = deque()
        self._ready: deque[tuple[int, str]] = deque()
        self._delayed: list[tuple[float, int, int, str]] = []
        self._seq = itertools.count()
        self._transient: dict[int, int] = {}
        #: Create rounds per row that failed ambiguously (5xx, lost answer) and were looked up.
        self._rounds: dict[int, int] = {}
        self.failures = 0
        self.adopted = 0  # rows found made at the service by a look-up in this try (not sent by it)
        self.finished = 0  # envelopes sent (or created, without distribution) in this try
        self.started = clock()
        self._last_write = clock()
        self._last_progress = clock()
        self._done_at_progress = 0

    # -- public -----------------------------------------------------------------------------------

    def run(self) -> None:
        """Send, resolve and finish rows until every row is done; raise :class:`BulkStopped` if not."""
        self._plan_work()
        stop: BulkStopped | None = None
        outstanding: dict[Future[_Outcome], int] = {}
        with ThreadPoolExecutor(max_workers=self.max_in_flight, thread_name_prefix="docsign-bulk") as pool:
            try:
                while outstanding or (stop is None and (self._ready or self._fresh or self._delayed)):
                    if stop is None:
                        self._release_delayed()
                        try:
                            self._fill(pool, outstanding)
                        except BulkStopped as err:  # the lease was lost: finish what is in flight
                            stop = err
                    timeout = self._next_timeout() if stop is None else None
                    if not outstanding:
                        time.sleep(timeout or 0.01)  # only delayed rows left: wait for the first
                        continue
                    done, _ = wait(list(outstanding), timeout=timeout, return_when=FIRST_COMPLETED)
                    for future in done:
                        outstanding.pop(future)
                        try:
                            stop = self._apply(future.result()) or stop
                        except BulkStopped as err:
                            stop = stop or err
                    self._heartbeat(bool(outstanding))
                    self._progress()
            finally:
                self._unlease()
                self.save()
        if stop is not None:
            raise stop

    def throughput(self) -> Throughput:
        """This try's speed against the service's limit."""
        limit = self.pacer.rate_limit
        return Throughput(
            envelopes=self.finished,
            requests=self.pacer.requests,  # every request of this try, the template reads included
            seconds=self._clock() - self.started,
            limit=limit.limit if limit is not None else None,
            adopted=self.adopted + self.state.adopted,
        )

    def save(self) -> None:
        """Write the checkpoint now."""
        self._save(self.state.to_bytes())
        self._last_write = self._clock()

    # -- planning ---------------------------------------------------------------------------------

    def _plan_work(self) -> None:
        """Queue what each row needs: send, look up (in flight or failed before) or finish (created)."""
        now = self._clock()
        not_before = now
        if self.state.resumed_from is not None:
            # The previous try may have died with requests in flight: look them up once the service
            # has surely finished them (its checkpoint's heartbeat, plus the read timeout).
            age = time.time() - self.state.resumed_from
            not_before = now + max(0.0, HEARTBEAT + SETTLE_MARGIN + self.settle - age)
        waited = False
        for index, row in enumerate(self.state.rows):
            if self.state.done(row) and row.state != FAILED:
                continue
            if row.state == PENDING:
                self._fresh.append(index)
            elif row.state in (IN_FLIGHT, FAILED):
                # A failed row is tried again on a later try, but it is looked up first: it may have
                # been created after all.
                self._later(not_before if row.state == IN_FLIGHT else now, index, RESOLVE)
                waited = waited or (row.state == IN_FLIGHT and not_before > now)
            elif row.state == CREATED:
                self._ready.append((index, FINISH))
        if waited:
            self.log.info(
                "Rows in flight when the previous try stopped are looked up in %.0fs, when the service "
                "has surely finished any request that reached it",
                not_before - now,
            )

    def _later(self, when: float, index: int, action: str) -> None:
        heapq.heappush(self._delayed, (when, next(self._seq), index, action))

    def _release_delayed(self) -> None:
        now = self._clock()
        while self._delayed and self._delayed[0][0] <= now:
            _, _, index, action = heapq.heappop(self._delayed)
            self._ready.append((index, action))

    def _next_timeout(self) -> float:
        timeout = min(1.0, self.progress_seconds)
        if self._delayed:
            timeout = min(timeout, max(0.0, self._delayed[0][0] - self._clock()))
        return max(timeout, 0.01)

    # -- leasing ----------------------------------------------------------------------------------

    def _lease(self) -> None:
        """Mark the next batch of pending rows in flight and write the checkpoint before any is sent."""
        per_second = self.finished / max(self._clock() - self.started, 1e-6)
        size = int(min(MAX_LEASE, max(4 * self.max_in_flight, per_second * LEASE_SECONDS)))
        batch = [self._fresh.popleft() for _ in range(min(size, len(self._fresh)))]
        for index in batch:
            self.state.rows[index].state = IN_FLIGHT
        self.save()
        self._ready.extend((index, SEND) for index in batch)

    def _unlease(self) -> None:
        """Rows leased but not sent are certainly not created: pending again.

        These are rows never handed to the pool, and rows waiting to be sent again after an error that
        proves nothing was created.
        """
        waiting = [(index, action) for _, _, index, action in self._delayed]
        for index, action in [*self._ready, *waiting]:
            row = self.state.rows[index]
            if action == SEND and row.state == IN_FLIGHT and row.envelope_id is None:
                row.state = PENDING
        self._ready.clear()

    def _fill(self, pool: ThreadPoolExecutor, outstanding: dict[Future[_Outcome], int]) -> None:
        while len(outstanding) < self.max_in_flight:
            if self.owner is not None and self.owner.lost is not None:  # checked before every request
                raise BulkStopped(str(self.owner.lost), kind="lease")
            if len(self._ready) < self.max_in_flight and self._fresh:
                self._lease()
            if not self._ready:
                return
            index, action = self._ready.popleft()
            work = {SEND: self._send, RESOLVE: self._resolve, FINISH: self._finish}[action]
            outstanding[pool.submit(work, index)] = index

    # -- the workers (threads: they only call the hook) --------------------------------------------

    def _send(self, index: int) -> _Outcome:
        row, key = self.rows[index], self.state.rows[index].key
        assert key is not None
        template_id = self.plan.template_id_of(row)
        if template_id is not None:
            kwargs, problems = self.plan.use_kwargs(row, key)
            if problems:  # checked before, refused now (a row file swapped for a link): nothing sent
                return _Outcome(
                    index, SEND, FAILED, error=DocsignError("; ".join(problems)), nothing_created=True
                )
            try:
                files, opened = open_under_root(self.plan.files_root, kwargs["files"])
            except OSError as err:  # a row file swapped for a link out of files_root: nothing sent
                return _Outcome(index, SEND, FAILED, error=DocsignError(str(err)), nothing_created=True)
            try:
                with opened:
                    used = self.hook.use_template(
                        template_id, template=self.templates[template_id], **{**kwargs, "files": files}
                    )
            except Exception as err:
                refused = isinstance(err, DocsignAPIError) and err.path == "/envelope/use"
                nothing = refused and classify_error(err) != "ambiguous"
                return _Outcome(index, SEND, error=err, writes=1, nothing_created=nothing)
            done = SENT if self.plan.distribute else CREATED
            return _Outcome(
                index, SEND, done, used.envelope_id, utc_now() if done == SENT else None, writes=1
            )
        kwargs, problems = self.plan.create_kwargs(row, key)
        if problems:  # checked before, refused now (a row file swapped for a link): nothing sent
            return _Outcome(
                index, SEND, FAILED, error=DocsignError("; ".join(problems)), nothing_created=True
            )
        try:
            files, opened = open_under_root(self.plan.files_root, kwargs["files"])
        except OSError as err:  # a row file swapped for a link out of files_root: nothing sent
            return _Outcome(index, SEND, FAILED, error=DocsignError(str(err)), nothing_created=True)
        try:
            with opened:
                envelope_id = self.hook.create_envelope(**{**kwargs, "files": files})
        except Exception as err:
            nothing = classify_error(err) in ("permanent", "transient", "auth")
            return _Outcome(index, SEND, error=err, writes=1, nothing_created=nothing)
        if not self.plan.distribute:
            return _Outcome(index, SEND, CREATED, envelope_id, writes=1)
        try:
            self.hook.distribute_envelope(envelope_id)
        except Exception as err:
            return _Outcome(index, SEND, CREATED, envelope_id, error=err, writes=2)
        return _Outcome(index, SEND, SENT, envelope_id, utc_now(), writes=2)

    def _resolve(self, index: int) -> _Outcome:
        key = self.state.rows[index].key
        assert key is not None
        external_id = self.plan.external_id(key)
        try:
            matches = self.hook.find_envelopes_by_external_id(external_id, folder_id=self.plan.folder_id)
        except Exception as err:
            return _Outcome(index, RESOLVE, error=err)
        if not matches:
            return _Outcome(index, RESOLVE, PENDING)
        if len(matches) > 1:
            ids = ", ".join(m.id for m in matches)
            return _Outcome(
                index,
                RESOLVE,
                FAILED,
                matches[0].id,
                error=DocsignError(
                    f"{len(matches)} envelopes have externalId {external_id!r} ({ids}); none is sent "
                    "again: keep one and delete the others"
                ),
            )
        found = matches[0]
        if found.status == EnvelopeStatus.DRAFT:
            return _Outcome(index, RESOLVE, CREATED, found.id)
        return _Outcome(index, RESOLVE, SENT, found.id, found.updated_at or utc_now())

    def _finish(self, index: int) -> _Outcome:
        envelope_id = self.state.rows[index].envelope_id
        assert envelope_id is not None
        try:
            envelope = self.hook.get_envelope(envelope_id)
            if envelope.status != EnvelopeStatus.DRAFT:
                if envelope.status in (EnvelopeStatus.PENDING, EnvelopeStatus.COMPLETED):
                    return _Outcome(index, FINISH, SENT, envelope_id, envelope.updated_at or utc_now())
                status = getattr(envelope.status, "value", envelope.status)
                return _Outcome(
                    index,
                    FINISH,
                    FAILED,
                    envelope_id,
                    error=DocsignError(f"envelope {envelope_id} is {status}, so it was not sent"),
                )
            self.hook.distribute_envelope(envelope_id)
        except Exception as err:
            return _Outcome(index, FINISH, CREATED, envelope_id, error=err, writes=1)
        return _Outcome(index, FINISH, SENT, envelope_id, utc_now(), writes=1)

    # -- applying outcomes (dispatcher thread) ------------------------------------------------------

    def _apply(self, outcome: _Outcome) -> BulkStopped | None:
        row = self.state.rows[outcome.index]
        row.attempts += outcome.writes
        if outcome.envelope_id is not None:
            row.envelope_id = outcome.envelope_id
        error = outcome.error
        if outcome.state is not None and (error is None or outcome.state in (CREATED, FAILED)):
            row.state = outcome.state
        if error is None:
            if outcome.action == RESOLVE and row.state == PENDING and outcome.index in self._rounds:
                # Looked up after a failed create and not found: that create round failed for good.
                rounds = self._rounds[outcome.index]
                if rounds >= MAX_TRANSIENT:
                    row.state = FAILED
                    return BulkStopped(
                        f"row {row.key!r}: {rounds} rounds of create, then look-up, found nothing made "
                        f"({row.error}); the campaign stops and the next try resumes from its checkpoint",
                        kind="transient",
                    )
            row.error = None
            if outcome.action != RESOLVE or row.state != PENDING:
                self._transient.pop(outcome.index, None)
                self._rounds.pop(outcome.index, None)
            if outcome.action == RESOLVE and row.state in (SENT, CREATED):
                self.adopted += 1  # found made at the service: adopted, not sent by this try
                if row.state == SENT:
                    row.sent_at = outcome.sent_at
                elif self.plan.distribute:
                    self._ready.append((outcome.index, FINISH))
                return None
            metrics.campaign_row(self.hook.docsign_conn_id, self.plan.campaign_id, outcome.action, row.state)
            if row.state == SENT:
                row.sent_at = outcome.sent_at
                self.finished += 1
            elif row.state == CREATED:
                if self.plan.distribute:
                    self._ready.append((outcome.index, FINISH))
                else:
                    self.finished += 1
            elif row.state == PENDING:
                self._fresh.append(outcome.index)  # not found: never created, send it (leased again)
            return None
        kind = classify_error(error)
        message = str(error).splitlines()[0][:1000]
        if kind == "auth":
            row.error = message
            return BulkStopped(f"the service refused the API key: {message}", kind="auth")
        if outcome.state == FAILED:  # decided by the worker (duplicates, a rejected draft)
            row.error = message
            return self._failed()
        if outcome.action == SEND and not outcome.nothing_created and row.state != CREATED:
            # The create may have happened: look it up once the service has surely finished it.
            row.error = message
            self._rounds[outcome.index] = self._rounds.get(outcome.index, 0) + 1
            self._later(self._clock() + self.settle, outcome.index, RESOLVE)
            self.log.warning(
                "Row %r: %s; looking it up by externalId in %.0fs before anything is sent again",
                row.key,
                message,
                self.settle,
            )
            return None
        if kind in ("transient", "ambiguous"):
            count = self._transient.get(outcome.index, 0) + 1
            self._transient[outcome.index] = count
            if count > MAX_TRANSIENT:
                row.error = message
                return BulkStopped(
                    f"row {row.key!r} kept failing ({count} times): {message}; the campaign stops and "
                    "the next try resumes from its checkpoint",
                    kind="transient",
                )
            retry_after = getattr(error, "retry_after", None)
            action = outcome.action if outcome.action != SEND or row.state != CREATED else FINISH
            self._later(self._clock() + max(retry_after or 0.0, 2.0**count), outcome.index, action)
            return None
        # A permanent refusal of this row: it fails, the campaign goes on.
        row.error = message
        if row.state not in (CREATED,):
            row.state = FAILED
        return self._failed()

    def _failed(self) -> BulkStopped | None:
        self.failures += 1
        metrics.campaign_rows("failed", self.hook.docsign_conn_id, self.plan.campaign_id)
        if self.failures > self.max_failures:
            return BulkStopped(
                f"{self.failures} rows failed in this try, more than max_failures={self.max_failures}; "
                "the campaign stops (its checkpoint lets the next try resume)",
                kind="failures",
            )
        return None

    # -- checkpoint heartbeat and progress -------------------------------------------------------

    def _heartbeat(self, busy: bool) -> None:
        if busy and self._clock() - self._last_write >= HEARTBEAT:
            self.save()

    def _progress(self, force: bool = False) -> None:
        done = sum(1 for r in self.state.rows if self.state.done(r))
        now = self._clock()
        due = done - self._done_at_progress >= self.progress_every or now - self._last_progress >= (
            self.progress_seconds
        )
        if not (force or due):
            return
        self._done_at_progress, self._last_progress = done, now
        counts = self.state.counts()
        speed = self.throughput()
        total = len(self.state.rows)
        self.log.info(progress_line(self.plan.campaign_id, done, total, counts, speed, total - done))
