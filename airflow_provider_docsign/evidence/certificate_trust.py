"""Which certificates are trusted, and the offline checks of a certificate against that.

:class:`TrustPolicy` (pinned SHA-256 fingerprints and trusted certificates, from PEM) serves the PDF
signature checks (:mod:`.signatures`) and the timestamp checks (:mod:`.timestamps`, :mod:`.tsa_client`).
Here too: a signer certificate's validity window at a given time, and whether it has a valid path to a
trusted certificate, with the validation material given (nothing is fetched).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from airflow_provider_docsign._sources import open_source

__all__ = ["TrustPolicy", "certificate_fingerprints", "normalize_fingerprint"]

_FINGERPRINT_RE = re.compile(r"^[0-9a-f]{64}$")
_LOG = logging.getLogger(__name__)


def normalize_fingerprint(value: str) -> str:
    """A SHA-256 fingerprint in lower-case hex without separators (``AB:CD:…`` is accepted).

    :param value: The fingerprint as written by ``openssl x509 -fingerprint -sha256`` or as hex.
    :raises ValueError: When it is not 32 bytes of hex.
    """
    text = re.sub(r"[\s:]", "", str(value)).lower()
    if text.startswith("sha256="):
        text = text[len("sha256=") :]
    if not _FINGERPRINT_RE.match(text):
        raise ValueError(f"{value!r} is not a SHA-256 fingerprint (64 hex digits, ':' separators allowed)")
    return text


def certificate_fingerprints(pem: bytes | str) -> list[str]:
    """The SHA-256 fingerprints (lower-case hex) of every certificate in a PEM document.

    Use it to pin an instance's sealing certificate (connection extra
    ``signing_certificate_fingerprints``) from its PEM file.

    :param pem: The PEM text.
    """
    policy = TrustPolicy.build(pem=[pem])
    return [hashlib.sha256(der).hexdigest() for der in (policy.certificates if policy else ())]


@dataclass(frozen=True)
class TrustPolicy:
    """Which signer certificates are trusted.

    A signer is trusted when its certificate's SHA-256 fingerprint is pinned, or when it chains (with
    the certificates embedded in the signature) to one of the trusted certificates. Nothing is fetched
    from the network (no AIA, CRL or OCSP look-ups).

    :param certificates: Trusted certificates (roots, intermediates or the signer itself), as DER bytes.
    :param fingerprints: Pinned SHA-256 fingerprints of signer certificates (lower-case hex).
    """

    certificates: tuple[bytes, ...] = ()
    fingerprints: frozenset[str] = frozenset()

    @classmethod
    def build(
        cls, *, pem: Iterable[bytes | str] = (), fingerprints: Iterable[str] = ()
    ) -> TrustPolicy | None:
        """A policy from PEM texts and fingerprints; ``None`` when both are empty (no policy).

        :param pem: PEM documents, each holding one or more certificates.
        :param fingerprints: SHA-256 fingerprints (hex, ``:`` separators allowed).
        :raises ValueError: For a PEM document without a certificate or a malformed fingerprint.
        """
        from asn1crypto import pem as asn1_pem

        ders: list[bytes] = []
        for index, document in enumerate(pem):
            data = document.encode("ascii") if isinstance(document, str) else bytes(document)
            try:
                blocks = list(asn1_pem.unarmor(data, multiple=True))
                found = [der for kind, _, der in blocks if kind == "CERTIFICATE"]
            except ValueError:
                found = []
            if not found:
                raise ValueError(f"trusted certificate #{index + 1} holds no PEM CERTIFICATE block")
            ders.extend(found)
        pins = frozenset(normalize_fingerprint(f) for f in fingerprints)
        if not ders and not pins:
            return None
        return cls(certificates=tuple(ders), fingerprints=pins)

    @classmethod
    def from_sources(
        cls, sources: Iterable[Any] = (), *, fingerprints: Iterable[str] = ()
    ) -> TrustPolicy | None:
        """A policy from PEM files (paths, URIs or ``ObjectStoragePath``) and fingerprints.

        :param sources: Where the PEM certificates are.
        :param fingerprints: Pinned SHA-256 fingerprints.
        """
        texts: list[bytes] = []
        for source in sources:
            stream, owned = open_source(source)
            try:
                texts.append(stream.read(1024 * 1024))  # certificates are small; bound what is read
            finally:
                if owned:
                    stream.close()
        return cls.build(pem=texts, fingerprints=fingerprints)


def _validity_problems(cert: Any, moment: datetime) -> list[str]:
    """The signer certificate must be valid at ``moment`` (a pinned or trusted one too)."""
    validity = cert["tbs_certificate"]["validity"]
    not_before, not_after = validity["not_before"].native, validity["not_after"].native
    when = moment.astimezone(timezone.utc).isoformat()
    if moment > not_after:
        return [
            f"the signer certificate expired on {not_after.isoformat()} (checked as of {when}): "
            "nothing in this file proves the seal was made while it was valid; a long-term "
            "validation copy (ltv=True) carries that proof"
        ]
    if moment < not_before:
        return [f"the signer certificate is valid only from {not_before.isoformat()} (checked as of {when})"]
    return []


def _run(coroutine: Any) -> Any:
    """Run a coroutine to completion, also when the caller is inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _chains_to(
    cert: Any,
    intermediates: Sequence[Any],
    roots: Sequence[bytes],
    *,
    moment: datetime | None = None,
    ocsps: Sequence[Any] = (),
    crls: Sequence[Any] = (),
) -> bool:
    """Whether ``cert`` has a valid path to one of ``roots`` as of ``moment``.

    Offline: nothing is fetched; the given OCSP answers and CRLs are used (a revoked one fails).
    """
    from asn1crypto import x509
    from pyhanko_certvalidator import CertificateValidator, ValidationContext
    from pyhanko_certvalidator.errors import PathBuildingError, PathValidationError

    context = ValidationContext(
        trust_roots=[x509.Certificate.load(der) for der in roots],
        other_certs=list(intermediates),
        moment=moment,
        allow_fetching=False,
        revocation_mode="soft-fail",
        ocsps=list(ocsps),
        crls=list(crls),
    )
    validator = CertificateValidator(cert, validation_context=context)
    try:
        _run(validator.async_validate_path())
    except (PathBuildingError, PathValidationError) as err:
        _LOG.debug("Signer certificate does not chain to a trusted certificate: %s", err)
        return False
    except Exception as err:  # an unusable certificate is not trusted
        _LOG.debug("Trust check failed: %s", err)
        return False
    return True
