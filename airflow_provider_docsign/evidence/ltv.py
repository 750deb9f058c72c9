"""PAdES long-term validation (B-LTA): extend a sealed PDF so its seal can be checked for decades.

:func:`make_ltv_copy` writes a copy of a signed PDF extended by an incremental update (the original
bytes are its first bytes, unchanged):

1. a document security store (DSS) with the validation material of every seal: the certificate
   chain and, where the chain names them and they can be fetched, OCSP answers and CRLs;
2. a document timestamp (RFC 3161, ``ETSI.RFC3161``) from the TSA over the whole file, the DSS
   included: proof that the seal and its material existed, unchanged, at that time.

:func:`verify_ltv` checks such a copy years later: the document timestamp (its imprint, signature
and, with pinned TSA certificates, trust), that it covers the seals with nothing but validation
updates after it, and then every seal **as of the timestamp's time** with the embedded material,
so a seal whose certificate has expired since still validates. Nothing is fetched when verifying.

Pure: no Airflow; pyHanko does the PDF work. Revocation material is fetched (bounded by
pyhanko-certvalidator's own timeouts) only when making a copy, and only from the locations the seal's
certificates name.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

from airflow_provider_docsign.evidence.certificate_trust import _run
from airflow_provider_docsign.evidence.signatures import (
    COVERAGE_ENTIRE_FILE,
    COVERAGE_ENTIRE_REVISION,
    SignatureReport,
    TrustPolicy,
    UnreadablePdfError,
    verify_pdf_signatures,
)
from airflow_provider_docsign.evidence.timestamps import TimestampError, TimestampReport, verify_timestamp
from airflow_provider_docsign.evidence.tsa_client import TsaSettings, pyhanko_timestamper

__all__ = ["LTV_SUFFIX", "LtvCopy", "LtvReport", "LtvWriter", "ltv_name", "make_ltv_copy", "verify_ltv"]

#: The copy's name: ``NAME.pdf`` becomes ``NAME.ltv.pdf``.
LTV_SUFFIX = ".ltv.pdf"
_CHUNK = 1024 * 1024
_SPOOL = 8 * 1024 * 1024
_LOG = logging.getLogger(__name__)
#: Placeholder for "the chain names revocation locations": replaced by what fetching achieved.
_EXPECTED_REVOCATION = "expected revocation"


def ltv_name(name: str) -> str:
    """``contracts/01-Agreement.pdf`` -> ``contracts/01-Agreement.ltv.pdf``."""
    stem = name[: -len(".pdf")] if name.lower().endswith(".pdf") else name
    return stem + LTV_SUFFIX


@dataclass(frozen=True)
class LtvCopy:
    """What a long-term validation copy holds.

    :param document_timestamp: The document timestamp's ``genTime`` (ISO 8601, UTC).
    :param tsa: The TSA that issued it.
    :param certificates: Certificates in the DSS.
    :param ocsp_responses: OCSP answers in the DSS.
    :param crls: CRLs in the DSS.
    :param missing: What validation material is missing, and why (empty: nothing).
    :param sha256: The copy's SHA-256 (hex).
    :param size: The copy's size in bytes.
    """

    document_timestamp: str
    tsa: str | None
    certificates: int
    ocsp_responses: int
    crls: int
    missing: tuple[str, ...]
    sha256: str
    size: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (the manifest records it beside the item)."""
        return {
            "document_timestamp": self.document_timestamp,
            "tsa": self.tsa,
            "validation_material": {
                "certificates": self.certificates,
                "ocsp_responses": self.ocsp_responses,
                "crls": self.crls,
                "missing": list(self.missing),
            },
        }


# -- making a copy --------------------------------------------------------------------------------


def _certificates(signed_data: Any) -> list[Any]:
    from asn1crypto import x509

    return [c.chosen for c in signed_data["certificates"] or () if isinstance(c.chosen, x509.Certificate)]


def _self_signed(cert: Any) -> bool:
    return bool(cert.self_signed in {"maybe", "yes"})


def _declares_revocation(cert: Any) -> bool:
    return bool(cert.ocsp_urls or cert.crl_distribution_points)


