"""A campaign's archive audited envelope by envelope (:mod:`airflow_provider_docsign.archive.auditor`).

A batch archive writes one folder per envelope, each with its ``manifest.json``. :func:`find_manifests`
walks such a folder and :func:`audit_envelopes` audits every manifest it found, as ``docsign verify
--manifest`` audits one, with one :class:`Verdict` per envelope.

The walk never leaves the folder: it lists entries without following symbolic links, descends only
into real folders, at most :data:`MAX_DEPTH` levels deep, and opens nothing. What it finds that is not
an envelope to audit is a failing verdict of its own (or, inside an envelope's folder, a failing
outcome of that envelope):

* a ``manifest.json`` that is not a regular file (a FIFO, a link, a folder...): refused, never read;
* a folder with no ``manifest.json`` at or below it (an empty one included), or one that holds PDFs
  no manifest's folder covers: nothing there vouches for them;
* a symbolic link to a folder: not followed (what lies behind it is not this archive);
* a folder deeper than :data:`MAX_DEPTH`: not searched.

Nothing here prints or imports Airflow.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_docsign._sources import file_kind
from airflow_provider_docsign.archive import audit_evidence as evidence
from airflow_provider_docsign.archive.audit_pdfs import Outcome
from airflow_provider_docsign.archive.auditor import audit_manifests_each
from airflow_provider_docsign.evidence.signatures import TrustPolicy

__all__ = ["MANIFEST_NAME", "MAX_DEPTH", "Campaign", "Verdict", "audit_envelopes", "find_manifests"]

#: The name the walk looks for (the archive's default ``manifest_name``).
MANIFEST_NAME = "manifest.json"
#: Folders deeper than this below the campaign's folder are not searched (the default layout is 1).
MAX_DEPTH = 8


@dataclass
class Verdict:
    """One envelope of a campaign's archive, audited (or why it could not be).

    :param where: The manifest's path, or the folder (or link) that stands where an envelope should.
    :param outcomes: Every file's outcome (empty when the envelope could not be audited).
    :param problems: Why the envelope fails as a whole (no manifest, a refused manifest, a link...).
    """

    where: str
    outcomes: list[Any] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def failing(self) -> list[Any]:
        """The outcomes that fail (or could not be read)."""
        return [o for o in self.outcomes if o.problems or o.unreadable]

    @property
    def passed(self) -> bool:
        """Whether the envelope and every file of it pass."""
        return not self.problems and not self.failing

    def reason(self) -> str:
        """Why it fails, short, for a summary line: ``01-contract.pdf changed``."""
        if self.problems:
            return self.problems[0].split("; ", 1)[0][:200]
        failing = self.failing
        if not failing:
            return "ok"
        first = failing[0]
        problem = first.problems[0] if first.problems else first.status
        head = problem.split(":", 1)[0] if len(problem.split(":", 1)[0]) <= 60 else problem[:60]
        name = first.file.replace(os.sep, "/").rsplit("/", 1)[-1] or first.file
        more = f" (+{len(failing) - 1} more)" if len(failing) > 1 else ""
        return f"{name} {head}{more}"

    def to_dicts(self) -> list[dict[str, Any]]:
        """The JSON form: every outcome's, with ``manifest`` added (a failure of its own first)."""
        out = []
        if self.problems:
            out.append(
                {
                    "file": self.where,
                    "status": "FAIL",
                    "passed": False,
                    "problems": list(self.problems),
                    "report": None,
                }
            )
        out.extend(o.to_dict() for o in self.outcomes)
        return [{**one, "manifest": self.where} for one in out]


@dataclass
class Campaign:
    """What :func:`find_manifests` found under a campaign's folder.

    :param root: The folder searched.
    :param manifests: Every ``manifest.json`` that is a regular file, in path order.
    :param refused: Failing verdicts: what stands where an envelope should but cannot be audited.
    :param extra: Failing outcomes found inside an envelope's folder, by its manifest's path.
    :param folders: Folders listed.
    :param refused_manifests: ``manifest.json`` entries that are not regular files.
    """

    root: str
    manifests: list[str] = field(default_factory=list)
    refused: list[Verdict] = field(default_factory=list)
    extra: dict[str, list[Outcome]] = field(default_factory=dict)
    folders: int = 0
    refused_manifests: int = 0

    @property
    def found(self) -> int:
        """``manifest.json`` entries found, audited or refused."""
        return len(self.manifests) + self.refused_manifests


def _listing(directory: str) -> list[os.DirEntry[str]]:
    with os.scandir(directory) as found:
        return sorted(found, key=lambda e: e.name)


