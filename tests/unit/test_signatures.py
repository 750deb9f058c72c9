"""The signature verifier on PDFs signed here with pyHanko, and on the real Documenso 2.17 recordings."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from helpers import SPEC_DIR, self_signed_certificate
from pypdf import PdfWriter

from airflow_provider_docsign.evidence.signatures import (
    TrustPolicy,
    UnreadablePdfError,
    normalize_fingerprint,
    verify_pdf_signatures,
)

SEALED = SPEC_DIR / "recorded" / "sealed"
# The real instance's self-signed sealing certificate, read independently of the verifier with
# `openssl`-equivalent parsing below (fixed by the recording).
REAL_CN = "Documenso Peer Signing"
REAL_O = "Peer Test"


def _blank_pdf(path: Path) -> Path:
    writer = PdfWriter()
    writer.add_blank_page(width=595, height=842)
    with open(path, "wb") as fh:
        writer.write(fh)
    return path


def _key_and_cert(tmp_path: Path, cn: str) -> tuple[Path, Path, bytes]:
    """An EC key and self-signed certificate made with `cryptography` (not the sandbox's code)."""
    key, cert = self_signed_certificate(cn)
    key_path, cert_path = tmp_path / f"{cn}.key", tmp_path / f"{cn}.pem"
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_path.write_bytes(pem)
    return key_path, cert_path, pem


def _sign(source: Path, target: Path, key: Path, cert: Path) -> None:
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers

    signer = signers.SimpleSigner.load(str(key), str(cert))
    meta = signers.PdfSignatureMetadata(field_name="TestSeal", subfilter=fields.SigSeedSubFilter.PADES)
    with open(source, "rb") as inf, open(target, "wb") as out:
        signers.sign_pdf(IncrementalPdfFileWriter(inf), meta, signer=signer, output=out)


@pytest.fixture
def signed_here(tmp_path: Path) -> tuple[Path, bytes]:
    key, cert, pem = _key_and_cert(tmp_path, "Test Signer")
    target = tmp_path / "signed.pdf"
    _sign(_blank_pdf(tmp_path / "blank.pdf"), target, key, cert)
    return target, pem


def _fingerprint(pem: bytes) -> str:
    der = x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)
    return hashlib.sha256(der).hexdigest()


def test_pdf_signed_in_the_test_verifies(signed_here: tuple[Path, bytes]) -> None:
    path, pem = signed_here
    report = verify_pdf_signatures(path)
    assert report.signed
    assert report.passed, report.problems
    (check,) = report.signatures
    assert check.field_name == "TestSeal"
    assert check.subfilter == "ETSI.CAdES.detached"
    assert check.intact
    assert check.valid
    assert check.coverage == "entire_file"
    assert check.modification_level == "none"
    assert check.trusted is None
    assert check.signer is not None
    assert check.signer.common_name == "Test Signer"
    assert check.signer.serial == format(4242, "x")
    assert check.signer.sha256 == _fingerprint(pem)
    assert check.signer.self_signed
    assert check.signing_time is not None


def test_trust_by_pinned_fingerprint_and_by_certificate(
    signed_here: tuple[Path, bytes], tmp_path: Path
) -> None:
    path, pem = signed_here
    pinned = TrustPolicy.build(fingerprints=[_fingerprint(pem).upper()])
    assert verify_pdf_signatures(path, trust=pinned).signatures[0].trusted is True
    by_cert = TrustPolicy.build(pem=[pem])
    assert verify_pdf_signatures(path, trust=by_cert).signatures[0].trusted is True
    _, _, other_pem = _key_and_cert(tmp_path, "Someone Else")
    report = verify_pdf_signatures(path, trust=TrustPolicy.build(pem=[other_pem]))
    assert report.signatures[0].trusted is False
    assert not report.passed
    assert "not trusted" in report.problems[0]
    # A file object works too, and is left open.
    with open(path, "rb") as fh:
        assert verify_pdf_signatures(fh, trust=pinned).passed
        assert not fh.closed