async def _seal_paths(
    reader: Any, trust: TrustPolicy | None, fetch: bool
) -> tuple[list[Any], list[Any], list[str], Any]:
    """For every seal: its validation path (or its embedded certificates), and what is missing."""
    from asn1crypto import x509
    from pyhanko_certvalidator import CertificateValidator, ValidationContext

    embedded = [c for sig in reader.embedded_regular_signatures for c in _certificates(sig.signed_data)]
    roots = [x509.Certificate.load(der) for der in (trust.certificates if trust else ())]
    roots += [c for c in embedded if _self_signed(c)]
    context = ValidationContext(
        trust_roots=roots, other_certs=embedded, allow_fetching=fetch, revocation_mode="soft-fail"
    )
    paths: list[Any] = []
    loose: list[Any] = []
    missing: list[str] = []
    for sig in reader.embedded_regular_signatures:
        cert = sig.signer_cert
        validator = CertificateValidator(
            cert, intermediate_certs=_certificates(sig.signed_data), validation_context=context
        )
        try:
            path = await validator.async_validate_usage(key_usage=set())  # type: ignore[no-untyped-call]
        except Exception as err:
            loose.extend(_certificates(sig.signed_data))
            missing.append(
                f"no valid certificate path for {cert.subject.human_friendly} now "
                f"({type(err).__name__}): only the embedded certificates were stored; pin the issuer "
                "(trusted_certificates) so that revocation information can be collected"
            )
            continue
        paths.append(path)
        checked = [c for c in path if not _self_signed(c)]
        if not checked:
            missing.append(
                f"revocation information for {cert.subject.human_friendly}: the certificate is "
                "self-signed, so there is no CRL or OCSP responder to ask"
            )
        elif not any(_declares_revocation(c) for c in checked):
            missing.append("revocation information: the chain names no CRL or OCSP location")
        elif not fetch:
            missing.append("revocation information: fetching was off")
        else:
            missing.append(_EXPECTED_REVOCATION)  # dropped below when OCSP answers or CRLs arrive
    return paths, loose, missing, context


