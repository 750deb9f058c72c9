"""The per-file checks of an audit (:mod:`airflow_provider_docsign.archive.auditor`): open, hash, verify.

Each file a manifest lists (or one given on the command line) gets an :class:`Outcome`. A listed file
is opened only if it is a regular file inside the manifest's folder (:func:`_open_listed`), then
:func:`_check_contents` checks its SHA-256 against the manifest and its signatures, on the one open
stream, so the bytes hashed are the bytes verified. Nothing here prints or reads a manifest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import IO, Any

from airflow_provider_docsign._sources import (
    NotARegularFileError,
    OutsideFolderError,
    is_local_path,
    open_regular_file,
    open_source,
)
from airflow_provider_docsign.evidence.signatures import (
    SignatureReport,
    TrustPolicy,
    UnreadablePdfError,
    verify_pdf_signatures,
)

__all__ = ["FAIL", "PASS", "UNREADABLE", "Outcome", "pdf_reason", "why_unreadable"]

_CHUNK = 1024 * 1024
_MISSING = "missing: the file listed in the manifest does not exist"
#: What ``strict`` says of a signature judged with no trust policy.
NO_SIGNER_PINNED = (
    "not trusted: no signer certificate pinned, and --strict was given: pin it with --trust PEM or "
    "--fingerprint SHA256"
)

PASS = "PASS"  # noqa: S105 - an audit status, not a password
FAIL = "FAIL"
UNREADABLE = "UNREADABLE"


@dataclass
class Outcome:
    """The audit of one file (or of one manifest entry that names no usable file).

    :param file: The file as checked (a path or URI); for a malformed entry, the manifest and the
        entry's place in it (``manifest.json#files[2]``).
    :param report: Its signature report, if it could be read.
    :param problems: Why it fails (empty: it passes).
    :param unreadable: True when the file could not be read at all (not there, not a PDF, a PDF that
        cannot be parsed); the command exits 2 then.
    :param recorded_uri: For a manifest entry, the URI the manifest records for it.
    :param lookup: For a manifest entry, how the file was found (``LOOKUP_*``).
    :param sha256_matches: For a manifest entry, whether the file's SHA-256 is the one listed
        (``None``: it was not hashed: missing, refused, malformed).
    """

    file: str
    report: SignatureReport | None = None
    problems: list[str] = field(default_factory=list)
    unreadable: bool = False
    recorded_uri: str | None = None
    lookup: str | None = None
    sha256_matches: bool | None = None

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


def _open(path: Any, inside: Any = None) -> IO[bytes]:
    """Open a file to audit: a local one only if it is a regular file (inside ``inside``, if given)."""
    if is_local_path(path):
        return open_regular_file(path, inside=inside)
    stream, _ = open_source(path)  # object storage: no links, FIFOs or devices there
    return stream


def why_unreadable(err: BaseException) -> str:
    """Why a file could not be read, in words: never an exception's class name.

    The operating system's own words (``Permission denied``) are kept; a decoding error says what the
    bytes are not.
    """
    if isinstance(err, FileNotFoundError):
        return "the file does not exist"
    if isinstance(err, IsADirectoryError):
        return "it is a directory, not a file"
    if isinstance(err, NotARegularFileError):
        return f"it is {err.kind}, not a regular file; it was not read"
    if isinstance(err, PermissionError):
        return "permission denied: this user may not read it"
    if isinstance(err, NotADirectoryError):
        return "a part of its path is a file, not a directory"
    if isinstance(err, OSError):
        return f"it cannot be read ({err.strerror or 'an input/output error'})"
    if isinstance(err, UnicodeDecodeError):
        return "it is not text (its bytes are not UTF-8)"
    if isinstance(err, RecursionError):
        return "it is nested too deeply to be read"
    if isinstance(err, ValueError) and hasattr(err, "lineno") and hasattr(err, "colno"):
        return f"it is not valid JSON (line {err.lineno}, column {err.colno})"
    if isinstance(err, (ValueError, MemoryError)):
        return "it cannot be read: its contents are not what was expected"
    return "it cannot be read"


def pdf_reason(err: UnreadablePdfError) -> str:
    """Why a file is not a readable PDF, without the parser's exception class name.

    ``verify_pdf_signatures`` names the parser's exception (``PdfReadError: ...``); the auditor's
    reader is told the file is damaged or no PDF, with pyHanko's own words when it gave some (an
    ``AttributeError``'s text says nothing to an auditor).
    """
    text, cause = str(err), err.__cause__
    marker = f": {type(cause).__name__}: " if cause is not None else None
    if marker is None or marker not in text:
        return text
    head = text.split(marker, 1)[0]
    words = getattr(cause, "msg", None) if type(cause).__module__.startswith("pyhanko") else None
    detail = f" ({str(words)[:200]})" if words else ""
    return f"{head}: it is damaged, or it is not a PDF{detail}"


def _unreadable(name: str, err: BaseException) -> Outcome:
    reason = pdf_reason(err) if isinstance(err, UnreadablePdfError) else why_unreadable(err)
    return Outcome(name, problems=[reason], unreadable=True)


def strict_problems(report: SignatureReport, trust: TrustPolicy | None, strict: bool) -> list[str]:
    """``strict``: a signed file judged with no trust policy fails (nobody said whose seal to trust)."""
    return [NO_SIGNER_PINNED] if strict and trust is None and report.signed else []


@dataclass(frozen=True)
class _Entry:
    """One file a manifest lists, or the reason its entry is malformed.

    :param where: The entry's place in the manifest (``files[0]``, ``audit_log``, ``certificate``).
    :param data: The entry (an object), or ``None`` when malformed.
    :param signature_required: Whether the file must carry a passing signature.
    :param malformed: Why the entry cannot be audited (it fails alone).
    """

    where: str
    data: dict[str, Any] | None
    signature_required: bool = False
    malformed: str | None = None


def _open_listed(outcome: Any, path: Any, inside: Any, missing: str = _MISSING) -> IO[bytes] | None:
    """Open a file a manifest lists, refusing anything but a regular file inside ``inside``.

    On a refusal or an error the reason goes into ``outcome`` and ``None`` is returned.
    """
    try:
        return _open(path, inside)
    except FileNotFoundError:
        outcome.problems.append(missing)
    except NotARegularFileError as err:
        outcome.problems.append(f"refused: it is {err.kind}, not a regular file; it was not read")
    except OutsideFolderError as err:
        outcome.problems.append(
            f"refused: a symbolic link leading outside the manifest's folder (to {err.target}); "
            "it was not read"
        )
    except OSError as err:
        outcome.problems.append(why_unreadable(err))
        outcome.unreadable = True
    return None


def _check_entry(
    outcome: Outcome,
    path: Any,
    entry: _Entry,
    trust: TrustPolicy | None,
    *,
    inside: Any = None,
    at: Any = None,
    strict: bool = False,
) -> None:
    """Open the entry's file (refusing anything but a regular file inside ``inside``) and check it."""
    stream = _open_listed(outcome, path, inside)
    if stream is None:
        return
    with stream:
        _check_contents(outcome, stream, entry, trust, at, strict=strict)


