"""Asking an RFC 3161 timestamp authority (TSA) for a token: the connection's settings and one request.

HTTP is bounded: one POST, connect and read timeouts, a total deadline and a size limit on the answer;
no retries here (the task's retries are the retry policy). Every answer is verified with
:func:`~airflow_provider_docsign.evidence.timestamps.verify_timestamp` (nonce included) before it is returned.
No Airflow here: :mod:`.hooks.tsa` reads the connection.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from airflow_provider_docsign.evidence.signatures import TrustPolicy
from airflow_provider_docsign.evidence.timestamps import (
    HASH_ALGORITHM,
    TimestampError,
    TimestampReport,
    TimeStampResponse,
    build_request,
    verify_timestamp,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_RESPONSE_BYTES",
    "TimestampResult",
    "Transport",
    "TsaSettings",
    "pyhanko_timestamper",
    "request_timestamp",
    "tsa_settings_from_connection",
]

#: Connect and read timeouts (seconds) of one TSA request, unless the connection says otherwise.
DEFAULT_TIMEOUT = 30.0
#: The largest answer read from a TSA; a token with its certificate chain is a few KiB.
MAX_RESPONSE_BYTES = 1024 * 1024


#: Sends one DER ``TimeStampReq`` to the settings' TSA; returns the answer's bytes.
Transport = Callable[["TsaSettings", bytes], bytes]


# -- settings -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TsaSettings:
    """How to reach a TSA and which of its certificates to trust.

    :param url: The TSA's URL (``https://tsa.example/tsr``), without credentials.
    :param username: Basic-auth user (with ``password``).
    :param password: Basic-auth password (never shown in ``repr``).
    :param token: Bearer token (never shown in ``repr``); used when there is no ``username``.
    :param trust: Pinned TSA certificates or fingerprints; ``None``: the signature is checked against
        the certificate in the token only (``trusted`` stays ``None``).
    :param timeout: Connect and read timeout in seconds; the whole exchange is also bounded by
        twice this.
    :param verify: TLS verification: a bool or a CA bundle path.
    :param transport: What sends one timestamp query and returns the answer's bytes (raising
        :class:`TimestampError` on any failure); :class:`~airflow_provider_docsign.hooks.tsa.DocsignTsaHook`
        sets :func:`~airflow_provider_docsign.hooks.tsa.post_timestamp_query`.
    """

    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    trust: TrustPolicy | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    verify: bool | str = True
    transport: Transport | None = field(default=None, repr=False, compare=False)

    @property
    def auth_kind(self) -> str | None:
        """``basic``, ``bearer`` or ``None``."""
        if self.username:
            return "basic"
        return "bearer" if self.token else None


def _strip_userinfo(url: str) -> tuple[str, str | None, str | None]:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None, None
    netloc = parts.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc)), parts.username, parts.password


def _as_list(value: Any, name: str) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            loaded = json.loads(text)
            if not isinstance(loaded, list):
                raise ValueError(f"connection extra {name!r} must be a list")
            return [str(v) for v in loaded]
        if "-----BEGIN" in text:
            return [text]
        return [v for v in re.split(r"[,;\s]+", text) if v]
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    raise ValueError(f"connection extra {name!r} must be a list or a string")


def tsa_settings_from_connection(
    *,
    conn_type: str | None,
    host: str | None,
    port: int | None,
    schema: str | None,
    login: str | None,
    password: str | None,
    extras: Mapping[str, Any],
    read_source: Any = None,
    transport: Transport | None = None,
) -> TsaSettings:
    """Parse an Airflow connection (any type; ``http`` is natural) into :class:`TsaSettings`.

    * **URL**: ``host`` as a full URL (``https://tsa.example/tsr``); or, as ``airflow connections add
      --conn-uri http://tsa.example:8080/tsr`` stores it, host, port and path (``schema``) with the
      connection type (``http``/``https``, else the ``scheme`` extra, else ``https``) as the scheme.
    * **Auth**: ``login`` and ``password`` are basic auth; a ``password`` without ``login`` (or the
      ``token`` extra) is a bearer token.
    * **Trust**: extra ``trusted_certificates`` (PEM file paths or URIs, or PEM text) and extra
      ``certificate_fingerprints`` (SHA-256 of the TSA certificate); either pins the TSA.
    * extras ``timeout`` (seconds) and ``verify`` (TLS: true, false or a CA bundle path).

    :param read_source: Reads a PEM file given by path or URI (returns bytes); required only when
        ``trusted_certificates`` names files.
    :raises ValueError: With a message naming the field, for anything unusable.
    """
    raw_host = (host or "").strip()
    if not raw_host:
        raise ValueError("the TSA connection has no host: set it to the TSA's URL (https://tsa.example/tsr)")
    if "://" in raw_host:
        url = raw_host
        if port and urlsplit(url).port is None:
            parts = urlsplit(url)
            url = urlunsplit(parts._replace(netloc=f"{parts.netloc}:{int(port)}"))
    else:
        scheme = str(extras.get("scheme") or "").strip().lower()
        if not scheme:
            scheme = conn_type if conn_type in {"http", "https"} else "https"
        path = (schema or "").strip().lstrip("/")
        url = f"{scheme}://{raw_host}" + (f":{int(port)}" if port else "") + (f"/{path}" if path else "")
    url, url_user, url_password = _strip_userinfo(url)
    if urlsplit(url).scheme not in {"http", "https"}:
        raise ValueError(f"the TSA URL must be http:// or https://, not {urlsplit(url).scheme!r}")
    username = login or url_user or None
    secret = password or url_password or None
    token = str(extras["token"]) if extras.get("token") else None
    if username is None and secret and token is None:
        token, secret = secret, None
    pems: list[bytes] = []
    for item in _as_list(extras.get("trusted_certificates"), "trusted_certificates"):
        if "-----BEGIN" in item:
            pems.append(item.encode("ascii"))
        elif read_source is None:
            raise ValueError("connection extra 'trusted_certificates' names files but cannot read them here")
        else:
            pems.append(read_source(item))
    fingerprints = _as_list(extras.get("certificate_fingerprints"), "certificate_fingerprints")
    trust = TrustPolicy.build(pem=pems, fingerprints=fingerprints)
    timeout = extras.get("timeout")
    try:
        seconds = float(timeout) if timeout not in (None, "") else DEFAULT_TIMEOUT
    except (TypeError, ValueError):
        raise ValueError(f"connection extra 'timeout' must be a number of seconds, not {timeout!r}") from None
    if not 0 < seconds <= 600:
        raise ValueError("connection extra 'timeout' must be between 0 and 600 seconds")
    verify_raw = extras.get("verify")
    verify: bool | str = True
    if isinstance(verify_raw, bool):
        verify = verify_raw
    elif isinstance(verify_raw, str) and verify_raw.strip():
        lowered = verify_raw.strip().lower()
        verify = (
            lowered in {"true", "1", "yes"}
            if lowered in {"true", "false", "1", "0", "yes", "no"}
            else verify_raw
        )
    return TsaSettings(
        url=url,
        username=username,
        password=secret if username else None,
        token=token,
        trust=trust,
        timeout=seconds,
        verify=verify,
        transport=transport,
    )


@dataclass(frozen=True)
class TimestampResult:
    """A fresh token from a TSA, already verified.

    :param response: The DER ``TimeStampResp`` as the TSA sent it (what ``.tsr`` files hold).
    :param report: Its verification.
    """

    response: bytes = field(repr=False)
    report: TimestampReport


# -- requesting -----------------------------------------------------------------------------------


def request_timestamp(
    settings: TsaSettings, *, data: bytes | None = None, digest: bytes | None = None
) -> TimestampResult:
    """Ask the TSA for a token over ``data`` (or its SHA-256 ``digest``) and verify it fully.

    :raises TimestampError: The TSA failed, timed out, refused, or answered a token that fails a check
        (nonce, imprint, signature, or trust under pinned certificates).
    """
    if digest is None:
        if data is None:
            raise ValueError("give data or digest")
        digest = hashlib.sha256(data).digest()
    if settings.transport is None:
        raise ValueError("TsaSettings.transport is not set: DocsignTsaHook(...).settings carries one")
    body, nonce = build_request(digest)
    answer = settings.transport(settings, body)
    try:
        report = verify_timestamp(answer, digest=digest, trust=settings.trust, nonce=nonce)
    except TimestampError as err:
        raise TimestampError(f"the TSA at {settings.url} answered: {err}") from None
    if report.problems:
        raise TimestampError(
            f"the TSA at {settings.url} answered a token that fails: " + "; ".join(report.problems)
        )
    return TimestampResult(response=answer, report=report)


def pyhanko_timestamper(settings: TsaSettings) -> Any:
    """A pyHanko ``TimeStamper`` (for PDF document timestamps) that uses :func:`request_timestamp`.

    Every token it returns has passed the same checks as the manifest's.
    """
    from pyhanko.sign.timestamps import TimeStamper

    class _Checked(TimeStamper):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]

        async def async_timestamp(self, message_digest: bytes, md_algorithm: str) -> Any:
            if md_algorithm != HASH_ALGORITHM:
                raise TimestampError(f"document timestamps use {HASH_ALGORITHM}, not {md_algorithm}")
            result = await asyncio.to_thread(request_timestamp, settings, digest=message_digest)
            return TimeStampResponse.load(result.response)["time_stamp_token"]

    return _Checked()