class LtvWriter:
    """Makes long-term validation copies with one TSA; one writer serves a whole archive run.

    The first document timestamp costs two TSA requests (pyHanko sizes the signature container with
    a first token, which also names the TSA's certificates); each further copy costs one.

    :param tsa: The TSA for the document timestamps (every token passes the checks of
        :func:`~airflow_provider_docsign.evidence.tsa_client.request_timestamp`).
    :param trust: Trusted certificates of the seals' issuers (to build their paths for revocation
        material); self-signed seals need none.
    :param fetch_revocation: Fetch OCSP answers and CRLs that the seals' certificates name.
    """

    def __init__(self, tsa: TsaSettings, *, trust: TrustPolicy | None = None, fetch_revocation: bool = True):
        self.tsa = tsa
        self.trust = trust
        self.fetch_revocation = fetch_revocation
        self._timestamper = pyhanko_timestamper(tsa)

    async def _tsa_context(self) -> Any:
        from asn1crypto import x509
        from pyhanko_certvalidator import ValidationContext

        # With pinned TSA certificates they are the trust roots; otherwise the TSA's own (from its
        # first token), so that its chain goes into the DSS too.
        first = await self._timestamper.async_dummy_response("sha256")
        pinned = [
            x509.Certificate.load(der) for der in (self.tsa.trust.certificates if self.tsa.trust else ())
        ]
        tsa_certs = _certificates(first["content"])
        return ValidationContext(
            trust_roots=pinned or [c for c in tsa_certs if _self_signed(c)] or tsa_certs,
            other_certs=tsa_certs,
            allow_fetching=self.fetch_revocation,
            revocation_mode="soft-fail",
        )

    async def _extend(self, source: IO[bytes], output: IO[bytes]) -> list[str]:
        from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
        from pyhanko.pdf_utils.reader import PdfFileReader
        from pyhanko.sign.signers.pdf_signer import PdfTimeStamper
        from pyhanko.sign.validation import DocumentSecurityStore

        reader = PdfFileReader(source, strict=False)
        if not reader.embedded_regular_signatures:
            raise UnreadablePdfError("the PDF carries no signature: there is no seal to extend")
        paths, loose, missing, context = await _seal_paths(reader, self.trust, self.fetch_revocation)
        tsa_context = None
        try:
            writer = IncrementalPdfFileWriter(source, strict=False)
            DocumentSecurityStore.supply_dss_in_writer(
                writer, None, certs=loose or None, paths=paths or None, validation_context=context
            )
            tsa_context = await self._tsa_context()
            await PdfTimeStamper(self._timestamper, field_name="DocTimeStamp1").async_timestamp_pdf(
                writer, "sha256", validation_context=tsa_context, output=output
            )
        finally:  # the fetchers' HTTP sessions belong to this event loop: close them in it
            for ctx in (context, tsa_context):
                close = getattr(ctx, "aclose", None)
                if close is not None:
                    await close()
        return missing

    def write(self, source: IO[bytes], output: IO[bytes]) -> LtvCopy:
        """Write ``source`` (a signed PDF) extended with a DSS and a document timestamp to ``output``.

        The copy is verified (:func:`verify_ltv`) before this returns.

        :param source: The signed PDF, a seekable binary stream (only read; its bytes come first).
        :param output: Where the copy goes, a writable binary stream.
        :raises TimestampError: The TSA failed or its token fails a check.
        :raises UnreadablePdfError: The source is not a signed PDF that pyHanko can extend.
        """
        with tempfile.SpooledTemporaryFile(max_size=_SPOOL) as work:
            source.seek(0)
            shutil.copyfileobj(source, work, _CHUNK)
            work.seek(0)
            with tempfile.SpooledTemporaryFile(max_size=_SPOOL) as result:
                try:
                    missing = _run(self._extend(work, result))
                except (TimestampError, UnreadablePdfError):
                    raise
                except Exception as err:
                    raise UnreadablePdfError(
                        f"the PDF cannot be extended: {type(err).__name__}: {err}"
                    ) from err
                result.seek(0)
                digest = hashlib.sha256()
                size = 0
                while chunk := result.read(_CHUNK):
                    digest.update(chunk)
                    output.write(chunk)
                    size += len(chunk)
                result.seek(0)
                report = verify_ltv(result, trust=self.trust, tsa_trust=self.tsa.trust, label="the new copy")
        if report.timestamp is None or report.problems:
            raise UnreadablePdfError(
                "the new long-term validation copy does not verify: " + "; ".join(report.problems)
            )
        fetched = report.material["ocsp_responses"] + report.material["crls"]
        missing = [
            m
            if m != _EXPECTED_REVOCATION
            else "revocation information: the chain names CRL or OCSP locations, but nothing could be "
            "fetched from them (offline, or the responders failed)"
            for m in missing
            if m != _EXPECTED_REVOCATION or not fetched
        ]
        return LtvCopy(
            document_timestamp=report.timestamp.gen_time or "",
            tsa=report.timestamp.tsa,
            certificates=report.material["certificates"],
            ocsp_responses=report.material["ocsp_responses"],
            crls=report.material["crls"],
            missing=tuple(missing),
            sha256=digest.hexdigest(),
            size=size,
        )


def make_ltv_copy(
    source: IO[bytes],
    output: IO[bytes],
    *,
    tsa: TsaSettings,
    trust: TrustPolicy | None = None,
    fetch_revocation: bool = True,
) -> LtvCopy:
    """One copy with a new :class:`LtvWriter` (see there)."""
    return LtvWriter(tsa, trust=trust, fetch_revocation=fetch_revocation).write(source, output)


# -- verifying a copy -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LtvReport:
    """The check of a long-term validation copy.

    :param source: What was checked.
    :param timestamp: The last document timestamp's check (``None``: there is none).
    :param seals: The seals, checked as of the timestamp's time with the embedded material.
    :param material: Counts of certificates, OCSP answers and CRLs in the DSS.
    :param problems: Why the copy fails (empty: it passes).
    """

    source: str
    timestamp: TimestampReport | None = None
    seals: SignatureReport | None = None
    material: dict[str, int] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """The document timestamp holds and every seal validates as of its time."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (``docsign verify --json``)."""
        return {
            "passed": self.passed,
            "validated_as_of": self.timestamp.gen_time if self.timestamp else None,
            "document_timestamp": self.timestamp.to_dict() if self.timestamp else None,
            "seals": self.seals.to_dict() if self.seals else None,
            "validation_material": self.material,
            "problems": list(self.problems),
        }


