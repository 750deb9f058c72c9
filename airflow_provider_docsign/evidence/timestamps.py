"""RFC 3161 trusted timestamps: what a token is, and how one is verified.

A token is the TSA's signature over ``(hash of the data, time)``: it proves that the data existed,
unchanged, no later than the token's ``genTime``. The archive asks for one over the SHA-256 of each
final ``manifest.json`` (which lists every archived file's hash), so one token covers an envelope.

Everything a token must satisfy is checked here, in one place, for a fresh answer and for an old
file alike (:func:`verify_timestamp`):

* the response's status is *granted* and it carries a token (a ``SignedData`` over a ``TSTInfo``);
* the message imprint is the hash of the data (any hash the token names, SHA-256 by default);
* for a fresh answer, the nonce is the one sent;
* the CMS signature over the ``TSTInfo`` is intact and verifies with the signer certificate, which
  must be a timestamping certificate (extended key usage ``timeStamping``);
* ``genTime`` is not in the future: no later than the moment of the check (now, or an earlier
  moment the check is made as of) plus :data:`CLOCK_TOLERANCE` (5 minutes). A TSA cannot sign a time
  that has not come: a later ``genTime`` is a TSA with a wrong clock or a token made up;
* with a :class:`~airflow_provider_docsign.evidence.signatures.TrustPolicy` (pinned TSA certificates or
  fingerprints), the signer certificate must be pinned or chain to one of them, as of ``genTime``.
  Without one, ``trusted`` is ``None``: the token is self-consistent, but anyone can make such a
  token with their own key. Pin the TSA.

Asking a TSA for a token is :mod:`.tsa_client`; reading the TSA connection is :mod:`.hooks.tsa`;
the sandbox is a TSA for the tests and the demo. No Airflow here.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import secrets
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from asn1crypto import cms, core, tsp

from airflow_provider_docsign.evidence.signatures import TrustPolicy

__all__ = [
    "CLOCK_TOLERANCE",
    "CONTENT_TYPE_QUERY",
    "CONTENT_TYPE_REPLY",
    "TOKEN_SUFFIX",
    "TimeStampResponse",
    "TimestampError",
    "TimestampReport",
    "build_request",
    "verify_timestamp",
]

CONTENT_TYPE_QUERY = "application/timestamp-query"
CONTENT_TYPE_REPLY = "application/timestamp-reply"
#: The token's file name is the manifest's name plus this suffix (``manifest.json.tsr``).
TOKEN_SUFFIX = ".tsr"  # noqa: S105 - a file suffix, not a password
HASH_ALGORITHM = "sha256"
_HASHES = {"sha256": hashlib.sha256, "sha384": hashlib.sha384, "sha512": hashlib.sha512}
_GRANTED = frozenset({"granted", "granted_with_mods"})
#: How far a token's ``genTime`` may lie after the moment of the check: the clocks of the TSA and of
#: the machine that checks may differ by this much. A ``genTime`` later than that fails.
CLOCK_TOLERANCE = timedelta(minutes=5)


class TimestampError(Exception):
    """A timestamp could not be obtained or does not match.

    The TSA failed, timed out, or answered a token that fails a check (status, nonce, imprint,
    signature, trust). The message says which.
    """


# -- the report -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimestampReport:
    """What was verified about one timestamp token.

    :param tsa: The TSA's name as the token states it (``TSTInfo.tsa``), else the signer's subject.
    :param signer_subject: The subject of the certificate that signed the token.
    :param signer_sha256: That certificate's SHA-256 fingerprint (lower-case hex).
    :param signer_not_after: The end of that certificate's validity (ISO 8601).
    :param gen_time: When the TSA issued the token (ISO 8601, UTC).
    :param serial: The token's serial number (hex).
    :param policy: The TSA policy OID.
    :param hash_algorithm: The hash of the message imprint (``sha256``...).
    :param imprint_matches: The imprint is the hash of the data.
    :param intact: The signed attributes' digest matches the ``TSTInfo``.
    :param valid: The CMS signature verifies with the signer certificate's key.
    :param trusted: Against the trust policy: True/False; ``None`` without a policy.
    :param problems: Why the token fails (empty: it passes).
    :param notes: Facts worth knowing that do not fail it (the TSA certificate expired since, ...).
    """

    tsa: str | None = None
    signer_subject: str | None = None
    signer_sha256: str | None = None
    signer_not_after: str | None = None
    gen_time: str | None = None
    serial: str | None = None
    policy: str | None = None
    hash_algorithm: str | None = None
    imprint_matches: bool = False
    intact: bool = False
    valid: bool = False
    trusted: bool | None = None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """No problem: imprint, integrity, signature and (with a policy) trust all hold."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (``docsign verify --json``, XCom)."""
        return {
            "passed": self.passed,
            "tsa": self.tsa,
            "signer_subject": self.signer_subject,
            "signer_sha256": self.signer_sha256,
            "signer_not_after": self.signer_not_after,
            "gen_time": self.gen_time,
            "serial": self.serial,
            "policy": self.policy,
            "hash_algorithm": self.hash_algorithm,
            "imprint_matches": self.imprint_matches,
            "intact": self.intact,
            "valid": self.valid,
            "trusted": self.trusted,
            "problems": list(self.problems),
            "notes": list(self.notes),
        }


