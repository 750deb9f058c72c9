"""Transport-independent pieces shared by the sync (requests) and async (httpx) paths.

Connection settings, the retry policy and the mapping of error responses to exceptions live here, so
both paths behave identically. Nothing in this module performs I/O.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from airflow_provider_docsign import __version__
from airflow_provider_docsign._text import printable
from airflow_provider_docsign.exceptions import (
    DocsignAPIError,
    DocsignAuthError,
    DocsignError,
    DocsignInvalidRequestError,
    DocsignNotFoundError,
    DocsignRateLimitError,
    DocsignServerError,
)

# Re-exported: the hook and its mixins import them from here.
from airflow_provider_docsign.hooks._headers import RateLimit as RateLimit
from airflow_provider_docsign.hooks._headers import parse_http_date as parse_http_date
from airflow_provider_docsign.hooks._headers import parse_rate_limit as parse_rate_limit
from airflow_provider_docsign.hooks._headers import parse_retry_after as parse_retry_after

log = logging.getLogger("airflow_provider_docsign.hooks.docsign")

#: The ``User-Agent`` of every request, sync and async.
USER_AGENT = f"airflow-provider-docsign/{__version__}"

DEFAULT_BASE_URL = "https://app.documenso.com/api/v2"
API_SUFFIX = "/api/v2"

#: Request kinds. ``read`` never changes anything (GET, and POST /envelope/get-many); ``write``
#: changes something that is safe to repeat only when it provably was not applied; ``create``
#: creates something and is never repeated unless provably not applied (no idempotency key exists).
READ, WRITE, CREATE = "read", "write", "create"

RETRYABLE_READ_STATUSES = frozenset({429, 502, 503, 504})
#: Statuses a write may be retried on: the rate limiter (429) and an unavailable service (503)
#: answer before the request is processed.
RETRYABLE_WRITE_STATUSES = frozenset({429, 503})
#: A create is retried only on 429: a 503 may come from a gateway after the service already created
#: the envelope, and there is no idempotency key to make a repeat safe.
RETRYABLE_CREATE_STATUSES = frozenset({429})

MAX_ERROR_BODY = 64 * 1024


class Redactor:
    """Removes a secret from text before it is logged or put into an exception message."""

    def __init__(self, secret: str | None) -> None:
        self._secret = secret or None

    def __call__(self, text: str) -> str:
        """Return ``text`` with every occurrence of the secret replaced."""
        if self._secret and self._secret in text:
            return text.replace(self._secret, "***")
        return text

    def __repr__(self) -> str:
        return "Redactor(***)"


def _coerce_bool(value: Any, name: str) -> bool | str:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        low = value.strip().lower()
        if low in {"true", "1", "yes", "on"}:
            return True
        if low in {"false", "0", "no", "off"}:
            return False
        return value  # a CA bundle path
    raise DocsignError(f"connection extra {name!r} must be a boolean or a CA bundle path, not {value!r}")


def _coerce_number(value: Any, name: str, *, integer: bool = False) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DocsignError(f"connection extra {name!r} must be a number, not {value!r}") from None
    if number < 0 or (integer and number != int(number)):
        raise DocsignError(
            f"connection extra {name!r} must be a non-negative {'integer' if integer else 'number'}"
        )
    return number


def parse_timeout(value: Any) -> tuple[float, float]:
    """Turn the ``timeout`` extra (seconds, ``[connect, read]`` or a JSON/CSV string) into a pair."""
    if value is None or value == "":
        return (10.0, 60.0)
    if isinstance(value, str):
        text = value.strip()
        try:
            value = json.loads(text)
        except ValueError:
            value = [p for p in text.replace(",", " ").split() if p]
            if len(value) == 1:
                value = value[0]
    if isinstance(value, list | tuple):
        if len(value) != 2:
            raise DocsignError("connection extra 'timeout' must be a number or [connect, read]")
        return (_coerce_number(value[0], "timeout"), _coerce_number(value[1], "timeout"))
    number = _coerce_number(value, "timeout")
    return (number, number)


_DEFAULT_PORTS = {"http": 80, "https": 443}


def build_base_url(
    host: str | None, *, port: int | None = None, schema: str | None = None, scheme: str | None = None
) -> str:
    """Build the API base URL (ending in ``/api/v2``) from an Airflow connection's parts.

    * JSON form: ``host`` holds the whole URL, e.g. ``http://127.0.0.1:8000/api/v2``.
    * URI form: ``docsign://:KEY@127.0.0.1:8000/api/v2?scheme=http`` gives host ``127.0.0.1``,
      port ``8000`` and schema ``api/v2``; the scheme comes from the ``scheme`` extra (default https).
    * Empty host: ``https://app.documenso.com/api/v2``. A host without a path gets ``/api/v2``.
    """
    host = (host or "").strip()
    if not host:
        return DEFAULT_BASE_URL
    if "://" not in host:
        host = f"{(scheme or 'https').strip().lower().rstrip(':/')}://{host}"
    parts = urlsplit(host)
    if parts.scheme not in {"http", "https"}:
        raise DocsignError(f"the connection's base URL must use http or https, not {parts.scheme!r}")
    if not parts.hostname:
        raise DocsignError("the connection's base URL has no host name")
    netloc = parts.netloc.rsplit("@", 1)[-1]  # never keep credentials embedded in the URL
    if port and parts.port is not None and int(port) != parts.port:
        raise DocsignError(
            f"the connection's port {int(port)} differs from the port {parts.port} in its base URL: "
            "give the same one, or leave the port empty"
        )
    # The form's Port field (Airflow 3.3's Test button needs one) may repeat the scheme's default port.
    if port and parts.port is None and int(port) != _DEFAULT_PORTS[parts.scheme]:
        netloc = f"{netloc}:{int(port)}"
    path = parts.path.rstrip("/")
    if not path and schema:
        path = "/" + schema.strip("/")
    if not path:
        path = API_SUFFIX
    return urlunsplit((parts.scheme, netloc, path, "", ""))


def default_web_url(base_url: str) -> str:
    """The web app URL for links: the base URL without its ``/api/v2`` suffix."""
    if base_url.endswith(API_SUFFIX):
        return base_url[: -len(API_SUFFIX)]
    return base_url


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter that honours ``Retry-After``.

    :param max_retries: Retries after the first attempt (so at most ``max_retries + 1`` attempts).
    :param backoff_factor: Base delay in seconds; the n-th retry waits about ``backoff_factor * 2**n``.
    :param max_retry_wait: Cap on one wait, in seconds. A ``Retry-After`` longer than this is not
        waited for: the request fails at once with :class:`DocsignRateLimitError` carrying it.
    :param max_total_wait: Cap on the sum of all waits of one call, in seconds.
    """

    max_retries: int = 5
    backoff_factor: float = 0.5
    max_retry_wait: float = 60.0
    max_total_wait: float = 300.0

    def delay(self, retry_number: int, retry_after: float | None) -> float:
        """Seconds to wait before retry ``retry_number`` (1-based), before capping."""
        base = self.backoff_factor * (2 ** (retry_number - 1))
        jittered = random.uniform(base / 2, base) if base > 0 else 0.0
        if retry_after is not None:
            return max(retry_after, jittered)
        return min(jittered, self.max_retry_wait)


