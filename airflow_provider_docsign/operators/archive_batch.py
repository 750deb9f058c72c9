"""DocsignBatchArchiveOperator: archive many completed envelopes in one task, resumably."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException, Asset
from airflow_provider_docsign.archive.batch import BatchOutcome, existing_manifest
from airflow_provider_docsign.archive.store import Store
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
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.archive.archiver import EnvelopeArchiver
    from airflow_provider_docsign.service.models import Envelope

__all__ = ["DocsignBatchArchiveOperator"]

#: The hook's connection pool holds 16 connections.
MAX_IN_FLIGHT = 16
UNSIGNED_CHOICES = ("fail", "skip")


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
      fails, naming the first few (a retry resumes). Envelopes that are not COMPLETED (rejected,
      cancelled, still pending) fail it too, unless ``on_unsigned="skip"``.

    Returns (XCom) counts, never one entry per envelope::

        {"destination", "envelopes", "archived", "skipped", "not_signed", "failed", "failures": [...]}

    :param envelope_ids: The envelopes (templated): a list of ids or of dicts with ``envelope_id``,
        e.g. a sensor's or mapped task's XCom.
    :param result_table: Or a bulk campaign's result table (templated): the envelopes of its ``sent``
        rows. Give exactly one of the two.
    :param destination: As for :class:`DocsignArchiveSignedDocumentsOperator` (templated).
    :param max_in_flight: Envelopes archived at once (1-16, default 4).
    :param reserve_fraction: Share of the rate-limit window left for the key's other users (0.1).
    :param on_unsigned: ``"fail"`` (default) or ``"skip"``: what an envelope that is not COMPLETED
        (with ``version="signed"``) does to the task. Skipped ones are counted in ``not_signed``.
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
        if on_unsigned not in UNSIGNED_CHOICES:
            raise ValueError(f"on_unsigned must be one of {UNSIGNED_CHOICES}, not {on_unsigned!r}")
        if not 0 <= reserve_fraction < 1:
            raise ValueError(f"reserve_fraction must be in [0, 1), not {reserve_fraction!r}")
        super().__init__(envelope_id="", destination=destination, **kwargs)
        self.envelope_ids = envelope_ids
        self.result_table = result_table
        self.max_in_flight = max_in_flight
        self.reserve_fraction = reserve_fraction
        self.on_unsigned = on_unsigned

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
        outstanding: dict[Future[None], str] = {}
        with ThreadPoolExecutor(max_workers=self.max_in_flight, thread_name_prefix="docsign-archive") as pool:
            for envelope in self._envelopes(ids, outcome):
                if not self._ready(archiver, envelope, outcome):
                    continue
                if existing_manifest(archiver, envelope, self._store()) is not None:
                    outcome.skipped += 1
                    continue
                while len(outstanding) >= self.max_in_flight:
                    self._collect(outstanding, outcome)
                outstanding[pool.submit(self._archive_one, envelope)] = envelope.id
            while outstanding:
                self._collect(outstanding, outcome)
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
            lines = "\n".join(f"  - {f['envelope_id']}: {f['error']}" for f in outcome.failures[:5])
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
                return sent_envelope_ids(path, format_of(path, None, OUTPUT_FORMATS, "result_table"))
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
                if envelope is None:
                    outcome.fail(
                        envelope_id,
                        DocsignError("not found (deleted, or not the key's team)"),
                        retryable=False,
                    )
                    continue
                yield envelope

    def _ready(self, archiver: EnvelopeArchiver, envelope: Envelope, outcome: BatchOutcome) -> bool:
        try:
            archiver.check_status(envelope)
        except (DocsignEnvelopeNotReadyError, DocsignEnvelopeFailedError) as err:
            if self.on_unsigned == "skip":
                self.log.info("Not archived (on_unsigned='skip'): %s", err)
                outcome.not_signed += 1
            else:
                outcome.fail(envelope.id, err, retryable=isinstance(err, DocsignEnvelopeNotReadyError))
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

    def _collect(self, outstanding: dict[Future[None], str], outcome: BatchOutcome) -> None:
        done, _ = wait(list(outstanding), return_when=FIRST_COMPLETED)
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
