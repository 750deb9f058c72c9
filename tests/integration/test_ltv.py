"""PAdES-B-LTA copies over real HTTP: a sandbox whose seal certificates expire two minutes after
signing, its TSA for the document timestamps, and checks "three minutes later".

"Later" is a validation time, not a wait: every check takes the moment it judges at (``at=`` of
``verify_pdf_signatures``, ``now=`` of ``verify_ltv``), and pyHanko's validation context validates
certificate paths as of a given moment (shown in ``tests/unit/test_validation_time.py``).
"""

from __future__ import annotations

import datetime
import io
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import completed_envelope

from airflow_provider_docsign.evidence.ltv import LtvWriter, verify_ltv
from airflow_provider_docsign.evidence.signatures import TrustPolicy, verify_pdf_signatures
from airflow_provider_docsign.evidence.timestamps import TimestampError
from airflow_provider_docsign.evidence.tsa_client import TsaSettings
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.hooks.tsa import post_timestamp_query
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sandbox.sealing import byte_range, write_modified

pytestmark = pytest.mark.integration

LIFETIME = 120  # seconds: the seal certificate expires two minutes after signing


@pytest.fixture(scope="module")
def short_lived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    """A sandbox that seals with a certificate issued per seal, valid for two minutes after it."""
    with SandboxServer(
        tmp_path_factory.mktemp("short-seal"), extra_args=["--seal-cert-lifetime", str(LIFETIME)]
    ) as server:
        yield server


@pytest.fixture
def sealed(short_lived: SandboxServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    """A PDF sealed just now by the short-lived sandbox, and the certificate it was sealed with.

    One per test: a copy can only be made while the seal's certificate is valid (two minutes).
    """
    from airflow_provider_docsign.samples import write_sample_pdf

    pdf = write_sample_pdf(tmp_path_factory.mktemp("ltv-pdfs") / "contract.pdf", title="Contract")
    with DocsignHook(base_url=short_lived.base_url, api_key=short_lived.api_key) as hook:
        envelope_id = completed_envelope(hook, short_lived, [pdf], title="LTV", external_id=None)
        item = hook.get_envelope(envelope_id).items[0]
    return short_lived.item_bytes(item.id, "signed"), short_lived.certificate_pem()


def _writer(server: SandboxServer, seal_pem: bytes) -> LtvWriter:
    tsa = TsaSettings(
        url=server.tsa_url,
        trust=TrustPolicy.build(pem=[server.tsa_certificate_pem()]),
        transport=post_timestamp_query,
    )
    return LtvWriter(tsa, trust=TrustPolicy.build(pem=[seal_pem]))


def _copy(server: SandboxServer, signed: bytes, seal_pem: bytes) -> bytes:
    out = io.BytesIO()
    _writer(server, seal_pem).write(io.BytesIO(signed), out)
    return out.getvalue()


def test_the_seal_certificate_expires_two_minutes_after_signing(sealed: tuple[bytes, bytes]) -> None:
    signed, pem = sealed
    (check,) = verify_pdf_signatures(io.BytesIO(signed), trust=TrustPolicy.build(pem=[pem])).signatures
    assert check.signer is not None
    assert check.signing_time is not None
    expires = datetime.datetime.fromisoformat(check.signer.not_after)
    signed_at = datetime.datetime.fromisoformat(check.signing_time)
    assert (expires - signed_at).total_seconds() == pytest.approx(LIFETIME, abs=1)


def test_the_ltv_copy_validates_as_of_its_timestamp_and_the_plain_copy_reports_the_expiry(
    short_lived: SandboxServer, sealed: tuple[bytes, bytes]
) -> None:
    signed, pem = sealed
    short_lived.clear_tsa()
    out = io.BytesIO()
    copy = _writer(short_lived, pem).write(io.BytesIO(signed), out)
    data = out.getvalue()

    assert data.startswith(signed)  # an incremental update: the signed bytes are kept unchanged
    assert copy.size == len(data)
    assert copy.certificates >= 2  # the seal's and the TSA's certificates are in the DSS
    assert copy.ocsp_responses == copy.crls == 0
    assert any("self-signed" in m for m in copy.missing)  # and the copy says what it lacks, and why
    assert [e["outcome"] for e in short_lived.tsa_requests()] == ["granted", "granted"]

    trust = TrustPolicy.build(pem=[pem])
    tsa_trust = TrustPolicy.build(pem=[short_lived.tsa_certificate_pem()])
    three_minutes_later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=3)

    report = verify_ltv(io.BytesIO(data), trust=trust, tsa_trust=tsa_trust, now=three_minutes_later)
    assert report.passed, report.problems
    assert report.timestamp is not None
    assert report.timestamp.gen_time == copy.document_timestamp
    assert report.seals is not None
    assert report.seals.signatures[0].trusted is True

    plain = verify_pdf_signatures(io.BytesIO(signed), trust=trust, at=three_minutes_later)
    assert not plain.passed
    assert any("expired" in p for p in plain.problems)
    assert verify_pdf_signatures(io.BytesIO(signed), trust=trust).passed  # and today it still passes