@dataclass(frozen=True)
class Settings:
    """Everything the hook needs from the Airflow connection, parsed and validated once.

    :param base_url: The API base URL, ending in ``/api/v2``.
    :param api_key: The team API key (never shown in ``repr``).
    :param timeout: ``(connect, read)`` seconds.
    :param verify: TLS verification: a bool or a CA bundle path.
    :param proxies: Proxies for ``requests``/``httpx``, by scheme.
    :param retry: The retry policy.
    :param web_url: The web app URL, for links.
    :param signing_certificate_fingerprints: Pinned SHA-256 fingerprints of the instance's sealing
        certificate (lower-case hex); the archive operator trusts signatures made with it.
    :param tsa_conn_id: The connection of the RFC 3161 timestamp authority the archive uses when
        the operator names none (:mod:`airflow_provider_docsign.hooks.tsa`).
    """

    base_url: str
    api_key: str = field(repr=False)
    timeout: tuple[float, float] = (10.0, 60.0)
    verify: bool | str = True
    proxies: dict[str, str] = field(default_factory=dict)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    web_url: str = ""
    signing_certificate_fingerprints: tuple[str, ...] = ()
    tsa_conn_id: str | None = None


def _extra(extras: Mapping[str, Any], name: str) -> Any:
    for key in (name, f"extra__docsign__{name}"):
        value = extras.get(key)
        if value is not None and value != "":
            return value
    return None


