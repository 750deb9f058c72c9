"""Verify the digital (PAdES/CMS) signatures embedded in a PDF, with pyHanko.

The visible mark of a signature field is not a signature; what makes a sealed document worth
archiving is the CMS signature the service embeds once every signer has signed. This module opens
every embedded signature and reports, per signature, what is cryptographically proven:

* ``intact``: the digest over the signature's ``/ByteRange`` matches the signed digest;
* ``valid``: the CMS signature over that digest verifies with the signer certificate's key;
* ``coverage``: whether the signature covers the whole file, or an earlier revision followed by
  incremental updates, and pyHanko's modification level for those updates;
* ``trusted``: whether the signer certificate is trusted by a :class:`TrustPolicy` (``None`` when no
  policy is set). Intact and valid say nothing about *who* signed; only a policy does.

Pure: no HTTP. Sources are opened with the same helper as uploads (:mod:`._sources`) and read by
pyHanko from the file object, never loaded into memory whole, so memory stays bounded by the size of
the PDF's cross-reference data, not of the file.

What a verification reports is in :mod:`.signature_report`; the trust policy and the checks of a
signer certificate (validity, path to a trusted certificate) are in :mod:`.certificate_trust`. Their
public names are importable from here too.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import IO, Any

from airflow_provider_docsign._sources import open_source
from airflow_provider_docsign.evidence.certificate_trust import (
    TrustPolicy,
    _chains_to,
    _validity_problems,
    certificate_fingerprints,
    normalize_fingerprint,
)
from airflow_provider_docsign.evidence.signature_report import (
    COVERAGE_ENTIRE_FILE,
    COVERAGE_ENTIRE_REVISION,
    SignatureCheck,
    SignatureReport,
    SignerCertificate,
    UnreadablePdfError,
)

__all__ = [
    "COVERAGE_ENTIRE_FILE",
    "COVERAGE_ENTIRE_REVISION",
    "MAX_VERIFY_MEMORY_BYTES",
    "MAX_VERIFY_SECONDS",
    "MODIFICATION_ALLOWED",
    "SignatureCheck",
    "SignatureReport",
    "SignerCertificate",
    "TrustPolicy",
    "UnreadablePdfError",
    "certificate_fingerprints",
    "normalize_fingerprint",
    "verify_pdf_signatures",
]

#: Modification levels accepted after a signature: ``none``, ``lta_updates`` (document timestamps and
#: validation data) and ``form_filling`` (filling in existing form fields, adding signature fields).
#:
#: The real policy, pinned by a test: an incremental update that adds an annotation (a comment, a
#: highlight) is **not** accepted. pyHanko's difference analysis (0.38, ``DEFAULT_DIFF_POLICY``) has
#: no rule that explains a new annotation; it classes the update as ``other`` (a
#: ``SuspiciousModification``), exactly like a change to the page content. Writing our own whitelist
#: rule would mean judging hostile PDF structure in our code; a sealed contract that someone has
#: commented on is a changed document for an auditor. ``annotations`` is therefore left out too, so
#: that a future pyHanko that starts to class some updates as ``annotations`` cannot silently widen
#: what passes.
MODIFICATION_ALLOWED = frozenset({"none", "lta_updates", "form_filling"})

#: Work bound of one verification: the growth of the process's resident memory (RSS) it may cause,
#: and its wall time. A PDF whose structure needs more (millions of objects or form fields, nesting
#: built to exhaust the parser) is reported unreadable instead: see :func:`verify_pdf_signatures`.
MAX_VERIFY_MEMORY_BYTES = 320 * 1024 * 1024
MAX_VERIFY_SECONDS = 60.0
_WATCH_INTERVAL = 0.02
#: Read size of the ``/ByteRange`` digest (see :func:`_digest_byte_range`).
_DIGEST_CHUNK = 1024 * 1024


def verify_pdf_signatures(
    source: Any,
    *,
    trust: TrustPolicy | None = None,
    label: str | None = None,
    at: datetime | None = None,
    material: tuple[Sequence[Any], Sequence[Any], Sequence[Any]] | None = None,
) -> SignatureReport:
    """Verify every digital signature embedded in a PDF.

    Document timestamps are not signatures here: :func:`airflow_provider_docsign.evidence.ltv.verify_ltv`
    checks those.

    :param source: A local path, a URI (``s3://…``), an ``ObjectStoragePath`` or a seekable binary file
        object (read from the start; not closed).
    :param trust: The trust policy; without one, ``trusted`` is ``None``.
    :param label: How to name the source in the report (default: its path or URI).
    :param at: The time the signatures are judged at (default: now): the signer certificate must be
        valid then, and trust paths are validated as of then. A long-term validation copy is judged
        as of its document timestamp.
    :param material: Validation material to use for trust paths: ``(certificates, OCSP responses,
        CRLs)`` (a DSS's content); nothing is fetched.
    :raises FileNotFoundError: When the source does not exist.
    :raises UnreadablePdfError: When it is not a readable PDF: any error while parsing it (including
        ``RecursionError`` from hostile nesting and ``MemoryError``), or a structure that needs more
        than :data:`MAX_VERIFY_MEMORY_BYTES` of memory growth or :data:`MAX_VERIFY_SECONDS` to verify
        (checked by a watchdog thread that stops only this verification). The message names the file.
    """
    stream, owned = open_source(source)
    try:
        stream.seek(0)
        return _verify_stream(stream, trust, label or _label(source), at=at, material=material)
    finally:
        if owned:
            stream.close()


def _label(source: Any) -> str:
    name = getattr(source, "name", None)
    if hasattr(source, "read") and isinstance(name, str):
        return name
    return str(source) if not hasattr(source, "read") else "<stream>"


class _BudgetExceeded(BaseException):
    """Raised asynchronously in the verifying thread when it exceeds its memory or time budget.

    A ``BaseException``, so that pyHanko's own ``except Exception`` clauses cannot swallow it.
    """


def _rss_bytes() -> int | None:
    """The process's resident memory now (Linux ``/proc``); ``None`` where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class _Budget:
    """Bound the work of the calling thread: RSS growth and wall time, checked by a watchdog thread.

    pyHanko parses in pure Python, so an exception raised asynchronously in the verifying thread
    (``PyThreadState_SetAsyncExc``) stops it at the next bytecode, wherever it is; the caller turns it
    into :class:`UnreadablePdfError`. Only the verifying thread is interrupted, never another one.
    """

    def __init__(self, max_memory: int | None, max_seconds: float | None) -> None:
        self.max_memory = max_memory
        self.max_seconds = max_seconds
        self.reason: str | None = None
        self._thread_id = threading.get_ident()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._base = _rss_bytes()
        self._watchdog = threading.Thread(target=self._watch, name="docsign-verify-budget", daemon=True)

    def __enter__(self) -> _Budget:
        if self.max_memory is not None or self.max_seconds is not None:
            self._watchdog.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._done.set()
            if self.reason is not None:
                # Not raised yet (the work ended first): clear it, so it cannot surface later.
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread_id), None)
        if self._watchdog.is_alive():
            self._watchdog.join()

    def _exceeded(self, started: float) -> str | None:
        if self.max_seconds is not None and time.monotonic() - started > self.max_seconds:
            return f"verifying it takes longer than {self.max_seconds:g} s"
        if self.max_memory is not None and self._base is not None:
            now = _rss_bytes()
            if now is not None and now - self._base > self.max_memory:
                return f"verifying it needs more than {self.max_memory // (1024 * 1024)} MiB of memory"
        return None

    def _watch(self) -> None:
        started = time.monotonic()
        while not self._done.wait(_WATCH_INTERVAL):
            reason = self._exceeded(started)
            if reason is None:
                continue
            with self._lock:
                if not self._done.is_set():
                    self.reason = reason
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(self._thread_id), ctypes.py_object(_BudgetExceeded)
                    )
            return