def test_trust_policy_from_pem_files(signed_here: tuple[Path, bytes], tmp_path: Path) -> None:
    path, pem = signed_here
    pem_file = tmp_path / "trusted.pem"
    pem_file.write_bytes(pem)
    policy = TrustPolicy.from_sources([pem_file])
    assert policy is not None
    assert verify_pdf_signatures(path, trust=policy).passed
    assert TrustPolicy.from_sources([]) is None
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate")
    with pytest.raises(ValueError, match="no PEM CERTIFICATE"):
        TrustPolicy.from_sources([bad])


def test_byte_flip_in_signed_range_is_not_intact(signed_here: tuple[Path, bytes], tmp_path: Path) -> None:
    path, _ = signed_here
    data = bytearray(path.read_bytes())
    data[20] ^= 0x01  # inside the first signed range (the file header comment)
    flipped = tmp_path / "flipped.pdf"
    flipped.write_bytes(bytes(data))
    report = verify_pdf_signatures(flipped)
    assert report.signatures[0].intact is False
    assert not report.passed
    assert "digest over /ByteRange does not match" in report.problems[0]


def test_the_large_read_digest_is_pyhankos_digest_and_catches_a_flip_in_every_chunk(tmp_path: Path) -> None:
    """The /ByteRange is hashed in 1 MiB reads (issue 28): the same digest, every byte still covered."""
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.general import byte_range_digest

    from airflow_provider_docsign.evidence.signatures import _digest_byte_range
    from airflow_provider_docsign.samples import write_sample_pdf

    key, cert, _ = _key_and_cert(tmp_path, "Big Signer")
    source = write_sample_pdf(tmp_path / "big.pdf", title="big", pages=1, padding_bytes=3 * 1024 * 1024 + 123)
    signed = tmp_path / "signed-big.pdf"
    _sign(Path(source), signed, key, cert)
    with open(signed, "rb") as fh:
        (sig,) = PdfFileReader(fh, strict=False).embedded_signatures
        _digest_byte_range(sig)
        ours = sig.external_digests["sha256"]
        fh.seek(0)
        _, theirs = byte_range_digest(fh, byte_range=sig.byte_range, md_algorithm="sha256")  # 4 KiB reads
    assert ours == theirs
    assert verify_pdf_signatures(signed).passed
    data = signed.read_bytes()
    start, length, second, tail = (int(v) for v in sig.byte_range)
    assert (start, second + tail) == (0, len(data))  # the range covers the file but the signature
    # A flipped byte in each MiB of the signed bytes, the last partial chunk and the tail included.
    for offset in [*range(100, length, 1024 * 1024), length - 1, second, len(data) - 2]:
        flipped = bytearray(data)
        flipped[offset] ^= 0x01
        target = tmp_path / "flipped.pdf"
        target.write_bytes(bytes(flipped))
        try:
            report = verify_pdf_signatures(target)
        except UnreadablePdfError:
            continue  # the flip broke the PDF's structure itself: not a pass either
        assert not report.passed, offset
        assert report.signatures[0].intact is False, offset


def test_real_documenso_seal_is_intact_valid_and_whole_file() -> None:
    report = verify_pdf_signatures(SEALED / "29_sealed_signed.pdf")
    assert report.passed, report.problems
    (check,) = report.signatures
    assert check.subfilter == "ETSI.CAdES.detached"
    assert check.intact
    assert check.valid
    assert check.coverage == "entire_file"
    assert check.signer is not None
    assert check.signer.common_name == REAL_CN
    assert check.signer.organization == REAL_O
    assert check.signer.self_signed
    assert check.signer.issuer == check.signer.subject
    assert check.signing_time is not None
    assert check.signing_time.startswith("20")


