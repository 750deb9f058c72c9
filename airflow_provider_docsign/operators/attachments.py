"""Operators that add, change and remove an envelope's attachments (labelled ``https`` links).

Each operator reads the envelope first and refuses, before sending anything, a change the service
would refuse: attachments of a COMPLETED or REJECTED envelope cannot change (400 ``INVALID_REQUEST``
"Attachments can not be modified after the document has been completed or rejected"). Labels and links
are checked before the envelope is read, so a bad one sends nothing at all: a label, and an ``https``
link that Python and browsers read alike, with no user name or password and no host label that mixes
scripts; see :mod:`airflow_provider_docsign.service.attachments` and
:mod:`airflow_provider_docsign.service.link_safety`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignNotFoundError,
    DocsignValidationError,
)
from airflow_provider_docsign.operators._base import PERMANENT_ERRORS, DocsignBaseOperator, fail_now
from airflow_provider_docsign.service.attachments import (
    Attachment,
    attachment_problems,
    label_problems,
    normalize_attachments,
    url_problems,
)
from airflow_provider_docsign.service.corrections import attachment_change_refusal

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context

__all__ = [
    "DocsignAddAttachmentsOperator",
    "DocsignDeleteAttachmentOperator",
    "DocsignUpdateAttachmentOperator",
]


class _AttachmentOperator(DocsignBaseOperator):
    """Shared steps: read the envelope, refuse what the service would refuse, find one attachment."""

    template_fields: Sequence[str] = ("envelope_id",)
    ui_color = "#e8e0ff"

    def __init__(self, *, envelope_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id

    def _open(self, context: Context, route: str) -> list[Attachment]:
        """Read the envelope (refusing a frozen one) and return its attachments."""
        envelope_id = str(self.envelope_id)
        envelope = self.read_envelope(context, envelope_id)
        refusal = attachment_change_refusal(envelope, route)
        if refusal is not None:
            raise fail_now(refusal.error())
        try:
            return self.hook.find_attachments(envelope_id)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err

    @staticmethod
    def _pick(
        attachments: list[Attachment], attachment_id: str | None, label: str | None
    ) -> Attachment | None:
        """The attachment with this id, or the one with this label (several with it: the task fails)."""
        if attachment_id:
            return next((a for a in attachments if a.id == attachment_id), None)
        hits = [a for a in attachments if a.label == label]
        if len(hits) > 1:
            raise AirflowFailException(
                f"{len(hits)} attachments are labelled {label!r} ({', '.join(a.id for a in hits)}): "
                "give attachment_id"
            )
        return hits[0] if hits else None


def _one_of(attachment_id: Any, label: Any, label_name: str) -> tuple[str | None, str | None]:
    if bool(attachment_id) == bool(label):
        raise fail_now(
            DocsignValidationError([f"give exactly one of attachment_id and {label_name}"], "attachment")
        )
    return (str(attachment_id) if attachment_id else None), (str(label) if label else None)


class DocsignAddAttachmentsOperator(_AttachmentOperator):
    """Attach labelled links (terms and conditions, a price list...) to an envelope.

    Every link is checked locally first (a label; an ``https`` URL, where the service would also take
    ``http``; one host for Python and browsers; no user name or password; no host label that mixes
    scripts, such as ``xn--pple-43d.com``) and nothing is sent, nor read, unless all pass. A link
    already on the envelope with the same label and URL is not added twice, so the task is safe to
    retry.

    Returns ``[{"id", "label", "url", "type", "added"}]`` in the order given (``added`` is False for a link
    that was already there).

    :param envelope_id: The envelope (a draft or a PENDING or CANCELLED one; the service refuses
        COMPLETED and REJECTED). Templated.
    :param attachments: ``[{"label": "Terms and conditions", "url": "https://..."}]``. Templated
        (rendered as JSON).
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "attachments")
    template_fields_renderers = {"attachments": "json"}

    def __init__(self, *, envelope_id: str, attachments: list[dict[str, str]], **kwargs: Any) -> None:
        super().__init__(envelope_id=envelope_id, **kwargs)
        self.attachments = attachments

    def execute(self, context: Context) -> list[dict[str, Any]]:
        """Check the links, then add the ones not there yet."""
        wanted, problems = normalize_attachments(self.attachments, text=True)
        if problems:
            raise fail_now(DocsignValidationError(problems, "attachments"))
        existing = self._open(context, "/envelope/attachment/create")
        result = []
        for entry in wanted:
            same = next((a for a in existing if a.label == entry["label"] and a.url == entry["url"]), None)
            if same is not None:
                self.log.info("Attachment %r is already on the envelope (%s)", same.label, same.id)
                result.append({**same.to_dict(), "added": False})
                continue
            try:
                new_id = self.hook.create_attachment(
                    str(self.envelope_id), label=entry["label"], url=entry["url"]
                )
            except PERMANENT_ERRORS as err:
                raise fail_now(err) from err
            self.log.info("Added attachment %s (%r) to envelope %s", new_id, entry["label"], self.envelope_id)
            result.append({"id": new_id, **entry, "type": "link", "added": True})
        return result


