"""The clean-up operator: delete envelopes by id or by a query, safely, idempotently, logged by id."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.archive.archiver import EnvelopeArchiver
from airflow_provider_docsign.archive.naming import DEFAULT_FILENAME_TEMPLATE, DEFAULT_MANIFEST_NAME
from airflow_provider_docsign.archive.retention import (
    ArchiveRequirements,
    Selection,
    archive_problems,
    cutoff,
    older_than,
)
from airflow_provider_docsign.archive.store import Store
from airflow_provider_docsign.exceptions import DocsignNotFoundError, DocsignValidationError
from airflow_provider_docsign.operators._base import (
    PERMANENT_ERRORS,
    DocsignBaseOperator,
    fail_now,
    status_value,
)
from airflow_provider_docsign.operators._duplicate import Discard
from airflow_provider_docsign.service.models import EnvelopeStatus

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.evidence.signatures import TrustPolicy
    from airflow_provider_docsign.service.models import EnvelopeSummary

__all__ = ["DocsignDeleteEnvelopesOperator"]

_STATUSES = {s.value for s in EnvelopeStatus}


class DocsignDeleteEnvelopesOperator(DocsignBaseOperator):
    """Delete envelopes: a retention or GDPR clean-up, by ids or by a query, safe to retry.

    **What is deleted.** Either the envelopes ``envelope_ids`` names, or the documents (not templates)
    a query finds: ``status``, ``folder_id`` and ``older_than_days`` (by ``createdAt``), at least one of
    ``status`` and ``older_than_days``. The query lists the envelopes oldest first and stops at the
    first one that is too new (the service has no date filter). Note (real service): without
    ``folder_id`` only the root is listed, never the folders' envelopes. A ``folder_id`` that is not a
    document folder of the team fails the task, naming it (the service would list nothing).

    **How the service deletes.** DRAFT and PENDING envelopes (and templates) are removed for good; a
    PENDING one's recipients are told it was deleted. COMPLETED, REJECTED and CANCELLED envelopes are
    only hidden (``deletedAt`` is set; ``GET /envelope/{id}`` still shows them).

    **A COMPLETED envelope is deleted only when it is provably archived** at ``archive_destination``,
    in the manifest the archive operator writes for it (same ``archive_filename_template`` and
    ``archive_manifest_name``): the manifest must be this envelope's and list every item the envelope
    has on the service now, as its signed PDF, and the audit log and certificate when
    ``archive_include_audit_log`` / ``archive_include_certificate`` say the archive was asked for
    them; every listed file must be a regular file in the manifest's folder (no symbolic links) with
    the recorded size and SHA-256, and pass the auditor's check (signatures, nothing unlisted beside
    it, and the RFC 3161 token when the manifest declares one, pinned to the TSA of ``tsa_conn_id``
    or the connection's ``tsa_conn_id`` extra when there is one). With ``archive_compare_with_service``
    (the default) each item's signed PDF is also downloaded (hashed, not kept) and must be the
    archived bytes, so a manifest rewritten to match other bytes proves nothing. Otherwise the task
    fails before deleting anything, naming each envelope and why, unless ``allow_unarchived`` is on.
    More than ``max_envelopes`` selected also fails before deleting anything.

    **Changed since selection.** Right before its delete, each envelope is read again (one request)
    and checked against every condition it was selected by: one that has become COMPLETED meanwhile is
    left alone (its archive was never checked), and, for a query, so is one whose status is no longer
    ``status``, that was moved out of ``folder_id`` (or out of the root, when the query named none),
    or whose ``createdAt`` is no longer before the cut-off. Each is logged with the reason and listed
    under ``skipped``; the task still succeeds. What remains: a change made between that read and the
    delete request (one round trip), and a change to the archive after its check, cannot be seen by
    any client: the service has no conditional delete.

    **Idempotent.** An envelope that is already gone (a 404 on the delete, or no longer listed or
    readable) counts as deleted, so a retry after a partial run finishes the job. Every deletion is
    logged with the envelope's id.

    ``dry_run=True`` deletes nothing and returns what would be deleted.

    Returns ``{"dry_run", "selected": [{"id", "title", "status", "created_at"}], "refused": [reasons]
    (a dry run lists them instead of failing), "deleted": [ids], "already_deleted": [ids], "skipped":
    [{"id", "status", "reason"}]}``.

    :param envelope_ids: Envelope ids to delete (templated; a list, or one id).
    :param status: Query: only envelopes with this status (templated).
    :param folder_id: Query: only envelopes in this folder; ``None`` is the root (templated).
    :param older_than_days: Query: only envelopes created more than this many days ago (templated).
    :param dry_run: List what would be deleted; delete nothing.
    :param archive_destination: Where the archive operator archived the COMPLETED envelopes (a
        directory, a URI or an ``ObjectStoragePath``; templated).
    :param archive_conn_id: The connection for an object-store ``archive_destination`` (templated).
    :param archive_filename_template: The archive operator's ``filename_template``.
    :param archive_manifest_name: The archive operator's ``manifest_name``.
    :param archive_include_audit_log: The archive operator's ``include_audit_log``: the manifest must
        list the audit log.
    :param archive_include_certificate: The archive operator's ``include_certificate``: the manifest
        must list the certificate.
    :param archive_compare_with_service: Download each item's signed PDF of a COMPLETED envelope
        (hashed, never stored) and require the archived file to be those bytes. ``False`` trusts the
        manifest's hashes (and its token, when it declares one): no download.
    :param tsa_conn_id: The TSA whose certificate a manifest's timestamp token must be signed by
        (default: the docsign connection's ``tsa_conn_id`` extra; none: the token's own certificate).
    :param allow_unarchived: Delete COMPLETED envelopes without checking their archive.
    :param max_envelopes: Refuse to delete more than this many in one run.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = (
        "envelope_ids",
        "status",
        "folder_id",
        "older_than_days",
        "archive_destination",
        "archive_conn_id",
    )
    ui_color = "#ffd6d6"

    def __init__(
        self,
        *,
        envelope_ids: Sequence[str] | str | None = None,
        status: str | None = None,
        folder_id: str | None = None,
        older_than_days: float | str | None = None,
        dry_run: bool = False,
        archive_destination: Any = None,
        archive_conn_id: str | None = None,
        archive_filename_template: str = DEFAULT_FILENAME_TEMPLATE,
        archive_manifest_name: str | None = DEFAULT_MANIFEST_NAME,
        archive_include_audit_log: bool = False,
        archive_include_certificate: bool = False,
        archive_compare_with_service: bool = True,
        tsa_conn_id: str | None = None,
        allow_unarchived: bool = False,
        max_envelopes: int = 1000,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if envelope_ids is not None and (status is not None or older_than_days is not None or folder_id):
            raise ValueError("give envelope_ids, or a query (status, folder_id, older_than_days), not both")
        if envelope_ids is None and status is None and older_than_days is None:
            raise ValueError("give envelope_ids, or a query with status and/or older_than_days")
        if not isinstance(max_envelopes, int) or isinstance(max_envelopes, bool) or max_envelopes < 1:
            raise ValueError(f"max_envelopes must be a positive integer, not {max_envelopes!r}")
        self.envelope_ids = envelope_ids
        self.status = status
        self.folder_id = folder_id
        self.older_than_days = older_than_days
        # Not ``self.dry_run``: that is BaseOperator.dry_run(), which renders the templates only.
        self.list_only = dry_run
        self.archive_destination = archive_destination
        self.archive_conn_id = archive_conn_id
        self.archive_filename_template = archive_filename_template
        self.archive_manifest_name = archive_manifest_name
        self.archive_include_audit_log = archive_include_audit_log
        self.archive_include_certificate = archive_include_certificate
        self.archive_compare_with_service = archive_compare_with_service
        self.tsa_conn_id = tsa_conn_id
        self.allow_unarchived = allow_unarchived
        self.max_envelopes = max_envelopes
        self._selection = Selection(by_query=envelope_ids is None)

    # -- selection ----------------------------------------------------------------------------------

    def _ids(self) -> list[str]:
        """The ids to delete: a list (or one id), or a list Jinja rendered to text, parsed back."""
        from airflow_provider_docsign.sensors._inputs import normalize_envelope_ids

        ids = self.envelope_ids
        if ids in ([], ()) or (isinstance(ids, str) and ids.strip() in ("[]", "()")):
            return []  # an upstream task found nothing to delete
        try:
            return normalize_envelope_ids(envelope_ids=ids)
        except ValueError as err:
            raise fail_now(DocsignValidationError([str(err)], "envelope_ids")) from err

    def _query(self) -> list[EnvelopeSummary]:
        status = str(self.status) if self.status else None
        if status is not None and status not in _STATUSES:
            raise fail_now(DocsignValidationError([f"status must be one of {sorted(_STATUSES)}"], "status"))
        days = self.older_than_days
        try:
            before = cutoff(datetime.now(timezone.utc), None if days in (None, "") else float(days))  # type: ignore[arg-type]
        except (TypeError, ValueError) as err:
            raise fail_now(DocsignValidationError([f"older_than_days: {err}"], "older_than_days")) from err
        folder = str(self.folder_id) if self.folder_id else None
        self._selection = Selection(by_query=True, status=status, folder_id=folder, before=before)
        listing = self.hook.find_envelopes(
            status=status, folder_id=folder, envelope_type="DOCUMENT", order_by=("createdAt", "asc")
        )
        selected: list[EnvelopeSummary] = []
        for envelope in older_than(listing, before):
            selected.append(envelope)
            if len(selected) > self.max_envelopes:
                break
        if not selected and folder is not None:
            self._check_folder(folder)
        return selected

    def _check_folder(self, folder: str) -> None:
        """Fail, naming it, unless ``folder`` is a document folder (the service lists nothing otherwise)."""
        found = next((f for f in self.hook.list_folders() if f.id == folder), None)
        if found is None:
            problem = f"folder_id {folder!r} is not a folder of this team; nothing was deleted"
        elif found.type not in (None, "DOCUMENT"):
            problem = (
                f"folder_id {folder!r} is a {found.type} folder, not a document folder; nothing was deleted"
            )
        else:
            return
        raise fail_now(DocsignValidationError([problem], "folder_id"))

    def _select(self) -> tuple[list[EnvelopeSummary], list[str]]:
        """The envelopes to delete, and the ids (ids mode) that are already gone."""
        if self.envelope_ids is None:
            return self._query(), []
        ids = self._ids()
        live = self._still_there(ids)
        return [live[i] for i in ids if i in live], [i for i in ids if i not in live]

    def _still_there(self, ids: list[str]) -> dict[str, EnvelopeSummary]:
        """``{id: envelope}`` of those of ``ids`` neither unknown nor deleted; one get-many per 20."""
        return {e.id: e for e in self.hook.get_envelopes(ids) if e.deleted_at is None}

    # -- the archive check --------------------------------------------------------------------------

    def _tsa_trust(self) -> TrustPolicy | None:
        """The pinned certificates of the TSA named by ``tsa_conn_id`` or the connection (else none)."""
        conn_id = self.tsa_conn_id or self.hook.settings.tsa_conn_id
        if not conn_id:
            return None
        from airflow_provider_docsign.hooks.tsa import DocsignTsaHook

        return DocsignTsaHook(conn_id).settings.trust

    def _service_digest(self, item_id: str) -> tuple[str, int]:
        """The SHA-256 and size of the signed PDF the service holds for an item (downloaded, not kept)."""
        result = self.hook.download_envelope_item(item_id, Discard(), version="signed")
        return result.sha256, result.size

    def _unarchived(self, selected: list[EnvelopeSummary]) -> list[str]:
        """``"<id>: why"`` for every COMPLETED envelope whose archive does not check out."""
        completed = [e for e in selected if status_value(e.status) == "COMPLETED"]
        if not completed or self.allow_unarchived:
            return []
        if self.archive_destination in (None, ""):
            return [f"{e.id}: COMPLETED, and no archive_destination was given to check" for e in completed]
        store = Store(self.archive_destination, self.archive_conn_id)
        archiver = EnvelopeArchiver(
            hook=self.hook,
            filename_template=self.archive_filename_template,
            manifest_name=self.archive_manifest_name,
            include_audit_log=self.archive_include_audit_log,
            include_certificate=self.archive_include_certificate,
        )
        needs = ArchiveRequirements(
            include_audit_log=self.archive_include_audit_log,
            include_certificate=self.archive_include_certificate,
            tsa_trust=self._tsa_trust(),
            service_digest=self._service_digest if self.archive_compare_with_service else None,
        )
        out: list[str] = []
        for summary in completed:
            envelope = self.hook.get_envelope(summary.id)
            _, manifest = archiver.plan(envelope)
            problems = archive_problems(
                envelope, store, manifest, conn_id=self.archive_conn_id, requirements=needs
            )
            out.extend(f"{envelope.id}: {p}" for p in problems)
        return out

    # -- deleting -----------------------------------------------------------------------------------

    def _delete(self, row: dict[str, Any], result: dict[str, Any]) -> None:
        """Read one selected envelope again; delete it unless it is gone or no longer selected."""
        envelope_id = str(row["id"])
        try:
            now = self._still_there([envelope_id]).get(envelope_id)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        if now is None:
            self.log.info("Envelope %s is already deleted", envelope_id)
            result["already_deleted"].append(envelope_id)
            return
        reason = self._selection.changed(str(row["status"]), now)
        if reason:
            self.log.warning("Left envelope %s alone: it %s", envelope_id, reason)
            result["skipped"].append(
                {"id": envelope_id, "status": status_value(now.status), "reason": reason}
            )
            return
        try:
            self.hook.delete_envelope(envelope_id)
        except DocsignNotFoundError:
            self.log.info("Envelope %s is already deleted (404)", envelope_id)
            result["already_deleted"].append(envelope_id)
            return
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        self.log.info("Deleted envelope %s (%s)", envelope_id, status_value(now.status))
        result["deleted"].append(envelope_id)

    # -- execution ----------------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        """Select, check, then delete (or list, in a dry run)."""
        try:
            selected, gone = self._select()
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        if len(selected) > self.max_envelopes:
            raise AirflowFailException(
                f"more than max_envelopes={self.max_envelopes} envelopes selected; nothing was deleted "
                "(narrow the query or raise max_envelopes)"
            )
        rows = [
            {"id": e.id, "title": e.title, "status": status_value(e.status), "created_at": e.created_at}
            for e in selected
        ]
        for row in rows:
            self.log.info(
                "%s envelope %s (%s, created %s)",
                "Would delete" if self.list_only else "Selected",
                row["id"],
                row["status"],
                row["created_at"],
            )
        try:
            refused = self._unarchived(selected)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        if refused:
            message = (
                "refusing to delete COMPLETED envelopes without an intact archive (nothing was deleted):\n"
            )
            message += "\n".join(f"  - {r}" for r in refused)
            if self.list_only:
                self.log.warning("%s", message)
            else:
                raise AirflowFailException(message)
        result: dict[str, Any] = {
            "dry_run": self.list_only,
            "selected": rows,
            "refused": refused,
            "deleted": [],
            "already_deleted": gone,
            "skipped": [],
        }
        for envelope_id in gone:
            self.log.info("Envelope %s is already deleted", envelope_id)
        if self.list_only:
            self.log.info("Dry run: %d envelope(s) would be deleted", len(rows))
            return result
        for row in rows:
            self._delete(row, result)
        self.log.info(
            "Deleted %d envelope(s); %d already gone; %d left alone",
            len(result["deleted"]),
            len(result["already_deleted"]),
            len(result["skipped"]),
        )
        return result
