"""Operators that create envelopes from templates, keep templates up to date, and duplicate envelopes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign import metrics
from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignValidationError,
)
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
from airflow_provider_docsign.operators._concurrent import keep_the_oldest
from airflow_provider_docsign.operators._created import recipient_and_field_ids
from airflow_provider_docsign.operators.envelope import DocsignCreateEnvelopeOperator
from airflow_provider_docsign.service import outgoing
from airflow_provider_docsign.service.expiry import DEFAULT as DEFAULT_PERIOD
from airflow_provider_docsign.service.expiry import period_meta_fields
from airflow_provider_docsign.service.models import EnvelopeStatus

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.service.models import Envelope

from airflow_provider_docsign.operators.duplicates import (
    DocsignDuplicateEnvelopeOperator,
    DocsignDuplicateTemplateOperator,
)

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
                metrics.envelopes("created", self.docsign_conn_id)
                if self.distribute:
                    metrics.envelopes("sent", self.docsign_conn_id)
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
            metrics.envelopes("sent", self.docsign_conn_id)
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
    so a setup task can run every time; two runs at the same time that both create one end with one
    (each lists again after its create, both return the oldest, and the other run's copy is deleted by
    the run that made it). Give fields a ``fieldMeta.label`` so that pipelines can prefill
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
                self.log.info("Reusing template %s titled %r", found[0].id, self.title)
                return self._reuse(context, found[0].id)
        result = super().execute(context)
        made = str(result["envelope_id"])
        if self.reuse_by_title:
            oldest = self._oldest_after_create(made)
            if oldest != made:
                return self._reuse(context, oldest)
        result["template_id"] = made
        return result

    def _reuse(self, context: Context, template_id: str) -> dict[str, Any]:
        """The ids of an existing template, pushed to XCom as a create would push them."""
        template = self.hook.get_template(template_id)
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

    def _oldest_after_create(self, made: str) -> str:
        """The oldest template with this title (see :mod:`._concurrent`); this run's own may be deleted."""

        def oldest() -> str | None:
            found = self.hook.find_templates_by_title(str(self.title), folder_id=self.folder_id)
            return min(found, key=lambda t: (str(t.created_at or ""), t.id)).id if found else None

        return keep_the_oldest(
            made,
            oldest=oldest,
            delete=self.hook.delete_envelope,
            log=self.log,
            what=f"template {self.title!r}",
            where=f"in folder {self.folder_id or '(root)'}",
        )