class _Walk:
    """The walk of :func:`find_manifests` (one folder at a time, depth first, links not followed)."""

    def __init__(self, root: str, name: str, max_depth: int) -> None:
        self.campaign = Campaign(root)
        self.name, self.max_depth = name, max_depth

    def fail(self, where: str, problem: str, owner: str | None) -> None:
        """A failing verdict, or a failing outcome of the envelope whose folder it is in."""
        if owner is None:
            self.campaign.refused.append(Verdict(where, problems=[problem]))
        else:
            self.campaign.extra.setdefault(owner, []).append(Outcome(where, problems=[problem]))

    def folder(self, directory: str, depth: int, owner: str | None) -> bool:
        """Walk one folder; whether a ``manifest.json`` lies in it or below it."""
        self.campaign.folders += 1
        try:
            entries = _listing(directory)
        except OSError as err:
            if depth == 0:
                raise
            self.fail(directory, f"not searched: it cannot be listed ({type(err).__name__}: {err})", owner)
            return False
        here = next((e for e in entries if e.name == self.name), None)
        if here is not None:
            owner = here.path
            if here.is_file(follow_symlinks=False):
                self.campaign.manifests.append(here.path)
            else:
                try:
                    kind = file_kind(here.stat(follow_symlinks=False).st_mode)
                except OSError as err:
                    kind = f"unreadable ({type(err).__name__})"
                problem = f"refused: {self.name} is {kind}, not a regular file; it was not read"
                self.campaign.refused.append(Verdict(here.path, problems=[problem]))
                self.campaign.refused_manifests += 1
        below = False
        subfolders = [e for e in entries if e.is_dir(follow_symlinks=False)]
        for entry in entries:
            if entry.name != self.name and entry.is_symlink() and os.path.isdir(entry.path):
                target = os.path.realpath(entry.path)
                self.fail(entry.path, f"refused: a symbolic link to a folder ({target}); not followed", owner)
        for sub in subfolders:
            if depth >= self.max_depth:
                if owner is None:
                    self.fail(sub.path, f"not searched: more than {self.max_depth} levels deep", owner)
                continue
            below = self.folder(sub.path, depth + 1, owner) or below
        if owner is None:
            pdfs = sum(1 for e in entries if e.name.lower().endswith(".pdf"))
            if pdfs:
                self.fail(directory, f"no {self.name} here: {pdfs} PDF(s) that no manifest lists", None)
            elif not below and not subfolders and depth > 0:
                what = "an empty folder" if not entries else f"{len(entries)} other file(s)"
                self.fail(directory, f"no {self.name} here ({what}): no envelope to audit", None)
        return here is not None or below


def find_manifests(
    root: str | os.PathLike[str], *, name: str = MANIFEST_NAME, max_depth: int = MAX_DEPTH
) -> Campaign:
    """Every ``manifest.json`` under a campaign's folder, and what stands where one should.

    :param root: A local folder (one sub-folder per envelope, as the batch archive writes).
    :param name: The manifest's file name.
    :param max_depth: Levels of folders searched below ``root``.
    :raises NotADirectoryError: When ``root`` is not a folder.
    """
    text = os.fspath(root)
    if not os.path.isdir(text):
        raise NotADirectoryError(f"{text} is not a folder")
    walk = _Walk(text, name, max_depth)
    walk.folder(text, 0, None)
    return walk.campaign


def audit_envelopes(
    campaigns: Sequence[Campaign],
    manifests: Sequence[str],
    trust: TrustPolicy | None,
    *,
    conn_id: str | None = None,
    by_uri: bool = False,
    options: evidence.EvidenceOptions | None = None,
) -> list[Verdict]:
    """Audit every envelope: the campaigns' manifests and the ``manifests`` given, one verdict each.

    All are audited together (envelopes sharing a folder vouch for each other's files, as with
    several ``--manifest``); a manifest that cannot be read fails alone. A manifest a campaign's walk
    found is read only if it still lies inside that campaign's folder.

    :param campaigns: What :func:`find_manifests` found in each folder given.
    :param manifests: Manifests given one by one (paths or URIs).
    :param trust: The trust policy.
    :param conn_id: The Airflow connection for object stores.
    :param by_uri: Check the recorded URIs, not the files beside each manifest.
    :param options: The evidence checks.
    :return: One verdict per envelope, in path order.
    """
    within = {uri: Path(c.root) for c in campaigns for uri in c.manifests}
    found = [uri for c in campaigns for uri in c.manifests]
    verdicts: dict[str, Verdict] = {}
    audited = audit_manifests_each(
        [*found, *manifests], trust, conn_id=conn_id, by_uri=by_uri, options=options, within=within
    )
    for uri, outcomes, error in audited:
        # The verdict names the manifest already: "manifest URI: it is a FIFO" -> "manifest: it is a FIFO".
        problem = error.replace(f"manifest {uri}", "manifest", 1) if error else None
        verdicts[uri] = Verdict(uri, outcomes, [problem] if problem else [])
    for campaign in campaigns:
        for verdict in campaign.refused:
            verdicts.setdefault(verdict.where, verdict)
        for owner, outcomes in campaign.extra.items():
            verdicts[owner].outcomes.extend(outcomes)
    return sorted(verdicts.values(), key=lambda v: _order(v.where))


def _order(where: str) -> tuple[str, ...]:
    return tuple(Path(where).parts)
