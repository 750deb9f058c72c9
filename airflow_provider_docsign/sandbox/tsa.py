"""The sandbox as an RFC 3161 timestamp authority, so the demo and the tests need no outside TSA.

``POST /tsa`` takes a DER ``TimeStampReq`` (``application/timestamp-query``) and answers a DER
``TimeStampResp`` (``application/timestamp-reply``), signed with the sandbox's TSA key: a self-signed
certificate whose extended key usage is ``timeStamping`` (critical), made on the first start and kept
in the data directory (``tsa-key.pem``, ``tsa-cert.pem``), like the sealing key. The token is made by
pyHanko's ``DummyTimeStamper`` (a complete RFC 3161 signer: ``TSTInfo`` with the request's nonce,
``ESSCertIDv2`` signing-certificate attribute, the certificate included); ``openssl ts -verify``
accepts it.

Faults (``POST /_sandbox/tsa/faults``) make the TSA misbehave for the next N requests, so that every
check of a client is reached over HTTP:

* ``wrong_nonce``: the token carries another nonce than the request's;
* ``wrong_imprint``: the token is over another digest;
* ``untrusted``: the token is signed by a second TSA (its own self-signed certificate, made on each
  start and never published) that nobody pins;
* ``delay``: the answer comes ``delay`` seconds late (a client's timeout fires first);
* ``reject``: a ``TimeStampResp`` with status *rejection*;
* ``http_status``: an HTTP error ``status`` instead of an answer;
* ``oversize``: 2 MiB of zeros as the "reply".

Every request is logged (``GET /_sandbox/tsa/requests``): time, the kind of ``Authorization`` header
(``basic``, ``bearer`` or none; never its value), the fault applied and the outcome.
"""

from __future__ import annotations

import datetime
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .sealing import ensure_key_pair, self_signed_certificate

KEY_FILE = "tsa-key.pem"
CERT_FILE = "tsa-cert.pem"
COMMON_NAME = "Docsign Sandbox TSA"
OTHER_COMMON_NAME = "Docsign Sandbox Rogue TSA"
FAULTS = ("wrong_nonce", "wrong_imprint", "untrusted", "delay", "reject", "http_status", "oversize")
#: What the ``oversize`` fault answers: more than any client should read (clients bound their reads).
OVERSIZE_BYTES = 2 * 1024 * 1024
_HASHES = frozenset({"sha256", "sha384", "sha512"})
MAX_QUERY_BYTES = 64 * 1024


@dataclass
class TsaAnswer:
    """What ``/tsa`` sends back: an HTTP status, a content type and a body, possibly late."""

    status: int
    content_type: str
    body: bytes
    delay: float = 0.0
    outcome: str = "granted"


@dataclass
class _Fault:
    action: str
    remaining: int
    delay: float | None = None
    status: int | None = None


def _pyhanko_pair(cert: Any, key: Any) -> tuple[Any, Any]:
    from asn1crypto import keys, x509
    from cryptography.hazmat.primitives import serialization

    der_cert = cert.public_bytes(serialization.Encoding.DER)
    der_key = key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return x509.Certificate.load(der_cert), keys.PrivateKeyInfo.load(der_key)