def settings_from_connection(
    *,
    host: str | None,
    port: int | None,
    schema: str | None,
    password: str | None,
    extras: Mapping[str, Any],
    overrides: Mapping[str, Any],
) -> Settings:
    """Combine a connection's fields, its extras and the hook's keyword overrides into :class:`Settings`."""
    merged: dict[str, Any] = {k: _extra(extras, k) for k in _EXTRA_NAMES}
    merged.update({k: v for k, v in overrides.items() if k in _EXTRA_NAMES and v is not None})
    if overrides.get("base_url"):
        base_url = build_base_url(str(overrides["base_url"]), scheme=merged["scheme"])
    else:
        base_url = build_base_url(host, port=port, schema=schema, scheme=merged["scheme"])
    api_key = overrides.get("api_key") or password or ""
    verify: bool | str = True if merged["verify"] is None else _coerce_bool(merged["verify"], "verify")
    proxies_raw = merged["proxies"]
    if isinstance(proxies_raw, str) and proxies_raw.strip().startswith("{"):
        proxies_raw = json.loads(proxies_raw)
    if proxies_raw is None:
        proxies: dict[str, str] = {}
    elif isinstance(proxies_raw, str):
        proxies = {"http": proxies_raw, "https": proxies_raw}
    elif isinstance(proxies_raw, Mapping):
        proxies = {str(k): str(v) for k, v in proxies_raw.items()}
    else:
        raise DocsignError("connection extra 'proxies' must be a URL or a mapping of scheme to URL")
    defaults = RetryPolicy()
    retry = RetryPolicy(
        max_retries=int(
            _coerce_number(merged["max_retries"], "max_retries", integer=True)
            if merged["max_retries"] is not None
            else defaults.max_retries
        ),
        backoff_factor=_coerce_number(merged["backoff_factor"], "backoff_factor")
        if merged["backoff_factor"] is not None
        else defaults.backoff_factor,
        max_retry_wait=_coerce_number(merged["max_retry_wait"], "max_retry_wait")
        if merged["max_retry_wait"] is not None
        else defaults.max_retry_wait,
        max_total_wait=_coerce_number(merged["max_total_wait"], "max_total_wait")
        if merged["max_total_wait"] is not None
        else defaults.max_total_wait,
    )
    web_url = str(merged["web_url"]).rstrip("/") if merged["web_url"] else default_web_url(base_url)
    return Settings(
        base_url=base_url,
        api_key=str(api_key),
        timeout=parse_timeout(merged["timeout"]),
        verify=verify,
        proxies=proxies,
        retry=retry,
        web_url=web_url,
        signing_certificate_fingerprints=parse_fingerprints(merged["signing_certificate_fingerprints"]),
        tsa_conn_id=str(merged["tsa_conn_id"]).strip() or None if merged["tsa_conn_id"] else None,
    )


def parse_fingerprints(value: Any) -> tuple[str, ...]:
    """The ``signing_certificate_fingerprints`` extra: a list, or a string separated by commas/spaces."""
    from airflow_provider_docsign.evidence.signatures import normalize_fingerprint

    if value is None:
        return ()
    if isinstance(value, str):
        text = value.strip()
        items: list[Any] = json.loads(text) if text.startswith("[") else re.split(r"[,;\s]+", text)
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise DocsignError("connection extra 'signing_certificate_fingerprints' must be a list or a string")
    try:
        return tuple(normalize_fingerprint(str(item)) for item in items if str(item).strip())
    except ValueError as err:
        raise DocsignError(f"connection extra 'signing_certificate_fingerprints': {err}") from None


_EXTRA_NAMES = (
    "timeout",
    "verify",
    "proxies",
    "max_retries",
    "backoff_factor",
    "max_retry_wait",
    "max_total_wait",
    "web_url",
    "scheme",
    "signing_certificate_fingerprints",
    "tsa_conn_id",
)
#: Every keyword override :func:`settings_from_connection` understands (``DocsignHook(**overrides)``).
OVERRIDE_NAMES = frozenset({"base_url", "api_key", *_EXTRA_NAMES})


def retryable_statuses(kind: str) -> frozenset[int]:
    """The HTTP statuses on which a request of ``kind`` may be retried."""
    if kind == READ:
        return RETRYABLE_READ_STATUSES
    if kind == CREATE:
        return RETRYABLE_CREATE_STATUSES
    return RETRYABLE_WRITE_STATUSES


