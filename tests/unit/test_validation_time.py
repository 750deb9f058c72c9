"""Signatures judged as of a given time: how the "three minutes later" checks work without waiting.

The proof that pyHanko itself validates as of a moment: ``trusted`` comes only from pyHanko's
certificate-path validation (``ValidationContext(moment=...)``), never from our own validity check.
A seal by a two-minute leaf certificate under a root is trusted as of now, and not as of three
minutes later, when the path's leaf has expired.
"""

from __future__ import annotations

import datetime
import io
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pypdf import PdfWriter

from airflow_provider_docsign.evidence.signatures import TrustPolicy, verify_pdf_signatures


def _certificate(
    cn: str,
    key: Any,
    issuer: tuple[x509.Name, Any] | None,
    lifetime: datetime.timedelta,
    now: datetime.datetime,
) -> Any:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    issuer_name, issuer_key = issuer or (name, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    return builder.sign(issuer_key, hashes.SHA256())


def _sealed_by_short_lived_leaf(now: datetime.datetime) -> tuple[bytes, bytes]:
    """A blank PDF sealed by a leaf valid for two minutes from ``now``, under a ten-year root; its PEM."""
    from asn1crypto import keys
    from asn1crypto import x509 as ax509
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers
    from pyhanko_certvalidator.registry import SimpleCertificateStore

    root_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    root = _certificate("Test Root", root_key, None, datetime.timedelta(days=3650), now)
    leaf = _certificate("Short Seal", leaf_key, (root.subject, root_key), datetime.timedelta(minutes=2), now)

    def der(cert: Any) -> Any:
        return ax509.Certificate.load(cert.public_bytes(serialization.Encoding.DER))

    pkcs8 = leaf_key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    signer = signers.SimpleSigner(
        signing_cert=der(leaf),
        signing_key=keys.PrivateKeyInfo.load(pkcs8),
        cert_registry=SimpleCertificateStore.from_certs([der(root)]),
    )
    blank = io.BytesIO()
    writer = PdfWriter()
    writer.add_blank_page(width=595, height=842)
    writer.write(blank)
    blank.seek(0)
    meta = signers.PdfSignatureMetadata(field_name="Seal", subfilter=fields.SigSeedSubFilter.PADES)
    out = signers.sign_pdf(IncrementalPdfFileWriter(blank), meta, signer=signer)
    return out.getvalue(), root.public_bytes(serialization.Encoding.PEM)


def test_pyhanko_validates_the_certificate_path_as_of_the_given_moment() -> None:
    now = datetime.datetime.now(datetime.timezone.utc)
    sealed, root_pem = _sealed_by_short_lived_leaf(now)
    trust = TrustPolicy.build(pem=[root_pem])

    (today,) = verify_pdf_signatures(io.BytesIO(sealed), trust=trust, at=now).signatures
    assert today.trusted is True
    assert today.passed

    later = now + datetime.timedelta(minutes=3)
    (then,) = verify_pdf_signatures(io.BytesIO(sealed), trust=trust, at=later).signatures
    assert then.trusted is False  # pyHanko's path validation as of the moment: the leaf expired
    assert any("expired" in p for p in then.problems)

    (before,) = verify_pdf_signatures(
        io.BytesIO(sealed), trust=trust, at=now - datetime.timedelta(hours=1)
    ).signatures
    assert before.trusted is False
    assert any("valid only from" in p for p in before.problems)


def test_without_a_trust_policy_the_validity_period_is_still_checked() -> None:
    now = datetime.datetime.now(datetime.timezone.utc)
    sealed, _ = _sealed_by_short_lived_leaf(now)
    later = now + datetime.timedelta(minutes=3)
    (check,) = verify_pdf_signatures(io.BytesIO(sealed), at=later).signatures
    assert check.trusted is None
    assert check.intact  # the bytes are what was signed...
    assert check.valid
    assert not check.passed  # ...but nothing proves the seal was made while its certificate was valid