@dataclass
class TimestampAuthority:
    """The sandbox TSA: keys, faults and the request log.

    :param data_dir: The sandbox data directory (the TSA key and certificate live there).
    """

    data_dir: str | os.PathLike[str]
    log: list[dict[str, Any]] = field(default_factory=list)
    _faults: list[_Fault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stampers: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.key_path, self.cert_path = ensure_key_pair(
            self.data_dir, KEY_FILE, CERT_FILE, common_name=COMMON_NAME, timestamping=True
        )

    @property
    def certificate_pem(self) -> bytes:
        """The TSA certificate (PEM): what a client pins, and ``openssl ts -verify -CAfile`` takes."""
        return Path(self.cert_path).read_bytes()

    def _stamper(self, which: str) -> Any:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from pyhanko.sign.timestamps import DummyTimeStamper

        if which not in self._stampers:
            if which == "own":
                key: Any = serialization.load_pem_private_key(Path(self.key_path).read_bytes(), password=None)
                cert = x509.load_pem_x509_certificate(self.certificate_pem)
            else:
                key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
                now = datetime.datetime.now(datetime.timezone.utc)
                cert = self_signed_certificate(
                    key,
                    common_name=OTHER_COMMON_NAME,
                    not_before=now - datetime.timedelta(days=1),
                    not_after=now + datetime.timedelta(days=365),
                    timestamping=True,
                )
            tsa_cert, tsa_key = _pyhanko_pair(cert, key)
            self._stampers[which] = DummyTimeStamper(tsa_cert=tsa_cert, tsa_key=tsa_key)
        return self._stampers[which]

    # -- faults and log ---------------------------------------------------------------------------

    def add_fault(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Register a fault from a control-API body; raises ValueError on bad input."""
        action = str(spec.get("action", ""))
        if action not in FAULTS:
            raise ValueError(f"unknown TSA fault {action!r}; expected one of {', '.join(FAULTS)}")
        count = int(spec.get("count", 1))
        if count < 1:
            raise ValueError("count must be at least 1")
        delay = spec.get("delay")
        if action == "delay" and (delay is None or float(delay) <= 0):
            raise ValueError("TSA fault 'delay' needs a delay in seconds")
        status = spec.get("status")
        if action == "http_status" and (status is None or not 400 <= int(status) <= 599):
            raise ValueError("TSA fault 'http_status' needs a status between 400 and 599")
        fault = _Fault(
            action=action,
            remaining=count,
            delay=float(delay) if delay is not None else None,
            status=int(status) if status is not None else None,
        )
        with self._lock:
            self._faults.append(fault)
        return {"action": action, "remaining": count}

    def clear(self) -> None:
        """Drop pending faults and empty the request log."""
        with self._lock:
            self._faults.clear()
            self.log.clear()

    def requests(self) -> list[dict[str, Any]]:
        """The request log, oldest first."""
        with self._lock:
            return [dict(entry) for entry in self.log]

    def _take_fault(self) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.remaining > 0:
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        self._faults.remove(fault)
                    return fault
        return None

    # -- answering --------------------------------------------------------------------------------

    def answer(self, body: bytes, content_type: str | None, authorization: str | None) -> TsaAnswer:
        """Answer one ``/tsa`` request (the route applies ``delay``)."""
        auth = None
        if authorization:
            auth = authorization.split(" ", 1)[0].lower() if " " in authorization else "other"
        fault = self._take_fault()
        entry: dict[str, Any] = {
            "at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "auth": auth,
            "fault": fault.action if fault else None,
        }
        result = self._answer(body, content_type, fault)
        entry["status"] = result.status
        entry["outcome"] = result.outcome
        with self._lock:
            self.log.append(entry)
        return result

    def _answer(self, body: bytes, content_type: str | None, fault: _Fault | None) -> TsaAnswer:
        from asn1crypto import tsp

        if fault is not None and fault.action == "oversize":
            return TsaAnswer(200, "application/timestamp-reply", bytes(OVERSIZE_BYTES), outcome="oversize")
        if fault is not None and fault.action == "http_status":
            return TsaAnswer(fault.status or 503, "text/plain", b"the TSA is unavailable\n", outcome="http")
        if (content_type or "").split(";")[0].strip().lower() != "application/timestamp-query":
            return TsaAnswer(
                415, "text/plain", b"expected Content-Type: application/timestamp-query\n", outcome="http"
            )
        if len(body) > MAX_QUERY_BYTES:
            return _rejection("bad_data_format", "the request is too large")
        try:
            request = tsp.TimeStampReq.load(body, strict=True)
            algorithm = request["message_imprint"]["hash_algorithm"]["algorithm"].native
            digest = request["message_imprint"]["hashed_message"].native
            nonce = request["nonce"].native
        except Exception:
            return _rejection("bad_data_format", "not a DER TimeStampReq")
        if algorithm not in _HASHES:
            return _rejection("bad_alg", f"unsupported hash algorithm {algorithm}")
        if fault is not None and fault.action == "reject":
            return _rejection("system_failure", "rejected by a sandbox fault")
        if fault is not None and fault.action in {"wrong_nonce", "wrong_imprint"}:
            if fault.action == "wrong_nonce":
                nonce = (nonce or 0) + 1
            else:
                digest = bytes(b ^ 0xFF for b in digest)
            request = tsp.TimeStampReq(
                {
                    "version": 1,
                    "message_imprint": {
                        "hash_algorithm": {"algorithm": algorithm},
                        "hashed_message": digest,
                    },
                    "nonce": nonce,
                    "cert_req": True,
                }
            )
        stamper = self._stamper("other" if fault is not None and fault.action == "untrusted" else "own")
        response = stamper.request_tsa_response(request)
        delay = fault.delay if fault is not None and fault.action == "delay" else 0.0
        return TsaAnswer(200, "application/timestamp-reply", response.dump(), delay=delay or 0.0)


def _rejection(fail_info: str, text: str) -> TsaAnswer:
    from asn1crypto import tsp

    from airflow_provider_docsign.evidence.timestamps import TimeStampResponse

    status = tsp.PKIStatusInfo(
        {"status": "rejection", "status_string": [text], "fail_info": tsp.PKIFailureInfo({fail_info})}
    )
    body = TimeStampResponse({"status": status}).dump()
    return TsaAnswer(200, "application/timestamp-reply", body, outcome="rejected")
