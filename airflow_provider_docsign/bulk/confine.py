"""A row's files, opened confined to ``files_root`` when they are sent (not only checked before).

:meth:`~airflow_provider_docsign.bulk.plan.CampaignPlan.problems` checks that a file a row names lies
under ``files_root`` (symbolic links resolved). Between that check and the upload a folder could be
swapped for a link out of the root; so the send path opens every local file under a local
``files_root`` with :func:`~airflow_provider_docsign._sources.open_confined` (walking the path from the
root's descriptor, following no link) and uploads the open descriptor. A swap is refused there.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from airflow_provider_docsign._sources import _is_inside, is_local_path, open_confined

__all__ = ["open_under_root"]


def _local_root(files_root: Any) -> str | None:
    if files_root is None:
        return None
    text = os.fspath(files_root) if isinstance(files_root, os.PathLike) else str(files_root)
    if text.startswith("file://"):
        text = text[len("file://") :]
    elif "://" in text:
        return None  # an object-store prefix: no links there, the key prefix is the confinement
    return os.path.realpath(text)


def open_under_root(files_root: Any, files: Any) -> tuple[Any, contextlib.ExitStack]:
    """``files`` with every local path under a local ``files_root`` replaced by its confined open file.

    Returns the files and an ``ExitStack`` that closes what was opened (close it after the upload).
    Paths outside the root (a fixed ``files`` list of the operator's) and object-store paths are left
    as they are.

    :param files_root: The operator's ``files_root`` (``None``: nothing is replaced).
    :param files: A list or mapping of sources, as ``create_kwargs``/``use_kwargs`` give them.
    :raises OSError: (``OutsideFolderError`` and others) when a file cannot be opened inside the root;
        nothing stays open then.
    """
    stack = contextlib.ExitStack()
    root = _local_root(files_root)
    if root is None or files is None:
        return files, stack

    def one(value: Any) -> Any:
        if isinstance(value, str):
            value = Path(value)
        if not is_local_path(value) or not _is_inside(os.path.normpath(os.fspath(value)), root):
            return value
        return stack.enter_context(open_confined(root, value))

    try:
        if isinstance(files, Mapping):
            return {k: one(v) for k, v in files.items()}, stack
        return [one(v) for v in files], stack
    except BaseException:
        stack.close()
        raise
