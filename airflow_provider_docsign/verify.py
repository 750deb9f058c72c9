"""The auditor's checks, as a library: verify PDFs, or re-audit an archive from its manifest.

Nothing here prints or exits: every function returns :class:`Outcome` objects (or raises
:class:`UnusableInput`), and the ``docsign verify`` command (:mod:`.cli.verify`) prints them and
chooses the exit status. ``python -m airflow_provider_docsign.verify`` still works: it runs that
command.

A manifest is audited **where it is**: the files checked are the ones beside the manifest, found by
the path relative to the manifest that it records for each file (``path``), so an auditor handed a
copy of an archive audits the copy, not the original the URIs point at. Manifests written before
``path`` existed are read by the file's name under the manifest's folder (see
:func:`relative_path`). ``by_uri=True`` checks the recorded URIs instead. A file listed but missing,
a file whose SHA-256 changed, and a PDF in the audited folders that the manifest does not list each
fail, naming the file.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_docsign import verify_evidence as evidence
from airflow_provider_docsign._sources import open_source
from airflow_provider_docsign.signatures import (
    SignatureReport,
    TrustPolicy,
    UnreadablePdfError,
    verify_pdf_signatures,
)

__all__ = [
    "LOOKUP_FILE_NAME",
    "LOOKUP_RELATIVE_PATH",
    "LOOKUP_URI",
    "Outcome",
    "UnusableInput",
    "audit",
    "audit_file",
    "audit_manifest",
    "relative_path",
    "to_path",
]

_MAX_MANIFEST_BYTES = 16 * 1024 * 1024
_CHUNK = 1024 * 1024

#: How the files of a manifest were found: by the relative ``path`` the manifest records,
LOOKUP_RELATIVE_PATH = "relative path"
#: by their name under the manifest's folder (a manifest written before ``path`` was recorded),
LOOKUP_FILE_NAME = "file name (old manifest without relative paths)"
#: or at the URIs the manifest records (``by_uri=True``).
LOOKUP_URI = "recorded URI"

PASS = "PASS"  # noqa: S105 - an audit status, not a password
FAIL = "FAIL"
UNREADABLE = "UNREADABLE"


class UnusableInput(Exception):
    """The input cannot be audited at all (exit status 2): an unreadable manifest, for example."""


@dataclass
class Outcome:
    """The audit of one file.

    :param file: The file as checked (a path or URI).
    :param report: Its signature report, if it could be read.
    :param problems: Why it fails (empty: it passes).
    :param unreadable: True when the file could not be read at all (not there, not a PDF, a PDF that
        cannot be parsed); the command exits 2 then.
    :param recorded_uri: For a manifest entry, the URI the manifest records for it.
    :param lookup: For a manifest entry, how the file was found (``LOOKUP_*``).
    """

    file: str
    report: SignatureReport | None = None
    problems: list[str] = field(default_factory=list)
    unreadable: bool = False
    recorded_uri: str | None = None
    lookup: str | None = None

    @property
    def status(self) -> str:
        """``PASS``, ``FAIL`` or ``UNREADABLE``."""
        if self.unreadable:
            return UNREADABLE
        return FAIL if self.problems else PASS

    def to_dict(self) -> dict[str, Any]:
        """JSON form for ``--json``."""
        data: dict[str, Any] = {
            "file": self.file,
            "status": self.status,
            "passed": not self.problems and not self.unreadable,
            "problems": self.problems,
            "report": self.report.to_dict() if self.report is not None else None,
        }
        if self.lookup is not None:
            data["lookup"] = self.lookup
            data["recorded_uri"] = self.recorded_uri
        return data


def to_path(uri: str, conn_id: str | None = None) -> Any:
    """A local :class:`~pathlib.Path`, or an ``ObjectStoragePath`` for a URI with a scheme."""
    if "://" in uri and not uri.startswith("file://"):
        from airflow_provider_docsign._compat import ObjectStoragePath

        return ObjectStoragePath(uri, conn_id=conn_id) if conn_id else ObjectStoragePath(uri)
    return Path(uri[len("file://") :] if uri.startswith("file://") else uri)


def _sha256(source: Any) -> str:
    stream, owned = open_source(source)
    try:
        digest = hashlib.sha256()
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        if owned:
            stream.close()


def _unreadable(name: str, err: BaseException) -> Outcome:
    if isinstance(err, FileNotFoundError):
        reason = "the file does not exist"
    elif isinstance(err, IsADirectoryError):
        reason = "it is a directory, not a file"
    elif isinstance(err, UnreadablePdfError):
        reason = str(err)
    else:
        reason = f"cannot be read: {type(err).__name__}: {err}"
    return Outcome(name, problems=[reason], unreadable=True)


def audit_file(
    uri: str,
    trust: TrustPolicy | None,
    *,
    conn_id: str | None = None,
    options: evidence.EvidenceOptions | None = None,
) -> Any:
    """Verify one file given on the command line: it must be a signed PDF whose signatures pass.

    Never raises for the file itself: a file that is not there, is not a PDF or cannot be parsed
    gives an ``unreadable`` outcome, so that every other file is still audited. A long-term
    validation copy (``NAME.ltv.pdf``) is checked as such (:func:`.verify_evidence.audit_ltv`).

    :param uri: A path or URI.
    :param trust: The trust policy (``None``: ``trusted`` is not judged).
    :param conn_id: The Airflow connection for ``s3://`` and other object stores.
    :param options: Pinned TSA certificates, the validation time (default: now).
    """
    options = options or evidence.EvidenceOptions()
    if evidence.is_ltv_copy(uri):
        return evidence.audit_ltv(to_path(uri, conn_id), uri, trust, options)
    try:
        report = verify_pdf_signatures(to_path(uri, conn_id), trust=trust, label=uri, at=options.at)
    except (OSError, UnreadablePdfError) as err:
        return _unreadable(uri, err)
    return Outcome(uri, report, report.problems)


def _read_manifest(path: Any, uri: str) -> dict[str, Any]:
    try:
        stream, owned = open_source(path)
        try:
            raw = stream.read(_MAX_MANIFEST_BYTES + 1)
        finally:
            if owned:
                stream.close()
        if len(raw) > _MAX_MANIFEST_BYTES:
            raise UnusableInput(f"manifest {uri} is larger than {_MAX_MANIFEST_BYTES} bytes")
        manifest = json.loads(raw)
    except (OSError, ValueError) as err:
        raise UnusableInput(f"manifest {uri}: {type(err).__name__}: {err}") from err
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        raise UnusableInput(f"manifest {uri} is not an archive manifest (no 'files' list)")
    return manifest


def _entries(manifest: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """``(entry, signature_required)`` for every file of an archive manifest."""
    signed_version = manifest.get("version") == "signed"
    entries = [(e, signed_version) for e in manifest["files"] if isinstance(e, dict)]
    for kind in ("audit_log", "certificate"):
        report = manifest.get(kind)
        if isinstance(report, dict):
            recorded = report.get("signature") or {}
            entries.append((report, recorded.get("signed") is True))
    return entries


def relative_path(entry: dict[str, Any], manifest: dict[str, Any]) -> tuple[str, str]:
    """Where an entry's file lies relative to the manifest's folder, and how that was found.

    New manifests record it (``path``). For an older manifest, the entry's ``name`` (relative to the
    destination) is made relative to the folder the manifest was written in (also relative to the
    destination, from ``manifest_uri`` and ``destination``); failing that, the file's base name is
    used.

    :raises UnusableInput: For a recorded path that is absolute or climbs out with ``..``.
    """
    recorded = entry.get("path")
    if isinstance(recorded, str) and recorded:
        parts = recorded.split("/")
        if recorded.startswith("/") or "\\" in recorded or any(p in {"", ".", ".."} for p in parts):
            raise UnusableInput(f"manifest entry path {recorded!r} is not a plain relative path")
        return recorded, LOOKUP_RELATIVE_PATH
    name = str(entry.get("name") or entry.get("uri") or "")
    destination = str(manifest.get("destination") or "").rstrip("/")
    manifest_uri = str(manifest.get("manifest_uri") or "")
    if destination and manifest_uri.startswith(destination + "/"):
        folder = posixpath.dirname(manifest_uri[len(destination) + 1 :])
        prefix = f"{folder}/" if folder else ""
        if name.startswith(prefix) and ".." not in name.split("/"):
            return name[len(prefix) :], LOOKUP_FILE_NAME
    return posixpath.basename(name), LOOKUP_FILE_NAME


def _join(folder: Any, relative: str) -> Any:
    return folder.joinpath(*relative.split("/"))


def _pdfs_in(folder: Any) -> list[Any]:
    try:
        return [p for p in folder.iterdir() if p.name.lower().endswith(".pdf") and p.is_file()]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _listed_by_other_manifests(folder: Any, manifest_path: Any) -> set[str]:
    """Names (relative to ``folder``) listed by *other* manifests in the same folder.

    Several envelopes may share one folder, each with its own manifest (``manifest_name`` with
    ``{envelope_key}``); their PDFs are not "unlisted" for this one.
    """
    names: set[str] = set()
    try:
        candidates = [
            p for p in folder.iterdir() if p.name.endswith(".json") and p.name != manifest_path.name
        ]
    except (FileNotFoundError, NotADirectoryError):
        return names
    for candidate in candidates:
        try:
            other = _read_manifest(candidate, str(candidate))
            for entry, _ in _entries(other):
                names.add(relative_path(entry, other)[0])
        except UnusableInput:
            continue
    return names


def _check_entry(
    outcome: Outcome,
    path: Any,
    entry: dict[str, Any],
    signature_required: bool,
    trust: TrustPolicy | None,
    at: Any = None,
) -> None:
    try:
        actual = _sha256(path)
    except (FileNotFoundError, IsADirectoryError):
        outcome.problems.append("missing: the file listed in the manifest does not exist")
        return
    except OSError as err:
        outcome.problems.append(f"cannot be read: {type(err).__name__}: {err}")
        outcome.unreadable = True
        return
    if actual != entry.get("sha256"):
        outcome.problems.append(f"changed: sha256 is {actual}, the manifest says {entry.get('sha256')}")
    try:
        outcome.report = verify_pdf_signatures(path, trust=trust, label=outcome.file, at=at)
    except UnreadablePdfError as err:
        # The manifest lists it as an archived PDF: that it no longer parses is a failed check
        # (usually with "changed" above), not unusable input.
        outcome.problems.append(str(err))
        return
    except OSError as err:
        outcome.problems.append(f"cannot be read: {type(err).__name__}: {err}")
        outcome.unreadable = True
        return
    if outcome.report.signed or signature_required:
        outcome.problems.extend(outcome.report.problems)


def audit_manifest(
    uri: str,
    trust: TrustPolicy | None,
    *,
    conn_id: str | None = None,
    by_uri: bool = False,
    options: evidence.EvidenceOptions | None = None,
) -> list[Any]:
    """Re-audit an archive from its ``manifest.json``: existence, SHA-256 and signatures of each file.

    By default the files beside the manifest are checked (see the module docstring), and every PDF in
    the manifest's folder, and in the folders of its files, must be listed. With ``by_uri`` the URIs
    the manifest records are checked instead (no unlisted-file check: those folders may hold anything).

    :param uri: The manifest's path or URI.
    :param trust: The trust policy.
    :param conn_id: The Airflow connection for object stores.
    :param by_uri: Check the recorded URIs, not the files beside the manifest.
    :param options: The evidence checks (:mod:`.verify_evidence`): the long-term validation copies the
        manifest lists and the timestamp token beside it are audited too.
    :raises UnusableInput: When the manifest cannot be read or is not a manifest.
    """
    options = options or evidence.EvidenceOptions()
    manifest_path = to_path(uri, conn_id)
    manifest = _read_manifest(manifest_path, uri)
    folder = manifest_path.parent
    outcomes: list[Outcome] = []
    seen: set[str] = set()
    for entry, signature_required in _entries(manifest):
        recorded = str(entry.get("uri") or entry.get("name") or "")
        if by_uri:
            path, lookup, relative = to_path(recorded, conn_id), LOOKUP_URI, None
            shown = recorded
        else:
            try:
                relative, lookup = relative_path(entry, manifest)
            except UnusableInput as err:  # a tampered entry: it fails, the others are still audited
                outcomes.append(Outcome(recorded, problems=[str(err)], recorded_uri=recorded))
                continue
            path = _join(folder, relative)
            shown = _shown(uri, path, relative)
            seen.add(relative)
        outcome = Outcome(shown, recorded_uri=recorded, lookup=lookup)
        outcomes.append(outcome)
        _check_entry(outcome, path, entry, signature_required, trust, options.at)
    outcomes.extend(_evidence(manifest, manifest_path, uri, trust, options, conn_id, by_uri, seen))
    if not by_uri:
        outcomes.extend(_unlisted(folder, manifest_path, seen, uri))
    return outcomes


def _evidence(
    manifest: dict[str, Any],
    manifest_path: Any,
    uri: str,
    trust: TrustPolicy | None,
    options: evidence.EvidenceOptions,
    conn_id: str | None,
    by_uri: bool,
    seen: set[str],
) -> list[Any]:
    """The manifest's long-term validation copies and its timestamp token (:mod:`.verify_evidence`)."""
    out: list[Any] = []
    for copy in evidence.ltv_entries(manifest):
        recorded = str(copy.get("uri") or copy.get("name") or "")
        try:
            relative, lookup = relative_path(copy, manifest)
        except UnusableInput as err:
            out.append(Outcome(recorded, problems=[str(err)], recorded_uri=recorded))
            continue
        if by_uri:
            path, shown, lookup = to_path(recorded, conn_id), recorded, LOOKUP_URI
        else:
            path, shown = (
                _join(manifest_path.parent, relative),
                _shown(uri, _join(manifest_path.parent, relative), relative),
            )
            seen.add(relative)
        outcome = evidence.audit_ltv(path, shown, trust, options, entry=copy)
        outcome.lookup = lookup
        out.append(outcome)
    token_path = manifest_path.parent / evidence.token_name(manifest_path.name)
    token = evidence.audit_token(
        manifest,
        uri,
        lambda: manifest_path.open("rb"),
        lambda: token_path.open("rb"),
        _shown(uri, token_path, evidence.token_name(manifest_path.name)),
        options,
    )
    if token is not None:
        out.append(token)
    return out


