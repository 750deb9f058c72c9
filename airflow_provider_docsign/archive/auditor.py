"""The auditor's checks, as a library: verify PDFs, or re-audit an archive from its manifest.

Nothing here prints or exits: every function returns :class:`Outcome` objects (or raises
:class:`UnusableInput`), and the ``docsign verify`` command (:mod:`.cli.verify`) prints them and
chooses the exit status. ``python -m airflow_provider_docsign.verify`` still works: it runs that
command. Nothing here imports Airflow unless a URI with a scheme (``s3://``...) is given.

A manifest is audited **where it is**: the files checked are the ones beside the manifest, found by
the path relative to the manifest that it records for each file (``path``), so an auditor handed a
copy of an archive audits the copy, not the original the URIs point at. Manifests written before
``path`` existed are read by the file's name under the manifest's folder (see
:func:`relative_path`). ``by_uri=True`` checks the recorded URIs instead.

Only **regular files inside the manifest's folder** are read: an entry that is a FIFO, a device, a
socket or a directory is refused before it is opened, and one whose symbolic links lead out of the
folder is refused too; each fails by name. Each entry is audited on its own: a malformed one (not an
object, a ``path`` with a NUL byte or climbing out with ``..``) fails alone and the rest are audited.

Then the folders themselves are checked (:mod:`._audit_folders`): every PDF in the manifest's
folder (and in the folders of its files) must be listed by a manifest *being audited*, and every
other ``.json`` there is reported, since a second manifest beside the first could otherwise vouch for
an injected PDF. Envelopes that share a folder are audited together, by giving every manifest.
A campaign's archive (one folder per envelope) is walked and audited envelope by envelope in
:mod:`.audit_campaign`, through :func:`audit_manifests_each`.

The lasting evidence (:mod:`.verify_evidence`) is audited with the manifest: the timestamp token
beside it (``manifest.json.tsr``) and the long-term validation copies (``NAME.ltv.pdf``) its entries
list, read under the same rules as the files.

Where checks plug in: per file, :func:`.audit_pdfs._check_contents` (SHA-256, then signatures) runs
on the one open stream of each entry (the per-file checks and :class:`Outcome` live in
:mod:`.audit_pdfs`); checks of a manifest as a whole go in :func:`_audit_one`, beside the per-entry
loop (the evidence is :func:`_evidence`), and checks of the audited folders in :func:`_folder_checks`.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_docsign._sources import NotARegularFileError, OutsideFolderError, is_local_path
from airflow_provider_docsign.archive import audit_evidence as evidence
from airflow_provider_docsign.archive.audit_folders import findings
from airflow_provider_docsign.archive.audit_pdfs import (
    FAIL,
    PASS,
    UNREADABLE,
    Outcome,
    _check_entry,
    _Entry,
    _open,
    _open_listed,
    _unreadable,
    strict_problems,
    why_unreadable,
)
from airflow_provider_docsign.evidence.signatures import (
    TrustPolicy,
    UnreadablePdfError,
    verify_pdf_signatures,
)

__all__ = [
    "FAIL",
    "LOOKUP_FILE_NAME",
    "LOOKUP_RELATIVE_PATH",
    "LOOKUP_URI",
    "PASS",
    "UNREADABLE",
    "Outcome",
    "UnusableInput",
    "audit",
    "audit_file",
    "audit_manifest",
    "audit_manifests",
    "audit_manifests_each",
    "relative_path",
    "to_path",
]

_MAX_MANIFEST_BYTES = 16 * 1024 * 1024

#: How the files of a manifest were found: by the relative ``path`` the manifest records,
LOOKUP_RELATIVE_PATH = "relative path"
#: by their name under the manifest's folder (a manifest written before ``path`` was recorded),
LOOKUP_FILE_NAME = "file name (old manifest without relative paths)"
#: or at the URIs the manifest records (``by_uri=True``).
LOOKUP_URI = "recorded URI"


class UnusableInput(Exception):
    """The input cannot be audited at all (exit status 2): an unreadable manifest, for example."""


def is_remote(uri: str) -> bool:
    """Whether ``uri`` names object storage (``s3://``...), which needs Airflow to be read."""
    return "://" in uri and not uri.startswith("file://")


def to_path(uri: str, conn_id: str | None = None) -> Any:
    """A local :class:`~pathlib.Path`, or an ``ObjectStoragePath`` for a URI with a scheme."""
    if is_remote(uri):
        from airflow_provider_docsign._compat import ObjectStoragePath

        return ObjectStoragePath(uri, conn_id=conn_id) if conn_id else ObjectStoragePath(uri)
    return Path(uri[len("file://") :] if uri.startswith("file://") else uri)


def audit_file(
    uri: str,
    trust: TrustPolicy | None,
    *,
    conn_id: str | None = None,
    options: evidence.EvidenceOptions | None = None,
) -> Any:
    """Verify one file given on the command line: it must be a signed PDF whose signatures pass.

    Never raises for the file itself: a file that is not there, is not a regular file, is not a PDF
    or cannot be parsed gives an ``unreadable`` outcome, so that every other file is still audited.
    A long-term validation copy (``NAME.ltv.pdf``) is checked as such
    (:func:`.verify_evidence.audit_ltv`).

    :param uri: A path or URI.
    :param trust: The trust policy (``None``: ``trusted`` is not judged).
    :param conn_id: The Airflow connection for ``s3://`` and other object stores.
    :param options: Pinned TSA certificates, the validation time (default: now).
    """
    options = options or evidence.EvidenceOptions()
    try:
        with _open(to_path(uri, conn_id)) as stream:
            if evidence.is_ltv_copy(uri):
                return evidence.audit_ltv(stream, uri, trust, options)
            report = verify_pdf_signatures(stream, trust=trust, label=uri, at=options.at)
    except (OSError, UnreadablePdfError) as err:
        return _unreadable(uri, err)
    return Outcome(uri, report, [*report.problems, *strict_problems(report, trust, options.strict)])


_GIVE = "give the manifest.json an archive wrote (or an archive's folder)"


def _read_manifest(path: Any, uri: str, inside: Any = None) -> dict[str, Any]:
    """The manifest as parsed; every reason it cannot be is said in words, with what to give instead."""
    try:
        with _open(path, inside) as stream:
            raw = stream.read(_MAX_MANIFEST_BYTES + 1)
    except NotARegularFileError as err:
        raise UnusableInput(f"manifest {uri}: it is {err.kind}, not a regular file; it was not read") from err
    except OutsideFolderError as err:
        raise UnusableInput(
            f"manifest {uri}: a symbolic link leading outside {err.folder} (to {err.target}); it was not read"
        ) from err
    except OSError as err:
        raise UnusableInput(f"manifest {uri}: {why_unreadable(err)}: {_GIVE}") from err
    if len(raw) > _MAX_MANIFEST_BYTES:
        raise UnusableInput(f"manifest {uri} is larger than {_MAX_MANIFEST_BYTES} bytes: {_GIVE}")
    if raw.lstrip()[:5] == b"%PDF-":
        raise UnusableInput(
            f"manifest {uri} is a PDF, not a manifest: {_GIVE}; a PDF is verified when given "
            "without --manifest"
        )
    try:
        manifest = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise UnusableInput(f"manifest {uri}: {why_unreadable(err)}: {_GIVE}") from err
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        raise UnusableInput(f"manifest {uri} is not an archive manifest (no 'files' list): {_GIVE}")
    return manifest


def _entries(manifest: dict[str, Any]) -> list[_Entry]:
    """Every entry of an archive manifest, in order: its files, then the audit log and certificate."""
    signed_version = manifest.get("version") == "signed"
    entries = []
    for index, item in enumerate(manifest["files"]):
        where = f"files[{index}]"
        if isinstance(item, dict):
            entries.append(_Entry(where, item, signed_version))
        else:
            entries.append(_Entry(where, None, malformed=f"not an object ({type(item).__name__})"))
    for kind in ("audit_log", "certificate"):
        report = manifest.get(kind)
        if report is None:
            continue
        if not isinstance(report, dict):
            entries.append(_Entry(kind, None, malformed=f"not an object ({type(report).__name__})"))
            continue
        recorded = report.get("signature")
        if recorded is not None and not isinstance(recorded, dict):
            entries.append(_Entry(kind, None, malformed="its 'signature' is not an object"))
            continue
        entries.append(_Entry(kind, report, (recorded or {}).get("signed") is True))
    return entries


def relative_path(entry: dict[str, Any], manifest: dict[str, Any]) -> tuple[str, str]:
    """Where an entry's file lies relative to the manifest's folder, and how that was found.

    New manifests record it (``path``). For an older manifest, the entry's ``name`` (relative to the
    destination) is made relative to the folder the manifest was written in (also relative to the
    destination, from ``manifest_uri`` and ``destination``); failing that, the file's base name is
    used.

    :raises UnusableInput: For a recorded path that is not a string, is absolute, climbs out with
        ``..`` or holds a NUL byte (the entry fails; the others are still audited).
    """
    recorded = entry.get("path")
    if recorded is not None and not isinstance(recorded, str):
        raise UnusableInput(f"manifest entry path {recorded!r} is not a string")
    if recorded:
        parts = recorded.split("/")
        if (
            recorded.startswith("/")
            or "\\" in recorded
            or "\x00" in recorded
            or any(p in {"", ".", ".."} for p in parts)
        ):
            raise UnusableInput(f"manifest entry path {recorded!r} is not a plain relative path")
        return recorded, LOOKUP_RELATIVE_PATH
    name = str(entry.get("name") or entry.get("uri") or "")
    if "\x00" in name:
        raise UnusableInput(f"manifest entry name {name!r} holds a NUL byte")
    destination = str(manifest.get("destination") or "").rstrip("/")
    manifest_uri = str(manifest.get("manifest_uri") or "")
    if destination and manifest_uri.startswith(destination + "/"):
        folder = posixpath.dirname(manifest_uri[len(destination) + 1 :])
        prefix = f"{folder}/" if folder else ""
        if name.startswith(prefix) and ".." not in name.split("/"):
            return name[len(prefix) :], LOOKUP_FILE_NAME
    base = posixpath.basename(name)
    if base in {"", ".", ".."}:
        raise UnusableInput(f"manifest entry names no file (name {name!r})")
    return base, LOOKUP_FILE_NAME


def _join(folder: Any, relative: str) -> Any:
    return folder.joinpath(*relative.split("/"))


@dataclass
class _Audited:
    """One manifest, audited: its outcomes and what it lists (relative to its folder)."""

    uri: str
    path: Any
    outcomes: list[Any]
    listed: set[str]


def _audit_one(
    uri: str,
    trust: TrustPolicy | None,
    *,
    conn_id: str | None,
    by_uri: bool,
    options: evidence.EvidenceOptions,
    inside: Any = None,
) -> _Audited:
    """Audit every entry of one manifest, each on its own, then its lasting evidence.

    :param inside: A local folder the manifest itself must lie in once its links are resolved.
    """
    manifest_path = to_path(uri, conn_id)
    manifest = _read_manifest(manifest_path, uri, inside)
    folder = manifest_path.parent
    local = is_local_path(manifest_path)
    audited = _Audited(uri, manifest_path, [], set())
    for entry in _entries(manifest):
        data = entry.data or {}
        recorded = str(data.get("uri") or data.get("name") or "")
        if entry.malformed is not None:
            audited.outcomes.append(
                Outcome(f"{uri}#{entry.where}", problems=[f"malformed entry: {entry.malformed}"])
            )
            continue
        try:
            if by_uri:
                if not recorded or "\x00" in recorded:
                    raise UnusableInput(f"manifest entry records no usable URI ({recorded!r})")
                path, lookup, shown = to_path(recorded, conn_id), LOOKUP_URI, recorded
            else:
                relative, lookup = relative_path(data, manifest)
                path = _join(folder, relative)
                shown = _shown(uri, path, relative)
                audited.listed.add(relative)
        except (UnusableInput, ValueError) as err:  # a tampered entry: it fails, the others are audited
            audited.outcomes.append(
                Outcome(f"{uri}#{entry.where}", problems=[f"malformed entry: {err}"], recorded_uri=recorded)
            )
            continue
        outcome = Outcome(shown, recorded_uri=recorded, lookup=lookup)
        audited.outcomes.append(outcome)
        inside = folder if local and not by_uri else None
        _check_entry(outcome, path, entry, trust, inside=inside, at=options.at, strict=options.strict)
    inside = folder if local and not by_uri else None
    audited.outcomes.extend(_evidence(manifest, audited, trust, options, conn_id, by_uri, inside))
    return audited


def _evidence(
    manifest: dict[str, Any],
    audited: _Audited,
    trust: TrustPolicy | None,
    options: evidence.EvidenceOptions,
    conn_id: str | None,
    by_uri: bool,
    inside: Any,
) -> list[Any]:
    """The manifest's long-term validation copies and its timestamp token (:mod:`.verify_evidence`).

    Both are read under the rules of every listed file: regular files only, inside the folder.
    """
    uri, manifest_path = audited.uri, audited.path
    folder = manifest_path.parent
    out: list[Any] = []
    for copy in evidence.ltv_entries(manifest):
        recorded = str(copy.get("uri") or copy.get("name") or "")
        try:
            relative, lookup = relative_path(copy, manifest)
        except UnusableInput as err:
            out.append(Outcome(recorded, problems=[f"malformed entry: {err}"], recorded_uri=recorded))
            continue
        if by_uri:
            path, shown, lookup = to_path(recorded, conn_id), recorded, LOOKUP_URI
        else:
            path = _join(folder, relative)
            shown = _shown(uri, path, relative)
            audited.listed.add(relative)
        refused = Outcome(shown, recorded_uri=recorded, lookup=lookup)
        stream = _open_listed(
            refused,
            path,
            inside,
            "missing: the long-term validation copy listed in the manifest does not exist",
        )
        if stream is None:
            out.append(refused)
            continue
        with stream:
            outcome = evidence.audit_ltv(stream, shown, trust, options, entry=copy)
        outcome.lookup = lookup
        out.append(outcome)
    name = evidence.token_name(manifest_path.name)
    token_path = folder / name
    token = evidence.audit_token(
        manifest,
        uri,
        lambda: _open(manifest_path, inside),
        lambda: _open(token_path, inside),
        _shown(uri, token_path, name),
        options,
    )
    if token is not None:
        # What the token proves is said of the listed files that still match their SHA-256 only.
        listed = [*audited.outcomes, *out]
        token.unproven = [o.file for o in listed if o.sha256_matches is not True]
        token.proven = len(listed) - len(token.unproven)
        out.append(token)
    return out


def _shown(manifest_uri: str, path: Any, relative: str) -> str:
    """How a file beside the manifest is named in the output.

    A local path, or the manifest's URI folder plus the relative path: never an ObjectStoragePath's
    string, which may carry a connection id.
    """
    if not is_remote(manifest_uri):
        return str(path)
    return f"{manifest_uri.rsplit('/', 1)[0]}/{relative}"


def _folder_checks(audited: Sequence[_Audited]) -> list[tuple[str, Outcome]]:
    """Every PDF in the audited folders must be listed, and no other ``.json`` may lie there.

    See :func:`._audit_folders.findings`: a file beside the manifests that lists a PDF (an extra
    ``.json``) vouches for nothing; it is reported itself. Each comes with the URI of the manifest
    whose folder it was found in.
    """
    found = findings([(one.uri, one.path, one.listed) for one in audited])
    return [
        (uri, Outcome(_shown(uri, path, relative), problems=[problem], lookup=LOOKUP_RELATIVE_PATH))
        for uri, path, relative, problem in found
    ]


def audit_manifests(
    uris: Iterable[str],
    trust: TrustPolicy | None,
    *,
    conn_id: str | None = None,
    by_uri: bool = False,
    options: evidence.EvidenceOptions | None = None,
) -> list[Any]:
    """Re-audit archives from their manifests: existence, SHA-256 and signatures of each file.

    By default the files beside each manifest are checked (see the module docstring); then every
    PDF in the manifests' folders, and in the folders of their files, must be listed by one of the
    manifests audited together, and any other ``.json`` there is reported. With ``by_uri`` the URIs
    the manifests record are checked instead (no folder check: those folders may hold anything).

    :param uris: The manifests' paths or URIs.
    :param trust: The trust policy.
    :param conn_id: The Airflow connection for object stores.
    :param by_uri: Check the recorded URIs, not the files beside the manifest.
    :param options: The evidence checks (:mod:`.verify_evidence`): the long-term validation copies the
        manifests list and the timestamp token beside each are audited too.
    :raises UnusableInput: When a manifest cannot be read or is not a manifest.
    """
    options = options or evidence.EvidenceOptions()
    audited = [_audit_one(uri, trust, conn_id=conn_id, by_uri=by_uri, options=options) for uri in uris]
    outcomes = [outcome for one in audited for outcome in one.outcomes]
    if not by_uri:
        outcomes.extend(outcome for _, outcome in _folder_checks(audited))
    return outcomes


def audit_manifests_each(
    uris: Iterable[str],
    trust: TrustPolicy | None,
    *,
    conn_id: str | None = None,
    by_uri: bool = False,
    options: evidence.EvidenceOptions | None = None,
    within: Mapping[str, Any] | None = None,
) -> list[tuple[str, list[Any], str | None]]:
    """Audit manifests together, as :func:`audit_manifests`, with the outcomes of each apart.

    For a campaign's archive (:mod:`.audit_campaign`): a manifest that cannot be read (not a regular
    file, not JSON, not a manifest) does not stop the others; it is one failing outcome of its own.
    What the folder checks find goes to the manifest whose folder it lies in.

    :param uris: The manifests' paths or URIs (a repeated one is audited once).
    :param within: By manifest URI, a local folder the manifest must lie in once its links are
        resolved (a manifest not named there may lie anywhere).
    :return: ``(manifest URI, its outcomes, why it could not be read)`` per manifest, in the order
        given; the reason is ``None`` for a manifest that was read (its outcomes may still fail).
    """
    options = options or evidence.EvidenceOptions()
    results: dict[str, tuple[list[Any], str | None]] = {}
    audited: list[_Audited] = []
    for uri in dict.fromkeys(uris):
        try:
            inside = (within or {}).get(uri)
            one = _audit_one(uri, trust, conn_id=conn_id, by_uri=by_uri, options=options, inside=inside)
        except UnusableInput as err:
            results[uri] = ([], str(err))
            continue
        audited.append(one)
        results[uri] = (one.outcomes, None)
    if not by_uri:
        for uri, outcome in _folder_checks(audited):
            results[uri][0].append(outcome)
    return [(uri, outcomes, error) for uri, (outcomes, error) in results.items()]


def audit_manifest(
    uri: str,
    trust: TrustPolicy | None,
    *,
    conn_id: str | None = None,
    by_uri: bool = False,
    options: evidence.EvidenceOptions | None = None,
) -> list[Any]:
    """Re-audit one archive from its manifest (see :func:`audit_manifests`)."""
    return audit_manifests([uri], trust, conn_id=conn_id, by_uri=by_uri, options=options)


def audit(
    files: Iterable[str],
    manifests: Iterable[str],
    trust: TrustPolicy | None,
    *,
    conn_id: str | None = None,
    by_uri: bool = False,
    options: evidence.EvidenceOptions | None = None,
) -> list[Any]:
    """Audit files, then the manifests together; every file gets an outcome.

    :param options: The evidence checks: pinned TSA certificates, ``require_timestamp``, the
        validation time (:class:`.verify_evidence.EvidenceOptions`).
    :raises UnusableInput: When a manifest cannot be read.
    """
    outcomes = [audit_file(f, trust, conn_id=conn_id, options=options) for f in files]
    outcomes.extend(audit_manifests(manifests, trust, conn_id=conn_id, by_uri=by_uri, options=options))
    return outcomes
