"""Retention: which envelopes a clean-up deletes, and whether a completed one is safely archived.

Pure code (no HTTP, no Airflow for local destinations), used by
:class:`~airflow_provider_docsign.operators.retention.DocsignDeleteEnvelopesOperator`:

* :func:`older_than` takes the envelopes ``GET /envelope`` lists oldest first
  (``orderByColumn=createdAt&orderByDirection=asc``) and yields those created before a cutoff, stopping
  at the first newer one, so that no page after it is read: the service has no date filter;
* :func:`archive_problems` says why a COMPLETED envelope may **not** be deleted yet: its archive
  manifest (as :class:`~airflow_provider_docsign.operators.archive.DocsignArchiveSignedDocumentsOperator`
  writes it) is missing at the destination, is another envelope's, or fails the auditor's check of
  :func:`airflow_provider_docsign.archive.auditor.audit_manifest` (a listed file missing or changed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

from airflow_provider_docsign.archive.auditor import UnusableInput, audit_manifest
from airflow_provider_docsign.archive.store import Store
from airflow_provider_docsign.service.models import EnvelopeSummary, parse_ts

__all__ = ["MAX_MANIFEST_BYTES", "archive_problems", "cutoff", "older_than"]

MAX_MANIFEST_BYTES = 16 * 1024 * 1024


def cutoff(now: datetime, older_than_days: float | None) -> datetime | None:
    """The creation time before which an envelope is old enough (``None``: no age limit).

    :param now: The current time (aware).
    :param older_than_days: Days; fractions allowed; must not be negative.
    """
    if older_than_days is None:
        return None
    days = float(older_than_days)
    if days < 0 or days != days:  # negative or NaN
        raise ValueError(f"older_than_days must be a number >= 0, not {older_than_days!r}")
    return now - timedelta(days=days)


def older_than(envelopes: Iterable[EnvelopeSummary], before: datetime | None) -> Iterator[EnvelopeSummary]:
    """The envelopes created before ``before``, from a listing sorted oldest first.

    Stops at the first envelope created at or after ``before`` (so the listing's later pages are never
    requested). An envelope without a readable ``createdAt`` is skipped, never deleted by age.

    :param envelopes: Envelopes in ascending ``createdAt`` order.
    :param before: The cutoff (``None``: every envelope).
    """
    for envelope in envelopes:
        if before is None:
            yield envelope
            continue
        try:
            created = parse_ts(envelope.created_at)
        except ValueError:
            created = None
        if created is None:
            continue
        if created >= before:
            return
        yield envelope


def _read_manifest(store: Store, name: str) -> dict[str, Any]:
    path = store.path(name)
    with path.open("rb") as fh:
        raw = fh.read(MAX_MANIFEST_BYTES + 1)
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ValueError(f"larger than {MAX_MANIFEST_BYTES} bytes")
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def archive_problems(
    envelope_id: str, store: Store, manifest_name: str | None, *, conn_id: str | None = None
) -> list[str]:
    """Why the archive of ``envelope_id`` at ``store`` is not a complete, intact archive (empty: it is).

    :param envelope_id: The envelope.
    :param store: The archive destination.
    :param manifest_name: The manifest's name relative to the destination (as the archive operator
        names it for this envelope), or ``None`` when the archive writes no manifest.
    :param conn_id: The connection for an object-store destination.
    """
    if manifest_name is None:
        return ["the archive settings write no manifest (manifest_name=None), so nothing proves it"]
    uri = store.uri_of(manifest_name)
    try:
        if not store.exists(store.path(manifest_name)):
            return [f"no archive manifest at {uri}"]
        manifest = _read_manifest(store, manifest_name)
    except (OSError, ValueError) as err:
        return [f"the archive manifest {uri} cannot be read: {type(err).__name__}: {err}"]
    problems: list[str] = []
    if manifest.get("envelope_id") != envelope_id:
        problems.append(f"the manifest {uri} is of envelope {manifest.get('envelope_id')!r}")
        return problems
    if manifest.get("version") != "signed" or manifest.get("status") != "COMPLETED":
        problems.append(
            f"the manifest {uri} records version {manifest.get('version')!r} of a "
            f"{manifest.get('status')!r} envelope, not the signed PDFs of the completed one"
        )
    if not manifest.get("files"):
        problems.append(f"the manifest {uri} lists no files")
    try:
        outcomes = audit_manifest(
            uri if not store.local else str(store.path(manifest_name)), None, conn_id=conn_id
        )
    except UnusableInput as err:
        return [*problems, str(err)]
    for outcome in outcomes:
        if outcome.problems:
            problems.append(f"{outcome.file}: {'; '.join(outcome.problems)}")
    return problems