def _dss_material(reader: Any) -> tuple[list[Any], list[Any], list[Any]]:
    from pyhanko.sign.validation import DocumentSecurityStore
    from pyhanko.sign.validation.errors import NoDSSFoundError

    try:
        dss = DocumentSecurityStore.read_dss(reader)
    except NoDSSFoundError:
        return [], [], []
    ocsps = [o.get_object().data for o in dss.ocsps]
    crls = [c.get_object().data for c in dss.crls]
    return list(dss.load_certs()), ocsps, crls


def verify_ltv(
    source: Any,
    *,
    trust: TrustPolicy | None = None,
    tsa_trust: TrustPolicy | None = None,
    label: str | None = None,
    now: datetime | None = None,
) -> LtvReport:
    """Check a long-term validation copy: its document timestamp, then its seals as of that time.

    :param source: A path, URI or seekable binary stream.
    :param trust: The seals' trust policy (as for :func:`~.signatures.verify_pdf_signatures`).
    :param tsa_trust: Pinned TSA certificates; ``None``: the TSA's trust is not judged.
    :param label: How to name the source.
    :param now: The time of the check (default: now), for "expired since" notes only: the seals
        are judged as of the document timestamp, whatever ``now`` is.
    :raises UnreadablePdfError: When it is not a PDF pyHanko can read.
    """
    from airflow_provider_docsign._sources import open_source

    stream, owned = open_source(source)
    name = label or (str(source) if not hasattr(source, "read") else "<stream>")
    try:
        return _verify(stream, trust, tsa_trust, name, now)
    finally:
        if owned:
            stream.close()


def _verify(
    stream: IO[bytes],
    trust: TrustPolicy | None,
    tsa_trust: TrustPolicy | None,
    name: str,
    now: datetime | None,
) -> LtvReport:
    from asn1crypto import cms
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.diff_analysis import DiffResult

    stream.seek(0)
    if stream.read(5) != b"%PDF-":
        raise UnreadablePdfError(f"{name} is not a PDF (it does not start with %PDF-)")
    stream.seek(0)
    try:
        reader = PdfFileReader(stream, strict=False)
        stamps = list(reader.embedded_timestamp_signatures)
        seals = list(reader.embedded_regular_signatures)
        certs, ocsps, crls = _dss_material(reader)
    except Exception as err:
        raise UnreadablePdfError(f"{name} cannot be read as a PDF: {type(err).__name__}: {err}") from err
    material = {"certificates": len(certs), "ocsp_responses": len(ocsps), "crls": len(crls)}
    problems: list[str] = []
    if not seals:
        problems.append("no seal (no regular signature) to validate")
    last_seal = max((s.signed_revision for s in seals), default=-1)
    after = [s for s in stamps if s.signed_revision > last_seal]
    if not after:
        problems.append("no document timestamp after the seal: nothing proves when the seal existed")
        return LtvReport(source=name, material=material, problems=tuple(problems))
    stamp = after[-1]
    try:
        # /Contents is the token padded with zeros up to the reserved size.
        token = cms.ContentInfo.load(bytes(stamp.pkcs7_content)).dump()
        digest = stamp.compute_digest()
        report = verify_timestamp(token, digest=digest, trust=tsa_trust, now=now)
        stamp.compute_integrity_info()
        coverage = stamp.coverage.name.lower()
        diff = stamp.diff_result
        level = diff.modification_level.name.lower() if isinstance(diff, DiffResult) else "other"
    except TimestampError as err:
        problems.append(f"the document timestamp cannot be read: {err}")
        return LtvReport(source=name, material=material, problems=tuple(problems))
    problems.extend(f"document timestamp: {p}" for p in report.problems)
    if coverage not in (COVERAGE_ENTIRE_FILE, COVERAGE_ENTIRE_REVISION):
        problems.append(f"the document timestamp does not cover a whole revision (coverage {coverage})")
    elif level not in {"none", "lta_updates"}:
        problems.append(
            f"the file was changed after the document timestamp (modification level {level}): only "
            "validation material may follow it"
        )
    moment = datetime.fromisoformat((report.gen_time or "").replace("Z", "+00:00"))
    stream.seek(0)
    sealed = verify_pdf_signatures(stream, trust=trust, label=name, at=moment, material=(certs, ocsps, crls))
    problems.extend(f"as of the document timestamp ({report.gen_time}): {p}" for p in sealed.problems)
    return LtvReport(source=name, timestamp=report, seals=sealed, material=material, problems=tuple(problems))
