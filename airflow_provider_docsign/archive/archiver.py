"""Archive one envelope's PDFs: stage, verify, compare, then commit with a manifest.

:class:`EnvelopeArchiver` is the work of every archiving operator, tested without Airflow. It works in
three phases so that a failure never leaves a partial or unverified file at a final name:

1. **stage**: every item (in ``order``), then the audit log and certificate if asked for, is streamed
   by the hook into a temporary name beside its final name (``.<name>.<token>.partial``). The hook
   checks the content type and the ``%PDF-`` magic before the first byte is written; the archiver
   hashes the bytes as they pass and cross-checks the hook's SHA-256 and size;
2. **compare**: each final name is compared with what is there already. The same SHA-256 means
   "unchanged"; different bytes fail (``overwrite=False``) before any file is moved, and the existing
   file is not touched. Then (``verify_signatures`` other than ``"off"``) every staged PDF's digital
   signature is verified with pyHanko: a failure under ``"require"`` stops here;
3. **commit**: ``manifest.json`` is written under a temporary name first (a full disk fails here,
   before anything moves), then staged files are moved into place (an atomic rename on a local disk;
   on object stores the object appears whole or not at all), then the manifest is renamed into place.

Before anything is downloaded, every final and temporary local path is checked by the Store to lie
inside the destination's real root. Every temporary file is removed on failure. No HTTP here.
"""

from __future__ import annotations

import datetime
import functools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign.archive import signatures as _verify
from airflow_provider_docsign.archive.evidence import Evidence, LtvStaged, token_name
from airflow_provider_docsign.archive.naming import (
    DEFAULT_FILENAME_TEMPLATE,
    DEFAULT_MANIFEST_NAME,
    ArchivedFile,
    build_manifest,
    common_directory,
    disambiguate,
    render_filename,
    render_manifest_name,
)
from airflow_provider_docsign.archive.store import PDF_MAGIC, HashingWriter, Store, sync
from airflow_provider_docsign.exceptions import (
    DocsignArchiveConflictError,
    DocsignArchiveError,
    DocsignArchiveRefusedError,
    DocsignArchiveSignatureError,
    DocsignEnvelopeFailedError,
    DocsignEnvelopeNotReadyError,
    DocsignError,
)
from airflow_provider_docsign.service.models import EnvelopeStatus

if TYPE_CHECKING:
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.service.models import DownloadResult, Envelope

__all__ = ["EnvelopeArchiver", "now"]

_MAX_MANIFEST_BYTES = 16 * 1024 * 1024
_REPORT_NAMES = {"audit_log": "audit-log.pdf", "certificate": "certificate.pdf"}


def now() -> str:
    """The current UTC time as the manifest writes it (ISO 8601, milliseconds, ``Z``)."""
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


@dataclass
class _Staged:
    record: ArchivedFile
    temp: Any
    final: Any