def test_real_documenso_seal_with_a_flipped_byte_fails(tmp_path: Path) -> None:
    source = SEALED / "29_sealed_signed.pdf"
    data = bytearray(source.read_bytes())
    data[len(data) // 4] ^= 0x01  # the body, well before the /Contents hole near the end
    report = verify_pdf_signatures(io.BytesIO(bytes(data)))
    assert not report.passed
    assert report.signatures[0].intact is False


@pytest.mark.parametrize("name", ["30_sealed_audit_log.pdf", "31_sealed_certificate.pdf"])
def test_real_audit_log_and_certificate_carry_no_signature(name: str) -> None:
    report = verify_pdf_signatures(SEALED / name)
    assert not report.signed
    assert report.problems == ["no digital signature"]
    assert report.to_dict()["signatures"] == []


def test_unreadable_input(tmp_path: Path) -> None:
    text = tmp_path / "note.pdf"
    text.write_text("hello")
    with pytest.raises(UnreadablePdfError, match="not a PDF"):
        verify_pdf_signatures(text)
    with pytest.raises(FileNotFoundError):
        verify_pdf_signatures(tmp_path / "missing.pdf")


def test_fingerprint_forms() -> None:
    hexa = "ab" * 32
    assert normalize_fingerprint(":".join(["AB"] * 32)) == hexa
    with pytest.raises(ValueError, match="SHA-256"):
        normalize_fingerprint("abcd")


def test_an_added_annotation_is_modification_level_other_and_fails(tmp_path: Path) -> None:
    """The real policy (signatures.MODIFICATION_ALLOWED): pyHanko classes an annotation-only update
    as ``other``, and it fails, with a message that names that level."""
    from hostile_pdfs import add_annotation

    from airflow_provider_docsign.sandbox.sealing import Sealer

    sealed = tmp_path / "sealed.pdf"
    (tmp_path / "sandbox-data").mkdir()
    Sealer(tmp_path / "sandbox-data").seal(_blank_pdf(tmp_path / "blank.pdf"), sealed, "2026-01-01T00:00:00Z")
    assert verify_pdf_signatures(sealed).passed
    annotated = add_annotation(sealed, tmp_path / "annotated.pdf")

    report = verify_pdf_signatures(annotated)
    (check,) = report.signatures
    assert check.intact
    assert check.valid
    assert check.coverage == "entire_revision"
    assert check.modification_level == "other"
    assert not report.passed
    assert "modification level other" in check.problems[0]
    assert "added annotations" in check.problems[0]


def test_deeply_nested_acroform_is_an_unreadable_pdf(tmp_path: Path) -> None:
    from hostile_pdfs import deeply_nested_pdf

    deep = deeply_nested_pdf(tmp_path / "deep.pdf", depth=100_000)
    with pytest.raises(UnreadablePdfError, match=r"deep\.pdf .*nested too deeply"):
        verify_pdf_signatures(deep)


def test_the_memory_bound_stops_only_that_verification(tmp_path: Path) -> None:
    """A structure that needs more memory than the bound is unreadable; the next file verifies."""
    from hostile_pdfs import many_fields_pdf

    from airflow_provider_docsign.evidence import signatures

    big = many_fields_pdf(tmp_path / "fields.pdf", 100_000)
    with (
        open(big, "rb") as fh,
        pytest.raises(UnreadablePdfError, match=r"fields\.pdf .*more than 1 MiB of memory"),
    ):
        signatures._verify_stream(fh, None, str(big), max_memory=1024 * 1024, max_seconds=None)
    # No stray asynchronous exception is left behind for the thread.
    assert verify_pdf_signatures(SEALED / "29_sealed_signed.pdf").passed
    assert verify_pdf_signatures(SEALED / "29_sealed_signed.pdf").passed


def test_the_archive_operator_names_an_unreadable_staged_file(tmp_path: Path) -> None:
    from hostile_pdfs import deeply_nested_pdf

    from airflow_provider_docsign.archive import signatures as _verify

    deep = deeply_nested_pdf(tmp_path / ".01-contract.pdf.abc.partial")
    report, problem = _verify.verify_file(deep, "file:///archive/ENV-1/01-contract.pdf", None)
    assert report is None
    reason = _verify.failure_reason(report, problem, signature_required=True)
    assert reason is not None
    assert "file:///archive/ENV-1/01-contract.pdf cannot be read as a PDF" in reason
    assert "nested too deeply" in reason