class DocsignUpdateAttachmentOperator(_AttachmentOperator):
    """Change the label or the link of one attachment of an envelope.

    The attachment is found by ``attachment_id``, or by its current label (``match_label``). What is not
    given keeps its current value (the service needs both on every update). The new values are checked
    before anything is read (as :class:`DocsignAddAttachmentsOperator` checks them), and a kept link
    must pass the same rules, since the update sends it again. Safe to retry: setting the same values
    again changes nothing.

    Returns ``{"id", "label", "url", "type"}`` as the attachment is now.

    :param envelope_id: The envelope. Templated.
    :param attachment_id: The attachment's id. Templated.
    :param match_label: Instead of the id: the attachment's current label (exactly one must have it).
        Templated.
    :param new_label: The new label. Templated.
    :param new_url: The new ``https`` link. Templated.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "attachment_id", "match_label", "new_label", "new_url")

    def __init__(
        self,
        *,
        envelope_id: str,
        attachment_id: str | None = None,
        match_label: str | None = None,
        new_label: str | None = None,
        new_url: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(envelope_id=envelope_id, **kwargs)
        self.attachment_id = attachment_id
        self.match_label = match_label
        self.new_label = new_label
        self.new_url = new_url

    def execute(self, context: Context) -> dict[str, Any]:
        """Find the attachment, then set its label and link."""
        attachment_id, match_label = _one_of(self.attachment_id, self.match_label, "match_label")
        if self.new_label is None and self.new_url is None:
            raise fail_now(DocsignValidationError(["give new_label or new_url (or both)"], "attachment"))
        early = [
            *(label_problems(self.new_label, "new_label", text=True) if self.new_label is not None else []),
            *(url_problems(self.new_url, "new_url", text=True) if self.new_url is not None else []),
        ]
        if early:
            raise fail_now(DocsignValidationError(early, "attachment"))
        existing = self._open(context, "/envelope/attachment/update")
        current = self._pick(existing, attachment_id, match_label)
        if current is None:
            raise fail_now(
                DocsignValidationError(
                    [f"envelope {self.envelope_id} has no attachment {attachment_id or repr(match_label)}"],
                    "attachment",
                )
            )
        label = current.label if self.new_label is None else self.new_label
        url = current.url if self.new_url is None else self.new_url
        problems = attachment_problems(label, url, text=True)
        if problems:
            raise fail_now(DocsignValidationError(problems, "attachment"))
        try:
            self.hook.update_attachment(current.id, label=label, url=url)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        self.log.info("Updated attachment %s of envelope %s", current.id, self.envelope_id)
        return {"id": current.id, "label": label, "url": url, "type": current.type}


class DocsignDeleteAttachmentOperator(_AttachmentOperator):
    """Remove one attachment from an envelope, found by id or by label.

    An attachment that is not there (any more) counts as removed, and so does a 404 from the service:
    the task is safe to retry. When the delete's answer is lost, the attachments are read back: gone
    counts as removed.

    Returns ``{"envelope_id", "attachment_id", "deleted"}`` (``deleted`` is False when it was not there).

    :param envelope_id: The envelope. Templated.
    :param attachment_id: The attachment's id. Templated.
    :param match_label: Instead of the id: its label (several with the label: the task fails). Templated.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "attachment_id", "match_label")

    def __init__(
        self,
        *,
        envelope_id: str,
        attachment_id: str | None = None,
        match_label: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(envelope_id=envelope_id, **kwargs)
        self.attachment_id = attachment_id
        self.match_label = match_label

    def execute(self, context: Context) -> dict[str, Any]:
        """Find the attachment and delete it."""
        attachment_id, label = _one_of(self.attachment_id, self.match_label, "match_label")
        current = self._pick(self._open(context, "/envelope/attachment/delete"), attachment_id, label)
        result = {"envelope_id": str(self.envelope_id), "attachment_id": attachment_id, "deleted": False}
        if current is None:
            self.log.info(
                "No attachment %s on envelope %s (already removed)", attachment_id or label, self.envelope_id
            )
            return result
        try:
            self.hook.delete_attachment(current.id)
        except DocsignNotFoundError:
            self.log.info("Attachment %s was already removed (404)", current.id)
            return {**result, "attachment_id": current.id}
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        except DocsignAmbiguousWriteError:
            # The answer was lost: read back. Still there, the task fails (a retry deletes it).
            if any(a.id == current.id for a in self.hook.find_attachments(str(self.envelope_id))):
                raise
            self.log.warning("The delete's answer was lost, but attachment %s is gone", current.id)
        self.log.info("Removed attachment %s from envelope %s", current.id, self.envelope_id)
        return {**result, "attachment_id": current.id, "deleted": True}
