"""The steps of the duplicate operators (:mod:`~airflow_provider_docsign.operators.duplicates`).

``DocsignDuplicateEnvelopeOperator`` uses them all; ``DocsignDuplicateTemplateOperator`` uses
:func:`check_changes` and :func:`duplicate_then_update` (it has no external id to find a copy by).
A duplicate is not idempotent, so every step that could leave a second copy behind is made safe here:

* :func:`check_changes`: the title, external id and folder the copy gets are checked before the copy
  is made, as the update that gives them to it is checked (a refused title never leaves a half-made
  copy, nor a retry that copies again);
* :func:`folder_problem`: the folder must be one of the team's, of the source's type (the service
  refuses a template's copy in a document folder, after the copy exists);
* :func:`copy_problem`: an envelope found by the external id is reused only if it is a copy of this
  source: the same type and the same original PDFs, compared by their SHA-256 (downloaded, not kept).
  An unrelated envelope that carries the id (a templated id shared by two sources, say) is never
  taken for the copy and sent in its place;
* :func:`duplicate_then_update`: the copy, then the update that gives it its title, external id and
  folder. When that update fails, the copy exists without the external id a retry would find it by,
  so the task fails without retrying, naming the copy.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignError, DocsignValidationError
from airflow_provider_docsign.hooks import _endpoints as ep

if TYPE_CHECKING:
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.service.models import Envelope

__all__ = [
    "Discard",
    "check_changes",
    "copy_problem",
    "duplicate_then_update",
    "existing_copy",
    "folder_problem",
]


class Discard(io.RawIOBase):
    """A binary sink that keeps nothing: a download the hook hashes, then thrown away."""

    def writable(self) -> bool:
        """Always true."""
        return True

    def write(self, data: Any) -> int:
        """Drop ``data``."""
        return len(data)


def check_changes(source: str, changes: dict[str, Any]) -> None:
    """Refuse, before anything is sent, a change the copy's update would carry and the service refuse.

    :param source: The envelope to copy.
    :param changes: ``title``, ``externalId`` and ``folderId`` in the service's shape.
    :raises DocsignValidationError: Naming each problem.
    """
    title = changes.get("title")
    if title is not None and not str(title).strip():
        raise DocsignValidationError(["title must not be empty"], "the copy's title")
    if changes:
        try:
            ep.check_outgoing(ep.update_envelope(source, changes, None))
        except DocsignValidationError as err:  # named as what the user gave, not as the later update
            what = f"the copy's {', '.join(sorted(changes))} (set by POST /envelope/update once it exists)"
            raise DocsignValidationError(err.problems, what) from err


def folder_problem(hook: DocsignHook, folder_id: str, envelope_type: str | None) -> str | None:
    """Why the copy of an envelope of ``envelope_type`` cannot go in ``folder_id`` (``None``: it can)."""
    found = next((f for f in hook.list_folders() if f.id == folder_id), None)
    if found is None:
        return f"folder_id {folder_id!r} is not a folder of this team"
    wanted = envelope_type or "DOCUMENT"
    if found.type is not None and found.type != wanted:
        return (
            f"folder_id {folder_id!r} is a {found.type} folder; the copy of a {wanted} goes in a {wanted} "
            "folder (the service would refuse it after making the copy)"
        )
    return None


def _originals(hook: DocsignHook, envelope: Envelope) -> list[str]:
    """The SHA-256 of each item's original PDF, in item order (one download each, nothing kept)."""
    return [
        hook.download_envelope_item(item.id, Discard(), version="original").sha256 for item in envelope.items
    ]


def copy_problem(hook: DocsignHook, source: Envelope, candidate: Envelope) -> str | None:
    """Why ``candidate`` is not a copy of ``source`` (``None``: it is).

    The service copies the original PDFs (and the type); titles, recipients and fields are what a user
    corrects on a copy, so they are not compared.
    """
    if candidate.type != source.type:
        return f"it is a {candidate.type}, and {source.id} a {source.type}"
    if len(candidate.items) != len(source.items):
        return f"it has {len(candidate.items)} document(s), and {source.id} {len(source.items)}"
    if _originals(hook, candidate) != _originals(hook, source):
        return f"its original PDFs are not those of {source.id}"
    return None


def existing_copy(
    hook: DocsignHook,
    source: Envelope | None,
    external_id: str | None,
    folder: str | None,
    *,
    if_exists: str,
    log: Any,
) -> str | None:
    """The copy an earlier try made (found by its external id in the folder, a copy of ``source``).

    ``None`` when there is none (or no external id, or ``if_exists="create"``).

    :raises AirflowFailException: Two or more envelopes carry the id, one does and ``if_exists="fail"``,
        or the one that does is not a copy of ``source``.
    """
    if source is None or not external_id or if_exists == "create":
        return None
    where = f"folder {folder or '(root)'}"
    matches = [
        m for m in hook.find_envelopes_by_external_id(external_id, folder_id=folder) if m.id != source.id
    ]
    if not matches:
        return None
    if len(matches) > 1 or if_exists == "fail":
        raise AirflowFailException(
            f"{len(matches)} envelope(s) other than {source.id} already have externalId {external_id!r} "
            f"in {where}: {', '.join(m.id for m in matches)}"
            + (" and if_exists='fail'" if if_exists == "fail" else "; use a unique external_id")
        )
    problem = copy_problem(hook, source, hook.get_envelope(matches[0].id))
    if problem:
        raise AirflowFailException(
            f"envelope {matches[0].id} has externalId {external_id!r} in {where} but is not a copy of "
            f"{source.id}: {problem}. Nothing was copied; use an external_id that is unique to this copy"
        )
    log.info("Reusing envelope %s (externalId %r), copied by an earlier try", matches[0].id, external_id)
    return matches[0].id


def duplicate_then_update(
    hook: DocsignHook,
    source: str,
    changes: dict[str, Any],
    *,
    include_recipients: bool,
    include_fields: bool,
    made: Callable[[str], None],
) -> str:
    """Copy ``source``, then give the copy ``changes``; return the copy's id.

    :param made: Called with the copy's id as soon as it exists (the operator pushes it to XCom).
    :raises AirflowFailException: When the update fails: the copy exists, and a retry could not find it.
    """
    new_id = hook.duplicate_envelope(
        source, include_recipients=include_recipients, include_fields=include_fields
    )
    made(new_id)
    if not changes:
        return new_id
    try:
        hook.update_envelope(new_id, data=changes)
    except DocsignError as err:
        keys = ", ".join(sorted(changes))
        raise AirflowFailException(
            f"envelope {source} was duplicated as {new_id}, but setting its {keys} failed "
            f"({type(err).__name__}: {err}). The task stops without a retry, since a retry could not "
            f"find {new_id} by its external id and would make a second copy: set its {keys} (or delete "
            "it), then clear the task"
        ) from err
    return new_id