# -- parsing --------------------------------------------------------------------------------------


class TimeStampResponse(core.Sequence):  # type: ignore[misc]
    """RFC 3161 ``TimeStampResp``, with the token optional as the RFC says.

    asn1crypto's own ``tsp.TimeStampResp`` requires the token, so it cannot read a TSA's refusal
    (``status`` *rejection* and no token).
    """

    _fields = [
        ("status", tsp.PKIStatusInfo),
        ("time_stamp_token", cms.ContentInfo, {"optional": True}),
    ]


def _load(data: bytes) -> tuple[Any, str | None]:
    """``(token ContentInfo, status)`` from a ``TimeStampResp`` or a bare token (``-token_out``).

    :raises TimestampError: For bytes that are neither.
    """
    response: Any = None
    try:
        response = TimeStampResponse.load(data, strict=True)
        status = str(response["status"]["status"].native)
    except Exception:  # not a TimeStampResp: perhaps a bare token
        response = None
    if response is not None:
        if status not in _GRANTED:
            return None, status + _status_text(response)
        token = response["time_stamp_token"]
        try:
            _tst_info(token)
        except Exception:
            raise TimestampError("the TSA's answer is granted but carries no readable token") from None
        return token, status
    try:
        token = cms.ContentInfo.load(data, strict=True)
        if token["content_type"].native != "signed_data":
            raise ValueError("not SignedData")
        _tst_info(token)
        return token, None
    except Exception as err:
        raise TimestampError(
            "not an RFC 3161 timestamp response or token (DER TimeStampResp or ContentInfo expected): "
            f"{type(err).__name__}"
        ) from None


def _status_text(response: Any) -> str:
    texts = response["status"]["status_string"].native or []
    infos = response["status"]["fail_info"].native or []
    detail = "; ".join([*(str(t) for t in texts), *(str(i) for i in infos)])
    return f" ({detail})" if detail else ""


def _tst_info(token: Any) -> Any:
    content = token["content"]["encap_content_info"]
    if content["content_type"].native != "tst_info":
        raise TimestampError("the token does not encapsulate a TSTInfo")
    value = content["content"]
    parsed = value.parsed if isinstance(value, core.ParsableOctetString) else None
    if not isinstance(parsed, tsp.TSTInfo):
        raise TimestampError("the token's TSTInfo cannot be read")
    return parsed


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _general_name(name: Any) -> str | None:
    if name is None or name.native is None:
        return None
    chosen = name.chosen
    if name.name == "directory_name":
        return str(chosen.human_friendly)
    return str(chosen.native)


