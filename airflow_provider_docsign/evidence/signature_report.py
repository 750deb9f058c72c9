"""What a PDF signature verification reports: one check per embedded signature, and the PDF's report.

:func:`airflow_provider_docsign.evidence.signatures.verify_pdf_signatures` returns a
:class:`SignatureReport` (or raises :class:`UnreadablePdfError`); the archive writes its ``to_dict`` into
the manifest and ``docsign verify`` prints it. Plain data: no pyHanko, no I/O.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "COVERAGE_ENTIRE_FILE",
    "COVERAGE_ENTIRE_REVISION",
    "SignatureCheck",
    "SignatureReport",
    "SignerCertificate",
    "UnreadablePdfError",
]

#: The signature covers every byte of the file (nothing was appended after signing).
COVERAGE_ENTIRE_FILE = "entire_file"
#: The signature covers an earlier revision; incremental updates follow (see ``modification_level``).
COVERAGE_ENTIRE_REVISION = "entire_revision"


class UnreadablePdfError(ValueError):
    """The source is not a PDF that can be read (as opposed to a PDF whose signatures fail)."""


@dataclass(frozen=True)
class SignerCertificate:
    """The signer certificate of one signature.

    :param subject: The subject as one readable string.
    :param common_name: The subject's CN (``None`` if absent).
    :param organization: The subject's O (``None`` if absent).
    :param issuer: The issuer as one readable string.
    :param serial: The serial number in hex.
    :param sha256: The SHA-256 fingerprint of the DER certificate (lower-case hex).
    :param not_before: Start of validity (ISO 8601, UTC).
    :param not_after: End of validity (ISO 8601, UTC).
    :param self_signed: Whether subject and issuer are the same and the certificate signs itself.
    """

    subject: str
    common_name: str | None
    organization: str | None
    issuer: str
    serial: str
    sha256: str
    not_before: str
    not_after: str
    self_signed: bool


@dataclass(frozen=True)
class SignatureCheck:
    """What was verified about one embedded signature.

    :param field_name: The signature field's fully qualified name.
    :param subfilter: The signature dictionary's ``/SubFilter`` (e.g. ``ETSI.CAdES.detached``).
    :param signer: The signer certificate (``None`` if the CMS carries none that matches).
    :param signing_time: The signing time the signer claims (ISO 8601), if any.
    :param timestamp_time: The time of an embedded RFC 3161 timestamp token (ISO 8601), if any.
    :param intact: The digest over ``/ByteRange`` matches the signed digest.
    :param valid: The CMS signature verifies with the signer certificate's public key.
    :param coverage: ``entire_file``, ``entire_revision`` (later incremental updates),
        ``contiguous_block_from_start`` or ``unclear``.
    :param modification_level: pyHanko's level for changes after the signed revision: ``none``,
        ``lta_updates``, ``form_filling``, ``annotations`` or ``other``.
    :param trusted: True or False against the trust policy; ``None`` without one.
    :param problems: Why this signature does not pass (empty when it does).
    """

    field_name: str
    subfilter: str | None
    signer: SignerCertificate | None
    signing_time: str | None
    timestamp_time: str | None
    intact: bool
    valid: bool
    coverage: str
    modification_level: str
    trusted: bool | None
    problems: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """Intact, valid, no disallowed change after signing, and not untrusted."""
        return not self.problems


@dataclass(frozen=True)
class SignatureReport:
    """The signatures of one PDF, in signing order.

    :param source: What was verified (a path or URI).
    :param signatures: One check per embedded signature.
    :param trust_policy_set: Whether a trust policy was applied.
    """

    source: str
    signatures: tuple[SignatureCheck, ...] = field(default_factory=tuple)
    trust_policy_set: bool = False

    @property
    def signed(self) -> bool:
        """Whether the PDF carries at least one digital signature."""
        return bool(self.signatures)

    @property
    def problems(self) -> list[str]:
        """Every reason this PDF fails as a signed document (``no digital signature`` when unsigned)."""
        if not self.signatures:
            return ["no digital signature"]
        return [f"signature {s.field_name!r}: {p}" for s in self.signatures for p in s.problems]

    @property
    def passed(self) -> bool:
        """Signed, and every signature passes."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-safe data (the manifest's ``signature`` object and the CLI's ``--json``)."""
        return {
            "signed": self.signed,
            "passed": self.passed,
            "trust_policy": self.trust_policy_set,
            "problems": self.problems,
            "signatures": [
                {**asdict(s), "problems": list(s.problems), "passed": s.passed} for s in self.signatures
            ],
        }
