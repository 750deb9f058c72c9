"""The auditor's checks of an archive's lasting evidence: the manifest's token and the LTV copies.

:mod:`airflow_provider_docsign.archive.auditor` calls these for ``docsign verify``; nothing here prints:

* :func:`audit_token`: ``manifest.json.tsr`` beside a manifest must be an RFC 3161 token over the
  manifest's exact bytes, with a ``genTime`` that is not in the future (pinned TSA certificates:
  signed by one of them). A passing token proves that every file the manifest lists, with its
  SHA-256, existed unchanged no later than ``genTime``; once a file no longer matches its SHA-256,
  it proves that only of the files that still match (:func:`proof`). A missing token fails when
  a token is required (``--require-timestamp``, or a pinned TSA) or when the manifest says that a
  token was published beside it (``"timestamp"``). A token whose TSA is not pinned is reported as
  not trusted (:data:`NOT_PINNED`), and fails with ``strict``;
* :func:`audit_ltv`: a long-term validation copy (``NAME.ltv.pdf``, on the command line or listed
  in a manifest entry's ``ltv``) must carry a document timestamp after its seals, with nothing but
  validation material after it, and its seals must validate **as of that timestamp** with the
  material embedded in it. Nothing is fetched.

Pure: no Airflow (a local file is read without it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any

from airflow_provider_docsign.archive.audit_pdfs import pdf_reason, strict_problems, why_unreadable
from airflow_provider_docsign.evidence.ltv import LTV_SUFFIX, LtvReport, verify_ltv
from airflow_provider_docsign.evidence.signatures import TrustPolicy, UnreadablePdfError
from airflow_provider_docsign.evidence.timestamps import (
    TOKEN_SUFFIX,
    TimestampError,
    TimestampReport,
    verify_timestamp,
)

__all__ = [
    "NOT_PINNED",
    "EvidenceOptions",
    "EvidenceOutcome",
    "audit_ltv",
    "audit_token",
    "is_ltv_copy",
    "ltv_entries",
    "parse_validation_time",
    "proof",
]

_MAX_TOKEN_BYTES = 1024 * 1024
_MAX_MANIFEST_BYTES = 16 * 1024 * 1024
_CHUNK = 1024 * 1024
PROOF = "every file in this manifest existed, unchanged, no later than genTime"
#: What is said of a timestamp whose TSA is not pinned (its own line; a failure with ``strict``).
NOT_PINNED = "not trusted: no TSA pinned"
_PIN = "pin the TSA with --tsa-cert PEM or --tsa-fingerprint SHA256"
_PIN_HINT = (
    f"anyone can make such a token with their own key; {_PIN} (--strict fails a timestamp whose TSA "
    "is not pinned)"
)
#: The earliest and latest ``--validation-time`` accepted (beyond them a moment is no audit's).
EARLIEST = datetime(1970, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(9999, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class EvidenceOptions:
    """What the auditor asks of the evidence.

    :param tsa_trust: Pinned TSA certificates or fingerprints; a token by another TSA fails, and a
        manifest without a token fails (a pin implies ``require_timestamp``).
    :param require_timestamp: A manifest without a token fails.
    :param at: Judge signatures as of this time instead of now (``--validation-time``); a token
        dated later than it (or than now, whichever is earlier) fails.
    :param strict: What is not judged trusted fails: a timestamp whose TSA is not pinned, a
        signature with no trust policy (``--strict``).
    """

    tsa_trust: TrustPolicy | None = None
    require_timestamp: bool = False
    at: datetime | None = None
    strict: bool = False

    @property
    def token_required(self) -> bool:
        """Whether a manifest without its token fails: asked for, or implied by a pinned TSA."""
        return self.require_timestamp or self.tsa_trust is not None


def parse_validation_time(text: str) -> datetime:
    """An ISO 8601 date and time with a zone (``Z`` allowed), for ``--validation-time``.

    :raises ValueError: For anything else, saying in words what to write instead: not ISO 8601, a
        date without a time, a time without a zone, or a moment before 1970 or after the year 9998.
    """
    example = "write a date, a time and a zone, e.g. 2031-06-01T12:00:00Z or 2031-06-01T14:00:00+02:00"
    shown = repr(text if len(text) <= 40 else text[:40] + "...")
    cleaned = text.strip()
    if not cleaned:
        raise ValueError(f"an empty time: {example}")
    try:
        moment = datetime.fromisoformat(cleaned[:-1] + "+00:00" if cleaned[-1:] in "zZ" else cleaned)
    except ValueError:
        raise ValueError(f"{shown} is not an ISO 8601 date and time: {example}") from None
    if "T" not in cleaned.upper() and " " not in cleaned:
        raise ValueError(f"{shown} is a date without a time: {example}")
    if moment.tzinfo is None:
        raise ValueError(f"{shown} has no time zone: {example}")
    try:
        utc = moment.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        utc = None
    if utc is None or not EARLIEST <= utc < LATEST:
        raise ValueError(f"{shown} is out of range: give a moment between 1970 and 9998")
    return utc


@dataclass
class EvidenceOutcome:
    """The audit of a timestamp token or a long-term validation copy (shaped like ``verify.Outcome``).

    :param file: The token or copy as checked.
    :param kind: ``timestamp`` or ``ltv``.
    :param problems: Why it fails (empty: it passes).
    :param unreadable: The file could not be read at all.
    :param covers: For a token, the manifest it covers.
    :param timestamp: The token's check (for a copy: its document timestamp's).
    :param ltv: A copy's check.
    :param recorded_uri: For a manifest entry, the URI the manifest records.
    :param lookup: For a manifest entry, how the file was found.
    :param sha256_matches: For a copy listed in a manifest, whether its SHA-256 is the one listed
        (``None``: not checked).
    :param unproven: For a token, the listed files that no longer match their SHA-256 (missing,
        changed, refused, malformed): the token proves nothing about them.
    :param proven: For a token, how many listed files still match their SHA-256.
    """

    file: str
    kind: str
    problems: list[str] = field(default_factory=list)
    unreadable: bool = False
    covers: str | None = None
    timestamp: TimestampReport | None = None
    ltv: LtvReport | None = None
    recorded_uri: str | None = None
    lookup: str | None = None
    report: Any = None  # no signature report of its own (``verify.Outcome`` has one)
    sha256_matches: bool | None = None
    unproven: list[str] = field(default_factory=list)
    proven: int | None = None

    @property
    def status(self) -> str:
        """``PASS``, ``FAIL`` or ``UNREADABLE``."""
        if self.unreadable:
            return "UNREADABLE"
        return "FAIL" if self.problems else "PASS"

    def to_dict(self) -> dict[str, Any]:
        """JSON form for ``--json``."""
        data: dict[str, Any] = {
            "file": self.file,
            "kind": self.kind,
            "status": self.status,
            "passed": not self.problems and not self.unreadable,
            "problems": self.problems,
            "timestamp": self.timestamp.to_dict() if self.timestamp else None,
        }
        if self.kind == "timestamp":
            data["covers"] = self.covers
            data["proves"] = self.proves()
            data["unproven"] = list(self.unproven)
        if self.timestamp is not None:
            data["trust"] = _trust(self.timestamp.trusted)
        if self.ltv is not None:
            data["ltv"] = self.ltv.to_dict()
        if self.lookup is not None:
            data["lookup"] = self.lookup
            data["recorded_uri"] = self.recorded_uri
        return data

    def proves(self) -> str | None:
        """What a passing token proves of the files the manifest lists (``None``: nothing, it fails).

        Only the files that still match their SHA-256 are vouched for; those that do not are named.
        """
        if self.status != "PASS" or self.timestamp is None:
            return None
        return proof(self.timestamp.gen_time, self.unproven, self.proven)

    def lines(self, one_line: Callable[[str], str] = str) -> list[str]:
        """The human-readable lines: what was proven, then the problems.

        :param one_line: Folds and escapes one value for a terminal (the CLI's).
        """
        name = one_line(self.file)
        stamp = self.timestamp
        if stamp is None:
            return [f"{self.status}  {name}  {one_line('; '.join(self.problems) or self.kind)}"]
        tsa = one_line(repr(stamp.tsa))
        if self.kind == "timestamp":
            out = [
                f"{self.status}  {name}  timestamp by TSA {tsa} (certificate "
                f"{one_line(repr(stamp.signer_subject))}), genTime {stamp.gen_time}, "
                f"trusted={_yes(stamp.trusted)}"
            ]
            proves = self.proves()
            if proves is not None:
                by = "by the word of a TSA nobody pinned: " if stamp.trusted is None else ""
                out.append(f"      {one_line(by + proves)}")
        else:
            seals = self.ltv.seals.signatures if self.ltv and self.ltv.seals else ()
            signers = ", ".join(repr(s.signer.common_name if s.signer else "?") for s in seals) or "-"
            out = [
                f"{self.status}  {name}  long-term validation copy: document timestamp {stamp.gen_time} "
                f"by {tsa}; seal(s) {one_line(signers)} validated as of then"
            ]
        if stamp.trusted is None and not any(p.startswith(NOT_PINNED) for p in self.problems):
            out.insert(1, f"      {NOT_PINNED}: {_PIN_HINT}")
        out += [f"      {one_line(p)}" for p in self.problems]
        out += [f"      note: {one_line(n)}" for n in stamp.notes]
        return out


def proof(gen_time: str | None, unproven: list[str], proven: int | None) -> str:
    """What a passing token over a manifest proves, given the listed files that no longer match.

    :param gen_time: The token's ``genTime``.
    :param unproven: The listed files that do not match their SHA-256 (or could not be checked).
    :param proven: How many listed files still match (``None``: not counted, all taken to match).
    """
    if not unproven:
        return f"{PROOF} ({gen_time})"
    short = [name.rsplit("/", 1)[-1] or name for name in unproven]
    names = ", ".join(short[:5]) + (f" and {len(short) - 5} more" if len(short) > 5 else "")
    if not proven:
        return (
            f"no file of this manifest still matches its SHA-256: the token proves only that the manifest "
            f"existed no later than genTime ({gen_time}), nothing about the files here ({names})"
        )
    return (
        f"only the {proven} file(s) of this manifest that still match their SHA-256 existed, unchanged, "
        f"no later than genTime ({gen_time}); it proves nothing about the {len(unproven)} that do not "
        f"({names})"
    )


def _trust(trusted: bool | None) -> str:
    if trusted is None:
        return NOT_PINNED
    return "trusted: the TSA is pinned" if trusted else "not trusted by the pinned TSA certificates"


def _strict_problems(stamp: TimestampReport | None, options: EvidenceOptions) -> list[str]:
    """``strict``: a timestamp whose TSA is not pinned fails."""
    if options.strict and stamp is not None and stamp.trusted is None:
        return [f"{NOT_PINNED}, and --strict was given: {_PIN}"]
    return []


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def is_ltv_copy(name: str) -> bool:
    """Whether a file name is a long-term validation copy's (``NAME.ltv.pdf``)."""
    return name.lower().endswith(LTV_SUFFIX)


def ltv_entries(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The long-term validation copies a manifest lists (each item entry's ``ltv`` object)."""
    return [
        entry["ltv"]
        for entry in manifest.get("files") or ()
        if isinstance(entry, dict) and isinstance(entry.get("ltv"), dict)
    ]


def _read(opener: Callable[[], IO[bytes]], limit: int) -> bytes:
    with opener() as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return bytes(data)


def audit_token(
    manifest: dict[str, Any],
    manifest_shown: str,
    open_manifest: Callable[[], IO[bytes]],
    open_token: Callable[[], IO[bytes]],
    token_shown: str,
    options: EvidenceOptions,
) -> EvidenceOutcome | None:
    """Check the token beside a manifest; ``None`` when there is none and none is required.

    :param manifest: The manifest as parsed.
    :param manifest_shown: How the manifest is named in the output.
    :param open_manifest: Opens the manifest's bytes.
    :param open_token: Opens the token (raises ``FileNotFoundError`` when there is none).
    :param token_shown: How the token is named in the output.
    :param options: The auditor's options.
    """
    outcome = EvidenceOutcome(token_shown, "timestamp", covers=manifest_shown)
    declared = isinstance(manifest.get("timestamp"), dict)
    try:
        token = _read(open_token, _MAX_TOKEN_BYTES)
    except (FileNotFoundError, IsADirectoryError):
        if not (options.token_required or declared):
            return None
        if declared:
            why = 'the manifest says its token was published beside it ("timestamp")'
        elif options.require_timestamp:
            why = "--require-timestamp was given"
        else:
            why = "a TSA is pinned (--tsa-cert or --tsa-fingerprint), which requires a token"
        outcome.problems.append(f"missing: no timestamp token beside the manifest, and {why}")
        return outcome
    except (OSError, ValueError) as err:
        outcome.problems.append(f"the token cannot be read: {why_unreadable(err)}")
        return outcome
    try:
        body = _read(open_manifest, _MAX_MANIFEST_BYTES)
        outcome.timestamp = verify_timestamp(token, body, trust=options.tsa_trust, now=options.at)
    except TimestampError as err:
        outcome.problems.append(f"not a usable timestamp: {err}")
        return outcome
    except (OSError, ValueError) as err:
        outcome.problems.append(f"the manifest cannot be read again: {why_unreadable(err)}")
        return outcome
    for problem in outcome.timestamp.problems:
        if not outcome.timestamp.imprint_matches and "imprint" in problem:
            problem = (
                "timestamp mismatch: the manifest was changed after the token was issued (" + problem + ")"
            )
        outcome.problems.append(problem)
    outcome.problems.extend(_strict_problems(outcome.timestamp, options))
    return outcome


def token_name(manifest_name: str) -> str:
    """``manifest.json`` -> ``manifest.json.tsr``."""
    return manifest_name + TOKEN_SUFFIX


def audit_ltv(
    source: Any,
    shown: str,
    trust: TrustPolicy | None,
    options: EvidenceOptions,
    *,
    entry: dict[str, Any] | None = None,
) -> EvidenceOutcome:
    """Check a long-term validation copy (and, for a manifest entry, its SHA-256).

    :param source: A path, URI or seekable binary stream.
    :param shown: How it is named in the output.
    :param trust: The seals' trust policy.
    :param options: The auditor's options (pinned TSA certificates, validation time).
    :param entry: The manifest's ``ltv`` object, when the copy is audited from a manifest.
    """
    outcome = EvidenceOutcome(shown, "ltv")
    if entry is not None:
        outcome.recorded_uri = str(entry.get("uri") or "")
    try:
        if entry is not None:
            actual = _sha256(source)
            if hasattr(source, "seek"):
                source.seek(0)  # the bytes hashed are the bytes verified
            outcome.sha256_matches = actual == entry.get("sha256")
            if not outcome.sha256_matches:
                outcome.problems.append(
                    f"changed: sha256 is {actual}, the manifest says {entry.get('sha256')}"
                )
        report = verify_ltv(source, trust=trust, tsa_trust=options.tsa_trust, label=shown, now=options.at)
    except (FileNotFoundError, IsADirectoryError):
        if entry is not None:
            outcome.problems.append(
                "missing: the long-term validation copy listed in the manifest does not exist"
            )
        else:
            outcome.problems.append("the file does not exist")
            outcome.unreadable = True
        return outcome
    except UnreadablePdfError as err:
        outcome.problems.append(pdf_reason(err))
        outcome.unreadable = entry is None  # listed in a manifest, a broken copy is a failed check
        return outcome
    except OSError as err:
        outcome.problems.append(why_unreadable(err))
        outcome.unreadable = True
        return outcome
    outcome.ltv = report
    outcome.timestamp = report.timestamp
    outcome.problems.extend(report.problems)
    outcome.problems.extend(_strict_problems(report.timestamp, options))
    if report.seals is not None:
        outcome.problems.extend(strict_problems(report.seals, trust, options.strict))
    return outcome


def _sha256(source: Any) -> str:
    from airflow_provider_docsign._sources import open_source

    stream, owned = open_source(source)
    try:
        digest = hashlib.sha256()
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        if owned:
            stream.close()
