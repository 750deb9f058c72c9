"""Archive an envelope's PDFs, byte for byte with checksums, to a local directory or an object store.

The operator reads the envelope, checks that its status allows the requested version, then works in
three phases so that a failure never leaves a partial or unverified file at a final name:

1. **stage**: every item (in ``order``), then the audit log and certificate if asked for, is streamed
   by :class:`~airflow_provider_docsign.hooks.docsign.DocsignHook` into a temporary name beside its
   final name (``.<name>.<token>.partial``). The hook checks the content type and the ``%PDF-`` magic
   before the first byte is written; the operator hashes the bytes as they pass and cross-checks
   the hook's SHA-256 and size;
2. **compare**: each final name is compared with what is there already. The same SHA-256 means
   "unchanged"; different bytes fail the task (``overwrite=False``) before any file is moved, and the
   existing file is not touched;
   Then (``verify_signatures``, on by default for ``version="signed"``) every staged PDF's digital
   signature is verified with pyHanko: a failure under ``"require"`` stops here;
3. **commit**: ``manifest.json`` is written under a temporary name first (a full disk fails here,
   before anything moves), then staged files are moved into place (an atomic rename on a local disk;
   on object stores the object appears whole or not at all), then the manifest is renamed into place.

Before anything is downloaded, every final and temporary local path is resolved and must lie inside
the destination's resolved root: a symlinked folder or file name leading outside fails the task
(:class:`DocsignArchiveEscapeError`) with nothing written. Object stores have no symbolic links, so
there the check is moot. Every temporary object is removed on failure. No HTTP here: all service
calls go through the hook.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import hashlib
import io
import json
import os
import secrets
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException, Asset, AssetAlias, ObjectStoragePath
from airflow_provider_docsign.archive import (
    DEFAULT_FILENAME_TEMPLATE,
    DEFAULT_MANIFEST_NAME,
    MANIFEST_FIELDS,
    VERSIONS,
    ArchivedFile,
    build_manifest,
    common_directory,
    disambiguate,
    render_filename,
    render_manifest_name,
    validate_filename_template,
)
from airflow_provider_docsign.exceptions import DocsignError, DocsignSignatureError
from airflow_provider_docsign.models import EnvelopeStatus
from airflow_provider_docsign.operators import _verify
from airflow_provider_docsign.operators._base import DocsignBaseOperator, json_safe

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.models import DownloadResult, Envelope

__all__ = [
    "DocsignArchiveConflictError",
    "DocsignArchiveError",
    "DocsignArchiveEscapeError",
    "DocsignArchiveSignatureError",
    "DocsignArchiveSignedDocumentsOperator",
    "DocsignEnvelopeFailedError",
    "DocsignEnvelopeNotReadyError",
]

_CHUNK = 1024 * 1024
_PDF_MAGIC = b"%PDF-"
_MAX_MANIFEST_BYTES = 16 * 1024 * 1024
_REPORT_NAMES = {"audit_log": "audit-log.pdf", "certificate": "certificate.pdf"}


class DocsignArchiveError(DocsignError):
    """Archiving failed for a reason that retrying the task may fix (e.g. a download failed)."""


class DocsignEnvelopeNotReadyError(DocsignArchiveError):
    """The envelope's status does not (yet) allow the requested download version.

    Raised for ``version="signed"`` before COMPLETED (the real service would silently return the
    unsigned upload) and for ``version="pending"`` outside PENDING. A later try may succeed.
    """


class DocsignArchiveConflictError(AirflowFailException, DocsignError):  # type: ignore[misc]
    """A different file already exists at an archive name and ``overwrite`` is off.

    The existing file is left untouched. Retrying cannot help, so the task fails without retries.
    """


class DocsignEnvelopeFailedError(AirflowFailException, DocsignError):  # type: ignore[misc]
    """The envelope was rejected or cancelled: its documents will never be signed. No retries."""


class DocsignArchiveEscapeError(AirflowFailException, DocsignError):  # type: ignore[misc]
    """An archive path would lead outside the destination (a symlinked folder or file name).

    Nothing was written. A retry would meet the same link, so the task fails without retries; remove
    the link (or archive elsewhere) and clear the task.
    """


class DocsignArchiveSignatureError(AirflowFailException, DocsignSignatureError):  # type: ignore[misc]
    """A downloaded PDF failed signature verification under ``verify_signatures="require"``. No retries.

    A retry cannot help: it downloads the same bytes again. The service stores the sealed PDF once
    and serves it unchanged, and a download that was cut short or altered in transit is already
    caught before verification (content type, ``%PDF-`` magic, size and SHA-256 cross-checked with
    the hook). So a signature that does not verify, a missing signature, a change after signing or an
    untrusted signer is a property of the document (or of the trust policy), and the task fails at
    once instead of spending its retries. It is a
    :class:`~airflow_provider_docsign.exceptions.DocsignSignatureError`, so code catching that
    still catches it.
    """


# -- storage ------------------------------------------------------------------------------------


class _HashingWriter(io.RawIOBase):
    """A write-only stream that hashes and counts the bytes it passes on to ``target``."""

    def __init__(self, target: IO[bytes]) -> None:
        super().__init__()
        self._target = target
        self.digest = hashlib.sha256()
        self.size = 0
        self.head = b""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        if len(self.head) < len(_PDF_MAGIC):
            self.head += chunk[: len(_PDF_MAGIC) - len(self.head)]
        self._target.write(chunk)
        self.digest.update(chunk)
        self.size += len(chunk)
        return len(chunk)


class _Store:
    """The archive destination: a local directory (``pathlib``) or an :class:`ObjectStoragePath`.

    Local destinations get the strongest guarantees (``os.replace``/``os.link`` renames, ``fsync``);
    object stores get whole-object writes under a temporary key and a server-side move.
    """

    def __init__(self, destination: Any, conn_id: str | None) -> None:
        self.created_dirs: list[Path] = []
        if isinstance(destination, ObjectStoragePath):
            root: Any = destination
        elif isinstance(destination, str | os.PathLike):
            text = os.fspath(destination)
            if not text.strip():
                raise ValueError(
                    "destination is empty: give a local directory or a URI such as s3://bucket/prefix"
                )
            # conn_id only when given: Airflow 2.11 lets an explicit None override the connection id
            # of a URI such as s3://conn@bucket/prefix (3.x keeps the URI's).
            options = {"conn_id": conn_id} if conn_id else {}
            root = ObjectStoragePath(text, **options) if "://" in text else Path(text)
        else:
            raise TypeError(
                f"destination must be a local directory, a URI or an ObjectStoragePath, not "
                f"{type(destination).__name__}"
            )
        if isinstance(root, ObjectStoragePath) and root.protocol in {"file", "local"}:
            root = Path(root.path)
        self.local = _is_local(root)
        self.root: Any = root.absolute() if self.local else root
        if self.local and self.root.exists() and not self.root.is_dir():
            raise ValueError(f"destination {self.root} exists and is not a directory")
        # The root itself may be a link (/archive -> /mnt/disk/archive): what is inside is judged
        # against where it really is.
        self.real_root: Path | None = Path(os.path.realpath(self.root)) if self.local else None

    @property
    def uri(self) -> str:
        """The destination as a URI without any connection id (``file:///…``, ``s3://bucket/…``)."""
        return _uri_of(self.root)

    def path(self, name: str) -> Any:
        with _quiet_upath():
            target = self.root.joinpath(*name.split("/"))
        self.check_inside(target, name)
        return target

    def check_inside(self, target: Any, name: str) -> None:
        """Refuse a local path that resolves (through symlinks) outside the destination's real root.

        Every final and temporary path goes through here before anything is created or written, so
        a symlinked envelope folder or final file name that leads elsewhere fails the task with
        nothing written. Object stores have no symlinks (a key is a key), so the check is moot there.

        :raises DocsignArchiveEscapeError: When ``target`` lies outside the destination.
        """
        if not self.local or self.real_root is None:
            return  # object store: no links, nothing to resolve
        real = Path(os.path.realpath(target))
        if real == self.real_root or not real.is_relative_to(self.real_root):
            raise DocsignArchiveEscapeError(
                f"refusing to write {name!r}: {target} resolves to {real}, outside the destination "
                f"{self.real_root} (a symbolic link in the way?). Nothing was written; remove the link "
                "or choose another destination"
            )

    def uri_of(self, name: str) -> str:
        return _uri_of(self.path(name))

    def temp_for(self, name: str) -> Any:
        final = self.path(name)
        with _quiet_upath():
            temp = final.parent / f".{final.name}.{secrets.token_hex(6)}.partial"
        self.check_inside(temp, name)
        return temp

    def ensure_parent(self, target: Any) -> None:
        if not self.local:
            return  # object stores have no directories to create
        missing = []
        parent = target.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        for directory in reversed(missing):
            try:
                directory.mkdir()
            except FileExistsError:
                continue
            self.created_dirs.append(directory)

    def open_new(self, target: Any) -> IO[bytes]:
        self.ensure_parent(target)
        if self.local:
            # O_EXCL with O_CREAT never follows a link at the last component; the folders above were
            # checked by check_inside.
            return open(target, "xb")
        return target.open("wb")  # type: ignore[no-any-return]

    def exists(self, target: Any) -> bool:
        return bool(target.exists())

    def size(self, target: Any) -> int:
        return int(target.stat().st_size) if self.local else int(target.stat()["size"])

    def sha256(self, target: Any) -> str:
        digest = hashlib.sha256()
        with target.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
        return digest.hexdigest()

    def commit(self, temp: Any, final: Any, *, overwrite: bool) -> bool:
        """Move ``temp`` to ``final``. Without ``overwrite``, return False if ``final`` appeared meanwhile."""
        if self.local:
            if overwrite:
                os.replace(temp, final)
            else:
                try:
                    os.link(temp, final)  # atomic, and fails if final exists: never clobbers
                except FileExistsError:
                    return False
                except OSError as err:  # no hard links here (some network file systems)
                    if err.errno not in {errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}:
                        raise
                    if final.exists():
                        return False
                    os.replace(temp, final)
                    _fsync_dir(final.parent)
                    return True
                os.unlink(temp)
            _fsync_dir(final.parent)
            return True
        if not overwrite and final.exists():
            # Object stores offer no portable "create if absent"; this check narrows the window.
            return False
        temp.rename(final)
        return True

    def remove(self, target: Any) -> None:
        try:
            if self.local:
                os.unlink(target)
            elif target.exists():
                target.unlink()
        except FileNotFoundError:
            pass

    def remove_created_dirs(self) -> None:
        for directory in reversed(self.created_dirs):
            try:
                directory.rmdir()  # only if empty
            except OSError:
                continue

    def stage_bytes(self, name: str, data: bytes) -> Any:
        """Write ``data`` under a temporary name beside ``name``; returns it (removed on failure)."""
        temp = self.temp_for(name)
        try:
            fh = self.open_new(temp)
            with fh:
                fh.write(data)
                _sync(fh, local=self.local)
        except BaseException:
            self.remove(temp)
            raise
        return temp

    def replace(self, temp: Any, name: str) -> None:
        """Move a staged file to ``name``, replacing what is there (atomically on a local disk)."""
        final = self.path(name)
        if self.local:
            os.replace(temp, final)
            _fsync_dir(final.parent)
        else:
            temp.rename(final)  # a server-side copy that replaces the old object whole

    def write_atomic(self, name: str, data: bytes) -> None:
        temp = self.stage_bytes(name, data)
        try:
            self.replace(temp, name)
        except BaseException:
            self.remove(temp)
            raise


@contextlib.contextmanager
def _quiet_upath() -> Iterator[None]:
    # Airflow 2.11's ObjectStoragePath (universal_pathlib 0.2) warns on every join of a remote path
    # ("in a future version of UPath this will be set to None..."): upstream noise, not actionable.
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="in a future version of UPath", category=PendingDeprecationWarning
        )
        yield