def _check_contents(
    outcome: Outcome,
    stream: IO[bytes],
    entry: _Entry,
    trust: TrustPolicy | None,
    at: Any = None,
    *,
    strict: bool = False,
) -> None:
    """The checks of one listed file, on its open stream: its SHA-256, then its signatures.

    Both read the same descriptor, so the bytes hashed are the bytes verified.
    """
    assert entry.data is not None
    recorded = entry.data.get("sha256")
    try:
        digest = hashlib.sha256()
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
        stream.seek(0)
    except FileNotFoundError:  # an object store may say so only on the first read
        outcome.problems.append(_MISSING)
        return
    except OSError as err:
        outcome.problems.append(why_unreadable(err))
        outcome.unreadable = True
        return
    outcome.sha256_matches = digest.hexdigest() == recorded
    if not outcome.sha256_matches:
        outcome.problems.append(f"changed: sha256 is {digest.hexdigest()}, the manifest says {recorded}")
    try:
        outcome.report = verify_pdf_signatures(stream, trust=trust, label=outcome.file, at=at)
    except UnreadablePdfError as err:
        # The manifest lists it as an archived PDF: that it no longer parses is a failed check
        # (usually with "changed" above), not unusable input.
        outcome.problems.append(pdf_reason(err))
        return
    except OSError as err:
        outcome.problems.append(why_unreadable(err))
        outcome.unreadable = True
        return
    if outcome.report.signed or entry.signature_required:
        outcome.problems.extend(outcome.report.problems)
    outcome.problems.extend(strict_problems(outcome.report, trust, strict))