def test_a_changed_ltv_copy_fails(
    short_lived: SandboxServer, sealed: tuple[bytes, bytes], tmp_path: Path
) -> None:
    signed, pem = sealed
    data = _copy(short_lived, signed, pem)
    original = tmp_path / "copy.ltv.pdf"
    original.write_bytes(data)
    tsa_trust = TrustPolicy.build(pem=[short_lived.tsa_certificate_pem()])

    plain = tmp_path / "plain.pdf"
    plain.write_bytes(signed)
    start, length, _, _ = byte_range(plain)  # the seal's first signed range, in the copy as well
    edited = bytearray(data)
    edited[start + length // 2] ^= 0x20
    flipped = tmp_path / "flipped.ltv.pdf"
    flipped.write_bytes(bytes(edited))
    report = verify_ltv(flipped, trust=TrustPolicy.build(pem=[pem]), tsa_trust=tsa_trust)
    assert not report.passed
    assert any("not the hash of the data" in p for p in report.problems)  # the document timestamp
    assert any("/ByteRange does not match" in p for p in report.problems)  # and the seal

    changed = tmp_path / "changed.ltv.pdf"
    write_modified(original, changed)  # page content drawn after the document timestamp
    report = verify_ltv(changed, trust=TrustPolicy.build(pem=[pem]), tsa_trust=tsa_trust)
    assert any("changed after the document timestamp" in p for p in report.problems)

    assert not verify_ltv(io.BytesIO(signed)).passed  # the plain copy has no document timestamp


def test_a_document_timestamp_from_an_unpinned_tsa(
    short_lived: SandboxServer, sealed: tuple[bytes, bytes]
) -> None:
    signed, pem = sealed
    short_lived.clear_tsa()
    short_lived.tsa_fault("untrusted")  # the first token (pyHanko's sizing one) is refused already
    pinned = _writer(short_lived, pem)
    with pytest.raises(TimestampError, match="not trusted by the pinned TSA certificates"):
        pinned.write(io.BytesIO(signed), io.BytesIO())

    short_lived.tsa_fault("untrusted", count=2)
    out = io.BytesIO()
    LtvWriter(TsaSettings(url=short_lived.tsa_url, transport=post_timestamp_query)).write(
        io.BytesIO(signed), out
    )
    tsa_trust = TrustPolicy.build(pem=[short_lived.tsa_certificate_pem()])
    report = verify_ltv(io.BytesIO(out.getvalue()), tsa_trust=tsa_trust)
    assert not report.passed
    assert any("document timestamp: the TSA certificate" in p for p in report.problems)
    assert verify_ltv(io.BytesIO(out.getvalue())).passed  # without pins, trust is not judged
    assert [e["fault"] for e in short_lived.tsa_requests()] == ["untrusted"] * 3


def test_extending_an_unsigned_pdf_is_refused(
    short_lived: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    from airflow_provider_docsign.evidence.signatures import UnreadablePdfError

    writer = _writer(short_lived, short_lived.certificate_pem())
    with pytest.raises(UnreadablePdfError, match="no signature"), open(make_pdf("plain.pdf"), "rb") as fh:
        writer.write(fh, io.BytesIO())


def _ca_sealed(crl_url: str) -> tuple[bytes, bytes]:
    """A blank PDF sealed by a leaf whose certificate names a CRL location, under a root; the root's PEM."""
    from asn1crypto import keys
    from asn1crypto import x509 as ax509
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers
    from pyhanko_certvalidator.registry import SimpleCertificateStore
    from pypdf import PdfWriter

    now = datetime.datetime.now(datetime.timezone.utc)
    root_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    root_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "LTV Test Root")])
    root = (
        x509.CertificateBuilder()
        .subject_name(root_name)
        .issuer_name(root_name)
        .public_key(root_key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(root_key, hashes.SHA256())
    )
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "LTV Test Seal")]))
        .issuer_name(root_name)
        .public_key(leaf_key.public_key())
        .serial_number(2)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.CRLDistributionPoints(
                [x509.DistributionPoint([x509.UniformResourceIdentifier(crl_url)], None, None, None)]
            ),
            critical=False,
        )
        .sign(root_key, hashes.SHA256())
    )

    def der(cert: x509.Certificate) -> ax509.Certificate:
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
    sealed = signers.sign_pdf(IncrementalPdfFileWriter(blank), meta, signer=signer).getvalue()
    return sealed, root.public_bytes(serialization.Encoding.PEM)


def test_a_copy_whose_revocation_material_cannot_be_fetched_says_so(short_lived: SandboxServer) -> None:
    import socket

    with socket.socket() as closed:  # a loopback port nothing listens on: the CRL cannot be fetched
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    sealed, root_pem = _ca_sealed(f"http://127.0.0.1:{port}/seal.crl")
    short_lived.clear_tsa()
    out = io.BytesIO()
    copy = _writer(short_lived, root_pem).write(io.BytesIO(sealed), out)

    assert copy.ocsp_responses == copy.crls == 0
    assert copy.missing == (
        "revocation information: the chain names CRL or OCSP locations, but nothing could be fetched "
        "from them (offline, or the responders failed)",
    )
    assert copy.certificates >= 3  # the seal's chain (leaf and root) and the TSA's certificate
    tsa_trust = TrustPolicy.build(pem=[short_lived.tsa_certificate_pem()])
    report = verify_ltv(
        io.BytesIO(out.getvalue()), trust=TrustPolicy.build(pem=[root_pem]), tsa_trust=tsa_trust
    )
    assert report.passed, report.problems