def _is_local(path: Any) -> bool:
    # On Airflow 2.11 ObjectStoragePath (universal_pathlib 0.2) subclasses pathlib.Path: test it first.
    return isinstance(path, Path) and not isinstance(path, ObjectStoragePath)


def _uri_of(path: Any) -> str:
    if _is_local(path):
        # Not percent-encoded, like ObjectStoragePath's own URIs: the manifest stays readable.
        return f"file://{path.absolute().as_posix()}"
    protocol = path.protocol
    if isinstance(protocol, tuple | list):
        protocol = protocol[0]
    # str(ObjectStoragePath) embeds the connection id ("s3://conn@bucket/key"); manifests must not.
    return f"{protocol}://{path.path}"


def _sync(fh: IO[bytes], *, local: bool) -> None:
    if local:
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _now() -> str:
    return (
        datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


@dataclass
class _Staged:
    record: ArchivedFile
    temp: Any
    final: Any


# -- the operator ---------------------------------------------------------------------------------


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
        :data:`~airflow_provider_docsign.signatures.MODIFICATION_ALLOWED`) and, with a trust policy,
        trusted; otherwise the task fails with
        :class:`~airflow_provider_docsign.exceptions.DocsignSignatureError` before anything is moved
        to a final name. ``"record"``: the result is recorded in the manifest and the task goes on.
        ``"off"`` (default for the other versions): not verified. The audit log and certificate are
        verified the same way when they carry a signature; carrying none is not an error for them.
    :param trusted_certificates: PEM files or URIs of trusted certificates (roots, intermediates or the
        sealing certificate itself). With these or the connection extra
        ``signing_certificate_fingerprints``, an untrusted signer fails ``"require"``.
    :param docsign_conn_id: The ``docsign`` connection (default ``docsign_default``).
    """

    template_fields: Sequence[str] = ("envelope_id", "destination", "destination_conn_id")
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
        **kwargs: Any,
    ) -> None:
        if version not in VERSIONS:
            raise ValueError(f"version must be one of {', '.join(VERSIONS)}, not {version!r}")
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
            asset_uri = _static_destination_uri(destination)
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

    # -- checks -------------------------------------------------------------------------------

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

    # -- execution ------------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        """Archive the envelope and return the manifest dict."""
        store = _Store(self.destination, self.destination_conn_id)
        envelope = self.hook.get_envelope(self.envelope_id)
        self.check_status(envelope)
        plan, manifest_name = self.plan(envelope)
        self.log.info(
            "Archiving %d file(s) of envelope %s (%s, version=%s) to %s",
            len(plan),
            envelope.id,
            envelope.status,
            self.version,
            store.uri,
        )
        for _kind, name, _item in plan:  # before any download: a link out of the destination fails now
            store.temp_for(name)
        if manifest_name:
            store.temp_for(manifest_name)
        staged: list[_Staged] = []
        manifest_temp: Any = None
        try:
            for kind, name, item in plan:
                staged.append(self._stage(store, envelope, kind, name, item))
            if self.verify_signatures != "off":
                self._verify(staged)
            records = self._compare(store, staged, manifest_name, envelope.id)
            manifest = build_manifest(
                envelope={
                    "id": envelope.id,
                    "external_id": envelope.external_id,
                    "title": envelope.title,
                    "status": json_safe(envelope.status),
                    "completed_at": envelope.completed_at,
                },
                destination=store.uri,
                manifest_uri=store.uri_of(manifest_name) if manifest_name else None,
                version=self.version,
                archived_at=_now(),
                files=records,
                manifest_name=manifest_name,
            )
            if manifest_name:
                # Written (under a temporary name) before any file moves into place: a full disk
                # fails here, with nothing archived.
                body = json.dumps(manifest, indent=2, sort_keys=False).encode("utf-8") + b"\n"
                manifest_temp = self._write_manifest(
                    store, manifest_name, lambda: store.stage_bytes(manifest_name, body)
                )
            self._commit(store, staged, records)
            if manifest_name:
                self._write_manifest(
                    store, manifest_name, lambda: store.replace(manifest_temp, manifest_name)
                )
                manifest_temp = None
        except BaseException:
            for entry in staged:
                store.remove(entry.temp)
            if manifest_temp is not None:
                store.remove(manifest_temp)
            store.remove_created_dirs()  # only directories this run created and left empty
            raise
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

    def _write_manifest(self, store: _Store, manifest_name: str, write: Callable[[], Any]) -> Any:
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

    def _stage(self, store: _Store, envelope: Envelope, kind: str, name: str, item: Any) -> _Staged:
        final = store.path(name)
        temp = store.temp_for(name)
        what = f"item {item.id} ({item.title!r})" if kind == "item" else f"the {kind.replace('_', ' ')}"
        downloaded_at = _now()
        fh = store.open_new(temp)
        try:
            with fh:
                writer = _HashingWriter(fh)
                result = self._download(kind, envelope, item)(writer)
                _sync(fh, local=store.local)
        except BaseException as err:
            store.remove(temp)
            if isinstance(err, Exception) and not isinstance(err, AirflowFailException):
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
        if writer.head != _PDF_MAGIC:
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

    def _existing_matches(self, store: _Store, entry: _Staged) -> bool | None:
        """None: nothing there; True: same bytes; False: different bytes."""
        if not store.exists(entry.final):
            return None
        if store.size(entry.final) != entry.record.size:
            return False
        return store.sha256(entry.final) == entry.record.sha256

    def _manifest_conflict(self, store: _Store, manifest_name: str | None, envelope_id: str) -> str | None:
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
        self, store: _Store, staged: list[_Staged], manifest_name: str | None, envelope_id: str
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

    def _commit(self, store: _Store, staged: list[_Staged], records: list[ArchivedFile]) -> None:
        for entry, record in zip(staged, records, strict=True):
            if record.outcome in {"unchanged", "kept"}:
                store.remove(entry.temp)
                continue
            if not store.commit(entry.temp, entry.final, overwrite=record.outcome == "overwritten"):
                raise DocsignArchiveConflictError(
                    f"a file appeared at {record.uri} while archiving; it was left untouched"
                )

    def _annotate_assets(self, context: Context, store: _Store, manifest: dict[str, Any]) -> None:
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
        """OpenLineage facets: see :func:`airflow_provider_docsign.lineage.archive_facets`."""
        from airflow_provider_docsign import lineage

        return lineage.archive_facets(self, task_instance)


def _static_destination_uri(destination: Any) -> str | None:
    """The destination's URI when it is known at parse time (no template, no connection look-up)."""
    if isinstance(destination, ObjectStoragePath):
        return (
            _uri_of(Path(destination.path))
            if destination.protocol in {"file", "local"}
            else _uri_of(destination)
        )
    if not isinstance(destination, str | os.PathLike):
        return None
    text = os.fspath(destination)
    if not text.strip() or "{{" in text or "{%" in text:
        return None
    if "://" not in text:
        return _uri_of(Path(text))
    scheme, _, rest = text.partition("://")
    if scheme in {"file", "local"}:
        return _uri_of(Path("/" + rest.lstrip("/")))
    return f"{scheme}://{rest.rstrip('/')}"
