"""Retention: which envelopes a clean-up deletes, and whether a completed one is safely archived.

Used by :class:`~airflow_provider_docsign.operators.retention.DocsignDeleteEnvelopesOperator`; no HTTP
here (the service's bytes come in through a callable), and no Airflow for local destinations:

* :func:`older_than` takes the envelopes ``GET /envelope`` lists oldest first
  (``orderByColumn=createdAt&orderByDirection=asc``) and yields those created before a cutoff, stopping
  at the first newer one, so that no page after it is read: the service has no date filter;
* :class:`Selection` is what the clean-up selected by; :meth:`Selection.changed` says why an envelope,
  read again right before its delete, no longer matches (its status, its folder, its age);
* :func:`archive_problems` says why a COMPLETED envelope may **not** be deleted yet. Its archive
  manifest (as :class:`~airflow_provider_docsign.operators.archive.DocsignArchiveSignedDocumentsOperator`
  writes it) must be this envelope's, list every item the envelope has now (and the audit log and
  certificate when the archive was asked for them), each a regular file inside the manifest's folder
  with the recorded size and SHA-256, pass the auditor's check
  (:func:`airflow_provider_docsign.archive.auditor.audit_manifest`: hashes, signatures, nothing
  unlisted beside it, the timestamp token when the manifest declares one), and, when the caller gives
  the service's digests, hold exactly the signed bytes the service holds.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from airflow_provider_docsign._sources import open_regular_file
from airflow_provider_docsign.archive.audit_evidence import EvidenceOptions
from airflow_provider_docsign.archive.auditor import UnusableInput, audit_manifest, relative_path
from airflow_provider_docsign.archive.store import Store, quiet_upath
from airflow_provider_docsign.evidence.signatures import TrustPolicy
from airflow_provider_docsign.exceptions import DocsignArchiveEscapeError
from airflow_provider_docsign.service.models import Envelope, EnvelopeSummary, parse_ts

__all__ = [
    "MAX_MANIFEST_BYTES",
    "ArchiveRequirements",
    "Selection",
    "archive_problems",
    "cutoff",
    "older_than",
]

MAX_MANIFEST_BYTES = 16 * 1024 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")
_REPORTS = {"audit_log": "audit log", "certificate": "certificate"}

#: ``item id -> (sha256, size)`` of the signed PDF the service holds for that item.
ServiceDigest = Callable[[str], tuple[str, int]]


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


def _created(envelope: EnvelopeSummary) -> datetime | None:
    try:
        return parse_ts(envelope.created_at)
    except ValueError:
        return None


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
        created = _created(envelope)
        if created is None:
            continue
        if created >= before:
            return
        yield envelope


def _status(envelope: EnvelopeSummary) -> str:
    return str(getattr(envelope.status, "value", envelope.status))


@dataclass(frozen=True)
class Selection:
    """What a clean-up selected by: checked again on each envelope right before its delete.

    :param by_query: Selected by a query (``False``: by ids, where only a change of status to
        COMPLETED matters).
    :param status: The query's status (``None``: any).
    :param folder_id: The query's folder (``None``: the root, which is all the service lists then).
    :param before: The query's cut-off on ``createdAt`` (``None``: no age limit).
    """

    by_query: bool
    status: str | None = None
    folder_id: str | None = None
    before: datetime | None = None

    def changed(self, selected_status: str, now: EnvelopeSummary) -> str | None:
        """Why ``now``, the envelope as just read again, may no longer be deleted (``None``: it may).

        :param selected_status: Its status when it was selected (and, if COMPLETED, its archive checked).
        :param now: The envelope as the service answers now.
        """
        status = _status(now)
        if status == "COMPLETED" and selected_status != "COMPLETED":
            return "became COMPLETED after it was selected; its archive was not checked"
        if not self.by_query:
            return None
        if self.status is not None and status != self.status:
            return f"is now {status}, no longer status={self.status}"
        if (now.folder_id or None) != self.folder_id:
            where = f"folder {now.folder_id}" if now.folder_id else "the root"
            asked = f"folder {self.folder_id}" if self.folder_id else "the root"
            return f"was moved to {where}, out of {asked} that the query named"
        if self.before is not None:
            created = _created(now)
            if created is None or created >= self.before:
                return (
                    f"was created {now.created_at}, no longer before the cut-off "
                    f"{self.before.isoformat().replace('+00:00', 'Z')}"
                )
        return None


@dataclass(frozen=True)
class ArchiveRequirements:
    """What the archive of a COMPLETED envelope must hold before the envelope may be deleted.

    :param include_audit_log: The archive was asked for the audit log: the manifest must list it.
    :param include_certificate: The archive was asked for the certificate: the manifest must list it.
    :param tsa_trust: Pinned TSA certificates for the token a manifest declares (``None``: the token
        is checked against the certificate it carries). A manifest that declares no token needs none.
    :param service_digest: ``item id -> (sha256, size)`` of the signed PDF the service holds: each
        archived item must be those very bytes (``None``: not compared; the manifest's hashes are
        trusted).
    """

    include_audit_log: bool = False
    include_certificate: bool = False
    tsa_trust: TrustPolicy | None = None
    service_digest: ServiceDigest | None = None


def _link_problem(store: Store, name: str) -> str | None:
    """Why the local file ``name`` is not reached without symbolic links below the root (or ``None``)."""
    if not store.local or store.real_root is None:
        return None
    path = store.path(name)
    real = os.path.realpath(path)
    if real != os.path.join(store.real_root, *name.split("/")):
        return f"is reached through a symbolic link (it resolves to {real}); the archive writes none"
    return None


def _read_manifest(store: Store, path: Any) -> dict[str, Any]:
    with open_regular_file(path) if store.local else path.open("rb") as fh:
        raw = fh.read(MAX_MANIFEST_BYTES + 1)
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ValueError(f"larger than {MAX_MANIFEST_BYTES} bytes")
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def _entries(manifest: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(where, entry)`` of every file entry that is an object: the items, then the reports."""
    files = manifest.get("files")
    out = [
        (f"files[{i}]", e)
        for i, e in enumerate(files if isinstance(files, list) else ())
        if isinstance(e, dict)
    ]
    out += [(kind, manifest[kind]) for kind in _REPORTS if isinstance(manifest.get(kind), dict)]
    return out


