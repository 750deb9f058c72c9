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


def ensure_key(data_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Create the sealing key and self-signed certificate in ``data_dir`` unless they exist.

    :param data_dir: The sandbox data directory.
    :return: ``(key_path, cert_path)``.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    base = Path(data_dir)
    key_path, cert_path = base / KEY_FILE, base / CERT_FILE
    if key_path.exists() and cert_path.exists():
        return key_path, cert_path
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, COMMON_NAME),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
        ]
    )
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=True,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write_atomic(key_path, key_pem, 0o600)
    _write_atomic(cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return key_path, cert_path


class Sealer:
    """Signs PDFs with the sandbox's key (PAdES, ``ETSI.CAdES.detached``).

    :param data_dir: The sandbox data directory; the key and certificate are created there if missing.
    """

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.key_path, self.cert_path = ensure_key(data_dir)
        self._signer: Any = None

    @property
    def certificate_pem(self) -> bytes:
        """The sealing certificate as PEM."""
        return self.cert_path.read_bytes()

    def _simple_signer(self) -> Any:
        if self._signer is None:
            from pyhanko.sign import signers

            self._signer = signers.SimpleSigner.load(  # type: ignore[no-untyped-call]
                str(self.key_path), str(self.cert_path)
            )
        return self._signer

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
                _AtTime(meta, signer=self._simple_signer()).sign_pdf(writer, output=out)
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
