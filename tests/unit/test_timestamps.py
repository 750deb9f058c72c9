"""RFC 3161 token checks (pure): tokens made in the test by pyHanko's own test TSA, not by our code.

The sandbox's TSA over HTTP, its faults and the independent check with ``openssl ts`` are in
``tests/integration/test_timestamps_tsa.py``.
"""

from __future__ import annotations

import datetime
import hashlib
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from airflow_provider_docsign.evidence.signatures import TrustPolicy
from airflow_provider_docsign.evidence.timestamps import (
    TimestampError,
    TimeStampResponse,
    build_request,
    verify_timestamp,
)
from airflow_provider_docsign.evidence.tsa_client import TsaSettings, tsa_settings_from_connection

DATA = b'{"envelope_id": "envelope_1", "files": []}\n'
NOW = datetime.datetime.now(datetime.timezone.utc)


def _tsa(cn: str, *, timestamping: bool = True, days: float = 30) -> tuple[Any, bytes]:
    """A pyHanko DummyTimeStamper with its own RSA key and certificate; and the certificate as PEM."""
    from asn1crypto import keys
    from asn1crypto import x509 as ax509
    from pyhanko.sign.timestamps import DummyTimeStamper

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(days=1))
        .not_valid_after(NOW + datetime.timedelta(days=days))
    )
    if timestamping:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True
        )
    cert = builder.sign(key, hashes.SHA256())
    der = cert.public_bytes(serialization.Encoding.DER)
    pkcs8 = key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    stamper = DummyTimeStamper(tsa_cert=ax509.Certificate.load(der), tsa_key=keys.PrivateKeyInfo.load(pkcs8))
    return stamper, cert.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def tsa() -> tuple[Any, bytes]:
    return _tsa("Test TSA")


def _response(stamper: Any, data: bytes = DATA) -> tuple[bytes, int]:
    from asn1crypto import tsp

    body, nonce = build_request(hashlib.sha256(data).digest())
    return stamper.request_tsa_response(tsp.TimeStampReq.load(body)).dump(), nonce