def _completeness(envelope: Envelope, manifest: dict[str, Any], needs: ArchiveRequirements) -> list[str]:
    """Every item the envelope has, listed once as its signed PDF; the reports the archive was asked for."""
    items = {item.id: item for item in envelope.items}
    problems: list[str] = []
    if not items:
        problems.append(f"envelope {envelope.id} has no items on the service: nothing to compare with")
    counts: dict[str, int] = {}
    for where, entry in _entries(manifest):
        if not where.startswith("files"):
            continue
        item_id = entry.get("item_id")
        if not isinstance(item_id, str) or item_id not in items:
            problems.append(f"{where} is item {item_id!r}, which envelope {envelope.id} does not have")
            continue
        counts[item_id] = counts.get(item_id, 0) + 1
        if entry.get("version") != "signed":
            problems.append(
                f"{where} (item {item_id}) records version {entry.get('version')!r}, not 'signed'"
            )
    for item in envelope.items:
        count = counts.get(item.id, 0)
        if count == 0:
            problems.append(
                f"item {item.id} ({item.title!r}) is not in the manifest: its signed PDF is not "
                "proven archived"
            )
        elif count > 1:
            problems.append(f"item {item.id} is listed {count} times in the manifest")
    for kind, wanted in (("audit_log", needs.include_audit_log), ("certificate", needs.include_certificate)):
        if wanted and not isinstance(manifest.get(kind), dict):
            problems.append(
                f"the {_REPORTS[kind]} is not in the manifest, and the archive was asked for it "
                f"(archive_include_{kind}=True)"
            )
    return problems


