"""System tests: evidence that lasts, over a PDF really sealed by the instance under test (opt-in).

The timestamp authority is not ours: a small HTTP server started here on 127.0.0.1 answers each
query by running ``openssl ts -reply`` with a throw-away CA and TSA certificate made with
``openssl req`` and ``openssl x509`` (an RFC 3161 implementation independent of this provider). One
envelope is created, distributed without e-mail, signed through the service's own signing path
(``peer.sign_as``) and sealed by the instance; every test archives that sealed PDF with the public
operator and checks the result with ``openssl ts -verify`` and ``docsign verify``.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, sig, signer
from peer import sign_as, wait_status

from airflow_provider_docsign.exceptions import DocsignArchiveTimestampError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator
from airflow_provider_docsign.samples import write_sample_pdf

OPENSSL = shutil.which("openssl") or "openssl"
DOCSIGN = str(Path(sys.executable).with_name("docsign"))
NO_EMAIL = {"distributionMethod": "NONE"}
#: Seconds any one command (openssl, docsign verify) may take.
COMMAND_TIMEOUT = 180
#: The largest timestamp query the test TSA reads (a real one is under 100 bytes).
MAX_QUERY_BYTES = 64 * 1024


def _run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(command[:3])} ... exited {done.returncode}: {done.stderr[-2000:]}")
    return done


# -- a timestamp authority that is not ours ----------------------------------------------------------


@dataclass
class OpensslTsa:
    """The test TSA: its URL, its CA (what is pinned) and every request it answered."""

    url: str
    ca_pem: Path
    tsa_pem: Path
    answered: list[int] = field(default_factory=list)


def _make_tsa_pki(folder: Path) -> Path:
    """A CA and a TSA certificate it issued (EKU timeStamping, critical); the ``openssl ts`` config."""
    _run(OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
         "-keyout", str(folder / "ca.key"), "-out", str(folder / "ca.pem"),
         "-subj", "/O=Docsign System Tests/CN=System Test TSA Root",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    _run(OPENSSL, "req", "-new", "-newkey", "rsa:2048", "-nodes", "-sha256",
         "-keyout", str(folder / "tsa.key"), "-out", str(folder / "tsa.csr"),
         "-subj", "/O=Docsign System Tests/CN=System Test TSA")  # fmt: skip
    (folder / "tsa-ext.cnf").write_text(
        "basicConstraints = critical, CA:FALSE\n"
        "keyUsage = critical, digitalSignature, nonRepudiation\n"
        "extendedKeyUsage = critical, timeStamping\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid\n"
    )
    _run(OPENSSL, "x509", "-req", "-in", str(folder / "tsa.csr"), "-CA", str(folder / "ca.pem"),
         "-CAkey", str(folder / "ca.key"), "-set_serial", "4242", "-days", "2", "-sha256",
         "-extfile", str(folder / "tsa-ext.cnf"), "-out", str(folder / "tsa.pem"))  # fmt: skip
    (folder / "serial").write_text("01\n")
    config = folder / "ts.cnf"
    config.write_text(
        "[ tsa ]\ndefault_tsa = system_tsa\n"
        "[ system_tsa ]\n"
        f"dir = {folder}\n"
        "serial = $dir/serial\n"
        "signer_cert = $dir/tsa.pem\n"
        "signer_key = $dir/tsa.key\n"
        "certs = $dir/ca.pem\n"
        "signer_digest = sha256\n"
        "default_policy = 1.3.6.1.4.1.99999.39.1\n"
        "digests = sha256, sha384, sha512\n"
        "accuracy = secs:1\n"
        "ordering = no\n"
        "tsa_name = yes\n"
        "ess_cert_id_chain = no\n"
        "ess_cert_id_alg = sha256\n"
    )
    return config


def _handler(config: Path, work: Path, answered: list[int]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            if self.headers.get("Content-Type") != "application/timestamp-query" or not (
                0 < size <= MAX_QUERY_BYTES
            ):
                self.send_error(400)
                return
            with tempfile.TemporaryDirectory(dir=work) as scratch:
                query, reply = Path(scratch) / "q.tsq", Path(scratch) / "r.tsr"
                query.write_bytes(self.rfile.read(size))
                done = subprocess.run(
                    [OPENSSL, "ts", "-reply", "-config", str(config), "-queryfile", str(query),
                     "-out", str(reply)],
                    capture_output=True,
                    timeout=60,
                )  # fmt: skip
                if done.returncode != 0:
                    self.send_error(500)
                    return
                body = reply.read_bytes()
            answered.append(len(body))
            self.send_response(200)
            self.send_header("Content-Type", "application/timestamp-reply")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture(scope="module")
def openssl_tsa(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpensslTsa]:
    """The test TSA, serving on 127.0.0.1 for this module; stopped by its handle at the end."""
    folder = tmp_path_factory.mktemp("openssl-tsa")
    config = _make_tsa_pki(folder)
    answered: list[int] = []
    server = HTTPServer(("127.0.0.1", 0), _handler(config, folder, answered))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    try:
        yield OpensslTsa(
            url=f"http://127.0.0.1:{server.server_address[1]}/tsr",
            ca_pem=folder / "ca.pem",
            tsa_pem=folder / "tsa.pem",
            answered=answered,
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        assert not thread.is_alive(), "the test TSA did not stop"


def _tsa_conn(monkeypatch: pytest.MonkeyPatch, tsa: OpensslTsa, pinned: Path) -> str:
    """A TSA connection (as an environment variable) to the test TSA, pinning ``pinned``."""
    conn = {
        "conn_type": "http",
        "host": tsa.url,
        "extra": {"trusted_certificates": [str(pinned)], "timeout": 30},
    }
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_SYSTEM_TSA", json.dumps(conn))
    return "docsign_system_tsa"


# -- one envelope really sealed by the instance --------------------------------------------------------


@dataclass(frozen=True)
class Sealed:
    envelope_id: str
    external_id: str
    signed_pdf: bytes


@pytest.fixture(scope="module")
def sealed(system_hook: DocsignHook, system_run: Any, tmp_path_factory: pytest.TempPathFactory) -> Sealed:
    """An envelope created, distributed (no e-mail), signed as its recipient and sealed: COMPLETED."""
    folder = tmp_path_factory.mktemp("evidence-pdf")
    external_id = system_run.external_id("evidence")
    envelope_id = system_hook.create_envelope(
        title=f"{system_run.prefix} evidence",
        files=[write_sample_pdf(folder / "Lease.pdf", pages=2, title="Lease")],
        recipients=[signer(sig(page=2), email="system-evidence@example.com", name="Eve Evidence")],
        folder_id=system_run.folder_id,
        external_id=external_id,
    )
    system_run.envelope_ids.append(envelope_id)
    system_hook.distribute_envelope(envelope_id, meta=NO_EMAIL)
    assert sign_as(envelope_id) == ["system-evidence@example.com"]
    wait_status(envelope_id, "COMPLETED", timeout=90)
    item = system_hook.get_envelope(envelope_id).items[0]
    signed = io.BytesIO()
    system_hook.download_envelope_item(item.id, signed, version="signed")
    return Sealed(envelope_id=envelope_id, external_id=external_id, signed_pdf=signed.getvalue())


def _archive(system_conn: str, envelope_id: str, destination: Path, **kwargs: Any) -> dict[str, Any]:
    operator = DocsignArchiveSignedDocumentsOperator(
        task_id="archive",
        envelope_id=envelope_id,
        destination=str(destination),
        docsign_conn_id=system_conn,
        **kwargs,
    )
    result: dict[str, Any] = operator.execute(ctx())
    return result


def _docsign_verify(*args: str) -> subprocess.CompletedProcess[str]:
    return _run(DOCSIGN, "verify", *args, check=False)


def _self_signed(folder: Path, name: str) -> Path:
    """A certificate that has nothing to do with the test TSA (to pin something else)."""
    pem = folder / f"{name}.pem"
    _run(OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
         "-keyout", str(folder / f"{name}.key"), "-out", str(pem), "-subj", f"/CN={name}",
         "-addext", "extendedKeyUsage=critical,timeStamping")  # fmt: skip
    return pem


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _dss_of(pdf: bytes) -> tuple[set[str], int, int, list[str]]:
    """A PDF's DSS as pyHanko reads it: certificate SHA-256s, OCSP and CRL counts; signature subfilters."""
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.validation import DocumentSecurityStore

    reader = PdfFileReader(io.BytesIO(pdf), strict=False)
    dss = DocumentSecurityStore.read_dss(reader)
    certs = {_sha256(cert.dump()) for cert in dss.load_certs()}
    kinds = [str(sig.sig_object.get("/SubFilter")) for sig in reader.embedded_signatures]
    return certs, len(dss.ocsps), len(dss.crls), kinds


