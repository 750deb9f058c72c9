"""DocsignBatchArchiveOperator: archive many completed envelopes in one task, resumably."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException, Asset
from airflow_provider_docsign._text import printable
from airflow_provider_docsign.archive.batch import BatchOutcome, existing_manifest, unsigned_entry
from airflow_provider_docsign.archive.store import Store
from airflow_provider_docsign.bulk.state import format_duration
from airflow_provider_docsign.exceptions import (
    DocsignArchiveError,
    DocsignArchiveRefusedError,
    DocsignAuthError,
    DocsignEnvelopeFailedError,
    DocsignEnvelopeNotReadyError,
    DocsignError,
)
from airflow_provider_docsign.hooks._endpoints import GET_MANY_BATCH
from airflow_provider_docsign.operators._bulk import install_pacer
from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator

if TYPE_CHECKING:
    import logging

    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.archive.archiver import EnvelopeArchiver
    from airflow_provider_docsign.service.models import Envelope

__all__ = ["DocsignBatchArchiveOperator"]

#: The hook's connection pool holds 16 connections.
MAX_IN_FLIGHT = 16
UNSIGNED_CHOICES = ("fail", "skip")
NOT_FOUND = "not found: deleted, or not the API key's team"


def progress_line(outcome: BatchOutcome, total: int, seconds: float) -> str:
    """``Batch archive: 1,200/10,000 envelopes done (...); 41.2 envelopes/min; ETA 3h34m``.

    :param outcome: The batch so far.
    :param total: The envelopes of the batch.
    :param seconds: Seconds since the batch started.
    """
    done = outcome.done
    rate = done * 60.0 / seconds if seconds > 0 else 0.0
    left = max(0, total - done)
    eta = f"; ETA {format_duration(left * 60.0 / rate)}" if rate > 0 and left else ""
    return (
        f"Batch archive: {done:,}/{total:,} envelopes done (archived {outcome.archived:,}, already archived "
        f"{outcome.skipped:,}, not signed {outcome.not_signed:,}, failed {outcome.failed:,}); "
        f"{rate:,.1f} envelopes/min{eta}"
    )


class BatchProgress:
    """Logs :func:`progress_line` every ``every`` envelopes done or every ``seconds`` seconds.

    :param outcome: The batch's outcome, read at each line.
    :param total: The envelopes of the batch.
    :param every: A line every this many envelopes done...
    :param seconds: ...or when this many seconds have passed since the last line.
    :param log: Where the lines go.
    :param clock: Seconds, monotonic (a test passes a fake one).
    """

    def __init__(
        self,
        outcome: BatchOutcome,
        total: int,
        *,
        every: int,
        seconds: float,
        log: logging.Logger | Any,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.outcome, self.total, self.every, self.seconds = outcome, total, every, seconds
        self.log, self.clock = log, clock
        self.started = self.last = clock()
        self.done_at_last = 0

    def tick(self) -> None:
        """Log a line if ``every`` more envelopes are done, or ``seconds`` passed, since the last one."""
        now, done = self.clock(), self.outcome.done
        if done - self.done_at_last < self.every and now - self.last < self.seconds:
            return
        self.last, self.done_at_last = now, done
        self.log.info("%s", progress_line(self.outcome, self.total, now - self.started))


class DocsignBatchArchiveOperator(DocsignArchiveSignedDocumentsOperator):
    """Archive many envelopes in one task: one folder and one manifest per envelope, resumable.

    Every envelope is archived by the same
    :class:`~airflow_provider_docsign.archive.archiver.EnvelopeArchiver` that
    :class:`DocsignArchiveSignedDocumentsOperator` uses, with the same parameters, the same
    verification (content type, ``%PDF-`` magic, SHA-256 and size, digital signatures, atomic moves,
    no path outside the destination) and the same evidence (timestamp over each manifest, long-term
    validation copies, retention); every parameter of that operator is accepted here. The default
    ``filename_template`` puts each envelope in its own folder (``{envelope_key}/...``) with its own
    ``manifest.json``.

    - **Many at once.** Envelopes are read 20 per request and archived ``max_in_flight`` at a time,
      through one pacer that keeps to the service's rate limit (``X-RateLimit-*``, ``Retry-After``).
    - **Resumable.** An envelope whose manifest is already in the destination and still matches it
      (same envelope, version, destination and file names, every file there with its recorded size,
      signatures recorded when verified) is skipped without a download. A retry after a failure
      archives only what is missing.
    - **Failures.** An envelope that cannot be archived does not stop the others; at the end the task
      fails, naming the first few (a retry resumes). An envelope id the service does not know (deleted,
      or another team's) is such a failure, unless ``on_unsigned="skip"``: it is then left out as
      ``DELETED``, as the batch wait counts it. When not one of the envelopes is found, the task fails
      whatever ``on_unsigned`` says (the API key is most likely another team's).
    - **Not signed.** Envelopes that are not COMPLETED (rejected, cancelled, still pending) fail the
      task too, after the others are archived (``on_unsigned="fail"``, the default). With
      ``on_unsigned="skip"`` they are not archived, each is logged once (id, status, rejection
      reason) and listed in the XCom, and the task succeeds with the completed ones archived.
    - **Progress.** A line every ``progress_every`` envelopes or ``progress_seconds`` seconds:
      ``Batch archive: 1,200/10,000 envelopes done (archived 1,150, already archived 47, not signed
      3, failed 0); 41.2 envelopes/min; ETA 3h34m``.

    Returns (XCom) counts, the first failures and the envelopes left out as not signed::

        {"destination", "envelopes", "archived", "skipped", "not_signed", "failed", "failures": [...],
         "not_signed_envelopes": [{"envelope_id", "status", "reason"}, ...]}

    ``skipped`` counts the envelopes already archived; ``not_signed_envelopes`` lists at most 1,000
    (``not_signed`` counts them all).

    :param envelope_ids: The envelopes (templated): a list of ids or of dicts with ``envelope_id``,
        e.g. a sensor's or mapped task's XCom.
    :param result_table: Or a bulk campaign's result table (templated): the envelopes of its ``sent``
        rows. Give exactly one of the two.
    :param result_table_format: ``"jsonl"`` or ``"parquet"``: the result table's format when its name
        does not say it (``results.out``); ``None`` (default) reads it from the extension
        (``.jsonl``, ``.ndjson``, ``.parquet``).
    :param destination: As for :class:`DocsignArchiveSignedDocumentsOperator` (templated).
    :param max_in_flight: Envelopes archived at once (1-16, default 4).
    :param reserve_fraction: Share of the rate-limit window left for the key's other users (0.1).
    :param on_unsigned: ``"fail"`` (default) or ``"skip"``: what an envelope that is not COMPLETED
        (with ``version="signed"``) does to the task. Skipped ones are counted in ``not_signed`` and
        listed in ``not_signed_envelopes``.
    :param progress_every: A progress line every this many envelopes done (default 100)...
    :param progress_seconds: ...or every this many seconds (default 30).
    :param kwargs: Every other parameter of :class:`DocsignArchiveSignedDocumentsOperator`.
    """

    template_fields: Sequence[str] = ("envelope_ids", "result_table", "destination", "destination_conn_id")
    template_fields_renderers = {"envelope_ids": "json"}

    def __init__(
        self,
        *,
        destination: Any,
        envelope_ids: Any = None,
        result_table: Any = None,
        max_in_flight: int = 4,
        reserve_fraction: float = 0.1,
        on_unsigned: str = "fail",
        result_table_format: str | None = None,
        progress_every: int = 100,
        progress_seconds: float = 30.0,
        **kwargs: Any,
    ) -> None:
        if (envelope_ids is None) == (result_table is None):
            raise ValueError("DocsignBatchArchiveOperator: give exactly one of envelope_ids and result_table")
        if "envelope_id" in kwargs:
            raise ValueError(
                "DocsignBatchArchiveOperator archives envelope_ids or a result_table, not envelope_id"
            )
        if not isinstance(max_in_flight, int) or not 1 <= max_in_flight <= MAX_IN_FLIGHT:
            raise ValueError(f"max_in_flight must be 1-{MAX_IN_FLIGHT}, not {max_in_flight!r}")
        if not isinstance(on_unsigned, str) or on_unsigned not in UNSIGNED_CHOICES:
            raise ValueError(f"on_unsigned must be 'fail' or 'skip', not {on_unsigned!r}")
        if result_table_format is not None:
            from airflow_provider_docsign.bulk.plan import OUTPUT_FORMATS

            if result_table is None:
                raise ValueError("result_table_format applies to a result_table, not to envelope_ids")
            if result_table_format not in OUTPUT_FORMATS:
                raise ValueError(
                    f"result_table_format must be one of {', '.join(OUTPUT_FORMATS)} or None, "
                    f"not {result_table_format!r}"
                )
        if isinstance(progress_every, bool) or not isinstance(progress_every, int) or progress_every < 1:
            raise ValueError(f"progress_every must be a whole number >= 1, not {progress_every!r}")
        if (
            isinstance(progress_seconds, bool)
            or not isinstance(progress_seconds, int | float)
            or not progress_seconds > 0
        ):
            raise ValueError(f"progress_seconds must be a number > 0, not {progress_seconds!r}")
        if not 0 <= reserve_fraction < 1:
            raise ValueError(f"reserve_fraction must be in [0, 1), not {reserve_fraction!r}")
        super().__init__(envelope_id="", destination=destination, **kwargs)
        self.envelope_ids = envelope_ids
        self.result_table = result_table
        self.max_in_flight = max_in_flight
        self.reserve_fraction = reserve_fraction
        self.on_unsigned = on_unsigned
        self.result_table_format = result_table_format
        self.progress_every = progress_every
        self.progress_seconds = float(progress_seconds)

    # -- execute ----------------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        """Archive every envelope not archived yet; fail at the end if any could not be archived."""
        ids = self._ids()
        store = Store(self.destination, self.destination_conn_id)
        outcome = BatchOutcome(destination=store.uri)
        install_pacer(self.hook, self.reserve_fraction, self.log)
        # The timestamp, copies and retention, as the single archive operator asks for them; one set per
        # thread (each keeps its own TSA client and copy writer), the first one here, to check with.
        archiver = self._thread_archiver()
        self.log.info("Archiving %d envelope(s) to %s, %d at a time", len(ids), store.uri, self.max_in_flight)
        progress = BatchProgress(
            outcome, len(ids), every=self.progress_every, seconds=self.progress_seconds, log=self.log
        )
        outstanding: dict[Future[None], str] = {}
        with ThreadPoolExecutor(max_workers=self.max_in_flight, thread_name_prefix="docsign-archive") as pool:
            for envelope in self._envelopes(ids, outcome):
                progress.tick()  # an id the service does not know is done too
                if not self._ready(archiver, envelope, outcome):
                    progress.tick()
                    continue
                if existing_manifest(archiver, envelope, self._store()) is not None:
                    outcome.skipped += 1
                    progress.tick()
                    continue
                while len(outstanding) >= self.max_in_flight:
                    self._collect(outstanding, outcome, progress)
                outstanding[pool.submit(self._archive_one, envelope)] = envelope.id
            while outstanding:
                self._collect(outstanding, outcome, progress)
        progress.tick()
        if ids and not outcome.found:
            # Not one of them: the connection's key is most likely another team's. Never a success.
            raise AirflowFailException(
                f"{self.task_id}: none of the {len(ids)} envelope(s) was found ({NOT_FOUND}): check that "
                f"connection {self.docsign_conn_id!r} holds an API key of the team that sent them"
            )
        result = outcome.to_xcom(len(ids))
        self.log.info(
            "Archived %d, skipped %d (already archived), not signed %d, failed %d of %d envelope(s) in %s",
            outcome.archived,
            outcome.skipped,
            outcome.not_signed,
            outcome.failed,
            len(ids),
            store.uri,
        )
        self._emit_batch_event(context, store, result)
        if outcome.failures:
            lines = "\n".join(
                f"  - {printable(f['envelope_id'], 200)}: {printable(f['error'])}"
                for f in outcome.failures[:5]
            )
            more = f"\n  ... and {outcome.failed - 5} more" if outcome.failed > 5 else ""
            message = (
                f"{outcome.failed} of {len(ids)} envelope(s) could not be archived (the others were):"
                f"\n{lines}{more}"
            )
            if outcome.retryable:
                raise DocsignArchiveError(message + "\nA retry archives only what is missing.")
            raise AirflowFailException(message)
        return result

    # -- steps ------------------------------------------------------------------------------------

    def _ids(self) -> list[str]:
        from airflow_provider_docsign.sensors._evaluate import normalize_envelope_ids

        try:
            if self.result_table is not None:
                from airflow_provider_docsign.bulk.plan import OUTPUT_FORMATS, format_of, sent_envelope_ids
                from airflow_provider_docsign.bulk.store import resolve_path

                path = resolve_path(self.result_table, "result_table")
                fmt = format_of(path, self.result_table_format, OUTPUT_FORMATS, "result_table")
                ids = sent_envelope_ids(path, fmt)
                try:  # the same check as envelope_ids: nothing odd reaches a request or a log line
                    return normalize_envelope_ids(envelope_ids=ids) if ids else []
                except ValueError as err:
                    raise ValueError(f"the result table {path} holds a bad envelope id: {err}") from err
            return normalize_envelope_ids(envelope_ids=self.envelope_ids)
        except (ValueError, TypeError, OSError) as err:
            raise AirflowFailException(f"{self.task_id}: {err}") from err

    def _store(self) -> Store:
        # One store per envelope: a failed envelope removes only the folders its own archive created.
        return Store(self.destination, self.destination_conn_id)

    def _envelopes(self, ids: list[str], outcome: BatchOutcome) -> Iterator[Envelope]:
        """The envelopes, read 20 per request as they are needed (never all held at once)."""
        for start in range(0, len(ids), GET_MANY_BATCH):
            batch = ids[start : start + GET_MANY_BATCH]
            try:
                found = {e.id: e for e in self.hook.get_envelopes(batch)}
            except DocsignAuthError as err:
                raise AirflowFailException(f"{self.task_id}: {err}") from err
            for envelope_id in batch:
                envelope = found.get(envelope_id)
                if envelope is None and self.on_unsigned == "skip":
                    # As the batch wait counts it: DELETED, one of the envelopes that did not complete.
                    self._skip(
                        outcome, {"envelope_id": envelope_id, "status": "DELETED", "reason": NOT_FOUND}
                    )
                elif envelope is None:
                    outcome.fail(envelope_id, DocsignError(NOT_FOUND), retryable=False)
                else:
                    outcome.found += 1
                    yield envelope

    def _skip(self, outcome: BatchOutcome, entry: dict[str, Any]) -> None:
        """Leave out an envelope that is not COMPLETED (``on_unsigned="skip"``): log it once, list it."""
        reason = entry["reason"]  # worded as the wait words it (service/unsigned.py)
        detail = f" ({reason})" if entry["status"] == "DELETED" else f": {reason}" if reason else ""
        self.log.warning(
            "Not archived (on_unsigned='skip'): envelope %s is %s%s",
            printable(entry["envelope_id"], 200),
            entry["status"],
            printable(detail),
        )
        outcome.skip_unsigned(entry)

    def _ready(self, archiver: EnvelopeArchiver, envelope: Envelope, outcome: BatchOutcome) -> bool:
        try:
            archiver.check_status(envelope)
        except (DocsignEnvelopeNotReadyError, DocsignEnvelopeFailedError) as err:
            entry = unsigned_entry(envelope)
            if self.on_unsigned == "skip":
                self._skip(outcome, entry)
                return False
            error: Exception = err
            if entry["reason"]:  # who rejected it and why, or whose link expired: as the wait says it
                why = f"envelope {envelope.id} is {entry['status']}: {entry['reason']}; nothing was archived"
                error = type(err)(printable(why, 1000))
            outcome.fail(envelope.id, error, retryable=isinstance(err, DocsignEnvelopeNotReadyError))
            return False
        except (DocsignArchiveError, DocsignArchiveRefusedError) as err:
            outcome.fail(envelope.id, err, retryable=isinstance(err, DocsignArchiveError))
            return False
        return True

    def _thread_archiver(self) -> EnvelopeArchiver:
        """This thread's archiver, with the single archive operator's settings and evidence."""
        local = self.__dict__.setdefault("_local", threading.local())
        archiver: EnvelopeArchiver | None = getattr(local, "archiver", None)
        if archiver is None:
            archiver = local.archiver = self.archiver(self.evidence())
        return archiver

    def _archive_one(self, envelope: Envelope) -> None:
        _, records = self._thread_archiver().archive(envelope, self._store())
        for record in records:
            self.log.info(
                "%s %s (%d bytes, sha256 %s)", record.outcome, record.uri, record.size, record.sha256
            )

    def _collect(
        self, outstanding: dict[Future[None], str], outcome: BatchOutcome, progress: BatchProgress
    ) -> None:
        # Woken at least every progress_seconds, so that a slow envelope still gets its progress line.
        done, _ = wait(list(outstanding), timeout=progress.seconds, return_when=FIRST_COMPLETED)
        progress.tick()
        for future in done:
            envelope_id = outstanding.pop(future)
            error = future.exception()
            if error is None:
                outcome.archived += 1
            elif isinstance(error, DocsignAuthError):
                raise AirflowFailException(f"{self.task_id}: {error}") from error
            elif isinstance(error, DocsignArchiveRefusedError):
                outcome.fail(envelope_id, error, retryable=False)
            elif isinstance(error, Exception):
                outcome.fail(envelope_id, error, retryable=True)
            else:
                raise error
            progress.tick()

    def _emit_batch_event(self, context: Context, store: Store, result: dict[str, Any]) -> None:
        events = context.get("outlet_events") if hasattr(context, "get") else None
        if events is None:
            return
        extra = {k: result[k] for k in ("envelopes", "archived", "skipped", "not_signed", "failed")}
        for outlet in self.outlets or ():
            try:
                if isinstance(outlet, Asset) and outlet.uri == store.uri:
                    events[outlet].extra.update(extra)
            except Exception:  # lineage is best effort; the archive itself is done
                self.log.warning("Could not record the asset event for %s", store.uri, exc_info=True)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: see :func:`airflow_provider_docsign.export.lineage.batch_archive_facets`."""
        from airflow_provider_docsign.export import lineage

        return lineage.batch_archive_facets(self, task_instance)