def _file_problems(store: Store, folder: str, manifest: dict[str, Any]) -> list[str]:
    """Each listed file: a recorded SHA-256 and size, reached without links, of the recorded size.

    A malformed ``path`` (absolute, ``..``) and a missing file are left to the auditor, which names them.
    """
    problems: list[str] = []
    for where, entry in _entries(manifest):
        sha256, size = entry.get("sha256"), entry.get("size")
        if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
            problems.append(f"{where}: no SHA-256 recorded ({sha256!r})")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            problems.append(f"{where}: no size recorded ({size!r})")
            size = None
        try:
            relative, _ = relative_path(entry, manifest)
        except UnusableInput:
            continue
        name = f"{folder}/{relative}" if folder else relative
        try:
            link = _link_problem(store, name)
            path = store.path(name)
            if link is not None:
                problems.append(f"{where}: {store.uri_of(name)} {link}")
                continue
            if not store.exists(path):
                continue
            actual = store.size(path)
        except DocsignArchiveEscapeError as err:
            problems.append(f"{where}: {err}")
            continue
        except OSError as err:
            problems.append(f"{where}: {store.uri_of(name)} cannot be read: {type(err).__name__}: {err}")
            continue
        if size is not None and actual != size:
            problems.append(f"{where}: {store.uri_of(name)} is {actual} bytes, the manifest says {size}")
    return problems


def _service_problems(manifest: dict[str, Any], digest: ServiceDigest) -> list[str]:
    """Each archived item holds the signed bytes the service holds for it (one download per item)."""
    problems: list[str] = []
    for where, entry in _entries(manifest):
        if not where.startswith("files"):
            continue
        item_id = str(entry["item_id"])
        sha256, size = digest(item_id)
        if (sha256, size) != (entry.get("sha256"), entry.get("size")):
            problems.append(
                f"{where} (item {item_id}): the archived file (sha256 {entry.get('sha256')}, "
                f"{entry.get('size')} bytes) is not the signed PDF the service holds (sha256 {sha256}, "
                f"{size} bytes)"
            )
    return problems


def archive_problems(
    envelope: Envelope,
    store: Store,
    manifest_name: str | None,
    *,
    conn_id: str | None = None,
    requirements: ArchiveRequirements | None = None,
) -> list[str]:
    """Why the archive of ``envelope`` at ``store`` is not a complete, intact archive (empty: it is).

    The service is asked (through ``requirements.service_digest``) only when every local check passed.

    :param envelope: The envelope as the service answers now (its items are what must be archived).
    :param store: The archive destination.
    :param manifest_name: The manifest's name relative to the destination (as the archive operator
        names it for this envelope), or ``None`` when the archive writes no manifest.
    :param conn_id: The connection for an object-store destination.
    :param requirements: What else the archive must hold and how it is proven.
    """
    needs = requirements or ArchiveRequirements()
    if manifest_name is None:
        return ["the archive settings write no manifest (manifest_name=None), so nothing proves it"]
    try:
        uri = store.uri_of(manifest_name)
        path = store.path(manifest_name)
    except DocsignArchiveEscapeError as err:
        return [str(err)]
    try:
        if not store.exists(path):
            return [f"no archive manifest at {uri}"]
        link = _link_problem(store, manifest_name)
        if link is not None:
            return [f"the archive manifest {uri} {link}"]
        manifest = _read_manifest(store, path)
    except (OSError, ValueError) as err:
        return [f"the archive manifest {uri} cannot be read: {type(err).__name__}: {err}"]
    if manifest.get("envelope_id") != envelope.id:
        return [f"the manifest {uri} is of envelope {manifest.get('envelope_id')!r}"]
    problems: list[str] = []
    if manifest.get("version") != "signed" or manifest.get("status") != "COMPLETED":
        problems.append(
            f"the manifest {uri} records version {manifest.get('version')!r} of a "
            f"{manifest.get('status')!r} envelope, not the signed PDFs of the completed one"
        )
    if not manifest.get("files"):
        problems.append(f"the manifest {uri} lists no files")
    problems += _completeness(envelope, manifest, needs)
    problems += _file_problems(store, manifest_name.rpartition("/")[0], manifest)
    # The token is checked when there is one, and must be there when the manifest declares it; the
    # pin applies to a declared token only (a pin alone would make every manifest need a token).
    declared = isinstance(manifest.get("timestamp"), dict)
    options = EvidenceOptions(tsa_trust=needs.tsa_trust if declared else None)
    try:
        with quiet_upath():  # Airflow 2.11's universal_pathlib warns on every join of a remote path
            outcomes = audit_manifest(
                uri if not store.local else str(path), None, conn_id=conn_id, options=options
            )
    except UnusableInput as err:
        return [*problems, str(err)]
    problems += [f"{o.file}: {'; '.join(o.problems)}" for o in outcomes if o.problems]
    if not problems and needs.service_digest is not None:
        problems += _service_problems(manifest, needs.service_digest)
    return problems
