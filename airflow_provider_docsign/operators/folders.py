"""Operator that creates a folder, idempotently."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignValidationError,
)
from airflow_provider_docsign.operators._base import PERMANENT_ERRORS, DocsignBaseOperator, fail_now
from airflow_provider_docsign.operators._concurrent import keep_the_oldest
from airflow_provider_docsign.service.names import js_trim, name_problem

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.service.models import Folder

__all__ = ["DocsignCreateFolderOperator"]

FOLDER_TYPES = ("DOCUMENT", "TEMPLATE")


class DocsignCreateFolderOperator(DocsignBaseOperator):
    """Create a folder, or return the existing folder with the same name under the same parent.

    Running the task twice (or retrying it) never makes a second folder. Names are compared exactly
    (after trimming spaces), among folders of the same type whose parent is ``parent_id`` (the root
    when ``None``). If several such folders already exist, the oldest one is returned.

    Two runs at the same time (a backfill, two DAGs) may both find no folder and both create one: after
    its create, a run lists the folders again, returns the oldest, and deletes its own folder when it
    is not the oldest (it was made a moment ago, and no run returns it), so both runs return one id.

    Returns the folder id.

    :param name: The folder name: 2-100 characters, no link (``http://``, ``https://``, ``www.``) and no
        invisible or control character, as the service requires; refused before any request
        otherwise. Templated.
    :param parent_id: The parent folder id, or ``None`` for the root. Templated.
    :param folder_type: ``"DOCUMENT"`` (default) or ``"TEMPLATE"``. Templated.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("name", "parent_id", "folder_type")
    operator_extra_links = ()
    ui_color = "#e8f5d6"

    def __init__(
        self,
        *,
        name: str,
        parent_id: str | None = None,
        folder_type: str = "DOCUMENT",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.name = name
        self.parent_id = parent_id
        self.folder_type = folder_type

    def execute(self, context: Context) -> str:
        """Find or create the folder and return its id."""
        problems: list[str] = []
        name = js_trim(self.name) if isinstance(self.name, str) else ""
        problem = name_problem(self.name)
        if problem:
            problems.append(f"name: {problem}")
        folder_type = str(self.folder_type).upper()
        if folder_type not in FOLDER_TYPES:
            problems.append(f"folder_type: must be one of {FOLDER_TYPES}, not {self.folder_type!r}")
        parent_id = self.parent_id or None
        if parent_id is not None and not isinstance(parent_id, str):
            problems.append(f"parent_id: must be a folder id string, not {type(parent_id).__name__}")
        if problems:
            raise fail_now(DocsignValidationError(problems, context="folder"))

        try:
            existing = self._find(name, parent_id, folder_type)
            if existing is not None:
                self.log.info(
                    "Folder %r already exists under %s: %s", name, parent_id or "the root", existing.id
                )
                return existing.id
            try:
                folder = self.hook.create_folder(name, parent_id=parent_id, folder_type=folder_type)
            except DocsignAmbiguousWriteError:
                found = self._find(name, parent_id, folder_type)
                if found is None:
                    raise
                self.log.warning("The create's answer was lost, but folder %r exists: %s", name, found.id)
                return found.id
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        self.log.info("Created folder %r under %s: %s", name, parent_id or "the root", folder.id)
        return self._oldest_after_create(folder.id, name, parent_id, folder_type)

    def _oldest_after_create(self, made: str, name: str, parent_id: str | None, folder_type: str) -> str:
        """The oldest folder of this name; this run's own is deleted when another run's is older."""

        def oldest() -> str | None:
            found = self._find(name, parent_id, folder_type)
            return found.id if found else None

        return keep_the_oldest(
            made,
            oldest=oldest,
            delete=self.hook.delete_folder,
            log=self.log,
            what=f"folder {name!r}",
            where=f"under {parent_id or 'the root'}",
        )

    def _find(self, name: str, parent_id: str | None, folder_type: str) -> Folder | None:
        # Without parentId the service lists folders at every level (not only the root), so the
        # parent is always compared here.
        matches = [
            f
            for f in self.hook.list_folders(parent_id=parent_id, folder_type=folder_type)
            if js_trim(f.name or "") == name
            and (f.parent_id or None) == parent_id
            and (f.type or folder_type).upper() == folder_type
        ]
        if not matches:
            return None
        if len(matches) > 1:
            ids = [f.id for f in matches]
            self.log.warning(
                "%d folders are named %r under %s: %s", len(matches), name, parent_id or "the root", ids
            )
        matches.sort(key=lambda f: (str(f.raw.get("createdAt") or ""), f.id))
        return matches[0]
