"""``DocsignHook``: the only code in the provider that speaks HTTP to the signing service.

This module holds the connection, the pooled session and the one request loop; the endpoints are
mixins, one module per resource (``_envelopes``, ``_items``, ``_recipients``, ``_fields``,
``_folders``, ``_templates``, ``_attachments``, ``_async``), typed against :class:`~._protocol.HookCore`.

Sync methods use one pooled :class:`requests.Session`; the ``async_*`` methods (for the trigger) use
one :class:`httpx.AsyncClient` per event loop. Both build their requests from the same endpoint
definitions (:mod:`._endpoints`), parse with the same models, and follow the same retry policy
(:mod:`._http`):

* reads (GET, and ``POST /envelope/get-many``) are retried on connection errors, timeouts, 429 and
  502/503/504, with exponential backoff and jitter, honouring ``Retry-After``, bounded in attempts and
  total wait;
* writes are retried only when they provably did not take effect: a connection that could not be
  opened, or a 429/503 answered before processing (creates: 429 only);
* a write that timed out or lost its connection after sending raises
  :class:`~airflow_provider_docsign.exceptions.DocsignAmbiguousWriteError` and is never repeated.

Connection (type ``docsign``)
-----------------------------
* ``host``: the base URL ending in ``/api/v2``; empty means ``https://app.documenso.com/api/v2``; no
  scheme means https. In the JSON form give the whole URL::

      AIRFLOW_CONN_DOCSIGN_DEFAULT='{"conn_type": "docsign", "host": "http://127.0.0.1:8000/api/v2",
                                     "password": "api_...", "extra": {"timeout": 30}}'

  In the URI form, host, port and path map to host, port and schema; choose http with the ``scheme``
  extra::

      AIRFLOW_CONN_DOCSIGN_DEFAULT='docsign://:api_...@127.0.0.1:8000/api%2Fv2?scheme=http&timeout=30'

* ``port``: optional; the UI form shows it because Airflow 3.3.0-3.3.2's *Test* button refuses a
  connection stored without one (apache/airflow#73298). The scheme's default port (443, 80) or the
  base URL's own port changes nothing; a different port in the URL and the field is an error.
* ``password``: the team API key, sent as the ``Authorization`` header. It never appears in logs,
  exceptions or ``repr``.
* extras: ``timeout`` (seconds or ``[connect, read]``), ``verify`` (bool or CA bundle path),
  ``proxies`` (URL or ``{"https": url}``), ``max_retries``, ``backoff_factor``, ``max_retry_wait``,
  ``max_total_wait``, ``web_url`` (for links; default: the base URL without ``/api/v2``), ``scheme``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter

from airflow_provider_docsign import get_provider_info, metrics
from airflow_provider_docsign._compat import (
    BaseHook,
    aget_connection,
    amask_secret,
    get_connection,
    mask_secret,
)
from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignAPIError,
    DocsignAuthError,
    DocsignConnectionError,
    DocsignError,
    DocsignNotFoundError,
    DocsignRateLimitError,
)
from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._async import AsyncMethods
from airflow_provider_docsign.hooks._attachments import AttachmentMethods
from airflow_provider_docsign.hooks._endpoints import Call
from airflow_provider_docsign.hooks._envelopes import EnvelopeMethods
from airflow_provider_docsign.hooks._fields import FieldMethods
from airflow_provider_docsign.hooks._folders import FolderMethods
from airflow_provider_docsign.hooks._http import (
    CREATE,
    MAX_ERROR_BODY,
    OVERRIDE_NAMES,
    READ,
    USER_AGENT,
    RateLimit,
    Redactor,
    Settings,
    api_error,
    log_response_body,
    parse_http_date,
    parse_rate_limit,
    parse_retry_after,
    retryable_statuses,
    settings_from_connection,
)
from airflow_provider_docsign.hooks._items import ItemMethods
from airflow_provider_docsign.hooks._recipients import RecipientMethods
from airflow_provider_docsign.hooks._templates import TemplateMethods
from airflow_provider_docsign.hooks._transfer import multipart_body

if TYPE_CHECKING:
    import httpx

__all__ = ["DocsignHook"]

log = logging.getLogger(__name__)

#: Upper bound on pages followed by one listing call (100 items per page).
MAX_PAGES = 10_000


class _KeyAuth(requests.auth.AuthBase):
    """Adds ``Authorization: <key>`` to each request; its repr never shows the key."""

    def __init__(self, key: str) -> None:
        self._key = key

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = self._key
        return request

    def __repr__(self) -> str:
        return "<DocsignKeyAuth ***>"


def _nothing_sent(exc: BaseException) -> bool:
    """Whether a requests exception proves the request never reached the service."""
    if isinstance(exc, requests.exceptions.ConnectTimeout | requests.exceptions.SSLError):
        return True
    if isinstance(exc, requests.exceptions.ConnectionError):
        reason: Any = exc.args[0] if exc.args else None
        if isinstance(reason, urllib3.exceptions.MaxRetryError):
            reason = reason.reason
        return isinstance(
            reason, urllib3.exceptions.NewConnectionError | urllib3.exceptions.ConnectTimeoutError
        )
    return False


class DocsignHook(
    EnvelopeMethods,
    ItemMethods,
    RecipientMethods,
    FieldMethods,
    FolderMethods,
    TemplateMethods,
    AttachmentMethods,
    AsyncMethods,
    BaseHook,
):
    """Interact with a Documenso v2 (envelope API) signing service.

    The connection is looked up lazily, on first use, never in ``__init__``.

    :param docsign_conn_id: The Airflow connection id (type ``docsign``).
    :param overrides: Override connection settings: ``base_url``, ``api_key``, ``timeout``,
        ``verify``, ``proxies``, ``max_retries``, ``backoff_factor``, ``max_retry_wait``,
        ``max_total_wait``, ``web_url``, ``scheme``. With both ``base_url`` and ``api_key`` no
        connection is looked up at all.
    """

    conn_name_attr = "docsign_conn_id"
    default_conn_name = "docsign_default"
    conn_type = "docsign"
    hook_name = "Docsign (Documenso)"

    def __init__(self, docsign_conn_id: str = default_conn_name, **overrides: Any) -> None:
        super().__init__()
        unknown = sorted(set(overrides) - OVERRIDE_NAMES)
        if unknown:
            raise TypeError(f"DocsignHook got unexpected keyword arguments: {', '.join(unknown)}")
        self.docsign_conn_id = docsign_conn_id
        self._overrides = dict(overrides)
        self._sleep: Callable[[float], None] = time.sleep
        self._async_client: httpx.AsyncClient | None = None
        self._async_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        #: The rate-limit headers of the last answer (the trigger poller and the export pace on them).
        self.last_rate_limit: RateLimit | None = None
        #: The ``Date`` header of the last answer: the service's clock, never compared with Airflow's
        #: (the reminders operator measures "since this run started" on it).
        self.last_service_time: datetime | None = None
        #: Called before every sync request (the export's rate-limit pacing); ``None`` by default.
        self.before_request: Callable[[], object] | None = None
        #: Called after every sync answer with its status, rate-limit headers and ``Retry-After``
        #: seconds (the bulk operator's shared pacer); ``None`` by default. Threads sharing the hook
        #: each see their own answers here, unlike ``last_rate_limit``.
        self.after_response: Callable[[int, RateLimit | None, float | None], None] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(docsign_conn_id={self.docsign_conn_id!r})"

    # -- connection -------------------------------------------------------------------------------

    @property
    def _needs_connection(self) -> bool:
        return not (self._overrides.get("base_url") and self._overrides.get("api_key"))

    @cached_property
    def settings(self) -> Settings:
        """The parsed connection settings (looked up on first access, synchronously).

        Workers, the *Test* button, the CLI and Airflow 2.11 use this. Async code (triggers) awaits
        :meth:`asettings` instead: on Airflow 3 the triggerer has no database access, and only
        ``aget_connection`` finds a connection stored in the metadata database from there.
        """
        return self._settings_from(get_connection(self.docsign_conn_id) if self._needs_connection else None)

    async def asettings(self) -> Settings:
        """:attr:`settings`, looked up with ``aget_connection`` (for async code: the triggerer).

        The result is cached on the hook like :attr:`settings`, so the sync path then reuses it. On
        Airflow 2.11 (no ``aget_connection``) this is the sync look-up.
        """
        cached: Settings | None = self.__dict__.get("settings")
        if cached is not None:
            return cached
        conn = await aget_connection(self.docsign_conn_id) if self._needs_connection else None
        settings = self._settings_from(conn, mask=False)
        if settings.api_key:
            await amask_secret(settings.api_key)
        self.__dict__["settings"] = settings
        return settings

    def _settings_from(self, conn: Any, *, mask: bool = True) -> Settings:
        """Settings from a looked-up connection (``None``: the overrides alone), the key masked."""
        if conn is None:
            settings = settings_from_connection(
                host=None, port=None, schema=None, password=None, extras={}, overrides=self._overrides
            )
        else:
            settings = settings_from_connection(
                host=conn.host,
                port=conn.port,
                schema=conn.schema,
                password=conn.password,
                extras=conn.extra_dejson if conn.extra else {},
                overrides=self._overrides,
            )
        if mask and settings.api_key:
            mask_secret(settings.api_key)
        return settings

    @cached_property
    def _redact(self) -> Redactor:
        return Redactor(self.settings.api_key)

    @property
    def base_url(self) -> str:
        """The API base URL, ending in ``/api/v2``."""
        return self.settings.base_url

    @property
    def web_url(self) -> str:
        """The web app URL, for links to envelopes."""
        return self.settings.web_url

    @cached_property
    def session(self) -> requests.Session:
        """The pooled, authenticated :class:`requests.Session` (created on first use)."""
        settings = self.settings
        session = requests.Session()
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=16, max_retries=0)
        session.mount("https://", adapter)
        session.mount("http://", adapter)
        session.headers["User-Agent"] = USER_AGENT
        session.headers["Accept"] = "application/json"
        session.auth = _KeyAuth(settings.api_key)
        session.verify = settings.verify
        if settings.proxies:
            session.proxies.update(settings.proxies)
        session.trust_env = not settings.proxies
        return session

    def get_conn(self) -> requests.Session:
        """Return the pooled session (Airflow's hook convention)."""
        return self.session

    def close(self) -> None:
        """Close the pooled session (the async client is closed by :meth:`aclose`)."""
        if "session" in self.__dict__:
            self.__dict__.pop("session").close()

    def __enter__(self) -> DocsignHook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the request loop -------------------------------------------------------------------------

    def _url(self, call: Call) -> str:
        return self.settings.base_url + call.path

    def _ambiguous(self, call: Call, reason: str, external_id: str | None) -> DocsignAmbiguousWriteError:
        if call.path in ("/envelope/create", "/envelope/use"):
            if external_id:
                advice = (
                    f"do not simply retry: look it up first with "
                    f"find_envelopes_by_external_id({external_id!r}) (in the same folder)"
                )
            else:
                advice = "it cannot be looked up reliably because no external_id was given; check the web app"
            what = "the envelope may or may not have been created"
        else:
            advice = "read the resource back to check before writing again"
            what = f"the {call.what or 'write'} may or may not have taken effect"
        return DocsignAmbiguousWriteError(
            f"{call.method} {call.path}: {reason} after the request was sent, so {what}; {advice}.",
            method=call.method,
            path=call.path,
            external_id=external_id,
        )

    def _wait_or_raise(
        self, call: Call, attempt: int, waited: float, retry_after: float | None, error: Exception
    ) -> float:
        """Return the delay before the next attempt, or raise ``error`` if no retry is allowed."""
        policy = self.settings.retry
        if attempt > policy.max_retries:
            raise error
        if retry_after is not None and retry_after > policy.max_retry_wait:
            log.warning(
                "Docsign %s %s: the service asked to retry after %.0fs (more than max_retry_wait %.0fs); "
                "giving up",
                call.method,
                call.path,
                retry_after,
                policy.max_retry_wait,
            )
            raise error
        delay = policy.delay(attempt, retry_after)
        if waited + delay > policy.max_total_wait:
            raise error
        log.warning(
            "Docsign %s %s failed (%s); retry %d of %d in %.2fs%s",
            call.method,
            call.path,
            self._redact(str(error)),
            attempt,
            policy.max_retries,
            delay,
            " (honouring Retry-After)" if retry_after is not None else "",
        )
        return delay

    def _no_answer(self, call: Call, attempt: int, waited: float, reason: str, exc: Exception) -> float:
        """Turn a failed connection into :class:`DocsignConnectionError`: raise it, or return the delay."""
        error = DocsignConnectionError(
            f"{reason} ({type(exc).__name__}) reaching {self.settings.base_url}",
            method=call.method,
            path=call.path,
        )
        return self._wait_or_raise(call, attempt, waited, None, error)

    def _failed_answer(
        self,
        call: Call,
        attempt: int,
        waited: float,
        response: requests.Response | httpx.Response,
        body: bytes,
        external_id: str | None = None,
    ) -> float:
        """Turn a non-2xx answer into its typed error: raise it, or return the delay before a retry.

        :param body: The start of the error body (at most ``MAX_ERROR_BODY`` bytes), already logged.
        """
        status = response.status_code
        err = api_error(
            status=status,
            headers=response.headers,
            body=body,
            method=call.method,
            path=call.path,
            redact=self._redact,
        )
        limited = isinstance(err, DocsignRateLimitError)  # a 429, or the real service's 500 for one
        if call.kind == CREATE and status >= 500 and not limited:
            err.message += (
                f"; the outcome of this {call.what or 'create'} is unknown and it was not retried"
                + (
                    f": look it up by external_id {external_id!r} before creating again"
                    if external_id
                    else ""
                )
            )
            err.args = (err.message,)
        if status not in retryable_statuses(call.kind) and not limited:
            raise err
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        return self._wait_or_raise(call, attempt, waited, retry_after, err)

    def _send(
        self,
        call: Call,
        *,
        stream: bool = False,
        headers: Mapping[str, str] | None = None,
        external_id: str | None = None,
    ) -> requests.Response:
        """Send ``call`` with the retry policy; return a 2xx response or raise a typed error.

        Every request leaves through here (the async reads through ``_asend``): the call's strings are
        checked first (:func:`~._endpoints.check_outgoing`), and a multipart body is built from the
        checked ``call.payload`` and ``call.files`` only.
        """
        ep.check_outgoing(call)
        body = multipart_body(call.payload, call.files, call.names) if call.payload is not None else None
        url = self._url(call)
        waited = 0.0
        attempt = 0
        while True:
            attempt += 1
            kwargs: dict[str, Any] = {
                "params": call.params,
                "timeout": self.settings.timeout,
                "stream": stream,
                "allow_redirects": call.kind == READ,
                "headers": dict(headers or {}),
            }
            closer: Callable[[], None] | None = None
            if body is not None:
                data, extra_headers, closer = body()
                kwargs["data"] = data
                kwargs["headers"].update(extra_headers)
            elif call.json is not None:
                kwargs["json"] = call.json
            log.debug("Docsign %s %s (attempt %d)", call.method, call.path, attempt)
            if self.before_request is not None:
                paced = time.monotonic()
                self.before_request()
                metrics.rate_window_wait(self.docsign_conn_id, time.monotonic() - paced, "pacer")
            try:
                response = self.session.request(call.method, url, **kwargs)
            except requests.exceptions.RequestException as exc:
                sent_nothing = _nothing_sent(exc)
                reason = (
                    "timed out" if isinstance(exc, requests.exceptions.Timeout) else "the connection failed"
                )
                metrics.request(self.docsign_conn_id, call.what, None)
                if call.kind != READ and not sent_nothing:
                    raise self._ambiguous(call, reason, external_id) from None
                delay = self._no_answer(call, attempt, waited, reason, exc)
                metrics.retry(self.docsign_conn_id, call.what, delay)
                self._sleep(delay)
                waited += delay
                continue
            finally:
                if closer is not None:
                    closer()
            status = response.status_code
            metrics.request(self.docsign_conn_id, call.what, status)
            rate_limit = parse_rate_limit(response.headers)
            self.last_rate_limit = rate_limit or self.last_rate_limit
            self.last_service_time = parse_http_date(response.headers.get("date")) or self.last_service_time
            if self.after_response is not None:
                self.after_response(
                    status, rate_limit, parse_retry_after(response.headers.get("retry-after"))
                )
            log.debug(
                "Docsign %s %s -> %s (request id %s)",
                call.method,
                call.path,
                status,
                response.headers.get("x-request-id"),
            )
            if 200 <= status < 300:
                return response
            try:
                raw = response.raw.read(MAX_ERROR_BODY, decode_content=True) if stream else response.content
            except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError):
                raw = b""
            finally:
                response.close()
            raw = raw[:MAX_ERROR_BODY]
            log_response_body(call.method, call.path, status, raw, self._redact)
            delay = self._failed_answer(call, attempt, waited, response, raw, external_id)
            metrics.retry(self.docsign_conn_id, call.what, delay)
            self._sleep(delay)
            waited += delay

    def _json(self, response: requests.Response, call: Call, external_id: str | None = None) -> Any:
        """Read a 2xx JSON body; a lost body after a write is an ambiguous write."""
        try:
            content = response.content
        except requests.exceptions.RequestException:
            if call.kind == READ:
                raise DocsignConnectionError(
                    "the connection was lost while reading the answer",
                    method=call.method,
                    path=call.path,
                ) from None
            raise self._ambiguous(call, "the answer was lost", external_id) from None
        finally:
            response.close()
        log_response_body(call.method, call.path, response.status_code, content, self._redact)
        try:
            return json.loads(content) if content else {}
        except ValueError:
            raise DocsignAPIError(
                f"the service answered {call.what or call.path} with a body that is not JSON "
                f"(Content-Type {response.headers.get('content-type')!r}); is the base URL "
                f"{self.settings.base_url} right?",
                status_code=response.status_code,
                method=call.method,
                path=call.path,
                request_id=response.headers.get("x-request-id"),
            ) from None

    def _call(self, call: Call) -> Any:
        return self._json(self._send(call), call)

    def _pages(self, make: Callable[[int], Call]) -> Iterator[Any]:
        page = 1
        while page <= MAX_PAGES:
            items, total = ep.page_items(self._call(make(page)))
            yield from items
            if not items or page >= total:
                return
            page += 1

    # -- connection test and UI -------------------------------------------------------------------

    def test_connection(self) -> tuple[bool, str]:
        """Make one cheap authenticated call; say whether the key or the URL is wrong."""
        try:
            settings = self.settings
        except DocsignError as exc:
            return False, f"The connection is misconfigured: {exc}"
        if not settings.api_key:
            return False, "No API key: put the team API key in the connection's password field."
        call = ep.find_envelopes(page=1, per_page=1)
        try:
            body = self._call(call)
        except DocsignAuthError as exc:
            return False, (
                f"The service at {settings.base_url} refused the API key (HTTP {exc.status_code}): "
                "check the connection's password."
            )
        except DocsignNotFoundError:
            return False, (
                f"No Documenso v2 API at {settings.base_url} (HTTP 404): check the host; "
                "it must be the base URL ending in /api/v2."
            )
        except DocsignConnectionError as exc:
            return (
                False,
                f"Cannot reach {settings.base_url} ({exc.message}): check the host, port and scheme.",
            )
        except DocsignError as exc:
            return False, f"The service at {settings.base_url} answered with an error: {exc}"
        if not isinstance(body, Mapping) or "data" not in body:
            return False, f"{settings.base_url} answered, but not like the Documenso v2 API: check the URL."
        return True, f"Connected to {settings.base_url}; the API key is valid."

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Connection form layout for the Airflow 2.x UI: the one ``get_provider_info`` declares for 3.2+."""
        behaviour = get_provider_info()["connection-types"][0]["ui-field-behaviour"]
        return {
            "hidden_fields": behaviour["hidden-fields"],
            "relabeling": behaviour["relabeling"],
            "placeholders": behaviour["placeholders"],
        }

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """Extra connection form fields for the Airflow 2.x UI ({} where Flask-AppBuilder is absent)."""
        try:
            from flask_appbuilder.fieldwidgets import (  # type: ignore[import-not-found]
                BS3PasswordFieldWidget,
                BS3TextFieldWidget,
            )
            from flask_babel import lazy_gettext  # type: ignore[import-not-found]
            from wtforms import BooleanField, PasswordField, StringField  # type: ignore[import-untyped]
        except ImportError:
            return {}
        return {
            "timeout": StringField(
                lazy_gettext("Timeout (seconds)"),
                widget=BS3TextFieldWidget(),
                description="Seconds, or [connect, read] (default [10, 60]).",
            ),
            "verify": BooleanField(lazy_gettext("Verify TLS"), default=True),
            "web_url": StringField(
                lazy_gettext("Web app URL"),
                widget=BS3TextFieldWidget(),
                description="For links to envelopes (default: the base URL without /api/v2).",
            ),
            "signing_certificate_fingerprints": StringField(
                lazy_gettext("Signing certificate fingerprints"),
                widget=BS3TextFieldWidget(),
                description="SHA-256 fingerprints (comma-separated) of the instance's sealing certificate.",
            ),
            "pii_hash_key": PasswordField(
                lazy_gettext("PII hash key"),
                widget=BS3PasswordFieldWidget(),
                description="Secret key of the contract-data export's pii='hash' mode.",
            ),
        }

    # -- async path (trigger) ---------------------------------------------------------------------
