"""The folder checks of a manifest audit (:mod:`airflow_provider_docsign.archive.auditor`), without Airflow.

The folders a manifest covers are its own and those of its files. Every PDF there must be listed by a
manifest *being audited*, and every other ``.json`` there is reported: a second manifest beside the
first could otherwise vouch for an injected PDF. Envelopes that share a folder are audited together
(every manifest given), and then each one's PDFs and manifest are expected. Names are listed without
following links, and nothing found here is opened.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_docsign._sources import is_local_path

__all__ = ["findings"]

UNLISTED = "unlisted: a PDF beside the manifest that no audited manifest lists"
UNEXPECTED = (
    "unexpected: a .json beside the manifest that is not a manifest being audited; it vouches for "
    "nothing (if it is another envelope's manifest sharing this folder, audit it too with another "
    "--manifest)"
)
NOT_REGULAR = " (and it is not a regular file)"


@dataclass
class _Folder:
    """A folder the audited manifests cover: what they list there, and which of its files they are."""

    directory: Any
    manifest_uri: str
    root: Any
    sub: str
    listed: set[str] = field(default_factory=set)
    manifests: set[str] = field(default_factory=set)


def _key(directory: Any) -> str:
    return os.path.realpath(directory) if is_local_path(directory) else str(directory)


def _join(folder: Any, relative: str) -> Any:
    return folder.joinpath(*relative.split("/")) if relative else folder


def _names_in(directory: Any, root: Any) -> list[tuple[str, bool]]:
    """``(name, is_regular_file)`` of every entry of a folder, links not followed.

    A local folder that leads outside ``root`` (the manifest's folder) once its links are resolved is
    not listed: its files are not this archive's (entries there are refused on their own).
    """
    if is_local_path(directory):
        real, base = os.path.realpath(directory), os.path.realpath(root)
        if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
            return []
        try:
            with os.scandir(directory) as found:
                return [(e.name, e.is_file(follow_symlinks=False)) for e in found]
        except (FileNotFoundError, NotADirectoryError):
            return []
    try:
        return [(p.name, p.is_file()) for p in directory.iterdir()]
    except (FileNotFoundError, NotADirectoryError):
        return []


def findings(audited: Sequence[tuple[str, Any, set[str]]]) -> list[tuple[str, Any, str, str]]:
    """The unlisted PDFs and unexpected ``.json`` files of the folders the manifests cover.

    :param audited: ``(manifest URI, manifest path, relative paths it lists)`` of every manifest
        audited together.
    :return: ``(manifest URI, path, path relative to that manifest's folder, problem)`` of each.
    """
    folders: dict[str, _Folder] = {}
    for uri, path, listed in audited:
        for sub in sorted({""} | {posixpath.dirname(name) for name in listed}):
            directory = _join(path.parent, sub)
            slot = folders.setdefault(_key(directory), _Folder(directory, uri, path.parent, sub))
            slot.listed |= {posixpath.basename(n) for n in listed if posixpath.dirname(n) == sub}
        folders[_key(path.parent)].manifests.add(path.name)
    out = []
    for slot in folders.values():
        for name, regular in sorted(_names_in(slot.directory, slot.root)):
            lower = name.lower()
            if lower.endswith(".pdf") and name not in slot.listed:
                problem = UNLISTED
            elif lower.endswith(".json") and name not in slot.manifests:
                problem = UNEXPECTED
            else:
                continue
            relative = f"{slot.sub}/{name}" if slot.sub else name
            out.append(
                (
                    slot.manifest_uri,
                    _join(slot.directory, name),
                    relative,
                    problem + ("" if regular else NOT_REGULAR),
                )
            )
    return out
