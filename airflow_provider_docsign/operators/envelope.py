"""Operators that create, distribute and cancel envelopes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign import metrics
from airflow_provider_docsign._compat import AirflowFailException, mask_secret
from airflow_provider_docsign._text import printable
from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignInvalidRequestError,
    DocsignValidationError,
)
from airflow_provider_docsign.operators._base import (
    PERMANENT_ERRORS,
    DocsignBaseOperator,
    DocsignRetryWithoutExternalIdWarning,
    check_retry_safety,
    current_try,
    existing_by_external_id,
    fail_now,
    field_problems,
    file_label,
    resolve_files,
    status_value,
)
from airflow_provider_docsign.operators._created import recipient_and_field_ids
from airflow_provider_docsign.service.expiry import DEFAULT as DEFAULT_PERIOD
from airflow_provider_docsign.service.expiry import period_meta_fields
from airflow_provider_docsign.service.models import EnvelopeStatus
from airflow_provider_docsign.service.payloads import SIGNATURE_FIELD_TYPES

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.service.models import Envelope

__all__ = [
    "DocsignCancelEnvelopeOperator",
    "DocsignCreateEnvelopeOperator",
    "DocsignDistributeEnvelopeOperator",
    "DocsignRetryWithoutExternalIdWarning",
]

ENVELOPE_TYPES = ("DOCUMENT", "TEMPLATE")


class DocsignCreateEnvelopeOperator(DocsignBaseOperator):
    """Create a DRAFT envelope from one or more PDFs, safely on retry.

    Everything is validated locally (files exist and are PDFs, ``identifier`` in range, pages exist,
    coordinates within the page, roles and field types known, every SIGNER has a signature field)
    before the first byte is sent. The envelope id is pushed to XCom (key ``envelope_id``) as soon as
    it is known, so the "Docsign envelope" link works even if a later step of the task fails.

    **Safe retries.** The service has no idempotency key, so repeating a create can make a duplicate
    draft. When ``external_id`` is set, a retry of the task (``try_number > 1``), or a create whose
    outcome was ambiguous (connection lost after sending) within the same try, first looks for the
    envelope by exact ``external_id`` in the same folder; ``if_exists`` decides what happens when one
    is found. Give every logical envelope its own ``external_id``, for example
    ``"contract-{{ run_id }}-{{ params.customer_id }}"``. A warning is emitted at DAG parse time when
    ``retries > 0`` and no ``external_id`` is given.

    Returns ``{"envelope_id", "item_ids" (in the order of files), "external_id", "status",
    "recipients": [{"id", "email", "name", "role", "signing_order"}], "fields": [{"id", "type",
    "recipient_id", "envelope_item_id", "page", "label"}]}``: the ids later tasks need to correct or
    remind a recipient or move a field, e.g.
    ``"{{ ti.xcom_pull(task_ids='create')['recipients'][0]['id'] }}"`` (a digit string is accepted
    wherever an id is).

    :param title: The envelope title (1-255 characters). Templated.
    :param files: The PDFs, in order: local paths, ``ObjectStoragePath`` objects or URIs such as
        ``s3://bucket/key.pdf`` (any fsspec scheme). A field's ``identifier`` is the zero-based index
        into this list. Templated.
    :param recipients: Recipients in the service's JSON shape (``email``, ``name``, ``role``, and
        nested ``fields`` with ``identifier``, ``type``, ``page``, ``positionX``, ``positionY``,
        ``width``, ``height``). Templated (rendered as JSON).
    :param external_id: Your own reference for the envelope (at most 255 characters), used to find it
        again on retry. Templated.
    :param meta: The envelope ``meta`` object (``subject``, ``message``, ``language``, ``timezone``...).
        Templated (rendered as JSON).
    :param folder_id: The folder to create the envelope in (default: the root). Templated.
    :param envelope_type: ``"DOCUMENT"`` (default) or ``"TEMPLATE"``. Templated.
    :param if_exists: What a retried or ambiguous create does when an envelope with the same
        ``external_id`` already exists in the folder: ``"reuse"`` (default) adopts it after checking
        that its title and item count match; ``"fail"`` raises; ``"create"`` always creates a new one
        (an ambiguous create is then re-raised rather than repeated).
    :param payload_extra: Further top-level payload keys passed to the service unchanged (for example
        ``{"visibility": "EVERYONE"}``). Templated (rendered as JSON).
    :param expiration_period: How long signing links stay valid once sent: ``"14d"``, ``"2w"``,
        ``"1m"``, ``"1y"``, a ``{"unit": "day"|"week"|"month"|"year", "amount": n}`` mapping, or
        ``None`` for "never". Sent as ``meta.envelopeExpirationPeriod``. Default: the team's setting
        (on the real service, 3 months). Checked when the DAG is parsed ("14 days", 0 or 14 are refused).
    :param reminders: Automatic reminder e-mails: ``{"send_after": "3d", "repeat_every": "2d"}``
        (``repeat_every`` left out: one reminder), or ``None`` for none. Sent as
        ``meta.reminderSettings``. Default: the team's setting.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = (
        "title",
        "files",
        "recipients",
        "external_id",
        "meta",
        "folder_id",
        "envelope_type",
        "payload_extra",
    )
    template_fields_renderers = {
        "files": "json",
        "recipients": "json",
        "meta": "json",
        "payload_extra": "json",
    }
    ui_color = "#d6eaff"

    def __init__(
        self,
        *,
        title: str,
        files: Any,
        recipients: list[dict[str, Any]] | None = None,
        external_id: str | None = None,
        meta: dict[str, Any] | None = None,
        folder_id: str | None = None,
        envelope_type: str = "DOCUMENT",
        if_exists: str = "reuse",
        payload_extra: dict[str, Any] | None = None,
        expiration_period: Any = DEFAULT_PERIOD,
        reminders: Any = DEFAULT_PERIOD,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        check_retry_safety(
            self, if_exists=if_exists, external_id=external_id, example="contract-{{ run_id }}-<business key>"
        )
        self.title = title
        self.files = files
        self.recipients = recipients
        self.external_id = external_id
        self.meta = meta
        self.folder_id = folder_id
        self.envelope_type = envelope_type
        self.if_exists = if_exists
        self.payload_extra = payload_extra
        # Checked now, so "14 days" fails when the DAG is parsed, not when the task runs.
        period_meta_fields(expiration_period, reminders)
        self.expiration_period = expiration_period
        self.reminders = reminders

    # -- execute -----------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        """Create (or, on retry, find) the envelope and return its ids and status."""
        files = self._checked_inputs()
        try_number = current_try(context)

        envelope_id: str | None = None
        reused = False
        if self.external_id and self.if_exists != "create" and try_number > 1:
            self.log.info(
                "Try %s: looking for an envelope a previous try may have created (externalId %r)",
                try_number,
                self.external_id,
            )
            envelope_id = self._existing_envelope_id()
            reused = envelope_id is not None

        if envelope_id is None:
            envelope_id, reused = self._create(files)
        self.xcom_push_safe(context, "envelope_id", envelope_id)
        # The link is usable right away; it gains the team URL once the envelope is read back.
        self.push_envelope_link(context, envelope_id)

        envelope = self.hook.get_envelope(envelope_id)
        self.push_envelope_link(context, envelope_id, envelope)
        if reused:
            self._check_matches(envelope, len(files))
        result: dict[str, Any] = {
            "envelope_id": envelope.id,
            "item_ids": envelope.item_ids,
            "external_id": envelope.external_id if envelope.external_id is not None else self.external_id,
            "status": status_value(envelope.status),
            **recipient_and_field_ids(envelope),
        }
        self.log.info(
            "Envelope %s is %s with %d item(s)", envelope.id, result["status"], len(result["item_ids"])
        )
        return result

    def _checked_inputs(self) -> list[Any]:
        problems: list[str] = []
        if not isinstance(self.title, str) or not self.title.strip():
            problems.append("title: must be a non-empty string")
        if self.external_id is not None and not isinstance(self.external_id, str):
            problems.append(f"external_id: must be a string, not {type(self.external_id).__name__}")
        if str(self.envelope_type).upper() not in ENVELOPE_TYPES:
            problems.append(f"envelope_type: must be one of {ENVELOPE_TYPES}, not {self.envelope_type!r}")
        if self.recipients is not None and not isinstance(self.recipients, list):
            problems.append(f"recipients: must be a list, not {type(self.recipients).__name__}")
        if self.meta is not None and not isinstance(self.meta, dict):
            problems.append(f"meta: must be a JSON object, not {type(self.meta).__name__}")
        if self.payload_extra is not None and not isinstance(self.payload_extra, dict):
            problems.append(f"payload_extra: must be a JSON object, not {type(self.payload_extra).__name__}")
        files: list[Any] = []
        try:
            files = resolve_files(self.files)
        except (TypeError, ValueError) as err:
            problems.append(str(err))
        if problems:
            raise fail_now(DocsignValidationError(problems, context=f"task {self.task_id!r} arguments"))
        return files

    def _create(self, files: list[Any]) -> tuple[str, bool]:
        """Create the envelope; return its id and whether an existing one was adopted instead."""
        attempts = 0
        while True:
            attempts += 1
            try:
                self.log.info(
                    "Creating envelope %r from %d file(s): %s",
                    self.title,
                    len(files),
                    printable(", ".join(file_label(f) for f in files)),
                )
                envelope_id = self.hook.create_envelope(
                    title=self.title,
                    files=files,
                    recipients=self.recipients,
                    external_id=self.external_id,
                    meta=self.meta,
                    folder_id=self.folder_id,
                    envelope_type=str(self.envelope_type).upper(),
                    expiration_period=self.expiration_period,
                    reminders=self.reminders,
                    **(self.payload_extra or {}),
                )
                self.log.info("Created envelope %s", envelope_id)
                if str(self.envelope_type).upper() != "TEMPLATE":
                    metrics.envelopes("created", self.docsign_conn_id)
                return envelope_id, False
            except PERMANENT_ERRORS as err:
                raise fail_now(err) from err
            except DocsignAmbiguousWriteError as err:
                if not self.external_id or self.if_exists == "create":
                    # A retry of the task would repeat the create blindly and may make a duplicate
                    # draft, so fail without using up the retries.
                    why = "no external_id is set" if not self.external_id else "if_exists='create'"
                    raise AirflowFailException(
                        f"The create's outcome is unknown ({err}) and cannot be checked because {why}; "
                        "not repeating it. Look for the envelope in the web app before running the task "
                        "again, and set external_id so that retries can find it."
                    ) from err
                self.log.warning("The create's outcome is unknown (%s); checking by externalId", err)
                found = self._existing_envelope_id()
                if found is not None:
                    return found, True
                if attempts >= 2:
                    raise
                self.log.info(
                    "No envelope with externalId %r exists: the create did not take effect", self.external_id
                )

    def _existing_envelope_id(self) -> str | None:
        """The id of the one envelope with this ``external_id`` in the folder, as ``if_exists`` allows."""
        return existing_by_external_id(self, self.external_id, self.folder_id, self.if_exists)

    def _check_matches(self, envelope: Envelope, file_count: int) -> None:
        problems = []
        if (envelope.title or "").strip() != self.title.strip():
            problems.append(f"its title is {envelope.title!r}, not {self.title!r}")
        if len(envelope.items) != file_count:
            problems.append(f"it has {len(envelope.items)} item(s), not {file_count}")
        if problems:
            raise AirflowFailException(
                f"Envelope {envelope.id} has externalId {self.external_id!r} but does not match this task: "
                + "; ".join(problems)
                + ". Is the external_id unique per logical envelope?"
            )

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage facets: see :func:`airflow_provider_docsign.export.lineage.create_facets`."""
        from airflow_provider_docsign.export import lineage

        return lineage.create_facets(self, task_instance)


class DocsignDistributeEnvelopeOperator(DocsignBaseOperator):
    """Send a DRAFT envelope to its recipients.

    Before sending it checks that every SIGNER has a signature field and that no field lies on a page
    its PDF does not have (the real service accepts such a field, and the envelope can then never
    complete). An envelope that is already PENDING is left as it is and the task succeeds, so a retry
    is safe.

    Returns ``{"envelope_id", "status", "recipients": [{"id", "email", "name", "role"}]}``; with
    ``return_signing_urls=True`` each recipient also has ``signing_url``.

    :param envelope_id: The envelope to send. Templated.
    :param meta: Meta to save before sending (``subject``, ``message``, ``distributionMethod``...).
        Templated (rendered as JSON).
    :param return_signing_urls: Also return each recipient's signing URL. These are bearer links
        (whoever has one can sign), so they are off by default and, when on, masked in task logs.
    :param check_pages: Check fields against the page counts of the PDFs (downloads, once, each item
        that has a field beyond page 1). Default ``True``.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "meta")
    template_fields_renderers = {"meta": "json"}
    ui_color = "#d6eaff"

    def __init__(
        self,
        *,
        envelope_id: str,
        meta: dict[str, Any] | None = None,
        return_signing_urls: bool = False,
        check_pages: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.meta = meta
        self.return_signing_urls = return_signing_urls
        self.check_pages = check_pages

    def execute(self, context: Context) -> dict[str, Any]:
        """Check the envelope, distribute it (unless already PENDING) and return its recipients."""
        envelope_id = str(self.envelope_id)
        if self.meta is not None and not isinstance(self.meta, dict):
            raise AirflowFailException(f"meta: must be a JSON object, not {type(self.meta).__name__}")
        envelope = self.read_envelope(context, envelope_id)

        if envelope.status == EnvelopeStatus.PENDING:
            self.log.info("Envelope %s is already PENDING: nothing to send (no-op)", envelope_id)
            if self.meta:
                self.log.warning("meta was not applied: envelope %s had already been sent", envelope_id)
            return self._result(envelope, None)
        if envelope.status != EnvelopeStatus.DRAFT:
            raise AirflowFailException(
                f"Envelope {envelope_id} is {status_value(envelope.status)}: only a DRAFT can be distributed"
            )
        self._check_ready(envelope)

        try:
            response = self.hook.distribute_envelope(envelope_id, meta=self.meta)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        except DocsignAmbiguousWriteError:
            again = self.hook.get_envelope(envelope_id)
            if again.status != EnvelopeStatus.PENDING:
                raise
            self.log.warning("The distribute's answer was lost, but envelope %s is PENDING", envelope_id)
            metrics.envelopes("sent", self.docsign_conn_id)
            return self._result(again, None)
        self.log.info("Distributed envelope %s", envelope_id)
        metrics.envelopes("sent", self.docsign_conn_id)
        return self._result(envelope, response)

    def _check_ready(self, envelope: Envelope) -> None:
        problems: list[str] = []
        for recipient in envelope.recipients:
            if recipient.role != "SIGNER":
                continue
            has_signature = any(
                f.recipient_id == recipient.id and (f.type or "").upper() in SIGNATURE_FIELD_TYPES
                for f in envelope.fields
            )
            if not has_signature:
                problems.append(
                    f"recipient {recipient.id} ({recipient.email or recipient.name or 'no email'}) is a "
                    "SIGNER without a SIGNATURE or FREE_SIGNATURE field"
                )
        if not envelope.recipients:
            problems.append("the envelope has no recipients")
        if self.check_pages and envelope.fields:
            fields = [
                {
                    "id": f.id,
                    "recipientId": f.recipient_id,
                    "envelopeItemId": f.envelope_item_id,
                    "page": f.page,
                }
                for f in envelope.fields
            ]
            counts = self.item_page_counts(envelope, self.items_beyond_page_one(envelope, fields))
            problems.extend(field_problems(fields, envelope=envelope, page_counts=counts, where="field"))
        if problems:
            raise fail_now(
                DocsignValidationError(problems, context=f"envelope {envelope.id} before distribution")
            )

    def _result(self, envelope: Envelope, response: dict[str, Any] | None) -> dict[str, Any]:
        by_id: dict[int, dict[str, Any]] = {}
        for r in envelope.recipients:
            by_id[r.id] = {"id": r.id, "email": r.email, "name": r.name, "role": r.role}
        urls: dict[int, str] = {}
        for raw in (response or {}).get("recipients") or []:
            try:
                rid = int(raw["id"])
            except (KeyError, TypeError, ValueError):
                continue
            by_id.setdefault(
                rid, {"id": rid, "email": raw.get("email"), "name": raw.get("name"), "role": raw.get("role")}
            )
            if raw.get("signingUrl"):
                urls[rid] = str(raw["signingUrl"])
        recipients = list(by_id.values())
        if self.return_signing_urls:
            for r in envelope.recipients:
                token = r.raw.get("token")
                if r.id not in urls and token and r.role != "CC":
                    # The service's signing URL is {WEBAPP_URL}/sign/{token} (distribute response); an
                    # envelope that was already PENDING gives no response, so build it the same way.
                    urls[r.id] = f"{str(self.hook.web_url).rstrip('/')}/sign/{token}"
            for entry in recipients:
                url = urls.get(entry["id"])
                if url:
                    # Bearer links: mask before anything (including Airflow's return-value log) prints them.
                    mask_secret(url)
                    entry["signing_url"] = url
        return {
            "envelope_id": envelope.id,
            "status": EnvelopeStatus.PENDING.value,
            "recipients": recipients,
        }


class DocsignCancelEnvelopeOperator(DocsignBaseOperator):
    """Cancel a PENDING envelope (its recipients can no longer sign).

    An envelope that is already CANCELLED is left as it is and the task succeeds (safe on retry), also
    when another run cancels it between this task's read and its cancel. Any other status fails the
    task: the service only cancels PENDING envelopes.

    Returns ``{"envelope_id", "status"}``.

    :param envelope_id: The envelope to cancel. Templated.
    :param reason: The reason recorded in the audit log and sent to recipients. Templated.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "reason")
    ui_color = "#ffe0d6"

    def __init__(self, *, envelope_id: str, reason: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.reason = reason

    def execute(self, context: Context) -> dict[str, Any]:
        """Cancel the envelope and return its final status."""
        envelope_id = str(self.envelope_id)
        envelope = self.read_envelope(context, envelope_id)
        if envelope.status == EnvelopeStatus.CANCELLED:
            self.log.info("Envelope %s is already CANCELLED (no-op)", envelope_id)
            return {"envelope_id": envelope_id, "status": EnvelopeStatus.CANCELLED.value}
        if envelope.status != EnvelopeStatus.PENDING:
            raise AirflowFailException(
                f"Envelope {envelope_id} is {status_value(envelope.status)}: only a PENDING envelope can be "
                "cancelled"
            )
        try:
            self.hook.cancel_envelope(envelope_id, reason=self.reason)
        except DocsignInvalidRequestError as err:
            # Another run (or a person) cancelled it between the read and the cancel: done all the same.
            if self.hook.get_envelope(envelope_id).status != EnvelopeStatus.CANCELLED:
                raise fail_now(err) from err
            self.log.info(
                "Envelope %s was cancelled meanwhile, by another run or in the web app", envelope_id
            )
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        except DocsignAmbiguousWriteError:
            if self.hook.get_envelope(envelope_id).status != EnvelopeStatus.CANCELLED:
                raise
        final = self.hook.get_envelope(envelope_id)
        self.log.info("Envelope %s is now %s", envelope_id, status_value(final.status))
        return {"envelope_id": envelope_id, "status": status_value(final.status)}
