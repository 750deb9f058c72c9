"""Folder methods of :class:`~.docsign.DocsignHook` (a mixin typed against :class:`~._protocol.HookCore`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._endpoints import camel
from airflow_provider_docsign.hooks._protocol import HookCore
from airflow_provider_docsign.service.models import Folder
from airflow_provider_docsign.service.names import name_problem


class FolderMethods:
    """Folder endpoints (mixed into ``DocsignHook``)."""

    def list_folders(
        self: HookCore, *, parent_id: str | None = None, folder_type: str | None = None
    ) -> Iterator[Folder]:
        """Iterate over folders, following every page.

        Note (real service): without ``parent_id`` folders at every level are listed.

        :param parent_id: Only folders directly inside this folder.
        :param folder_type: ``DOCUMENT`` or ``TEMPLATE``.
        """
        for data in self._pages(
            lambda page: ep.list_folders(page=page, parent_id=parent_id, folder_type=folder_type)
        ):
            yield Folder.from_json(data)

    def create_folder(
        self: HookCore, name: str, *, parent_id: str | None = None, folder_type: str = "DOCUMENT"
    ) -> Folder:
        """Create a folder.

        :param name: The name: 2-100 characters, no link (``http://``, ``https://``, ``www.``) and no
            invisible or control character, as the service requires
            (:func:`~airflow_provider_docsign.service.names.name_problem`).
        :param parent_id: Create it inside this folder.
        :param folder_type: ``DOCUMENT`` or ``TEMPLATE``.
        """
        problems = []
        problem = name_problem(name, text_policy=False)  # the outgoing check does the rest
        if problem:
            problems.append(f"name: {problem}")
        if folder_type not in ("DOCUMENT", "TEMPLATE"):
            problems.append(f"folder_type must be DOCUMENT or TEMPLATE, not {folder_type!r}")
        if problems:
            raise DocsignValidationError(problems, "create_folder")
        return Folder.from_json(self._call(ep.create_folder(name, parent_id, folder_type)))

    def update_folder(self: HookCore, folder_id: str, **changes: Any) -> Folder:
        """Rename, move (``parent_id=None`` moves to the root), pin or change the visibility of a folder.

        The service (v2.17) changes only the keys given; nothing else is reset.

        :param folder_id: The folder id.
        :param changes: ``name`` (checked as in :meth:`create_folder`), ``parent_id``, ``visibility``,
            ``pinned`` (camelCase also accepted).
        """
        if not changes:
            raise DocsignValidationError(["nothing to update"], "update_folder")
        if "name" in changes and (problem := name_problem(changes["name"], text_policy=False)):
            raise DocsignValidationError([f"name: {problem}"], "update_folder")
        return Folder.from_json(self._call(ep.update_folder(folder_id, camel(changes))))

    def delete_folder(self: HookCore, folder_id: str) -> None:
        """Delete a folder and its subfolders (the envelopes in it move to the root).

        :param folder_id: The folder id.
        """
        self._call(ep.delete_folder(folder_id))
