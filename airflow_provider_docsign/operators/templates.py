"""Operators that create envelopes from templates, keep templates up to date, and duplicate envelopes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignAmbiguousWriteError, DocsignValidationError
from airflow_provider_docsign.operators import _duplicate
from airflow_provider_docsign.operators._base import (
    PERMANENT_ERRORS,
    DocsignBaseOperator,
    check_retry_safety,
    current_try,
    existing_by_external_id,
    fail_now,
    resolve_files,
    status_value,
)
from airflow_provider_docsign.operators._created import recipient_and_field_ids
from airflow_provider_docsign.operators.envelope import DocsignCreateEnvelopeOperator
from airflow_provider_docsign.service import outgoing
from airflow_provider_docsign.service.expiry import DEFAULT as DEFAULT_PERIOD
from airflow_provider_docsign.service.expiry import period_meta_fields
from airflow_provider_docsign.service.models import EnvelopeStatus

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.service.models import Envelope

__all__ = [
    "DocsignCreateEnvelopeFromTemplateOperator",
    "DocsignCreateTemplateOperator",
    "DocsignDuplicateEnvelopeOperator",
    "DocsignDuplicateTemplateOperator",
]


def _template_number(template: Envelope) -> int | None:
    """The legacy template number (``template_14`` -> 14) that envelopes made from it carry."""
    secondary = str(template.raw.get("secondaryId") or "")
    tail = secondary.rsplit("_", 1)[-1]
    return int(tail) if secondary.startswith("template_") and tail.isascii() and tail.isdigit() else None


class DocsignCreateEnvelopeFromTemplateOperator(DocsignBaseOperator):
    """Create an envelope from a template, with recipients mapped, fields prefilled and PDFs replaced.

    The template is read and the whole call checked against it before anything is sent: every
    recipient who must act (any role but CC) mapped exactly once and to no unknown recipient; prefill
    values that name existing fields and fit their type (number format, option values, text length);
    replacement PDFs that are PDFs, match an item of the template and have every page that the
    template's fields on that item use. The real service accepts a too-short replacement and a
    non-numeric number, leaving an envelope that can never complete or carries a wrong value.

    **Safe retries**, as for :class:`DocsignCreateEnvelopeOperator`: with ``external_id`` set, a retry
    of the task, or a use whose outcome was ambiguous, first looks for the envelope by exact
    ``external_id`` in the folder, and ``if_exists`` decides; without it an ambiguous use fails the task
    rather than being repeated blindly.

    Returns ``{"envelope_id", "item_ids", "external_id", "status", "recipients", "fields"}`` (with the
    ids) as :class:`DocsignCreateEnvelopeOperator` does, so the sensor and the archive chain after it.

    :param template_id: The template's envelope id. Templated.
    :param recipients: ``[{"id" or "placeholder", "email", "name"?, "signingOrder"?}]``; ``placeholder``
        is the template recipient's name or e-mail. Templated (rendered as JSON).
    :param prefill_fields: ``[{"id" or "label", "value"}]`` or ``{label: value}``. Templated.
    :param files: Replacement PDFs: ``{template item id or title: path or URI}`` or a list in item order
        (``None`` keeps the template's PDF). Paths may be local, ``ObjectStoragePath`` or any fsspec
        URI. Templated.
    :param external_id: Your reference for the new envelope, used to find it on retry. Templated.
    :param folder_id: The document folder for the new envelope. Templated.
    :param distribute: Send the envelope at once (default ``True``). Templated.
    :param override: ``title``, ``subject``, ``message``, ``timezone``, ``dateFormat``, ``language``...
        Templated (rendered as JSON).
    :param form_values: PDF form values. Templated.
    :param if_exists: ``"reuse"`` (default), ``"fail"`` or ``"create"``, as for the create operator.
    :param expiration_period: How long signing links stay valid once sent: ``"14d"``, ``"2w"``,
        ``"1m"``, ``"1y"``, a ``{"unit": "day"|"week"|"month"|"year", "amount": n}`` mapping, or
        ``None`` for "never". Sent as ``override.envelopeExpirationPeriod``. Default: the template's
        or team's setting. Checked when the DAG is parsed ("14 days", 0 or 14 are refused).
    :param reminders: Automatic reminder e-mails: ``{"send_after": "3d", "repeat_every": "2d"}``
        (``repeat_every`` left out: one reminder), or ``None`` for none. ``/envelope/use`` cannot carry
        them, so they are saved with one ``POST /envelope/update`` (``meta.reminderSettings``) before
        the envelope is distributed. Default: the team's setting.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = (
        "template_id",
        "recipients",
        "prefill_fields",
        "files",
        "external_id",
        "folder_id",
        "distribute",
        "override",
        "form_values",
    )
    template_fields_renderers = {
        "recipients": "json",
        "prefill_fields": "json",
        "files": "json",
        "override": "json",
        "form_values": "json",
    }
    ui_color = "#d6eaff"

    def __init__(
        self,
        *,
        template_id: str,
        recipients: list[dict[str, Any]],
        prefill_fields: Any = None,
        files: Any = None,
        external_id: str | None = None,
        folder_id: str | None = None,
        distribute: bool = True,
        override: dict[str, Any] | None = None,
        form_values: dict[str, Any] | None = None,
        if_exists: str = "reuse",
        expiration_period: Any = DEFAULT_PERIOD,
        reminders: Any = DEFAULT_PERIOD,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        check_retry_safety(
            self,
            if_exists=if_exists,
            external_id=external_id,
            example="onboarding-{{ run_id }}-<customer id>",
        )
        self.template_id = template_id
        self.recipients = recipients
        self.prefill_fields = prefill_fields
        self.files = files
        self.external_id = external_id
        self.folder_id = folder_id
        self.distribute = distribute
        self.override = override
        self.form_values = form_values
        self.if_exists = if_exists
        # Checked now, so "14 days" fails when the DAG is parsed, not when the task runs.
        period_meta_fields(expiration_period, reminders)
        self.expiration_period = expiration_period
        self.reminders = reminders

    def _files(self) -> Any:
        if self.files is None:
            return None
        if isinstance(self.files, Mapping):
            return {key: resolve_files(src, argument=f"files[{key!r}]")[0] for key, src in self.files.items()}
        if isinstance(self.files, str):
            return resolve_files(self.files)
        return [None if src is None else resolve_files(src, argument="files[]")[0] for src in self.files]

    def execute(self, context: Context) -> dict[str, Any]:
        """Create (or, on retry, find) the envelope and return its ids and status."""
        try:
            files = self._files()
        except (TypeError, ValueError) as err:
            raise fail_now(DocsignValidationError([str(err)], f"task {self.task_id!r} arguments")) from err
        try:
            template = self.hook.get_template(str(self.template_id))
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        envelope_id: str | None = None
        reused = False
        if self.external_id and self.if_exists != "create" and current_try(context) > 1:
            self.log.info(
                "Retry: looking for an envelope a previous try may have made (%r)", self.external_id
            )
            envelope_id = self._existing()
            reused = envelope_id is not None
        if envelope_id is None:
            envelope_id, reused = self._use(template, files)
        self.xcom_push_safe(context, "envelope_id", envelope_id)
        self.push_envelope_link(context, envelope_id)
        envelope = self.hook.get_envelope(envelope_id)
        self.push_envelope_link(context, envelope_id, envelope)
        if reused:
            envelope = self._adopt(envelope, template)
        result: dict[str, Any] = {
            "envelope_id": envelope.id,
            "item_ids": envelope.item_ids,
            "external_id": envelope.external_id if envelope.external_id is not None else self.external_id,
            "status": status_value(envelope.status),
            **recipient_and_field_ids(envelope),
        }
        self.log.info("Envelope %s from template %s is %s", envelope.id, template.id, result["status"])
        return result

    def _existing(self) -> str | None:
        return existing_by_external_id(self, self.external_id, self.folder_id, self.if_exists)

    def _use(self, template: Envelope, files: Any) -> tuple[str, bool]:
        """Use the template; return the new envelope's id and whether an existing one was adopted."""
        attempts = 0
        while True:
            attempts += 1
            try:
                result = self.hook.use_template(
                    template.id,
                    template=template,
                    recipients=self.recipients,
                    prefill_fields=self.prefill_fields,
                    files=files,
                    external_id=self.external_id,
                    folder_id=self.folder_id,
                    distribute=bool(self.distribute),
                    override=self.override,
                    form_values=self.form_values,
                    expiration_period=self.expiration_period,
                    reminders=self.reminders,
                )
                return result.envelope_id, False
            except PERMANENT_ERRORS as err:
                raise fail_now(err) from err
            except DocsignAmbiguousWriteError as err:
                if not self.external_id or self.if_exists == "create":
                    why = "no external_id is set" if not self.external_id else "if_exists='create'"
                    raise AirflowFailException(
                        f"The template use's outcome is unknown ({err}) and cannot be checked because "
                        f"{why}; not repeating it. Look for the envelope in the web app first."
                    ) from err
                self.log.warning("The template use's outcome is unknown (%s); checking by externalId", err)
                found = self._existing()
                if found is not None:
                    return found, True
                if attempts >= 2:
                    raise
                self.log.info(
                    "No envelope with externalId %r exists: the use did not take effect", self.external_id
                )

    def _adopt(self, envelope: Envelope, template: Envelope) -> Envelope:
        """Check a found envelope was made from this template; send it if it should have been sent."""
        number = _template_number(template)
        if envelope.raw.get("source") != "TEMPLATE" or (
            number is not None and envelope.raw.get("templateId") != number
        ):
            raise AirflowFailException(
                f"Envelope {envelope.id} has externalId {self.external_id!r} but was not made from template "
                f"{template.id}. Is the external_id unique per logical envelope?"
            )
        if self.distribute and envelope.status == EnvelopeStatus.DRAFT:
            self.log.info("Envelope %s was created but not sent; distributing it now", envelope.id)
            self.hook.distribute_envelope(envelope.id)
            envelope = self.hook.get_envelope(envelope.id)
        return envelope

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage facets: see :func:`airflow_provider_docsign.export.lineage.template_use_facets`."""
        from airflow_provider_docsign.export import lineage

        return lineage.template_use_facets(self, task_instance)


class DocsignCreateTemplateOperator(DocsignCreateEnvelopeOperator):
    """Create a template from PDFs, recipient roles (placeholder e-mails) and fields, idempotently.

    Validated exactly as :class:`DocsignCreateEnvelopeOperator` validates. With ``reuse_by_title``
    (default), a template with exactly this title in the folder is reused instead of creating another,
    so a setup task can run every time. Give fields a ``fieldMeta.label`` so that pipelines can prefill
    them by label. The title is checked before any request (the search for a template to reuse sends
    it too): text the outgoing check refuses, or more than the service's 255 characters, fails the
    task at once, naming ``title``.

    Returns the create operator's dict plus ``template_id``.

    :param reuse_by_title: Reuse an existing template with the same title in the folder.
    :param kwargs: As for :class:`DocsignCreateEnvelopeOperator` (``title``, ``files``, ``recipients``,
        ``meta``, ``folder_id`` (a TEMPLATE folder), ``external_id``, ``if_exists``...).
    """

    def __init__(self, *, reuse_by_title: bool = True, **kwargs: Any) -> None:
        kwargs["envelope_type"] = "TEMPLATE"
        super().__init__(**kwargs)
        self.reuse_by_title = reuse_by_title

    def execute(self, context: Context) -> dict[str, Any]:
        """Find the template by title, or create it; return its ids."""
        self._checked_inputs()
        # The title leaves twice: as the search's ?query, then in the create's payload. Checked here as
        # the create's payload is checked at the boundary, so a bad title fails now, naming `title`
        # (not a retryable error about ?query from the search).
        problems = outgoing.check_request("POST", "/envelope/create", payload={"title": self.title})
        if problems:
            raise fail_now(DocsignValidationError(problems, context=f"task {self.task_id!r} argument title"))
        if self.reuse_by_title:
            found = self.hook.find_templates_by_title(str(self.title), folder_id=self.folder_id)
            if len(found) > 1:
                raise AirflowFailException(
                    f"{len(found)} templates are titled {self.title!r} in folder "
                    f"{self.folder_id or '(root)'}: {', '.join(t.id for t in found)}; keep one or set "
                    "reuse_by_title=False"
                )
            if found:
                template = self.hook.get_template(found[0].id)
                self.log.info("Reusing template %s titled %r", template.id, self.title)
                self.xcom_push_safe(context, "envelope_id", template.id)
                self.push_envelope_link(context, template.id, template)
                return {
                    "envelope_id": template.id,
                    "template_id": template.id,
                    "item_ids": template.item_ids,
                    "external_id": template.external_id,
                    "status": status_value(template.status),
                    **recipient_and_field_ids(template),
                }
        result = super().execute(context)
        result["template_id"] = result["envelope_id"]
        return result


class DocsignDuplicateTemplateOperator(DocsignBaseOperator):
    """Copy a template (items, recipients and fields), optionally under a new title.

    A duplicate is not idempotent: if its outcome is unknown (the answer was lost) the task fails
    without retrying, rather than make a second copy. The title is checked before anything is copied
    (as the update that gives it to the copy is checked: blank, more than 255 characters, or text the
    outgoing check refuses fail the task at once), and when that update fails after the copy exists,
    the task fails without retrying, naming the copy.

    Returns ``{"template_id", "source_template_id", "title"}``.

    :param template_id: The template to copy. Templated.
    :param title: The copy's title (default: the service's ``"<title> (copy)"``). Templated.
    :param include_recipients: Copy the recipients.
    :param include_fields: Copy the fields.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("template_id", "title")
    ui_color = "#d6eaff"

    def __init__(
        self,
        *,
        template_id: str,
        title: str | None = None,
        include_recipients: bool = True,
        include_fields: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.template_id = template_id
        self.title = title
        self.include_recipients = include_recipients
        self.include_fields = include_fields

    def execute(self, context: Context) -> dict[str, Any]:
        """Duplicate the template and return the copy's id."""
        source = str(self.template_id)
        changes = {} if self.title in (None, "") else {"title": str(self.title)}
        try:
            _duplicate.check_changes(
                source, changes
            )  # before the copy exists: a refused title copies nothing
            self.hook.get_template(source)  # a DOCUMENT given as the template is refused here
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        try:
            new_id = _duplicate.duplicate_then_update(
                self.hook,
                source,
                changes,
                include_recipients=self.include_recipients,
                include_fields=self.include_fields,
                made=lambda made: self.xcom_push_safe(context, "envelope_id", made),
            )
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        except DocsignAmbiguousWriteError as err:
            raise AirflowFailException(
                f"The duplicate's outcome is unknown ({err}); not repeating it (a copy may exist already)"
            ) from err
        template = self.hook.get_template(new_id)
        self.push_envelope_link(context, new_id, template)
        self.log.info("Duplicated template %s as %s %r", self.template_id, new_id, template.title)
        return {"template_id": new_id, "source_template_id": str(self.template_id), "title": template.title}


class DocsignDuplicateEnvelopeOperator(DocsignBaseOperator):
    """Copy a document or a template as a new DRAFT, with a new title and external id.

    For example, to send a rejected or expired contract again as a new envelope: duplicate it, then
    correct and distribute the copy. The service copies the original PDFs (never the signed ones), the
    meta, and (if asked) the recipients, with fresh signing state, and their fields; it does not copy
    the externalId, the folder, the attachments or form values. Its ``/envelope/duplicate`` takes no
    title (the copy is ``"<title> (copy)"``), so the title, external id and folder given here are set by
    one ``POST /envelope/update`` right after the duplicate.

    A duplicate is not idempotent. With ``external_id`` (and ``if_exists="reuse"``, the default) a retry
    or a re-run first looks for an envelope with that external id in the target folder (other than the
    source) and reuses it instead of copying again, if it is a copy of this source (the same type and
    original PDFs, compared by SHA-256): an unrelated envelope that carries the id fails the task.
    If the duplicate's outcome is unknown (the answer was lost), or the update after it fails (the copy
    then has no external id to be found by), the task fails without retrying, naming the copy, rather
    than make a second one. The title, external id and folder are checked before anything is copied:
    the folder must be one of the team's, of the source's type.

    Returns ``{"envelope_id", "source_envelope_id", "type", "title", "external_id", "reused"}``.

    :param envelope_id: The envelope or template to copy. Templated.
    :param title: The copy's title (default: the service's ``"<title> (copy)"``). Templated.
    :param external_id: The copy's externalId; lets a retry find the copy. Templated.
    :param folder_id: Put the copy in this folder (default: the root, where the service puts it).
        Templated.
    :param include_recipients: Copy the recipients.
    :param include_fields: Copy the fields (only with the recipients).
    :param if_exists: With ``external_id``: ``"reuse"`` an existing copy, ``"fail"``, or ``"create"``
        another one regardless.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "title", "external_id", "folder_id")
    ui_color = "#d6eaff"

    def __init__(
        self,
        *,
        envelope_id: str,
        title: str | None = None,
        external_id: str | None = None,
        folder_id: str | None = None,
        include_recipients: bool = True,
        include_fields: bool = True,
        if_exists: str = "reuse",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        check_retry_safety(self, if_exists=if_exists, external_id=external_id, example="resend-{{ run_id }}")
        self.envelope_id = envelope_id
        self.title = title
        self.external_id = external_id
        self.folder_id = folder_id
        self.include_recipients = include_recipients
        self.include_fields = include_fields
        self.if_exists = if_exists

    def execute(self, context: Context) -> dict[str, Any]:
        """Duplicate (or reuse the copy a previous try made) and return the copy's id."""
        source = str(self.envelope_id)
        folder = str(self.folder_id) if self.folder_id else None
        external_id = str(self.external_id) if self.external_id else None
        wanted = (("title", self.title), ("externalId", external_id), ("folderId", folder))
        changes = {key: str(value) for key, value in wanted if value not in (None, "")}
        try:
            _duplicate.check_changes(source, changes)
            original = self.hook.get_envelope(source) if folder or external_id else None
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        if folder and original is not None:
            problem = _duplicate.folder_problem(self.hook, folder, original.type)
            if problem:
                raise fail_now(DocsignValidationError([f"{problem}; nothing was copied"], "folder_id"))
        reused = _duplicate.existing_copy(
            self.hook, original, external_id, folder, if_exists=self.if_exists, log=self.log
        )
        if reused is None:
            try:
                new_id = _duplicate.duplicate_then_update(
                    self.hook,
                    source,
                    changes,
                    include_recipients=self.include_recipients,
                    include_fields=self.include_fields,
                    made=lambda made: self.xcom_push_safe(context, "envelope_id", made),
                )
            except PERMANENT_ERRORS as err:
                raise fail_now(err) from err
            except DocsignAmbiguousWriteError as err:
                raise AirflowFailException(
                    f"The duplicate's outcome is unknown ({err}); not repeating it (a copy may exist already)"
                ) from err
        else:
            new_id = reused
            self.xcom_push_safe(context, "envelope_id", new_id)
        copy = self.hook.get_envelope(new_id)
        self.push_envelope_link(context, new_id, copy)
        self.log.info("Envelope %s is the copy of %s (%r)", new_id, source, copy.title)
        return {
            "envelope_id": new_id,
            "source_envelope_id": source,
            "type": copy.type,
            "title": copy.title,
            "external_id": copy.external_id,
            "reused": reused is not None,
        }
