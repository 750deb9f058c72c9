"""The sandbox's RFC 3161 TSA over real HTTP, every check of our client through its faults, and the
format checked both ways with Debian's ``openssl ts`` (an independent RFC 3161 implementation)."""

from __future__ import annotations

import datetime
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from airflow_provider_docsign.evidence.signatures import TrustPolicy
from airflow_provider_docsign.evidence.timestamps import TimestampError, verify_timestamp
from airflow_provider_docsign.evidence.tsa_client import MAX_RESPONSE_BYTES, TsaSettings, request_timestamp
from airflow_provider_docsign.hooks.tsa import post_timestamp_query
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

DATA = b'{"envelope_id": "envelope_tsa", "files": []}\n'
OPENSSL = shutil.which("openssl")
needs_openssl = pytest.mark.skipif(
    OPENSSL is None, reason="needs the openssl command (Debian: apt-get install openssl)"
)


@pytest.fixture
def tsa(sandbox: SandboxServer) -> Iterator[SandboxServer]:
    """The session sandbox with no pending TSA faults and an empty TSA request log."""
    sandbox.clear_tsa()
    yield sandbox
    sandbox.clear_tsa()


def _pinned(server: SandboxServer, **kwargs: object) -> TsaSettings:
    trust = TrustPolicy.build(pem=[server.tsa_certificate_pem()])
    return TsaSettings(url=server.tsa_url, trust=trust, transport=post_timestamp_query, **kwargs)  # type: ignore[arg-type]


def test_the_sandbox_tsa_answers_a_verified_token(tsa: SandboxServer) -> None:
    result = request_timestamp(_pinned(tsa, token="tsa-bearer-token"), data=DATA)
    report = result.report
    assert report.passed
    assert report.trusted is True
    assert report.tsa is not None
    assert "Docsign Sandbox TSA" in report.tsa
    assert verify_timestamp(result.response, DATA).passed  # the stored bytes verify again on their own
    log = tsa.tsa_requests()
    assert [(e["auth"], e["outcome"]) for e in log] == [("bearer", "granted")]
    assert "tsa-bearer-token" not in str(log)


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("wrong_nonce", "nonce"),
        ("wrong_imprint", "not the hash of the data"),
        ("untrusted", "not trusted by the pinned TSA certificates"),
        ("reject", "refused the request: status rejection"),
    ],
)
def test_a_token_that_fails_a_check_is_refused(tsa: SandboxServer, fault: str, message: str) -> None:
    tsa.tsa_fault(fault)
    with pytest.raises(TimestampError, match=message):
        request_timestamp(_pinned(tsa), data=DATA)
    assert request_timestamp(_pinned(tsa), data=DATA).report.passed  # the fault was for one request


def test_a_slow_an_erroring_and_an_oversized_tsa_fail_within_bounds(tsa: SandboxServer) -> None:
    tsa.tsa_fault("delay", delay=3)
    with pytest.raises(TimestampError, match=r"did not answer within 0\.5 s"):
        request_timestamp(_pinned(tsa, timeout=0.5), data=DATA)
    tsa.tsa_fault("http_status", status=503)
    with pytest.raises(TimestampError, match="HTTP 503"):
        request_timestamp(_pinned(tsa), data=DATA)
    tsa.tsa_fault("oversize")
    with pytest.raises(TimestampError, match=f"more than {MAX_RESPONSE_BYTES} bytes"):
        request_timestamp(_pinned(tsa), data=DATA)


def test_without_pins_a_rogue_tsa_is_self_consistent_but_not_trusted(tsa: SandboxServer) -> None:
    tsa.tsa_fault("untrusted")
    result = request_timestamp(TsaSettings(url=tsa.tsa_url, transport=post_timestamp_query), data=DATA)
    assert result.report.trusted is None
    assert "Rogue" in str(result.report.tsa)
    pinned = verify_timestamp(result.response, DATA, trust=TrustPolicy.build(pem=[tsa.tsa_certificate_pem()]))
    assert pinned.trusted is False
    assert not pinned.passed


# -- openssl ts, both ways ------------------------------------------------------------------------


@needs_openssl
def test_openssl_verifies_a_sandbox_token_and_catches_an_edit(tsa: SandboxServer, tmp_path: Path) -> None:
    data, token, ca = tmp_path / "manifest.json", tmp_path / "manifest.json.tsr", tmp_path / "tsa.pem"
    data.write_bytes(DATA)
    token.write_bytes(request_timestamp(_pinned(tsa), data=DATA).response)
    ca.write_bytes(tsa.tsa_certificate_pem())
    command = [str(OPENSSL), "ts", "-verify", "-data", str(data), "-in", str(token), "-CAfile", str(ca)]

    ok = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "Verification: OK" in ok.stdout

    data.write_bytes(DATA.replace(b"tsa", b"tsb"))
    edited = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert edited.returncode != 0
    assert "message imprint mismatch" in (edited.stdout + edited.stderr)


def _openssl_tsa(tmp_path: Path) -> Path:
    """An independent TSA: ``openssl ts -reply`` with a key and certificate made here, and a config."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "OpenSSL Test TSA")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "tsa.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    (tmp_path / "tsa.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "serial").write_text("01\n")
    config = tmp_path / "tsa.cnf"
    config.write_text(
        "[ tsa ]\ndefault_tsa = test_tsa\n"
        "[ test_tsa ]\n"
        f"dir = {tmp_path}\n"
        "serial = $dir/serial\n"
        "signer_cert = $dir/tsa.crt\n"
        "signer_key = $dir/tsa.key\n"
        "certs = $dir/tsa.crt\n"
        "signer_digest = sha256\n"
        "default_policy = 1.2.3.4.1\n"
        "digests = sha256, sha384, sha512\n"
        "accuracy = secs:1\n"
        "ordering = no\n"
        "tsa_name = yes\n"
        "ess_cert_id_chain = no\n"
        "ess_cert_id_alg = sha256\n"
    )
    return config


@needs_openssl
def test_a_token_from_openssl_ts_reply_is_accepted_by_our_verifier(
    tsa: SandboxServer, tmp_path: Path
) -> None:
    config = _openssl_tsa(tmp_path)
    data, query, reply = tmp_path / "manifest.json", tmp_path / "req.tsq", tmp_path / "manifest.json.tsr"
    data.write_bytes(DATA)
    subprocess.run(
        [str(OPENSSL), "ts", "-query", "-data", str(data), "-sha256", "-cert", "-out", str(query)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    subprocess.run(
        [str(OPENSSL), "ts", "-reply", "-config", str(config), "-queryfile", str(query), "-out", str(reply)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    token = reply.read_bytes()

    report = verify_timestamp(token, DATA, trust=TrustPolicy.build(pem=[(tmp_path / "tsa.crt").read_bytes()]))
    assert report.passed, report.problems
    assert report.trusted is True
    assert report.policy == "1.2.3.4.1"
    assert "OpenSSL Test TSA" in str(report.tsa)
    assert report.imprint_matches
    assert report.hash_algorithm == "sha256"

    # pinned to the sandbox's TSA instead, the same token is from an untrusted TSA
    foreign = verify_timestamp(token, DATA, trust=TrustPolicy.build(pem=[tsa.tsa_certificate_pem()]))
    assert foreign.trusted is False
    assert not foreign.passed
