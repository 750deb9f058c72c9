"""Archiving many envelopes: which are archived already, and how a batch ends (no Airflow, no HTTP).

An envelope counts as archived when its manifest is where this archive's settings put it and still
describes it: the same envelope, version and destination, the same file names in the same order
(items, then the audit log and certificate if asked for), every file present with its recorded size,
when signatures are verified a signature result for every item, and the evidence the archive asks
for (:class:`~airflow_provider_docsign.archive.evidence.Evidence`): the timestamp token beside the
manifest, each item's long-term validation copy, the retention recorded. Such an envelope is skipped
by a batch that runs again; anything less is archived again (files already in place with the same
bytes are then reported ``unchanged``, and a complete timestamped archive is left as it is).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign.service.expiry import expired_recipients
from airflow_provider_docsign.service.unsigned import expired_reason, rejection_reason

if TYPE_CHECKING:
    from airflow_provider_docsign.archive.archiver import EnvelopeArchiver
    from airflow_provider_docsign.archive.store import Store
    from airflow_provider_docsign.service.models import Envelope

__all__ = ["MAX_LISTED_UNSIGNED", "BatchOutcome", "existing_manifest", "unsigned_entry"]

_MAX_MANIFEST_BYTES = 16 * 1024 * 1024
#: At most this many not-signed envelopes are listed in the XCom (``not_signed`` counts them all; the
#: task's log names every one).
MAX_LISTED_UNSIGNED = 1000


def existing_manifest(archiver: EnvelopeArchiver, envelope: Envelope, store: Store) -> dict[str, Any] | None:
    """The manifest of an earlier archive of ``envelope`` that still matches it, else ``None``.

    :param archiver: The archiver with this task's settings (its plan decides the names).
    :param envelope: The envelope as just read.
    :param store: The destination.
    """
    plan, manifest_name = archiver.plan(envelope)
    if manifest_name is None:
        return None  # no manifest to trust: archive again (same bytes come out "unchanged")
    target = store.path(manifest_name)
    if not store.exists(target) or store.size(target) > _MAX_MANIFEST_BYTES:
        return None
    try:
        with target.open("rb") as fh:
            manifest = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, Mapping):
        return None
    if (
        manifest.get("envelope_id") != envelope.id
        or manifest.get("version") != archiver.version
        or manifest.get("destination") != store.uri
    ):
        return None
    entries = list(manifest.get("files") or [])
    for kind in ("audit_log", "certificate"):
        if kind in {k for k, _, _ in plan}:
            entries.append(manifest.get(kind))
    if [e.get("name") if isinstance(e, Mapping) else None for e in entries] != [name for _, name, _ in plan]:
        return None
    for entry in entries:
        name, size = entry.get("name"), entry.get("size")
        final = store.path(str(name))
        if not isinstance(size, int) or not store.exists(final) or store.size(final) != size:
            return None
    if archiver.verify_signatures != "off" and any("signature" not in e for e in manifest.get("files") or []):
        return None
    evidence = archiver.evidence
    item_names = [name for kind, name, _ in plan if kind == "item"]
    for name in evidence.names(item_names, manifest_name):  # the token, the long-term copies
        if not store.exists(store.path(name)):
            return None
    if evidence.tsa is not None and "timestamp" not in manifest:
        return None
    if evidence.ltv and any("ltv" not in e for e in manifest.get("files") or []):
        return None
    if evidence.retention is not None and "retention" not in manifest:
        return None
    return dict(manifest)


def unsigned_entry(envelope: Envelope) -> dict[str, Any]:
    """What the XCom and the log say of an envelope that is not archived because it is not COMPLETED.

    The reason is worded as the campaign's wait words it
    (:mod:`airflow_provider_docsign.service.unsigned`): who rejected it and what they wrote, or whose
    signing link expired and when, each recipient named by id, role and masked e-mail.

    :param envelope: The envelope as just read (REJECTED, CANCELLED, PENDING or DRAFT).
    :return: ``{"envelope_id", "status", "reason"}``; ``reason`` is ``None`` when there is nothing to
        say (cancelled, or pending with every link still valid).
    """
    status = str(getattr(envelope.status, "value", envelope.status)) if envelope.status is not None else None
    reason: str | None = None
    if status == "REJECTED":
        reason = rejection_reason(envelope)
    elif status == "PENDING":
        reason = expired_reason(expired_recipients(envelope.recipients))
    return {"envelope_id": envelope.id, "status": status, "reason": reason}


@dataclass
class BatchOutcome:
    """What a batch archive did, envelope by envelope (counts and the first failures, for XCom).

    :param destination: The destination's URI.
    :param found: Envelopes the service returned (an id it left out is not found).
    """

    destination: str
    archived: int = 0
    skipped: int = 0
    not_signed: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    retryable: int = 0
    unsigned: list[dict[str, Any]] = field(default_factory=list)
    found: int = 0

    @property
    def done(self) -> int:
        """Envelopes dealt with so far, whatever happened to them."""
        return self.archived + self.skipped + self.not_signed + self.failed

    @property
    def failed(self) -> int:
        """Envelopes that could not be archived."""
        return len(self.failures)

    def fail(self, envelope_id: str, error: BaseException, *, retryable: bool) -> None:
        """Record an envelope that could not be archived."""
        self.failures.append({"envelope_id": envelope_id, "error": str(error).splitlines()[0][:500]})
        self.retryable += int(retryable)

    def skip_unsigned(self, entry: dict[str, Any]) -> None:
        """Record an envelope left out because it is not COMPLETED (``on_unsigned="skip"``).

        :param entry: Its :func:`unsigned_entry`.
        """
        self.not_signed += 1
        if len(self.unsigned) < MAX_LISTED_UNSIGNED:
            self.unsigned.append(entry)

    def to_xcom(self, total: int, *, examples: int = 20) -> dict[str, Any]:
        """Counts, the first failures and the envelopes left out as not signed (the first 1,000)."""
        return {
            "destination": self.destination,
            "envelopes": total,
            "archived": self.archived,
            "skipped": self.skipped,
            "not_signed": self.not_signed,
            "failed": self.failed,
            "failures": self.failures[:examples],
            "not_signed_envelopes": list(self.unsigned),
        }