def _shown(manifest_uri: str, path: Any, relative: str) -> str:
    """How a file beside the manifest is named in the output.

    A local path, or the manifest's URI folder plus the relative path: never an ObjectStoragePath's
    string, which may carry a connection id.
    """
    if "://" not in manifest_uri or manifest_uri.startswith("file://"):
        return str(path)
    return f"{manifest_uri.rsplit('/', 1)[0]}/{relative}"


def _unlisted(folder: Any, manifest_path: Any, seen: set[str], uri: str) -> list[Outcome]:
    others = _listed_by_other_manifests(folder, manifest_path)
    folders = {""} | {posixpath.dirname(name) for name in seen}
    out = []
    for sub in sorted(folders):
        directory = _join(folder, sub) if sub else folder
        for pdf in sorted(_pdfs_in(directory), key=lambda p: p.name):
            relative = f"{sub}/{pdf.name}" if sub else pdf.name
            if relative in seen or relative in others:
                continue
            shown = _shown(uri, pdf, relative)
            out.append(
                Outcome(
                    shown,
                    problems=["unlisted: a PDF beside the manifest that the manifest does not list"],
                    lookup=LOOKUP_RELATIVE_PATH,
                )
            )
    return out


def audit(
    files: Iterable[str],
    manifests: Iterable[str],
    trust: TrustPolicy | None,
    *,
    conn_id: str | None = None,
    by_uri: bool = False,
    options: evidence.EvidenceOptions | None = None,
) -> list[Any]:
    """Audit files and manifests, in order; every file gets an outcome.

    :param options: The evidence checks: pinned TSA certificates, ``require_timestamp``, the
        validation time (:class:`.verify_evidence.EvidenceOptions`).
    :raises UnusableInput: When a manifest cannot be read.
    """
    outcomes = [audit_file(f, trust, conn_id=conn_id, options=options) for f in files]
    for manifest in manifests:
        outcomes.extend(audit_manifest(manifest, trust, conn_id=conn_id, by_uri=by_uri, options=options))
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m airflow_provider_docsign.verify ARGS`` is ``docsign verify ARGS``."""
    from airflow_provider_docsign.cli import run

    args = list(sys.argv[1:] if argv is None else argv)
    return run(["verify", *args], prog="python -m airflow_provider_docsign.verify")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