# -- the manifest's timestamp ------------------------------------------------------------------------


def test_the_token_from_an_openssl_tsa_over_a_real_seal_verifies_with_openssl(
    system_conn: str, sealed: Sealed, openssl_tsa: OpensslTsa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn_id = _tsa_conn(monkeypatch, openssl_tsa, openssl_tsa.ca_pem)
    asked = len(openssl_tsa.answered)

    manifest = _archive(system_conn, sealed.envelope_id, tmp_path / "archive", tsa_conn_id=conn_id)

    folder = tmp_path / "archive" / sealed.external_id
    manifest_file, token = folder / "manifest.json", folder / "manifest.json.tsr"
    assert len(openssl_tsa.answered) == asked + 1  # one token for the whole envelope
    assert manifest["timestamp"] == {
        "token": "manifest.json.tsr",
        "hash_algorithm": "sha256",
        "tsa_url": openssl_tsa.url,
    }
    assert json.loads(manifest_file.read_text())["timestamp"] == manifest["timestamp"]
    (entry,) = manifest["files"]
    assert entry["sha256"] == _sha256(sealed.signed_pdf)  # the instance's sealed bytes, byte for byte
    assert entry["sha256"] == _sha256((folder / entry["path"]).read_bytes())
    assert entry["signature"]["signatures"][0]["intact"] is True

    verified = _run(OPENSSL, "ts", "-verify", "-data", str(manifest_file), "-in", str(token),
                    "-CAfile", str(openssl_tsa.ca_pem), check=False)  # fmt: skip
    assert verified.returncode == 0, verified.stderr
    assert "Verification: OK" in verified.stdout
    text = _run(OPENSSL, "ts", "-reply", "-in", str(token), "-text").stdout
    assert "Status: Granted." in text
    assert "Policy OID: 1.3.6.1.4.1.99999.39.1" in text
    assert "System Test TSA" in text
    assert "Nonce: 0x" in text  # our client's nonce, echoed by the TSA


def test_docsign_verify_passes_the_timestamped_archive_and_one_edited_byte_fails_it(
    system_conn: str, sealed: Sealed, openssl_tsa: OpensslTsa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn_id = _tsa_conn(monkeypatch, openssl_tsa, openssl_tsa.ca_pem)
    _archive(system_conn, sealed.envelope_id, tmp_path / "archive", tsa_conn_id=conn_id)
    manifest = tmp_path / "archive" / sealed.external_id / "manifest.json"
    tsa_cert = str(openssl_tsa.tsa_pem)

    ok = _docsign_verify("--manifest", str(manifest), "--tsa-cert", tsa_cert, "--require-timestamp")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "manifest.json.tsr  timestamp by TSA" in ok.stdout
    assert "System Test TSA" in ok.stdout
    assert "every file in this manifest existed, unchanged, no later than genTime" in ok.stdout

    other = _self_signed(tmp_path, "Some Other TSA")
    foreign = _docsign_verify("--manifest", str(manifest), "--tsa-cert", str(other))
    assert foreign.returncode == 1, foreign.stdout + foreign.stderr
    assert "not trusted by the pinned TSA certificates" in foreign.stdout

    data = bytearray(manifest.read_bytes())
    data[data.index(b'"title"') + 1] ^= 0x20  # one byte: "title" -> "Title"; still valid JSON
    manifest.write_bytes(bytes(data))
    edited = _docsign_verify("--manifest", str(manifest), "--tsa-cert", tsa_cert)
    assert edited.returncode == 1, edited.stdout + edited.stderr
    assert "timestamp mismatch: the manifest was changed after the token was issued" in edited.stdout
    by_openssl = _run(OPENSSL, "ts", "-verify", "-data", str(manifest), "-in",
                      str(manifest.with_name("manifest.json.tsr")), "-CAfile", str(openssl_tsa.ca_pem),
                      check=False)  # fmt: skip
    assert by_openssl.returncode != 0
    assert "message imprint mismatch" in by_openssl.stdout + by_openssl.stderr


def test_a_rerun_of_a_complete_archive_rewrites_nothing_and_does_not_ask_the_tsa(
    system_conn: str, sealed: Sealed, openssl_tsa: OpensslTsa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn_id = _tsa_conn(monkeypatch, openssl_tsa, openssl_tsa.ca_pem)
    destination = tmp_path / "archive"
    _archive(system_conn, sealed.envelope_id, destination, tsa_conn_id=conn_id)
    folder = destination / sealed.external_id
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    asked = len(openssl_tsa.answered)

    again = _archive(system_conn, sealed.envelope_id, destination, tsa_conn_id=conn_id)

    assert len(openssl_tsa.answered) == asked
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert json.loads(before["manifest.json"]) == again
    assert sorted(before) == ["01-Lease.pdf", "manifest.json", "manifest.json.tsr"]


def test_a_token_from_a_tsa_that_is_not_pinned_fails_the_archive_before_anything_is_published(
    system_conn: str, sealed: Sealed, openssl_tsa: OpensslTsa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn_id = _tsa_conn(monkeypatch, openssl_tsa, _self_signed(tmp_path, "The TSA We Trust"))
    destination = tmp_path / "archive"
    asked = len(openssl_tsa.answered)

    with pytest.raises(DocsignArchiveTimestampError, match="not trusted by the pinned TSA certificates"):
        _archive(system_conn, sealed.envelope_id, destination, tsa_conn_id=conn_id)

    assert len(openssl_tsa.answered) == asked + 1  # it was asked, and its token was refused
    left = [str(p.relative_to(destination)) for p in destination.rglob("*") if p.is_file()]
    assert left == []  # no manifest, no PDF at a final name, no staged file either


# -- the long-term validation copy --------------------------------------------------------------------


def test_an_ltv_copy_of_the_real_seal_says_what_a_self_signed_instance_certificate_cannot_give(
    system_conn: str,
    sealed: Sealed,
    openssl_tsa: OpensslTsa,
    seal_cert_pem: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding
    from cryptography.x509.oid import NameOID

    seal_cn = str(
        x509.load_pem_x509_certificate(seal_cert_pem.read_bytes())
        .subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0]
        .value
    )
    conn_id = _tsa_conn(monkeypatch, openssl_tsa, openssl_tsa.ca_pem)
    asked = len(openssl_tsa.answered)

    manifest = _archive(
        system_conn,
        sealed.envelope_id,
        tmp_path / "archive",
        tsa_conn_id=conn_id,
        ltv=True,
        trusted_certificates=[str(seal_cert_pem)],
    )

    folder = tmp_path / "archive" / sealed.external_id
    (entry,) = manifest["files"]
    assert entry["signature"]["signatures"][0]["trusted"] is True  # the pinned instance certificate
    ltv = entry["ltv"]
    assert ltv["derived_from"] == entry["name"]
    assert ltv["path"] == "01-Lease.ltv.pdf"
    copy = (folder / ltv["path"]).read_bytes()
    assert copy.startswith(sealed.signed_pdf)  # an incremental update: the sealed bytes are kept
    assert len(copy) > len(sealed.signed_pdf)
    assert ltv["sha256"] == _sha256(copy)
    assert "System Test TSA" in str(ltv["tsa"])
    material = ltv["validation_material"]
    # What a self-signed sealing certificate cannot give: no CRL, no OCSP answer; and it is said.
    assert material["ocsp_responses"] == 0
    assert material["crls"] == 0
    assert material["certificates"] >= 2  # the seal's certificate and the TSA's chain are in the DSS
    (missing,) = material["missing"]
    assert seal_cn in missing
    assert "self-signed, so there is no CRL or OCSP responder to ask" in missing
    # Read independently of our report: the copy's DSS and its signatures, with pyHanko.
    dss_certs, ocsps, crls, kinds = _dss_of(copy)
    seal_der = x509.load_pem_x509_certificate(seal_cert_pem.read_bytes()).public_bytes(Encoding.DER)
    tsa_der = x509.load_pem_x509_certificate(openssl_tsa.tsa_pem.read_bytes()).public_bytes(Encoding.DER)
    assert _sha256(seal_der) in dss_certs
    assert _sha256(tsa_der) in dss_certs
    assert (ocsps, crls) == (0, 0)
    assert len(dss_certs) == material["certificates"]
    assert kinds == ["/ETSI.CAdES.detached", "/ETSI.RFC3161"]  # the instance's seal, then our timestamp
    # the first document timestamp costs two requests (pyHanko sizes it first), the manifest one more
    assert len(openssl_tsa.answered) == asked + 3

    seal, ca = str(seal_cert_pem), str(openssl_tsa.ca_pem)
    checked = _docsign_verify(str(folder / ltv["path"]), "--trust", seal, "--tsa-cert", ca)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    whole = _docsign_verify(
        "--manifest", str(folder / "manifest.json"), "--trust", seal, "--tsa-cert", ca, "--require-timestamp"
    )
    assert whole.returncode == 0, whole.stdout + whole.stderr


def test_years_later_the_ltv_copy_still_validates_and_the_plain_sealed_pdf_does_not(
    system_conn: str,
    sealed: Sealed,
    openssl_tsa: OpensslTsa,
    seal_cert_pem: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cryptography import x509

    expires = x509.load_pem_x509_certificate(seal_cert_pem.read_bytes()).not_valid_after_utc
    later = expires.replace(year=expires.year + 1).strftime("%Y-%m-%dT%H:%M:%SZ")
    conn_id = _tsa_conn(monkeypatch, openssl_tsa, openssl_tsa.ca_pem)
    manifest = _archive(
        system_conn,
        sealed.envelope_id,
        tmp_path / "archive",
        tsa_conn_id=conn_id,
        ltv=True,
        trusted_certificates=[str(seal_cert_pem)],
    )
    folder = tmp_path / "archive" / sealed.external_id
    (entry,) = manifest["files"]
    seal, ca = str(seal_cert_pem), str(openssl_tsa.ca_pem)

    plain = _docsign_verify(str(folder / entry["path"]), "--trust", seal, "--validation-time", later)
    assert plain.returncode == 1, plain.stdout + plain.stderr
    assert "expired" in plain.stdout
    copy = _docsign_verify(
        str(folder / entry["ltv"]["path"]), "--trust", seal, "--tsa-cert", ca, "--validation-time", later
    )
    assert copy.returncode == 0, copy.stdout + copy.stderr