def _error_class(status: int) -> type[DocsignAPIError]:
    if status in (401, 403):
        return DocsignAuthError
    if status == 404:
        return DocsignNotFoundError
    if status == 429:
        return DocsignRateLimitError
    if 400 <= status < 500:
        return DocsignInvalidRequestError
    if status >= 500:
        return DocsignServerError
    return DocsignAPIError


_HINTS = {
    401: "check the API key in the connection's password field",
    403: "the API key's team may not do this",
    404: "check the id, and that it belongs to the API key's team",
    429: "the service is rate-limiting; retry later",
}


def api_error(
    *,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    method: str,
    path: str,
    redact: Redactor,
) -> DocsignAPIError:
    """Build the typed exception for an error response (the body is never put into logs above DEBUG).

    The service's error code is ``data.code``; the top-level ``code`` is often the tRPC wrapper's
    ``INTERNAL_SERVER_ERROR`` even on a 404 (real service behaviour), so it is only a fallback. Download
    routes answer ``{"error", "code"?}`` instead.
    """
    message: str | None = None
    error_code: str | None = None
    parsed: Any = None
    content_type = headers.get("content-type", "")
    if body and ("json" in content_type or body[:1] in (b"{", b"[")):
        try:
            parsed = json.loads(body.decode("utf-8", "replace"))
        except ValueError:
            parsed = None
    if isinstance(parsed, Mapping):
        data = parsed.get("data")
        if isinstance(data, Mapping) and isinstance(data.get("code"), str):
            error_code = data["code"]
        elif isinstance(parsed.get("code"), str):
            error_code = parsed["code"]
        if isinstance(parsed.get("message"), str):
            message = parsed["message"]
        elif isinstance(parsed.get("error"), str):
            message = parsed["error"]
        issues = parsed.get("issues")
        if isinstance(issues, list) and issues:
            details = []
            for issue in issues[:5]:
                if isinstance(issue, Mapping):
                    where = ".".join(str(p) for p in issue.get("path") or [])
                    details.append(f"{where}: {issue.get('message')}" if where else str(issue.get("message")))
            if details:
                message = f"{message or 'Input validation failed'} ({'; '.join(details)})"
    if not message:
        message = f"the service answered HTTP {status}"
    # The service's words may echo what someone typed (a title, a name): escaped, so that the message
    # can never break or forge a line of a log, a terminal or an e-mail (str.splitlines splits on NEL
    # and U+2028 too).
    message = printable(message, 2000)
    error_code = None if error_code is None else printable(error_code, 100)
    cls = _error_class(status)
    if status == 500 and error_code == "TOO_MANY_REQUESTS":
        # Real service (v2.17): a rate-limited download is answered 500 {"code": "TOO_MANY_REQUESTS"}
        # without Retry-After (recorded: ops/download_item.rate-limited.500.json). It is the limiter's
        # refusal, so it is a rate-limit error, retried like a 429.
        cls, status_hint = DocsignRateLimitError, _HINTS.get(429)
    else:
        status_hint = _HINTS.get(status)
    if status_hint:
        message = f"{message} ({status_hint})"
    kwargs: dict[str, Any] = {
        "status_code": status,
        "error_code": error_code,
        "method": method,
        "path": path,
        "request_id": headers.get("x-request-id"),
    }
    if cls is DocsignRateLimitError:
        return DocsignRateLimitError(
            redact(message), retry_after=parse_retry_after(headers.get("retry-after")), **kwargs
        )
    return cls(redact(message), **kwargs)


#: Recipient signing tokens and the signing URLs built from them are bearer credentials: anyone who
#: holds one can sign as that recipient. They are blanked even in DEBUG logs.
_SIGNING_TOKEN = re.compile(r'("token"\s*:\s*")[^"]*(")|(/sign/)[^"\s/?#]+')


def _blank_tokens(text: str) -> str:
    return _SIGNING_TOKEN.sub(lambda m: f"{m[1]}***{m[2]}" if m[1] else f"{m[3]}***", text)


def log_response_body(method: str, path: str, status: int, body: bytes, redact: Redactor) -> None:
    """Log an (error or JSON) response body at DEBUG only: it may hold signers' names and e-mails.

    The API key and every recipient signing token (and signing URL) are blanked first.
    """
    if log.isEnabledFor(logging.DEBUG):
        text = body[:2048].decode("utf-8", "replace")
        text = printable(_blank_tokens(redact(text)))  # JSON may hold a raw U+2028: one line, always
        log.debug("Docsign %s %s -> %s body: %s", method, path, status, text)
