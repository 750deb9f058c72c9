"""Operators that copy an envelope or a template (the steps are in :mod:`._duplicate`).

Split from :mod:`.templates`, which re-exports both classes, so either import path works.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignValidationError,
)
from airflow_provider_docsign.operators import _duplicate
from airflow_provider_docsign.operators._base import (
    PERMANENT_ERRORS,
    DocsignBaseOperator,
    check_retry_safety,
    fail_now,
)

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context

__all__ = ["DocsignDuplicateEnvelopeOperator", "DocsignDuplicateTemplateOperator"]


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
