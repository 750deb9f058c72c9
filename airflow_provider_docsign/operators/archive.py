"""Archive an envelope's PDFs, byte for byte with checksums, to a local directory or an object store.

The operator is thin: it checks its arguments when the DAG is parsed, reads the envelope through the
hook, and hands the work to :class:`~airflow_provider_docsign.archive.archiver.EnvelopeArchiver` (stage,
verify, compare, commit with a manifest) writing into an
:class:`~airflow_provider_docsign.archive.store.Store` (atomic writes; no path outside the
destination). Failures that a retry cannot fix are raised as subclasses of both their
:mod:`~airflow_provider_docsign.exceptions` class and Airflow's ``AirflowFailException``, so the task
fails at once. No HTTP here: all service calls go through the hook.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException, Asset, AssetAlias
from airflow_provider_docsign.archive import signatures as _verify
from airflow_provider_docsign.archive.archiver import EnvelopeArchiver
from airflow_provider_docsign.archive.evidence import TIMESTAMP_MODES, Evidence
from airflow_provider_docsign.archive.naming import (
    DEFAULT_FILENAME_TEMPLATE,
    DEFAULT_MANIFEST_NAME,
    MANIFEST_FIELDS,
    VERSIONS,
    validate_filename_template,
)
from airflow_provider_docsign.archive.store import Store, static_destination_uri
from airflow_provider_docsign.evidence.object_lock import parse_retention
from airflow_provider_docsign.exceptions import (
    DocsignArchiveConflictError,
    DocsignArchiveError,
    DocsignArchiveEscapeError,
    DocsignArchiveEvidenceError,
    DocsignArchiveRefusedError,
    DocsignArchiveSignatureError,
    DocsignEnvelopeFailedError,
    DocsignEnvelopeNotReadyError,
)
from airflow_provider_docsign.operators._base import DocsignBaseOperator

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.service.models import Envelope

__all__ = [
    "DocsignArchiveConflictError",
    "DocsignArchiveError",
    "DocsignArchiveEscapeError",
    "DocsignArchiveSignatureError",
    "DocsignArchiveSignedDocumentsOperator",
    "DocsignEnvelopeFailedError",
    "DocsignEnvelopeNotReadyError",
    "without_retries",
]


# Each archive failure that a retry cannot fix, raised again as that class and AirflowFailException.
class _ConflictNoRetry(AirflowFailException, DocsignArchiveConflictError):  # type: ignore[misc]
    __doc__ = DocsignArchiveConflictError.__doc__


class _EnvelopeFailedNoRetry(AirflowFailException, DocsignEnvelopeFailedError):  # type: ignore[misc]
    __doc__ = DocsignEnvelopeFailedError.__doc__


class _EscapeNoRetry(AirflowFailException, DocsignArchiveEscapeError):  # type: ignore[misc]
    __doc__ = DocsignArchiveEscapeError.__doc__


class _SignatureNoRetry(AirflowFailException, DocsignArchiveSignatureError):  # type: ignore[misc]
    __doc__ = DocsignArchiveSignatureError.__doc__


class _EvidenceNoRetry(AirflowFailException, DocsignArchiveEvidenceError):  # type: ignore[misc]
    __doc__ = DocsignArchiveEvidenceError.__doc__


_NO_RETRY: dict[type[DocsignArchiveRefusedError], type[DocsignArchiveRefusedError]] = {
    DocsignArchiveConflictError: _ConflictNoRetry,
    DocsignEnvelopeFailedError: _EnvelopeFailedNoRetry,
    DocsignArchiveEscapeError: _EscapeNoRetry,
    DocsignArchiveSignatureError: _SignatureNoRetry,
    DocsignArchiveEvidenceError: _EvidenceNoRetry,
}


def without_retries(err: DocsignArchiveRefusedError) -> BaseException:
    """``err`` as the same archive error that is also ``AirflowFailException`` (the task skips retries).

    :param err: An archive failure raised by the pure archive modules.
    """
    cls = _NO_RETRY.get(type(err))
    if cls is None:
        return err
    clone = cls.__new__(cls)
    clone.__dict__.update(err.__dict__)
    clone.args = err.args
    return clone.with_traceback(err.__traceback__)


class DocsignArchiveSignedDocumentsOperator(DocsignBaseOperator):
    """Archive every PDF of an envelope, with SHA-256 checksums and a manifest, to a directory or store.

    Each item is downloaded separately, in ``order``, with the hook's streaming download (memory stays
    flat whatever the file size). The content type and ``%PDF-`` magic are checked before the first
    byte is written, every file is staged under a temporary name and moved into place only when
    complete, and ``manifest.json`` is written beside the files (atomically). The manifest dict is
    also returned as XCom.

    Lineage: with ``declare_asset`` on and a destination that is not templated, the destination URI is
    declared as an Airflow Asset (a Dataset on Airflow 2.11) in ``outlets``, so downstream DAGs can be
    scheduled on "contracts archived". For a templated destination, give ``asset_alias``: the alias is
    declared instead and, at run time, an event for the rendered destination's Asset is emitted
    through it (schedule downstream DAGs on the alias). Each event's ``extra`` carries the envelope
    id, externalId, manifest URI and file count.

    :param envelope_id: The envelope to archive (templated).
    :param destination: A local directory, a URI (``file://``, ``s3://``, ``gs://``, ``memory://``,
        any fsspec scheme Airflow's ObjectStoragePath knows) or an ``ObjectStoragePath`` (templated).
    :param version: ``signed`` (default), ``original`` or ``pending``.
    :param require_completed: With ``version="signed"``, fail unless the envelope is COMPLETED. The real
        service answers "signed" before completion with the unsigned upload, so turning this off
        archives unsigned bytes (a warning is logged). REJECTED and CANCELLED always fail for "signed".
    :param filename_template: The relative name of each item, a ``str.format`` template with
        ``envelope_key`` (the externalId, else the envelope id), ``envelope_id``, ``item_id``,
        ``order``, ``title`` (without ``.pdf``) and ``version``. ``/`` separates directories. Values
        are sanitised (no separators, ``..`` or control characters; bounded length), the name ends in
        ``.pdf`` exactly once, and names that would collide get ``-2``, ``-3``...
    :param overwrite: Replace existing files whose bytes differ. Off (default): an existing file with
        the same SHA-256 is reported "unchanged" (so a re-run succeeds), a different one fails the task
        before anything is moved and is not touched.
    :param include_audit_log: Also archive the envelope's audit-log PDF (``audit-log.pdf``).
    :param include_certificate: Also archive the signing certificate (``certificate.pdf``); the service
        has one only for COMPLETED or REJECTED envelopes. The audit log and certificate are rendered
        by the service on each request, so a re-run may get different bytes: an existing copy is then
        kept (outcome "kept", with a warning) unless ``overwrite`` is on.
    :param destination_conn_id: The Airflow connection for the object store (e.g. an ``aws``
        connection for ``s3://``); templated.
    :param manifest_name: The manifest's file name, written in the directory that holds all the files;
        may use ``{envelope_key}``, ``{envelope_id}`` and ``{version}``. Use a per-envelope name when
        several envelopes share one directory. ``None`` writes no manifest file (XCom only).
    :param declare_asset: Declare the destination as an outlet Asset (see above).
    :param asset_alias: Name of an Asset alias (Dataset alias on 2.11) to declare as an outlet and to
        emit the rendered destination's Asset through; use it with templated destinations.
    :param verify_signatures: ``"require"`` (default for ``version="signed"``; ``"record"`` when
        ``require_completed`` is off, since an unfinished envelope's download is unsigned): every item
        must carry a digital signature that is intact, valid, unchanged after signing (beyond form filling
        and signature/timestamp updates: an added annotation fails, see
        :data:`~airflow_provider_docsign.evidence.signatures.MODIFICATION_ALLOWED`) and, with a trust policy,
        trusted; otherwise the task fails with
        :class:`~airflow_provider_docsign.exceptions.DocsignSignatureError` before anything is moved
        to a final name. ``"record"``: the result is recorded in the manifest and the task goes on.
        ``"off"`` (default for the other versions): not verified. The audit log and certificate are
        verified the same way when they carry a signature; carrying none is not an error for them.
    :param trusted_certificates: PEM files or URIs of trusted certificates (roots, intermediates or the
        sealing certificate itself). With these or the connection extra
        ``signing_certificate_fingerprints``, an untrusted signer fails ``"require"``.
    :param tsa_conn_id: The RFC 3161 timestamp authority's connection (see
        :mod:`airflow_provider_docsign.hooks.tsa`); default: the docsign connection's ``tsa_conn_id``
        extra, else none. With a TSA, a token over the final ``manifest.json`` is stored beside it
        (``manifest.json.tsr``); a re-run that finds the archive complete with a valid token leaves it
        as it is. Templated.
    :param timestamp: ``"require"`` (default): a TSA that fails, times out or answers a token that
        fails a check (nonce, imprint, signature, pinned certificates) fails the task before anything
        is published as complete, and a retry completes it. ``"best_effort"``: archive without the
        token (and without the long-term validation copies whose timestamps failed) and log a warning.
    :param ltv: Also store ``NAME.ltv.pdf`` beside each signed PDF: a PAdES-B-LTA copy (validation
        material in a DSS and a document timestamp from the TSA) whose hash the manifest records,
        marked as derived. The signed PDF itself is kept byte for byte. Needs a TSA.
    :param retention: ``{"mode": "COMPLIANCE" | "GOVERNANCE", "days": N}``: S3 Object Lock retention
        on every object the archive writes, the token included. Refused before any download on a
        bucket without Object Lock, or on a destination that is not S3.
    :param docsign_conn_id: The ``docsign`` connection (default ``docsign_default``).
    """

    template_fields: Sequence[str] = ("envelope_id", "destination", "destination_conn_id", "tsa_conn_id")
    ui_color = "#d7ecd9"

    def __init__(
        self,
        *,
        envelope_id: str,
        destination: Any,
        version: str = "signed",
        require_completed: bool = True,
        filename_template: str = DEFAULT_FILENAME_TEMPLATE,
        overwrite: bool = False,
        include_audit_log: bool = False,
        include_certificate: bool = False,
        destination_conn_id: str | None = None,
        manifest_name: str | None = DEFAULT_MANIFEST_NAME,
        declare_asset: bool = True,
        asset_alias: str | None = None,
        verify_signatures: str | None = None,
        trusted_certificates: Sequence[Any] | None = None,
        tsa_conn_id: str | None = None,
        timestamp: str = "require",
        ltv: bool = False,
        retention: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if version not in VERSIONS:
            raise ValueError(f"version must be one of {', '.join(VERSIONS)}, not {version!r}")
        if timestamp not in TIMESTAMP_MODES:
            raise ValueError(f"timestamp must be one of {', '.join(TIMESTAMP_MODES)}, not {timestamp!r}")
        if ltv and version != "signed":
            raise ValueError(f"ltv=True extends sealed PDFs: version must be 'signed', not {version!r}")
        retention_spec = parse_retention(retention)
        verify_mode = _verify.resolve_mode(verify_signatures, version, require_completed=require_completed)
        if isinstance(trusted_certificates, str | os.PathLike):
            trusted_certificates = [trusted_certificates]
        validate_filename_template(filename_template)
        if manifest_name is not None:
            validate_filename_template(manifest_name, allowed=MANIFEST_FIELDS)
            if "/" in manifest_name or "\\" in manifest_name:
                raise ValueError(
                    f"manifest_name {manifest_name!r} must be a file name: the manifest is written in the "
                    "folder that holds the files, and records their paths relative to it"
                )
            if manifest_name.lower().endswith(".pdf"):
                raise ValueError(f"manifest_name {manifest_name!r} must not end in .pdf")
        if asset_alias is not None and (not isinstance(asset_alias, str) or not asset_alias.strip()):
            raise ValueError("asset_alias must be a non-empty string or None")
        if declare_asset and asset_alias:
            outlets = kwargs.get("outlets") or []
            if not isinstance(outlets, list | tuple):
                outlets = [outlets]
            kwargs["outlets"] = [*outlets, AssetAlias(asset_alias)]
        elif declare_asset and "outlets" not in kwargs:
            asset_uri = static_destination_uri(destination)
            if asset_uri is not None:
                kwargs["outlets"] = [Asset(asset_uri)]
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.destination = destination
        self.version = version
        self.require_completed = require_completed
        self.filename_template = filename_template
        self.overwrite = overwrite
        self.include_audit_log = include_audit_log
        self.include_certificate = include_certificate
        self.destination_conn_id = destination_conn_id
        self.manifest_name = manifest_name
        self.declare_asset = declare_asset
        self.asset_alias = asset_alias
        self.verify_signatures = verify_mode
        self.trusted_certificates = list(trusted_certificates or [])
        self.tsa_conn_id = tsa_conn_id
        self.timestamp = timestamp
        self.ltv = ltv
        self.retention = retention_spec.to_dict() if retention_spec else None

    # -- execution ------------------------------------------------------------------------------

    def archiver(self, evidence: Evidence | None = None) -> EnvelopeArchiver:
        """The :class:`~airflow_provider_docsign.archive.archiver.EnvelopeArchiver` with this task's settings.

        :param evidence: The timestamp, copies and retention (:meth:`evidence`); default: none.
        """
        return EnvelopeArchiver(
            hook=self.hook,
            version=self.version,
            require_completed=self.require_completed,
            filename_template=self.filename_template,
            overwrite=self.overwrite,
            include_audit_log=self.include_audit_log,
            include_certificate=self.include_certificate,
            manifest_name=self.manifest_name,
            verify_signatures=self.verify_signatures,
            trusted_certificates=self.trusted_certificates,
            evidence=evidence or Evidence(),
            log=self.log,
        )

    def evidence(self) -> Evidence:
        """This task's TSA (looked up now, at run time), timestamp mode, copies and retention."""
        from airflow_provider_docsign.archive.evidence import archive_evidence

        return archive_evidence(
            docsign_hook=self.hook,
            tsa_conn_id=self.tsa_conn_id,
            timestamp=self.timestamp,
            ltv=self.ltv,
            retention=parse_retention(self.retention),
            log=self.log,
        )

    def check_status(self, envelope: Envelope) -> None:
        """Fail unless the envelope's status allows downloading ``version`` (and the reports).

        :param envelope: The envelope as just read from the service.
        """
        try:
            self.archiver().check_status(envelope)
        except DocsignArchiveRefusedError as err:
            raise without_retries(err) from None

    def plan(self, envelope: Envelope) -> tuple[list[tuple[str, str, Any]], str | None]:
        """Decide every archive name: ``[(kind, name, item)]`` in download order, and the manifest name.

        :param envelope: The envelope.
        """
        return self.archiver().plan(envelope)

    def execute(self, context: Context) -> dict[str, Any]:
        """Archive the envelope and return the manifest dict."""
        store = Store(self.destination, self.destination_conn_id)
        envelope = self.hook.get_envelope(self.envelope_id)
        archiver = self.archiver(self.evidence())
        try:
            archiver.check_status(envelope)
            manifest, records = archiver.archive(envelope, store)
        except DocsignArchiveRefusedError as err:
            raise without_retries(err) from None
        for record in records:
            self.log.info(
                "%s %s (%d bytes, sha256 %s)", record.outcome, record.uri, record.size, record.sha256
            )
        self._annotate_assets(context, store, manifest)
        try:
            self.push_envelope_link(context, envelope.id, envelope)
        except Exception:  # the link is a convenience; never fail an archive over it
            self.log.debug("Could not store the envelope link", exc_info=True)
        return manifest

    def _annotate_assets(self, context: Context, store: Store, manifest: dict[str, Any]) -> None:
        outlet_events = context.get("outlet_events") if hasattr(context, "get") else None
        if outlet_events is None:
            return
        extra = {
            "envelope_id": manifest["envelope_id"],
            "external_id": manifest["external_id"],
            "manifest_uri": manifest["manifest_uri"],
            "files": len(manifest["files"]),
        }
        for outlet in self.outlets or ():
            try:
                if isinstance(outlet, AssetAlias) and outlet.name == self.asset_alias:
                    outlet_events[outlet].add(Asset(store.uri), extra=extra)
                elif isinstance(outlet, Asset) and outlet.uri == store.uri:
                    outlet_events[outlet].extra.update(extra)
            except Exception:  # lineage is best effort; the archive itself succeeded
                self.log.warning("Could not record the asset event for %s", store.uri, exc_info=True)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage facets: see :func:`airflow_provider_docsign.export.lineage.archive_facets`."""
        from airflow_provider_docsign.export import lineage

        return lineage.archive_facets(self, task_instance)