def _verify_stream(
    stream: IO[bytes],
    trust: TrustPolicy | None,
    label: str,
    max_memory: int | None = MAX_VERIFY_MEMORY_BYTES,
    max_seconds: float | None = MAX_VERIFY_SECONDS,
    *,
    at: datetime | None = None,
    material: tuple[Sequence[Any], Sequence[Any], Sequence[Any]] | None = None,
) -> SignatureReport:
    if stream.read(5) != b"%PDF-":
        raise UnreadablePdfError(f"{label} is not a PDF (it does not start with %PDF-)")
    stream.seek(0)
    budget = _Budget(max_memory, max_seconds)
    try:
        with budget:
            return _parse_and_check(stream, trust, label, at, material)
    except _BudgetExceeded:
        raise UnreadablePdfError(
            f"{label} cannot be read as a PDF within the verification bounds: {budget.reason}"
        ) from None


def _parse_and_check(
    stream: IO[bytes],
    trust: TrustPolicy | None,
    label: str,
    at: datetime | None = None,
    material: tuple[Sequence[Any], Sequence[Any], Sequence[Any]] | None = None,
) -> SignatureReport:
    from pyhanko.pdf_utils.misc import PdfError
    from pyhanko.pdf_utils.reader import PdfFileReader

    moment = at or datetime.now(timezone.utc)
    try:
        reader = PdfFileReader(stream, strict=False)
        embedded = list(reader.embedded_regular_signatures)
        checks = tuple(_check(sig, trust, moment, material) for sig in embedded)
    except UnreadablePdfError:
        raise
    except (RecursionError, MemoryError) as err:
        # Hostile nesting (/AcroForm, /Fields, arrays in arrays) or a structure too large to hold:
        # pyHanko's parser recurses per nesting level. Fail closed, naming the file, never a crash.
        kind = "nested too deeply" if isinstance(err, RecursionError) else "too large to hold in memory"
        raise UnreadablePdfError(f"{label} cannot be read as a PDF: its structure is {kind}") from err
    except OSError:
        raise  # the file system failed, not the PDF: the caller reports that itself
    except Exception as err:
        # pyHanko raises many types for a damaged file (PdfError, ValueError, KeyError, TypeError,
        # AttributeError, IndexError...): each one means the same thing here.
        detail = str(err.msg if isinstance(err, PdfError) else err)[:300]
        raise UnreadablePdfError(f"{label} cannot be read as a PDF: {type(err).__name__}: {detail}") from err
    return SignatureReport(source=label, signatures=checks, trust_policy_set=trust is not None)