class _ThisThread(logging.Filter):
    """Drops the records of one thread (the one checking a token), whatever the handlers."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread


@contextlib.contextmanager
def _quiet_pyhanko() -> Iterator[None]:
    """Drop pyHanko's records of this thread while a token is checked.

    pyHanko logs a warning with a traceback for every certificate path it cannot build (an unpinned
    TSA, say); the report states the outcome once.
    """
    # A logger's filters apply to the records it creates itself, not to its children's: name it.
    logger = logging.getLogger("pyhanko.sign.validation.generic_cms")
    quiet = _ThisThread()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _check_signature(token: Any, gen_time: datetime, trust: TrustPolicy | None) -> dict[str, Any]:
    """PyHanko's validation of the token's SignedData (integrity, signature, EKU, trust path)."""
    from asn1crypto import x509
    from pyhanko.sign.validation.generic_cms import validate_tst_signed_data
    from pyhanko_certvalidator import ValidationContext

    signed_data = token["content"]
    certs = [c.chosen for c in signed_data["certificates"] or () if isinstance(c.chosen, x509.Certificate)]
    signer = _signer_cert(signed_data, certs)
    roots: list[Any] = []
    if trust is None:
        roots = [signer] if signer is not None else []
    else:
        roots = [x509.Certificate.load(der) for der in trust.certificates]
        if signer is not None and hashlib.sha256(signer.dump()).hexdigest() in trust.fingerprints:
            roots.append(signer)
    context = ValidationContext(
        trust_roots=roots,
        other_certs=certs,
        moment=gen_time,
        allow_fetching=False,
        revocation_mode="soft-fail",
    )

    async def run() -> dict[str, Any]:
        # The imprint is checked by our caller (with a clear message); pyHanko's check is made moot.
        imprint = _tst_info(token)["message_imprint"]["hashed_message"].native
        result: dict[str, Any] = await validate_tst_signed_data(signed_data, context, lambda _algo: imprint)
        return result

    from airflow_provider_docsign.evidence.certificate_trust import _run

    with _quiet_pyhanko():
        status: dict[str, Any] = _run(run())
    status["signer"] = signer
    return status


def _signer_cert(signed_data: Any, certs: list[Any]) -> Any:
    from pyhanko.sign.general import extract_signer_info

    try:
        sid = extract_signer_info(signed_data)["sid"]
    except Exception:
        return None
    for cert in certs:
        if sid.name == "issuer_and_serial_number":
            chosen = sid.chosen
            if cert.issuer == chosen["issuer"] and cert.serial_number == chosen["serial_number"].native:
                return cert
        elif sid.name == "subject_key_identifier" and cert.key_identifier == sid.chosen.native:
            return cert
    return None


def verify_timestamp(
    token: bytes,
    data: bytes | None = None,
    *,
    digest: bytes | None = None,
    trust: TrustPolicy | None = None,
    nonce: int | None = None,
    now: datetime | None = None,
) -> TimestampReport:
    """Verify a timestamp response or token against the data it should cover.

    Never raises for a token that fails a check: the report's ``problems`` say why. Bytes that are no
    timestamp at all raise :class:`TimestampError`.

    :param token: A DER ``TimeStampResp`` (``.tsr``, ``openssl ts -reply``) or a bare token.
    :param data: The data the token should cover (hashed with the token's own hash algorithm).
    :param digest: Or the digest itself (it must be of the token's hash algorithm).
    :param trust: Pinned TSA certificates/fingerprints; ``None``: ``trusted`` is not judged.
    :param nonce: The nonce sent with the request (fresh answers only).
    :param now: The moment the check is made as of (default: now): a ``genTime`` later than it (or
        than the real now, whichever is earlier) by more than :data:`CLOCK_TOLERANCE` fails, and a
        TSA certificate expired by then is noted.
    :raises TimestampError: When ``token`` is not a timestamp, or the TSA refused the request.
    """
    if (data is None) == (digest is None):
        raise ValueError("give exactly one of data and digest")
    loaded, status = _load(token)
    if loaded is None:
        raise TimestampError(f"the TSA refused the request: status {status}")
    info = _tst_info(loaded)
    problems: list[str] = []
    notes: list[str] = []
    algorithm = str(info["message_imprint"]["hash_algorithm"]["algorithm"].native)
    imprint = bytes(info["message_imprint"]["hashed_message"].native)
    if data is not None:
        hasher = _HASHES.get(algorithm)
        if hasher is None:
            problems.append(f"the token's hash algorithm {algorithm} is not one of {', '.join(_HASHES)}")
            expected = None
        else:
            expected = hasher(data).digest()
    else:
        expected = digest
    imprint_matches = expected is not None and secrets.compare_digest(imprint, expected)
    if expected is not None and not imprint_matches:
        problems.append(
            f"the message imprint ({algorithm} {imprint.hex()}) is not the hash of the data "
            f"({expected.hex()}): the data changed after the token was issued, or the token is for "
            "other data"
        )
    token_nonce = info["nonce"].native
    if nonce is not None and token_nonce != nonce:
        problems.append(
            f"the TSA answered nonce {token_nonce!r}, not the {nonce} that was sent: the answer is not "
            "for this request"
        )
    gen_time = info["gen_time"].native
    future = _future_problem(gen_time, now)
    if future:
        problems.append(future)
    checked = _check_signature(loaded, gen_time, trust)
    signer = checked.get("signer")
    intact, valid = bool(checked.get("intact")), bool(checked.get("valid"))
    if signer is None:
        problems.append("the token carries no certificate of its signer (request certReq)")
    elif not intact:
        problems.append("the token's signed attributes do not match its TSTInfo: the token was altered")
    elif not valid:
        problems.append("the token's signature does not verify with its signer certificate's key")
    path_ok = checked.get("trust_problem_indic") is None and checked.get("validation_path") is not None
    if signer is not None and intact and valid and not _timestamping_certificate(signer):
        path_ok = False
        problems.append(
            "the token's signer certificate is not a timestamping certificate: RFC 3161 requires the "
            "extended key usage timeStamping, marked critical"
        )
    trusted: bool | None
    if signer is not None and intact and valid and not path_ok and trust is None and not problems:
        problems.append(
            "the token's signer certificate is not a usable timestamping certificate as of genTime "
            f"({_indication(checked)}): it needs the extended key usage timeStamping and a validity "
            "period that contains genTime"
        )
    if trust is None:
        trusted = None
    else:
        trusted = bool(signer is not None and intact and valid and path_ok)
        if signer is not None and not trusted and intact and valid and _timestamping_certificate(signer):
            problems.append(
                f"the TSA certificate (sha256 {hashlib.sha256(signer.dump()).hexdigest()}, "
                f"{signer.subject.human_friendly}) is not trusted by the pinned TSA certificates "
                f"({_indication(checked)})"
            )
    not_after = None
    if signer is not None:
        end = signer["tbs_certificate"]["validity"]["not_after"].native
        not_after = _iso(end)
        if (now or datetime.now(timezone.utc)) > end:
            notes.append(
                f"the TSA certificate expired on {not_after}, after it issued this token; the token "
                "was checked as of its genTime"
            )
    return TimestampReport(
        tsa=_general_name(info["tsa"]) or (signer.subject.human_friendly if signer is not None else None),
        signer_subject=signer.subject.human_friendly if signer is not None else None,
        signer_sha256=hashlib.sha256(signer.dump()).hexdigest() if signer is not None else None,
        signer_not_after=not_after,
        gen_time=_iso(gen_time),
        serial=format(int(info["serial_number"].native), "x"),
        policy=str(info["policy"].dotted),
        hash_algorithm=algorithm,
        imprint_matches=imprint_matches,
        intact=intact,
        valid=valid,
        trusted=trusted,
        problems=tuple(problems),
        notes=tuple(notes),
    )


def _future_problem(gen_time: datetime, at: datetime | None) -> str | None:
    """Why ``gen_time`` lies in the future of the check, or ``None`` when it does not.

    The check is made as of ``at`` (``--validation-time``) or now; an ``at`` later than now does not
    move the limit: a token dated after the real now is from the future whatever moment is asked for.
    """
    wall = datetime.now(timezone.utc)
    reference, given = (at, True) if at is not None and at < wall else (wall, False)
    if gen_time <= reference + CLOCK_TOLERANCE:
        return None
    minutes = int(CLOCK_TOLERANCE.total_seconds() // 60)
    if given:
        return (
            f"genTime {_iso(gen_time)} is later than the moment it is checked as of ({_iso(reference)}) "
            f"by more than the {minutes} minutes clocks may differ: as of then this token did not exist"
        )
    return (
        f"genTime {_iso(gen_time)} is in the future: later than now ({_iso(reference)}) by more than the "
        f"{minutes} minutes clocks may differ. A TSA cannot sign a time that has not come: its clock is "
        "wrong, or the token was made up"
    )


def _timestamping_certificate(cert: Any) -> bool:
    """RFC 3161 2.3: exactly the extended key usage ``timeStamping``, in a critical extension."""
    for extension in cert["tbs_certificate"]["extensions"] or ():
        if extension["extn_id"].native == "extended_key_usage":
            return bool(extension["critical"].native) and list(extension["extn_value"].native) == [
                "time_stamping"
            ]
    return False


def _indication(status: Mapping[str, Any]) -> str:
    indication = status.get("trust_problem_indic")
    if indication is None:
        return "no certificate path"
    return str(getattr(indication, "name", indication)).lower().replace("_", " ")


def build_request(digest: bytes, *, algorithm: str = HASH_ALGORITHM) -> tuple[bytes, int]:
    """A DER ``TimeStampReq`` for ``digest`` with a random 63-bit nonce and ``certReq``; and the nonce."""
    from asn1crypto import algos

    nonce = secrets.randbits(63) | (1 << 62)
    request = tsp.TimeStampReq(
        {
            "version": 1,
            "message_imprint": tsp.MessageImprint(
                {"hash_algorithm": algos.DigestAlgorithm({"algorithm": algorithm}), "hashed_message": digest}
            ),
            "nonce": nonce,
            "cert_req": True,
        }
    )
    return request.dump(), nonce