@dataclass
class EnvelopeArchiver:
    """Archive the PDFs of one envelope into a :class:`~airflow_provider_docsign.archive.store.Store`.

    The parameters mean what the archive operator's parameters of the same names mean.

    :param hook: The ``DocsignHook`` that downloads (and whose connection may pin certificates).
    :param version: ``signed``, ``original`` or ``pending``.
    :param require_completed: With ``version="signed"``, fail unless the envelope is COMPLETED.
    :param filename_template: The relative name of each item (checked by the caller).
    :param overwrite: Replace existing files whose bytes differ.
    :param include_audit_log: Also archive the audit-log PDF.
    :param include_certificate: Also archive the signing certificate PDF.
    :param manifest_name: The manifest's file name template, or ``None`` for no manifest file.
    :param verify_signatures: The resolved mode: ``require``, ``record`` or ``off``.
    :param trusted_certificates: PEM files or URIs of trusted certificates.
    :param evidence: Timestamps, long-term validation copies and retention
        (:class:`~airflow_provider_docsign.archive.evidence.Evidence`); default: none.
    :param log: Where to log (the task's logger); default: this module's.
    """

    hook: DocsignHook
    version: str = "signed"
    require_completed: bool = True
    filename_template: str = DEFAULT_FILENAME_TEMPLATE
    overwrite: bool = False
    include_audit_log: bool = False
    include_certificate: bool = False
    manifest_name: str | None = DEFAULT_MANIFEST_NAME
    verify_signatures: str = "require"
    trusted_certificates: Sequence[Any] = ()
    evidence: Evidence = field(default_factory=Evidence)
    log: Any = field(default_factory=lambda: logging.getLogger(__name__))

    def check_status(self, envelope: Envelope) -> None:
        """Fail unless the envelope's status allows downloading ``version`` (and the reports).

        :param envelope: The envelope as just read from the service.
        """
        status = envelope.status
        label = f"envelope {envelope.id} is {status}"
        # Real service vs spec: the spec calls "signed" the final result, but Documenso v2.17 answers
        # version=signed on an unfinished envelope with the uploaded PDF (HTTP 200, "_signed.pdf"
        # name). Only the envelope status tells, so it is checked here before any download.
        if self.version == "signed":
            if status in (EnvelopeStatus.REJECTED, EnvelopeStatus.CANCELLED):
                reasons = "; ".join(
                    f"recipient {r.id}: {r.rejection_reason}"
                    for r in envelope.recipients
                    if r.rejection_reason
                )
                raise DocsignEnvelopeFailedError(
                    f"{label}: its documents will never be signed, nothing was archived"
                    + (f" (rejection: {reasons})" if reasons else "")
                )
            if status != EnvelopeStatus.COMPLETED:
                if self.require_completed:
                    raise DocsignEnvelopeNotReadyError(
                        f"{label}, not COMPLETED: the signed version exists only after every signer has "
                        "signed (the service would return the unsigned upload). Nothing was archived; wait "
                        "with DocsignEnvelopeSensor first"
                    )
                self.log.warning(
                    "Envelope %s is %s: with require_completed=False the 'signed' download is the unsigned "
                    "upload",
                    envelope.id,
                    status,
                )
        elif self.version == "pending" and status != EnvelopeStatus.PENDING:
            raise DocsignEnvelopeNotReadyError(
                f"{label}: version='pending' exists only while the envelope is PENDING; nothing was archived"
            )
        # Real service: the certificate of an unfinished envelope is HTTP 500 DOCUMENT_NOT_COMPLETE, not
        # a 4xx; checking first gives a clear message and keeps a server error out of the retry path.
        if self.include_certificate and status not in (EnvelopeStatus.COMPLETED, EnvelopeStatus.REJECTED):
            raise DocsignEnvelopeNotReadyError(
                f"{label}: the service has a certificate only for COMPLETED or REJECTED envelopes "
                "(include_certificate=True); nothing was archived"
            )
        if not envelope.items:
            raise DocsignArchiveError(f"envelope {envelope.id} has no items: nothing to archive")

    def plan(self, envelope: Envelope) -> tuple[list[tuple[str, str, Any]], str | None]:
        """Decide every archive name: ``[(kind, name, item)]`` in download order, and the manifest name.

        :param envelope: The envelope.
        """
        item_names = [
            render_filename(
                self.filename_template,
                envelope_id=envelope.id,
                external_id=envelope.external_id,
                item_id=item.id,
                order=item.order,
                title=item.title,
                version=self.version,
            )
            for item in envelope.items
        ]
        directory = common_directory(item_names)
        prefix = f"{directory}/" if directory else ""
        manifest = None
        if self.manifest_name is not None:
            manifest = prefix + render_manifest_name(
                self.manifest_name,
                envelope_id=envelope.id,
                external_id=envelope.external_id,
                version=self.version,
            )
        kinds: list[tuple[str, Any]] = [("item", item) for item in envelope.items]
        names = list(item_names)
        for kind, wanted in (
            ("audit_log", self.include_audit_log),
            ("certificate", self.include_certificate),
        ):
            if wanted:
                kinds.append((kind, None))
                names.append(prefix + _REPORT_NAMES[kind])
        unique = disambiguate(names, reserved=[manifest] if manifest else [])
        return [(kind, name, item) for (kind, item), name in zip(kinds, unique, strict=True)], manifest

    def archive(self, envelope: Envelope, store: Store) -> tuple[dict[str, Any], list[ArchivedFile]]:
        """Archive ``envelope`` (already checked with :meth:`check_status`); return the manifest and records.

        :param envelope: The envelope as just read from the service.
        :param store: The destination.
        :raises DocsignArchiveRefusedError: When a retry cannot help (conflict, escape, signature).
        :raises DocsignArchiveError: When a retry may help (a download or a write failed).
        """
        plan, manifest_name = self.plan(envelope)
        self.log.info(
            "Archiving %d file(s) of envelope %s (%s, version=%s) to %s",
            len(plan),
            envelope.id,
            envelope.status,
            self.version,
            store.uri,
        )
        evidence = self.evidence
        evidence.check(store, manifest_name, self.version)  # before any download: no lock, no TSA...
        if evidence.ltv and evidence.trust is None:
            evidence.trust = _verify.trust_policy(
                self.trusted_certificates, self.hook.settings.signing_certificate_fingerprints
            )
        item_names = [name for kind, name, _item in plan if kind == "item"]
        for name in [n for _k, n, _i in plan] + evidence.names(item_names, manifest_name):
            store.temp_for(name)  # before any download: a link out of the destination fails now
        if manifest_name:
            store.temp_for(manifest_name)
        staged: list[_Staged] = []
        copies: list[LtvStaged] = []
        temps: list[Any] = []  # the manifest's and the token's
        try:
            for kind, name, item in plan:
                staged.append(self._stage(store, envelope, kind, name, item))
            if self.verify_signatures != "off":
                self._verify(staged)
            records = self._compare(store, staged, manifest_name, envelope.id)
            items = [(e.record, e.temp) for e in staged if e.record.kind == "item"]
            copies = evidence.stage_ltv(store, items, manifest_name, self.overwrite)
            archived_at = now()
            manifest = evidence.annotate(
                self._manifest(envelope, store, records, manifest_name, archived_at),
                copies,
                manifest_name,
                archived_at,
            )
            published = evidence.published(store, manifest_name, manifest, records) if manifest_name else None
            if published is not None:  # complete with a valid token: nothing rewritten, no new token
                for entry in staged:
                    store.remove(entry.temp)
                names = evidence.written(records, copies, manifest_name, token=True)
                evidence.retain(store, names, str(published["archived_at"]))
                return published, records
            if manifest_name:
                temps = self._stage_manifest(store, manifest_name, manifest)
            self._commit(store, staged, records)
            if evidence.commit_ltv(store, copies, records) and manifest_name:  # another try's copy kept
                for temp in temps:
                    store.remove(temp)
                fresh = self._manifest(envelope, store, records, manifest_name, archived_at)
                manifest = evidence.annotate(fresh, copies, manifest_name, archived_at)
                temps = self._stage_manifest(store, manifest_name, manifest)
            if manifest_name:
                self._publish_manifest(store, manifest_name, temps, manifest)
            token, temps = len(temps) > 1, []
        except BaseException:
            for temp in [e.temp for e in staged] + [c.temp for c in copies if c.temp is not None] + temps:
                store.remove(temp)
            store.remove_created_dirs()  # only directories this run created and left empty
            raise
        evidence.retain(store, evidence.written(records, copies, manifest_name, token=token), archived_at)
        return manifest, records

    def _manifest(
        self,
        envelope: Envelope,
        store: Store,
        records: list[ArchivedFile],
        manifest_name: str | None,
        archived_at: str,
    ) -> dict[str, Any]:
        return build_manifest(
            envelope={
                "id": envelope.id,
                "external_id": envelope.external_id,
                "title": envelope.title,
                "status": getattr(envelope.status, "value", envelope.status),
                "completed_at": envelope.completed_at,
            },
            destination=store.uri,
            manifest_uri=store.uri_of(manifest_name) if manifest_name else None,
            version=self.version,
            archived_at=archived_at,
            files=records,
            manifest_name=manifest_name,
        )

    def _stage_manifest(self, store: Store, manifest_name: str, manifest: dict[str, Any]) -> list[Any]:
        """Stage the manifest and its token (asked for now, before anything moves into place).

        A full disk or a failed TSA fails here, with nothing archived.
        """
        body = json.dumps(manifest, indent=2, sort_keys=False).encode("utf-8") + b"\n"
        token = self.evidence.timestamp_token(body, store.uri_of(manifest_name))
        if token is None and manifest.pop("timestamp", None) is not None:  # best_effort: none
            body = json.dumps(manifest, indent=2, sort_keys=False).encode("utf-8") + b"\n"
        temps = [self._write_manifest(store, manifest_name, lambda: store.stage_bytes(manifest_name, body))]
        if token is not None:
            name = token_name(manifest_name)
            temps.append(self._write_manifest(store, manifest_name, lambda: store.stage_bytes(name, token)))
        return temps

    def _publish_manifest(self, store: Store, name: str, temps: list[Any], manifest: Any = None) -> None:
        """The token, then the manifest (a complete archive); with ``manifest``, :meth:`Evidence.settle`."""
        token = token_name(name)
        if len(temps) > 1:
            self._write_manifest(store, name, lambda: store.replace(temps[1], token))
        elif self.evidence.tsa is not None:
            store.remove(store.path(token))  # an earlier token would not match the new manifest
        self._write_manifest(store, name, lambda: store.replace(temps[0], name))
        if manifest is not None and len(temps) > 1:
            restage = functools.partial(self._stage_manifest, store, name, dict(manifest))
            self.evidence.settle(
                store, name, manifest, lambda: self._publish_manifest(store, name, restage())
            )

    def _write_manifest(self, store: Store, manifest_name: str, write: Callable[[], Any]) -> Any:
        """Run one step of writing the manifest; an OS error fails the task naming where and why.

        A retry (or the next run) completes the archive: files already in place are "unchanged".
        """
        try:
            return write()
        except OSError as err:
            raise DocsignArchiveError(
                f"writing the manifest {store.uri_of(manifest_name)} in the destination {store.uri} failed: "
                f"{type(err).__name__}: {err}. Files already moved into place stay; the next run "
                "finds them unchanged and writes the manifest"
            ) from err

    def _download(self, kind: str, envelope: Envelope, item: Any) -> Callable[[Any], DownloadResult]:
        if kind == "item":
            return lambda fh: self.hook.download_envelope_item(item.id, fh, version=self.version)
        if kind == "audit_log":
            return lambda fh: self.hook.download_audit_log(envelope.id, fh)
        return lambda fh: self.hook.download_certificate(envelope.id, fh)

    def _stage(self, store: Store, envelope: Envelope, kind: str, name: str, item: Any) -> _Staged:
        final = store.path(name)
        temp = store.temp_for(name)
        what = f"item {item.id} ({item.title!r})" if kind == "item" else f"the {kind.replace('_', ' ')}"
        downloaded_at = now()
        fh = store.open_new(temp)
        try:
            with fh:
                writer = HashingWriter(fh)
                result = self._download(kind, envelope, item)(writer)
                sync(fh, local=store.local)
        except BaseException as err:
            store.remove(temp)
            if isinstance(err, Exception) and not isinstance(err, DocsignArchiveRefusedError):
                # Any failure here (service error, wrong content type, truncated body, broken
                # connection, full disk) means this item is not archived; say which one, and where.
                detail = str(err) if isinstance(err, DocsignError) else f"{type(err).__name__}: {err}"
                raise DocsignArchiveError(
                    f"downloading {what} of envelope {envelope.id} failed: {detail}. Nothing was written "
                    f"at {store.uri_of(name)}"
                ) from err
            raise
        sha256 = writer.digest.hexdigest()
        problem = None
        if writer.head != PDF_MAGIC:
            problem = "the bytes do not start with %PDF-"
        elif result.sha256 != sha256 or result.size != writer.size:
            problem = (
                f"the hook reported sha256 {result.sha256} / {result.size} bytes but {sha256} / "
                f"{writer.size} bytes were written"
            )
        if problem:
            store.remove(temp)
            raise DocsignArchiveError(
                f"downloading {what} of envelope {envelope.id}: {problem}; nothing written"
            )
        record = ArchivedFile(
            kind=kind,
            name=name,
            uri=store.uri_of(name),
            sha256=sha256,
            size=writer.size,
            outcome="created",
            downloaded_at=downloaded_at,
            content_type=result.content_type,
            item_id=item.id if kind == "item" else None,
            title=item.title if kind == "item" else None,
            order=item.order if kind == "item" else None,
            version=self.version if kind == "item" else None,
        )
        return _Staged(record=record, temp=temp, final=final)

    def _verify(self, staged: list[_Staged]) -> None:
        """Verify every staged file's signatures; record them, and fail under ``require``."""
        trust = _verify.trust_policy(
            self.trusted_certificates, self.hook.settings.signing_certificate_fingerprints
        )
        failures: list[tuple[str, str]] = []
        for entry in staged:
            record = entry.record
            report, problem = _verify.verify_file(entry.temp, record.uri, trust)
            signature = report.to_dict() if report is not None else {"signed": None, "problems": [problem]}
            entry.record = replace(record, signature=signature)
            self.log.info("%s: %s", record.uri, _verify.summary(report))
            reason = _verify.failure_reason(report, problem, signature_required=record.kind == "item")
            if reason:
                failures.append((record.uri, reason))
        if failures and self.verify_signatures == "require":
            raise DocsignArchiveSignatureError(failures)
        for uri, reason in failures:
            self.log.warning("Signature check failed for %s (verify_signatures='record'): %s", uri, reason)

    def _existing_matches(self, store: Store, entry: _Staged) -> bool | None:
        """None: nothing there; True: same bytes; False: different bytes."""
        if not store.exists(entry.final):
            return None
        return store.holds(entry.final, entry.record.sha256, entry.record.size)

    def _manifest_conflict(self, store: Store, manifest_name: str | None, envelope_id: str) -> str | None:
        """The manifest's URI if a manifest of *another* envelope (or a foreign file) is in the way."""
        if manifest_name is None or self.overwrite:
            return None
        target = store.path(manifest_name)
        if not store.exists(target):
            return None
        uri = store.uri_of(manifest_name)
        if store.local and not target.is_file():
            return uri  # a directory (or something else) where the manifest file goes
        if store.size(target) > _MAX_MANIFEST_BYTES:
            return uri
        try:
            with target.open("rb") as fh:
                existing = json.loads(fh.read())
        except ValueError:
            return uri
        if isinstance(existing, dict) and existing.get("envelope_id") == envelope_id:
            return None  # our own manifest from an earlier run: rewritten
        return uri

    def _compare(
        self, store: Store, staged: list[_Staged], manifest_name: str | None, envelope_id: str
    ) -> list[ArchivedFile]:
        records: list[ArchivedFile] = []
        conflicts: list[str] = []
        manifest_conflict = self._manifest_conflict(store, manifest_name, envelope_id)
        if manifest_conflict:
            conflicts.append(
                f"{manifest_conflict} (the manifest of another envelope; use a manifest_name with "
                "{envelope_key} when envelopes share a directory)"
            )
        for entry in staged:
            same = self._existing_matches(store, entry)
            record = entry.record
            if same is True:
                record = replace(record, outcome="unchanged")
            elif same is False and self.overwrite:
                record = replace(record, outcome="overwritten")
            elif same is False and record.kind != "item":
                self.log.warning(
                    "Keeping the existing %s at %s: the service rendered different bytes this time "
                    "(set overwrite=True to replace it)",
                    record.kind,
                    record.uri,
                )
                record = replace(
                    record,
                    outcome="kept",
                    sha256=store.sha256(entry.final),
                    size=store.size(entry.final),
                )
            elif same is False:
                conflicts.append(record.uri)
            records.append(record)
        if conflicts:
            raise DocsignArchiveConflictError(
                "different file(s) already exist at " + ", ".join(conflicts) + ": they were left untouched "
                "and nothing was archived. Choose another destination or filename_template, or set "
                "overwrite=True"
            )
        return records

    def _commit(self, store: Store, staged: list[_Staged], records: list[ArchivedFile]) -> None:
        for entry, record in zip(staged, records, strict=True):
            if record.outcome in {"unchanged", "kept"}:
                store.remove(entry.temp)
                continue
            overwrite = record.outcome == "overwritten"
            same_as = (record.sha256, record.size)
            if not store.commit(entry.temp, entry.final, overwrite=overwrite, same_as=same_as):
                raise DocsignArchiveConflictError(
                    f"a different file appeared at {record.uri} while archiving; it was left untouched"
                )