def _check(
    sig: Any,
    trust: TrustPolicy | None,
    moment: datetime,
    material: tuple[Sequence[Any], Sequence[Any], Sequence[Any]] | None = None,
) -> SignatureCheck:
    from pyhanko.sign.diff_analysis import DiffResult
    from pyhanko.sign.validation.errors import SignatureValidationError
    from pyhanko.sign.validation.generic_cms import validate_sig_integrity

    problems: list[str] = []
    subfilter = _subfilter(sig)
    try:
        cert = sig.signer_cert
    except Exception as err:  # pyHanko raises several types for a CMS without a matching certificate
        cert = None
        problems.append(f"no signer certificate in the CMS ({err})")
    intact = valid = False
    coverage, level = "unclear", "other"
    if cert is not None:
        try:
            _digest_byte_range(sig)
            sig.compute_integrity_info()
            coverage = sig.coverage.name.lower()
            diff = sig.diff_result
            level = diff.modification_level.name.lower() if isinstance(diff, DiffResult) else "other"
            content_type = sig.signed_data["encap_content_info"]["content_type"].native
            intact, valid = validate_sig_integrity(
                sig.signer_info, cert, expected_content_type=content_type, actual_digest=sig.compute_digest()
            )
        except SignatureValidationError as err:
            problems.append(f"the CMS signature is malformed ({err.failure_message})")
        except Exception as err:  # a damaged file can fail anywhere inside pyHanko
            problems.append(f"the signature cannot be checked ({type(err).__name__}: {err})")
    if cert is not None and not intact and not problems:
        problems.append("the digest over /ByteRange does not match: the signed bytes were changed")
    if cert is not None and not valid and not problems:
        problems.append("the CMS signature does not verify with the signer certificate's key")
    if not problems and coverage not in (COVERAGE_ENTIRE_FILE, COVERAGE_ENTIRE_REVISION):
        problems.append(f"the signature does not cover a whole revision (coverage {coverage})")
    if not problems and level not in MODIFICATION_ALLOWED:
        problems.append(
            f"the document was changed after signing (modification level {level}): only form filling "
            "and signature/timestamp updates are accepted; added annotations and content changes are not"
        )
    if not problems and cert is not None:
        problems.extend(_validity_problems(cert, moment))
    signer = _describe(cert) if cert is not None else None
    trusted = _trusted(cert, sig, trust, moment, material) if trust is not None and cert is not None else None
    if trust is not None and cert is None:
        trusted = False
    if trusted is False and signer is not None:
        problems.append(f"the signer certificate (sha256 {signer.sha256}) is not trusted by the policy")
    return SignatureCheck(
        field_name=str(sig.field_name),
        subfilter=subfilter,
        signer=signer,
        signing_time=_iso(_safe(lambda: sig.self_reported_timestamp)),
        timestamp_time=_iso(_timestamp_time(sig)),
        intact=bool(intact),
        valid=bool(valid),
        coverage=coverage,
        modification_level=level,
        trusted=trusted,
        problems=tuple(problems),
    )


