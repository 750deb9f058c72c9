"""Sealing like the real service: a PAdES signature over each completed PDF, made with pyHanko.

Documenso seals a completed document with its instance certificate (subfilter ``ETSI.CAdES.detached``,
a ``/ByteRange`` over the whole file, the signing time in the CMS). The sandbox does the same with a
key and self-signed certificate generated with ``cryptography`` on its first start and kept in its data
directory (``sealing-key.pem``, ``sealing-cert.pem``), so a restart keeps the same certificate.

It also makes the broken variants that the download faults serve (a flipped byte in the signed range;
an incremental update that changes page content after signing). Everything streams between files:
pyHanko reads the PDF through its cross-reference table and copies the bytes in chunks.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

KEY_FILE = "sealing-key.pem"
CERT_FILE = "sealing-cert.pem"
COMMON_NAME = "Docsign Sandbox Signing"
ORGANIZATION = "airflow-provider-docsign sandbox"
FIELD_NAME = "Signature1"
_CHUNK = 1024 * 1024


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def self_signed_certificate(
    key: Any,
    *,
    common_name: str,
    not_before: datetime.datetime,
    not_after: datetime.datetime,
    timestamping: bool = False,
) -> Any:
    """A self-signed ``cryptography`` certificate for ``key``.

    :param key: The RSA private key.
    :param common_name: The subject's CN (the organisation is the sandbox's).
    :param not_before: Start of validity.
    :param not_after: End of validity.
    :param timestamping: A TSA certificate: extended key usage ``timeStamping`` (critical, as RFC 3161
        requires and ``openssl ts -verify`` checks), not a CA. Otherwise a sealing certificate (a CA
        that signs documents, as Documenso's self-signed instance certificate is).
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
        ]
    )
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=not timestamping, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=True,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=not timestamping,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if timestamping:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True
        )
    return builder.sign(key, hashes.SHA256())


def ensure_key_pair(
    data_dir: str | os.PathLike[str],
    key_file: str,
    cert_file: str,
    *,
    common_name: str,
    timestamping: bool = False,
) -> tuple[Path, Path]:
    """Create an RSA key and a self-signed certificate (ten years) in ``data_dir`` unless they exist.

    :return: ``(key_path, cert_path)``.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    base = Path(data_dir)
    key_path, cert_path = base / key_file, base / cert_file
    if key_path.exists() and cert_path.exists():
        return key_path, cert_path
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = self_signed_certificate(
        key,
        common_name=common_name,
        not_before=now - datetime.timedelta(days=1),
        not_after=now + datetime.timedelta(days=3650),
        timestamping=timestamping,
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write_atomic(key_path, key_pem, 0o600)
    _write_atomic(cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return key_path, cert_path


def ensure_key(data_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Create the sealing key and self-signed certificate in ``data_dir`` unless they exist.

    :param data_dir: The sandbox data directory.
    :return: ``(key_path, cert_path)``.
    """
    return ensure_key_pair(data_dir, KEY_FILE, CERT_FILE, common_name=COMMON_NAME)