def test_a_token_over_the_data_passes_and_names_its_tsa_and_time(tsa: tuple[Any, bytes]) -> None:
    stamper, pem = tsa
    token, nonce = _response(stamper)

    report = verify_timestamp(token, DATA, nonce=nonce)
    assert report.passed, report.problems
    assert report.imprint_matches
    assert report.intact
    assert report.valid
    assert report.trusted is None  # no pinned certificate: trust is not judged
    assert report.tsa is not None
    assert "Test TSA" in report.tsa
    assert report.hash_algorithm == "sha256"
    gen_time = datetime.datetime.fromisoformat(str(report.gen_time).replace("Z", "+00:00"))
    assert abs((gen_time - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) < 120

    pinned = verify_timestamp(token, DATA, trust=TrustPolicy.build(pem=[pem]))
    assert pinned.passed
    assert pinned.trusted is True
    by_fingerprint = verify_timestamp(
        token, DATA, trust=TrustPolicy.build(fingerprints=[str(report.signer_sha256)])
    )
    assert by_fingerprint.passed
    assert by_fingerprint.trusted is True


def test_changed_data_fails_on_the_imprint(tsa: tuple[Any, bytes]) -> None:
    token, _ = _response(tsa[0])
    edited = bytearray(DATA)
    edited[3] ^= 0x01
    report = verify_timestamp(token, bytes(edited))
    assert not report.passed
    assert not report.imprint_matches
    assert "not the hash of the data" in report.problems[0]


def test_a_token_of_another_tsa_is_untrusted_under_pinned_certificates(tsa: tuple[Any, bytes]) -> None:
    other, _ = _tsa("Other TSA")
    token, _ = _response(other)
    report = verify_timestamp(token, DATA, trust=TrustPolicy.build(pem=[tsa[1]]))
    assert report.imprint_matches
    assert report.intact
    assert report.valid
    assert report.trusted is False
    assert any("not trusted by the pinned TSA certificates" in p for p in report.problems)


def test_a_signer_without_the_timestamping_key_usage_fails() -> None:
    plain, _ = _tsa("Not a TSA", timestamping=False)
    token, _ = _response(plain)
    report = verify_timestamp(token, DATA)
    assert not report.passed
    assert any("timeStamping" in p for p in report.problems)


def test_a_wrong_nonce_fails(tsa: tuple[Any, bytes]) -> None:
    token, nonce = _response(tsa[0])
    report = verify_timestamp(token, DATA, nonce=nonce + 1)
    assert any("nonce" in p for p in report.problems)


def test_an_altered_token_is_not_intact(tsa: tuple[Any, bytes]) -> None:
    token, _ = _response(tsa[0])
    response = TimeStampResponse.load(token)
    tst = response["time_stamp_token"]["content"]["encap_content_info"]["content"]
    raw = bytearray(tst.contents)
    raw[-3] ^= 0x01  # inside the TSTInfo (its nonce), which the signature covers
    from asn1crypto import core

    response["time_stamp_token"]["content"]["encap_content_info"]["content"] = core.ParsableOctetString(
        bytes(raw)
    )
    altered = response.dump(force=True)
    report = verify_timestamp(altered, DATA)
    assert not report.intact
    assert any("altered" in p for p in report.problems)


def test_a_bare_token_is_accepted_like_a_response(tsa: tuple[Any, bytes]) -> None:
    token, _ = _response(tsa[0])
    bare = TimeStampResponse.load(token)["time_stamp_token"].dump()
    assert verify_timestamp(bare, DATA).passed


def test_garbage_and_refusals_raise(tsa: tuple[Any, bytes]) -> None:
    from asn1crypto import tsp

    with pytest.raises(TimestampError, match="not an RFC 3161"):
        verify_timestamp(b"%PDF-1.7 not a token", DATA)
    refusal = TimeStampResponse(
        {"status": tsp.PKIStatusInfo({"status": "rejection", "status_string": ["busy"]})}
    ).dump()
    with pytest.raises(TimestampError, match="refused the request: status rejection"):
        verify_timestamp(refusal, DATA)


def test_an_expired_tsa_certificate_is_noted_not_failed(tsa: tuple[Any, bytes]) -> None:
    token, _ = _response(tsa[0])
    years_later = NOW + datetime.timedelta(days=3650)
    report = verify_timestamp(token, DATA, trust=TrustPolicy.build(pem=[tsa[1]]), now=years_later)
    assert report.passed  # judged as of genTime, when the certificate was valid
    assert any("expired" in n for n in report.notes)


def _dated(stamper: Any, at: datetime.datetime) -> bytes:
    """A token from ``stamper``'s key and certificate, dated ``at`` (pyHanko's fixed_dt)."""
    from asn1crypto import tsp
    from pyhanko.sign.timestamps import DummyTimeStamper

    dated = DummyTimeStamper(tsa_cert=stamper.tsa_cert, tsa_key=stamper.tsa_key, fixed_dt=at)
    body, _ = build_request(hashlib.sha256(DATA).digest())
    return bytes(dated.request_tsa_response(tsp.TimeStampReq.load(body)).dump())


def test_a_gen_time_in_the_future_fails_beyond_five_minutes_of_clock_tolerance(
    tsa: tuple[Any, bytes],
) -> None:
    pins = TrustPolicy.build(pem=[tsa[1]])
    ahead = verify_timestamp(_dated(tsa[0], NOW + datetime.timedelta(days=3)), DATA, trust=pins)
    assert ahead.trusted is True  # signed by the pinned TSA: only its date gives it away
    assert not ahead.passed
    (problem,) = ahead.problems
    assert problem.startswith(f"genTime {ahead.gen_time} is in the future: later than now (")
    assert "by more than the 5 minutes clocks may differ" in problem

    now = datetime.datetime.now(datetime.timezone.utc)
    assert verify_timestamp(_dated(tsa[0], now + datetime.timedelta(minutes=4)), DATA, trust=pins).passed
    # A validation time in the future does not move the limit: the real now does.
    later = now + datetime.timedelta(days=30)
    assert not verify_timestamp(_dated(tsa[0], now + datetime.timedelta(days=1)), DATA, now=later).passed
    # A validation time in the past does: as of then the token did not exist.
    before = verify_timestamp(_dated(tsa[0], now), DATA, now=now - datetime.timedelta(hours=1))
    assert "is later than the moment it is checked as of" in before.problems[0]


# -- the connection -------------------------------------------------------------------------------


def _settings(**overrides: Any) -> TsaSettings:
    fields: dict[str, Any] = {
        "conn_type": "http",
        "host": "https://tsa.example/tsr",
        "port": None,
        "schema": None,
        "login": None,
        "password": None,
        "extras": {},
    }
    fields.update(overrides)
    return tsa_settings_from_connection(**fields)


def test_connection_url_forms() -> None:
    assert _settings().url == "https://tsa.example/tsr"
    # `airflow connections add --conn-uri http://127.0.0.1:8080/tsa` stores host, port and path
    assert _settings(host="127.0.0.1", port=8080, schema="tsa").url == "http://127.0.0.1:8080/tsa"
    assert _settings(conn_type="generic", host="tsa.example").url == "https://tsa.example"
    assert _settings(host="https://tsa.example/tsr", port=8443).url == "https://tsa.example:8443/tsr"
    with pytest.raises(ValueError, match="no host"):
        _settings(host="")
    with pytest.raises(ValueError, match="http:// or https://"):
        _settings(host="ftp://tsa.example")


def test_connection_auth_and_secrets_stay_out_of_repr() -> None:
    basic = _settings(login="archiver", password="s3cret-basic")
    assert basic.auth_kind == "basic"
    assert basic.password == "s3cret-basic"
    bearer = _settings(password="s3cret-token")
    assert bearer.auth_kind == "bearer"
    assert bearer.token == "s3cret-token"
    assert bearer.password is None
    explicit = _settings(extras={"token": "s3cret-extra"})
    assert explicit.auth_kind == "bearer"
    in_url = _settings(host="https://user:s3cret-url@tsa.example/tsr")
    assert in_url.url == "https://tsa.example/tsr"
    assert in_url.auth_kind == "basic"
    for settings in (basic, bearer, explicit, in_url):
        assert "s3cret" not in repr(settings)
    assert _settings().auth_kind is None


def test_connection_trust_and_limits(tsa: tuple[Any, bytes]) -> None:
    pem = tsa[1].decode("ascii")
    pinned = _settings(extras={"trusted_certificates": pem, "timeout": "5", "verify": "false"})
    assert pinned.trust is not None
    assert len(pinned.trust.certificates) == 1
    assert pinned.timeout == 5.0
    assert pinned.verify is False
    read: list[str] = []
    from_file = _settings(
        extras={"trusted_certificates": ["/etc/tsa.pem"]}, read_source=lambda p: read.append(p) or tsa[1]
    )
    assert read == ["/etc/tsa.pem"]
    assert from_file.trust is not None
    fingerprint = hashlib.sha256(b"x").hexdigest()
    assert _settings(extras={"certificate_fingerprints": fingerprint}).trust is not None
    with pytest.raises(ValueError, match="SHA-256 fingerprint"):
        _settings(extras={"certificate_fingerprints": "abc"})
    with pytest.raises(ValueError, match="timeout"):
        _settings(extras={"timeout": "soon"})
    with pytest.raises(ValueError, match="cannot read them here"):
        _settings(extras={"trusted_certificates": ["/etc/tsa.pem"]})