def _digest_byte_range(sig: Any) -> None:
    """Hash the signature's ``/ByteRange`` with pyHanko's own function, in 1 MiB reads.

    pyHanko reads the range 4 KiB at a time, and hashing almost the whole file is most of what a
    verification costs (``docs/benchmarks.md``): the same digest over the same bytes, read in larger
    chunks, is put in the signature's digest cache, where ``compute_integrity_info`` and
    ``compute_digest`` take it from. Nothing is skipped: every byte of the range is still hashed.
    """
    from pyhanko.sign.general import byte_range_digest

    algorithm = sig.external_md_algorithm
    _, digest = byte_range_digest(
        sig.reader.stream, byte_range=sig.byte_range, md_algorithm=algorithm, chunk_size=_DIGEST_CHUNK
    )
    sig.external_digests[algorithm] = digest


def _safe(getter: Any) -> Any:
    try:
        return getter()
    except Exception:
        return None


def _subfilter(sig: Any) -> str | None:
    value = _safe(lambda: sig.sig_object.get("/SubFilter"))
    return str(value).lstrip("/") if value is not None else None


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if isinstance(moment, datetime) else None


def _timestamp_time(sig: Any) -> datetime | None:
    """The ``genTime`` of the first signature timestamp token (unsigned attribute), if any."""
    from pyhanko.sign.validation.generic_cms import extract_tst_data_iter

    try:
        for tst in extract_tst_data_iter(sig.signer_info, signed=False):
            value = tst["encap_content_info"]["content"].parsed["gen_time"].native
            return value if isinstance(value, datetime) else None
    except Exception:  # no unsigned attributes, or a token we cannot parse: reported as absent
        return None
    return None


def _name(name: Any, key: str) -> str | None:
    value = name.native.get(key)
    if isinstance(value, list):
        value = value[0] if value else None
    return str(value) if value is not None else None


def _describe(cert: Any) -> SignerCertificate:
    validity = cert["tbs_certificate"]["validity"]
    return SignerCertificate(
        subject=cert.subject.human_friendly,
        common_name=_name(cert.subject, "common_name"),
        organization=_name(cert.subject, "organization_name"),
        issuer=cert.issuer.human_friendly,
        serial=format(cert.serial_number, "x"),
        sha256=hashlib.sha256(cert.dump()).hexdigest(),
        not_before=validity["not_before"].native.isoformat(),
        not_after=validity["not_after"].native.isoformat(),
        self_signed=_self_signed(cert),
    )


def _self_signed(cert: Any) -> bool:
    """Whether the certificate is issued by itself (same name, and its own key verifies it)."""
    from cryptography import x509 as crypto_x509

    if cert.subject != cert.issuer:
        return False
    try:
        parsed = crypto_x509.load_der_x509_certificate(cert.dump())
        parsed.verify_directly_issued_by(parsed)
    except Exception:
        return False
    return True


def _trusted(
    cert: Any,
    sig: Any,
    trust: TrustPolicy,
    moment: datetime,
    material: tuple[Sequence[Any], Sequence[Any], Sequence[Any]] | None = None,
) -> bool:
    fingerprint = hashlib.sha256(cert.dump()).hexdigest()
    if fingerprint in trust.fingerprints:
        return True
    if not trust.certificates:
        return False
    if any(hashlib.sha256(der).hexdigest() == fingerprint for der in trust.certificates):
        return True
    certs, ocsps, crls = material or ((), (), ())
    intermediates = [*(_safe(lambda: list(sig.other_embedded_certs)) or []), *certs]
    return _chains_to(cert, intermediates, trust.certificates, moment=moment, ocsps=ocsps, crls=crls)