class Sealer:
    """Signs PDFs with the sandbox's key (PAdES, ``ETSI.CAdES.detached``).

    :param data_dir: The sandbox data directory; the key and certificate are created there if missing.
    :param cert_lifetime: Seconds. When set, every seal is made with a certificate issued for that
        seal (same key) that is valid from a minute before the signing time until ``cert_lifetime``
        seconds after it: a seal whose certificate has "expired since", for long-term validation
        tests. ``None`` (default): one ten-year certificate, kept in the data directory.
    """

    def __init__(self, data_dir: str | os.PathLike[str], *, cert_lifetime: float | None = None) -> None:
        if cert_lifetime is not None and cert_lifetime <= 0:
            raise ValueError("cert_lifetime must be a positive number of seconds")
        self.key_path, self.cert_path = ensure_key(data_dir)
        self.cert_lifetime = cert_lifetime
        self._signer: Any = None
        self._lock = threading.Lock()  # with cert_lifetime, a seal and its certificate go together

    @property
    def certificate_pem(self) -> bytes:
        """The sealing certificate as PEM (with ``cert_lifetime``: the one of the latest seal)."""
        return self.cert_path.read_bytes()

    def _simple_signer(self, signed_at: datetime.datetime) -> Any:
        from pyhanko.sign import signers

        if self.cert_lifetime is not None:
            self._reissue(signed_at)
            self._signer = None
        if self._signer is None:
            self._signer = signers.SimpleSigner.load(  # type: ignore[no-untyped-call]
                str(self.key_path), str(self.cert_path)
            )
        return self._signer

    def _reissue(self, signed_at: datetime.datetime) -> None:
        """A certificate for this seal only: valid until ``cert_lifetime`` seconds after ``signed_at``."""
        from cryptography.hazmat.primitives import serialization

        assert self.cert_lifetime is not None
        key = serialization.load_pem_private_key(self.key_path.read_bytes(), password=None)
        cert = self_signed_certificate(
            key,
            common_name=COMMON_NAME,
            not_before=signed_at - datetime.timedelta(minutes=1),
            not_after=signed_at + datetime.timedelta(seconds=self.cert_lifetime),
        )
        _write_atomic(self.cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)

    def seal(self, source: str | os.PathLike[str], target: str | os.PathLike[str], signed_at: str) -> None:
        """Write ``source`` with a PAdES signature appended (signing time ``signed_at``) to ``target``.

        :param source: The PDF to seal.
        :param target: Where the sealed PDF goes (written under a temporary name, then renamed).
        :param signed_at: The completion time (ISO 8601, ``Z`` allowed): the CMS signing time.
        """
        from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
        from pyhanko.sign import fields, signers

        moment = datetime.datetime.fromisoformat(signed_at.replace("Z", "+00:00"))

        class _AtTime(signers.PdfSigner):
            def init_signing_session(self, pdf_out: Any, existing_fields_only: bool = False) -> Any:
                session = super().init_signing_session(pdf_out, existing_fields_only=existing_fields_only)
                session.system_time = moment  # the seal's signing time is the completion time
                return session

        meta = signers.PdfSignatureMetadata(
            field_name=FIELD_NAME,
            subfilter=fields.SigSeedSubFilter.PADES,
            md_algorithm="sha256",
            reason="Sealed by the docsign sandbox on completion",
        )
        target = Path(target)
        tmp = target.with_name(target.name + ".sealing")
        try:
            with open(source, "rb") as inf, open(tmp, "w+b") as out:
                writer = IncrementalPdfFileWriter(inf, strict=False)
                with self._lock:
                    _AtTime(meta, signer=self._simple_signer(moment)).sign_pdf(writer, output=out)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def byte_range(path: str | os.PathLike[str]) -> tuple[int, int, int, int]:
    """The ``/ByteRange`` of the last signature in a sealed PDF (read with pyHanko)."""
    from pyhanko.pdf_utils.reader import PdfFileReader

    with open(path, "rb") as fh:
        sigs = PdfFileReader(fh, strict=False).embedded_signatures
        if not sigs:
            raise ValueError(f"{path} carries no signature")
        a, b, c, d = (int(v) for v in sigs[-1].byte_range)
    return a, b, c, d


def write_tampered(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> int:
    """Copy a sealed PDF with one byte flipped inside the signed range; returns the flipped offset.

    The byte is in the middle of the first signed range (the document body), so the digest over
    ``/ByteRange`` no longer matches while the file still parses.
    """
    start, length, _, _ = byte_range(source)
    offset = start + length // 2
    with open(source, "rb") as inf, open(target, "wb") as out:
        position = 0
        while chunk := inf.read(_CHUNK):
            if position <= offset < position + len(chunk):
                data = bytearray(chunk)
                data[offset - position] ^= 0x20
                chunk = bytes(data)
            out.write(chunk)
            position += len(chunk)
    return offset


def write_modified(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copy a sealed PDF and append an incremental update that changes page 1's content.

    The new revision draws text onto the first page after the signature: pyHanko's difference
    analysis reports it as modification level ``other`` (a content change), which fails.
    """
    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

    tmp = Path(str(target) + ".tmp")
    try:
        with open(source, "rb") as inf, open(tmp, "wb") as out:
            writer = IncrementalPdfFileWriter(inf, strict=False)
            page_ref = writer.find_page_for_modification(0)[0]  # type: ignore[no-untyped-call]
            page = page_ref.get_object()
            stream = generic.StreamObject(stream_data=b"q 1 0 0 rg BT /F1 24 Tf 40 40 Td (CHANGED) Tj ET Q")
            extra = writer.add_object(stream)
            contents = page.get("/Contents")
            if isinstance(contents, generic.ArrayObject):
                new_contents = generic.ArrayObject([*contents, extra])
            elif contents is not None:
                new_contents = generic.ArrayObject([page.raw_get("/Contents"), extra])
            else:
                new_contents = generic.ArrayObject([extra])
            page[generic.NameObject("/Contents")] = new_contents
            writer.update_container(page)
            writer.write(out)  # type: ignore[no-untyped-call]
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def copy_file(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copy a file in chunks."""
    with open(source, "rb") as inf, open(target, "wb") as out:
        shutil.copyfileobj(inf, out, _CHUNK)
