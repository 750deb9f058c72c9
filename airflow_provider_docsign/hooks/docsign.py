"""``DocsignHook``: the only code in the provider that speaks HTTP to the signing service.

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
import functools
import json
import logging
import os
import ssl
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter

from airflow_provider_docsign import __version__, get_provider_info
from airflow_provider_docsign._compat import BaseHook, get_connection
from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignAPIError,
    DocsignAuthError,
    DocsignConnectionError,
    DocsignError,
    DocsignNotFoundError,
    DocsignValidationError,
)
from airflow_provider_docsign.expiry import DEFAULT as DEFAULT_PERIOD
from airflow_provider_docsign.expiry import merge_meta
from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._endpoints import Call
from airflow_provider_docsign.hooks._http import (
    CREATE,
    MAX_ERROR_BODY,
    OVERRIDE_NAMES,
    READ,
    RateLimit,
    Redactor,
    Settings,
    api_error,
    log_response_body,
    parse_rate_limit,
    parse_retry_after,
    retryable_statuses,
    settings_from_connection,
)
from airflow_provider_docsign.hooks._io import make_sink
from airflow_provider_docsign.hooks._templates import TemplateMethods
from airflow_provider_docsign.hooks._transfer import multipart_body, stream_download
from airflow_provider_docsign.models import (
    DownloadResult,
    Envelope,
    EnvelopeItem,
    EnvelopeStatus,
    EnvelopeSummary,
    Field,
    Folder,
    Recipient,
)
from airflow_provider_docsign.payloads import (
    ItemPages,
    check_files_only,
    control_character_problems,
    count_pdf_pages,
    validate_create_payload,
    validate_fields_for_envelope,
    validate_recipients_for_envelope,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["DocsignHook"]

log = logging.getLogger(__name__)

USER_AGENT = f"airflow-provider-docsign/{__version__}"
#: Upper bound on pages followed by one listing call (100 items per page).
MAX_PAGES = 10_000
_POSITION_KEYS = ("page", "positionX", "positionY")
_CAMEL = {
    "external_id": "externalId",
    "folder_id": "folderId",
    "parent_id": "parentId",
    "global_access_auth": "globalAccessAuth",
    "global_action_auth": "globalActionAuth",
    "template_type": "templateType",
}


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


def _camel(changes: Mapping[str, Any]) -> dict[str, Any]:
    return {_CAMEL.get(k, k): v for k, v in changes.items()}


@functools.lru_cache(maxsize=8)
def _shared_ssl_context(verify: bool | str) -> ssl.SSLContext | bool:
    """One TLS context per ``verify`` setting for the whole process, shared by every async client.

    Building a context loads the CA bundle (about 50 ms of CPU); a triggerer running 1,000
    DocsignEnvelopeTriggers, each with its own hook, would otherwise block its event loop for about a
    minute (measured in ``bench/bench_waiting.py``). An ``SSLContext`` is safe to share between clients.
    """
    if verify is False:
        return False
    import httpx

    create = getattr(httpx, "create_ssl_context", None)  # public from httpx 0.28
    if create is not None:
        return create(verify=verify)  # type: ignore[no-any-return]
    import certifi

    if isinstance(verify, str) and os.path.isdir(verify):
        return ssl.create_default_context(capath=verify)
    return ssl.create_default_context(cafile=verify if isinstance(verify, str) else certifi.where())


class DocsignHook(TemplateMethods, BaseHook):
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
        #: Called before every sync request (the export's rate-limit pacing); ``None`` by default.
        self.before_request: Callable[[], None] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(docsign_conn_id={self.docsign_conn_id!r})"

    # -- connection -------------------------------------------------------------------------------

    @cached_property
    def settings(self) -> Settings:
        """The parsed connection settings (looked up on first access)."""
        if self._overrides.get("base_url") and self._overrides.get("api_key"):
            settings = settings_from_connection(
                host=None, port=None, schema=None, password=None, extras={}, overrides=self._overrides
            )
        else:
            conn = get_connection(self.docsign_conn_id)
            extras = conn.extra_dejson if conn.extra else {}
            settings = settings_from_connection(
                host=conn.host,
                port=conn.port,
                schema=conn.schema,
                password=conn.password,
                extras=extras,
                overrides=self._overrides,
            )
        if settings.api_key:
            try:
                from airflow_provider_docsign._compat import mask_secret

                mask_secret(settings.api_key)
            except ImportError:  # pragma: no cover
                pass
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
        if call.kind == CREATE and status >= 500:
            err.message += (
                f"; the outcome of this {call.what or 'create'} is unknown and it was not retried"
                + (
                    f": look it up by external_id {external_id!r} before creating again"
                    if external_id
                    else ""
                )
            )
            err.args = (err.message,)
        if status not in retryable_statuses(call.kind):
            raise err
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        return self._wait_or_raise(call, attempt, waited, retry_after, err)

    def _send(
        self,
        call: Call,
        *,
        body: Callable[[], tuple[Any, dict[str, str], Callable[[], None]]] | None = None,
        stream: bool = False,
        headers: Mapping[str, str] | None = None,
        external_id: str | None = None,
    ) -> requests.Response:
        """Send ``call`` with the retry policy; return a 2xx response or raise a typed error."""
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
                self.before_request()
            try:
                response = self.session.request(call.method, url, **kwargs)
            except requests.exceptions.RequestException as exc:
                sent_nothing = _nothing_sent(exc)
                reason = (
                    "timed out" if isinstance(exc, requests.exceptions.Timeout) else "the connection failed"
                )
                if call.kind != READ and not sent_nothing:
                    raise self._ambiguous(call, reason, external_id) from None
                delay = self._no_answer(call, attempt, waited, reason, exc)
                self._sleep(delay)
                waited += delay
                continue
            finally:
                if closer is not None:
                    closer()
            status = response.status_code
            self.last_rate_limit = parse_rate_limit(response.headers) or self.last_rate_limit
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

    # -- multipart upload -------------------------------------------------------------------------

    # -- envelopes --------------------------------------------------------------------------------

    def create_envelope(
        self,
        *,
        title: str,
        files: Sequence[Any],
        recipients: Sequence[Mapping[str, Any]] | None = None,
        external_id: str | None = None,
        meta: Mapping[str, Any] | None = None,
        folder_id: str | None = None,
        envelope_type: str = "DOCUMENT",
        expiration_period: Any = DEFAULT_PERIOD,
        reminders: Any = DEFAULT_PERIOD,
        **payload_extra: Any,
    ) -> str:
        """Create a draft envelope from PDFs in one streaming multipart request; return its id.

        Everything is validated locally first (see
        :func:`~airflow_provider_docsign.payloads.validate_create_payload`); on a problem nothing is
        sent. A create is never retried after it may have reached the service.

        :param title: The envelope title (1-255 characters).
        :param files: The PDFs, in order: local paths, binary file objects or ``ObjectStoragePath``.
            ``field.identifier`` is the zero-based index into this list.
        :param recipients: Recipients in the service's shape, with nested ``fields``.
        :param external_id: Your own reference; lets you find the envelope after an ambiguous create.
        :param meta: Document meta in the service's shape (``subject``, ``message``, ``timezone``, ...).
        :param folder_id: Create the envelope in this folder.
        :param envelope_type: ``DOCUMENT`` or ``TEMPLATE``.
        :param expiration_period: How long signing links stay valid after sending: ``"14d"``, ``"2w"``,
            ``"1m"``, ``"1y"``, ``{"unit": "day", "amount": 14}``, or ``None`` for never; sent as
            ``meta.envelopeExpirationPeriod``. Default: leave it to the team's setting (3 months).
        :param reminders: Automatic reminders, ``{"send_after": "3d", "repeat_every": "2d"}`` or
            ``None`` for none; sent as ``meta.reminderSettings``. Default: the team's setting.
        :param payload_extra: Other payload keys, passed unchanged (e.g. ``visibility``, ``formValues``).
        """
        meta = merge_meta(meta, expiration_period, reminders)
        sources = list(files) if not isinstance(files, str | bytes | os.PathLike) else [files]
        payload, pdfs = validate_create_payload(
            title=title,
            files=sources,
            recipients=recipients,
            external_id=external_id,
            meta=meta,
            folder_id=folder_id,
            envelope_type=envelope_type,
            payload_extra=payload_extra,
        )
        call = ep.create_envelope()
        response = self._send(
            call, body=multipart_body(payload, sources, [p.name for p in pdfs]), external_id=external_id
        )
        body = self._json(response, call, external_id)
        if not isinstance(body, Mapping) or not body.get("id"):
            raise self._ambiguous(call, "the answer had no envelope id", external_id)
        envelope_id = str(body["id"])
        log.info("Created Docsign envelope %s with %d file(s)", envelope_id, len(pdfs))
        return envelope_id

    def get_envelope(self, envelope_id: str) -> Envelope:
        """Return the full envelope (items sorted by ``order``, recipients, fields).

        :param envelope_id: The envelope id.
        """
        return ep.parse_envelope(self._call(ep.get_envelope(envelope_id)))

    def get_envelopes(self, envelope_ids: Iterable[str]) -> list[Envelope]:
        """Return many envelopes, 20 ids per request, in the order asked; unknown ids are left out.

        :param envelope_ids: Envelope ids.
        """
        ids = list(dict.fromkeys(envelope_ids))
        result: list[Envelope] = []
        for start in range(0, len(ids), ep.GET_MANY_BATCH):
            batch = ids[start : start + ep.GET_MANY_BATCH]
            result.extend(ep.parse_envelopes_in_order(self._call(ep.get_many(batch)), batch))
        return result

    def find_envelopes(
        self,
        *,
        query: str | None = None,
        status: str | EnvelopeStatus | None = None,
        folder_id: str | None = None,
        envelope_type: str | None = None,
    ) -> Iterator[EnvelopeSummary]:
        """Iterate over matching envelopes, following every page (100 per page).

        Note (real service): without ``folder_id`` only envelopes at the root are listed, and
        ``query`` is a case-insensitive substring match over title, externalId and recipients.

        :param query: Search text.
        :param status: Only envelopes with this status.
        :param folder_id: Only envelopes in this folder.
        :param envelope_type: ``DOCUMENT`` or ``TEMPLATE``.
        """
        status_value = status.value if isinstance(status, EnvelopeStatus) else status
        if status_value is not None and status_value not in {s.value for s in EnvelopeStatus}:
            raise DocsignValidationError([f"unknown status {status_value!r}"], "find_envelopes")
        for data in self._pages(
            lambda page: ep.find_envelopes(
                page=page, query=query, status=status_value, folder_id=folder_id, envelope_type=envelope_type
            )
        ):
            yield EnvelopeSummary.from_json(data)

    def find_envelopes_by_external_id(
        self, external_id: str, *, folder_id: str | None = None
    ) -> list[EnvelopeSummary]:
        """Return the envelopes whose ``externalId`` equals ``external_id`` exactly.

        The service only offers a substring search (and only sees the root without ``folder_id``), so
        the results are filtered to exact matches. ``externalId`` is not unique: expect 0, 1 or more.

        :param external_id: The external id to look for.
        :param folder_id: The folder the envelope was created in (``None``: the root).
        """
        if not isinstance(external_id, str) or not external_id.strip():
            raise DocsignValidationError(
                ["external_id must be a non-empty string"], "find_envelopes_by_external_id"
            )
        wanted = external_id.strip()  # the service trims externalId on create
        return [e for e in self.find_envelopes(query=wanted, folder_id=folder_id) if e.external_id == wanted]

    def update_envelope(
        self,
        envelope_id: str,
        *,
        data: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        **changes: Any,
    ) -> EnvelopeSummary:
        """Change an envelope's title, externalId, folder, visibility or meta.

        :param envelope_id: The envelope id.
        :param data: Changes in the service's shape (``title``, ``externalId``, ``folderId``, ...).
        :param meta: Meta changes in the service's shape.
        :param changes: The same as ``data`` with snake_case names (``title=``, ``external_id=``,
            ``folder_id=`` where ``None`` moves to the root).
        """
        merged = dict(data or {})
        merged.update(_camel(changes))
        problems: list[str] = []
        for key in ("title", "externalId"):
            value = merged.get(key)
            if (
                key in merged
                and value is not None
                and (not isinstance(value, str) or len(value.strip()) > 255)
            ):
                problems.append(f"{key} must be a string of at most 255 characters")
        if "title" in merged and not (isinstance(merged["title"], str) and merged["title"].strip()):
            problems.append("title must not be empty")
        if not merged and not meta:
            problems.append("nothing to update: give data, meta or keyword changes")
        problems.extend(control_character_problems(merged, "data") + control_character_problems(meta, "meta"))
        if problems:
            raise DocsignValidationError(problems, "update_envelope")
        return EnvelopeSummary.from_json(self._call(ep.update_envelope(envelope_id, merged, meta)))

    def delete_envelope(self, envelope_id: str) -> None:
        """Delete an envelope (drafts and pending ones are removed; finished ones are soft-deleted).

        :param envelope_id: The envelope id.
        """
        self._call(ep.delete_envelope(envelope_id))

    def distribute_envelope(
        self, envelope_id: str, *, meta: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Send a draft to its recipients (DRAFT -> PENDING); return the raw answer.

        The answer lists every recipient with its ``signingUrl`` (sensitive: treat it as a secret).
        Note (real service): an unknown or completed envelope answers HTTP 500, not 404.

        :param envelope_id: The envelope id.
        :param meta: Meta to save before sending (``subject``, ``message``, ...).
        """
        body = self._call(ep.distribute_envelope(envelope_id, meta))
        return dict(body) if isinstance(body, Mapping) else {"response": body}

    def redistribute_envelope(self, envelope_id: str, recipient_ids: Sequence[int]) -> dict[str, Any]:
        """Re-send the signing request to some recipients of a pending envelope; return the raw answer.

        :param envelope_id: The envelope id.
        :param recipient_ids: Recipient ids to remind.
        """
        body = self._call(ep.redistribute_envelope(envelope_id, recipient_ids))
        return dict(body) if isinstance(body, Mapping) else {"response": body}

    def cancel_envelope(self, envelope_id: str, *, reason: str | None = None) -> None:
        """Cancel a pending envelope (PENDING -> CANCELLED).

        :param envelope_id: The envelope id.
        :param reason: Why, recorded in the audit log.
        """
        self._call(ep.cancel_envelope(envelope_id, reason))

    def get_audit_log(self, envelope_id: str) -> Iterator[dict[str, Any]]:
        """Iterate over the envelope's audit log entries (every page, newest first).

        :param envelope_id: The envelope id.
        """
        for entry in self._pages(lambda page: ep.audit_log(envelope_id, page=page)):
            yield dict(entry)

    # -- items ------------------------------------------------------------------------------------

    def add_envelope_items(self, envelope_id: str, files: Sequence[Any]) -> list[EnvelopeItem]:
        """Add PDFs to a draft envelope (one streaming multipart request); return the new items.

        :param envelope_id: The envelope id.
        :param files: The PDFs: local paths, binary file objects or ``ObjectStoragePath``.
        """
        ep.check_str_id(envelope_id, "envelope_id")
        sources = list(files) if not isinstance(files, str | bytes | os.PathLike) else [files]
        pdfs = check_files_only(sources, "add_envelope_items request")
        call = ep.create_items()
        response = self._send(
            call, body=multipart_body({"envelopeId": envelope_id}, sources, [p.name for p in pdfs])
        )
        body = self._json(response, call)
        items = [EnvelopeItem.from_json(i) for i in (body or {}).get("data") or []]
        return sorted(items, key=lambda i: (i.order or 0, i.id))

    def update_envelope_items(
        self, envelope_id: str, items: Sequence[Mapping[str, Any]]
    ) -> list[EnvelopeItem]:
        """Rename and/or reorder items, then read the envelope back and check the change was applied.

        :param envelope_id: The envelope id.
        :param items: ``[{"envelopeItemId": ..., "title": ..., "order": ...}]`` (title and order optional).
        :return: All the envelope's items after the update, sorted by ``order``.
        :raises DocsignAPIError: if the service answered 200 but did not apply a requested change.
        """
        problems: list[str] = []
        if isinstance(items, Mapping) or not isinstance(items, Sequence) or not items:
            raise DocsignValidationError(["items must be a non-empty list"], "update_envelope_items")
        for index, item in enumerate(items):
            where = f"item #{index}"
            if not isinstance(item, Mapping):
                problems.append(f"{where}: must be an object")
                continue
            if not isinstance(item.get("envelopeItemId"), str) or not item["envelopeItemId"]:
                problems.append(f"{where}: envelopeItemId is required")
            if "title" not in item and "order" not in item:
                problems.append(f"{where}: give a title and/or an order")
            title = item.get("title")
            if "title" in item and (not isinstance(title, str) or not title.strip() or len(title) > 255):
                problems.append(f"{where}: title must be 1-255 characters")
            order = item.get("order")
            if "order" in item and (not isinstance(order, int) or isinstance(order, bool) or order < 1):
                problems.append(f"{where}: order must be an integer >= 1")
            problems.extend(control_character_problems(dict(item), f"items[{index}]"))
        if problems:
            raise DocsignValidationError(problems, "update_envelope_items")
        call = ep.update_items(envelope_id, items)
        self._call(call)
        envelope = self.get_envelope(envelope_id)
        by_id = {i.id: i for i in envelope.items}
        not_applied = []
        for item in items:
            current = by_id.get(item["envelopeItemId"])
            if current is None:
                not_applied.append(f"{item['envelopeItemId']} is not an item of the envelope")
                continue
            if "title" in item and current.title != item["title"].strip():
                not_applied.append(f"{current.id} title is {current.title!r}, not {item['title']!r}")
            if "order" in item and current.order != item["order"]:
                not_applied.append(f"{current.id} order is {current.order}, not {item['order']}")
        if not_applied:
            raise DocsignAPIError(
                "the service accepted the item update but did not apply it: " + "; ".join(not_applied),
                status_code=200,
                error_code="NOT_APPLIED",
                method=call.method,
                path=call.path,
            )
        return list(envelope.items)

    def delete_envelope_item(self, envelope_id: str, envelope_item_id: str) -> None:
        """Delete an item (and its fields) from a draft envelope.

        :param envelope_id: The envelope id.
        :param envelope_item_id: The item id.
        """
        self._call(ep.delete_item(envelope_id, envelope_item_id))

    def _download(
        self, call: Call, destination: Any, *, overwrite: bool, fallback_name: str
    ) -> DownloadResult:
        sink = make_sink(destination, overwrite=overwrite)
        response = self._send(
            call, stream=True, headers={"Accept": "application/pdf", "Accept-Encoding": "identity"}
        )
        return stream_download(response, call, sink, fallback_name=fallback_name)

    def download_envelope_item(
        self, envelope_item_id: str, destination: Any, *, version: str = "signed", overwrite: bool = True
    ) -> DownloadResult:
        """Stream one item's PDF to ``destination``, verified and atomically written.

        Note (real service): ``version="signed"`` on an envelope that is not COMPLETED returns the
        uploaded PDF with status 200; check the envelope status before treating it as signed.

        :param envelope_item_id: The item id.
        :param destination: A file path, an existing directory (the service's file name is used), an
            ``ObjectStoragePath`` (file or directory) or a binary file object.
        :param version: ``signed`` (default), ``original`` or ``pending``.
        :param overwrite: Whether an existing file may be replaced (atomically, after verification).
        """
        call = ep.download_item(envelope_item_id, version)
        return self._download(call, destination, overwrite=overwrite, fallback_name=f"{envelope_item_id}.pdf")

    def download_audit_log(
        self, envelope_id: str, destination: Any, *, overwrite: bool = True
    ) -> DownloadResult:
        """Stream the envelope's audit log PDF to ``destination`` (see :meth:`download_envelope_item`).

        :param envelope_id: The envelope id.
        :param destination: Where to write (path, directory, ``ObjectStoragePath`` or binary file).
        :param overwrite: Whether an existing file may be replaced.
        """
        call = ep.download_audit_log(envelope_id)
        return self._download(
            call, destination, overwrite=overwrite, fallback_name=f"{envelope_id}_audit-log.pdf"
        )

    def download_certificate(
        self, envelope_id: str, destination: Any, *, overwrite: bool = True
    ) -> DownloadResult:
        """Stream the signing certificate PDF (COMPLETED or REJECTED envelopes) to ``destination``.

        Note (real service): before completion this answers HTTP 500 ``DOCUMENT_NOT_COMPLETE``.

        :param envelope_id: The envelope id.
        :param destination: Where to write (path, directory, ``ObjectStoragePath`` or binary file).
        :param overwrite: Whether an existing file may be replaced.
        """
        call = ep.download_certificate(envelope_id)
        return self._download(
            call, destination, overwrite=overwrite, fallback_name=f"{envelope_id}_certificate.pdf"
        )

    def _item_page_count(self, envelope_item_id: str) -> int:
        """Count an existing item's pages by streaming its original PDF to a temporary file."""
        with tempfile.TemporaryFile(prefix="docsign-pages-") as tmp:
            self.download_envelope_item(envelope_item_id, tmp, version="original")
            tmp.seek(0)
            return count_pdf_pages(tmp)

    # -- recipients -------------------------------------------------------------------------------

    def get_recipient(self, recipient_id: int) -> Recipient:
        """Return a recipient, with its fields.

        :param recipient_id: The recipient id.
        """
        return Recipient.from_json(self._call(ep.get_recipient(recipient_id)))

    def create_recipients(self, envelope_id: str, recipients: Sequence[Mapping[str, Any]]) -> list[Recipient]:
        """Add recipients to an envelope (fields are added separately with :meth:`create_fields`).

        :param envelope_id: The envelope id.
        :param recipients: ``[{"email", "name", "role", "signingOrder"?}]`` in the service's shape.
        """
        data = validate_recipients_for_envelope(recipients)
        body = self._call(ep.create_recipients(envelope_id, data))
        return [Recipient.from_json(r) for r in (body or {}).get("data") or []]

    def update_recipients(self, envelope_id: str, recipients: Sequence[Mapping[str, Any]]) -> list[Recipient]:
        """Change recipients (by ``id``). Note: the service resets their send and signing status.

        :param envelope_id: The envelope id.
        :param recipients: ``[{"id", "email"?, "name"?, "role"?, ...}]`` in the service's shape.
        """
        data = validate_recipients_for_envelope(recipients, context="update_recipients request", update=True)
        body = self._call(ep.update_recipients(envelope_id, data))
        return [Recipient.from_json(r) for r in (body or {}).get("data") or []]

    def delete_recipient(self, recipient_id: int) -> None:
        """Remove a recipient who has not interacted yet.

        :param recipient_id: The recipient id.
        """
        self._call(ep.delete_recipient(recipient_id))

    def reject_recipient(self, recipient_id: int, *, envelope_id: str, reason: str) -> Recipient:
        """Record an external rejection by a recipient of a pending envelope (it then becomes REJECTED).

        :param recipient_id: The recipient id.
        :param envelope_id: The envelope id.
        :param reason: Why the recipient rejected.
        """
        return Recipient.from_json(self._call(ep.reject_recipient(recipient_id, envelope_id, reason)))

    # -- fields -----------------------------------------------------------------------------------

    def get_field(self, field_id: int) -> Field:
        """Return a field (coordinates as floats).

        :param field_id: The field id.
        """
        return Field.from_json(self._call(ep.get_field(field_id)))

    def _item_pages(
        self, envelope: Envelope, fields: Sequence[Mapping[str, Any]], page_counts: Mapping[str, int] | None
    ) -> list[ItemPages]:
        """The envelope's items with page counts, fetched only for items that a field puts beyond page 1."""
        counts = dict(page_counts or {})
        first = envelope.items[0].id if envelope.items else None
        known = {i.id for i in envelope.items}
        for field in fields:
            if not isinstance(field, Mapping):
                continue
            page = field.get("page")
            item_id = field.get("envelopeItemId") or first
            if (
                isinstance(page, int)
                and not isinstance(page, bool)
                and page > 1
                and item_id in known
                and item_id not in counts
            ):
                counts[item_id] = self._item_page_count(item_id)
        return [ItemPages(id=i.id, title=i.title, page_count=counts.get(i.id)) for i in envelope.items]

    def create_fields(
        self,
        envelope_id: str,
        fields: Sequence[Mapping[str, Any]],
        *,
        page_counts: Mapping[str, int] | None = None,
    ) -> list[Field]:
        """Place fields on an envelope's items, checked first against its current items and recipients.

        To check ``page``, the page count of each item a field puts beyond page 1 is read from
        ``page_counts`` or, if missing, by streaming that item's original PDF to a temporary file.

        :param envelope_id: The envelope id.
        :param fields: ``[{"recipientId", "envelopeItemId"?, "type", "page", "positionX", "positionY",
            "width", "height", "fieldMeta"?}]`` in the service's shape.
        :param page_counts: Known page counts by envelope item id (saves the downloads).
        """
        envelope = self.get_envelope(envelope_id)
        items = self._item_pages(envelope, fields, page_counts)
        data = validate_fields_for_envelope(
            fields, items=items, recipients={r.id: r for r in envelope.recipients}
        )
        body = self._call(ep.create_fields(envelope_id, data))
        return [Field.from_json(f) for f in (body or {}).get("data") or []]

    def update_fields(
        self,
        envelope_id: str,
        fields: Sequence[Mapping[str, Any]],
        *,
        page_counts: Mapping[str, int] | None = None,
    ) -> list[Field]:
        """Change fields; a change of page or position deletes the field and creates it again.

        Documenso v2.17 silently ignores ``page``, ``positionX`` and ``positionY`` on update (the route
        passes names its service does not read), so those changes are made by creating a new field with
        the merged values and then deleting the old one. The returned list has one field per input, in
        order; a recreated field has a **new id**.

        :param envelope_id: The envelope id.
        :param fields: ``[{"id", "type"?, "page"?, "positionX"?, "positionY"?, "width"?, "height"?,
            "fieldMeta"?, "envelopeItemId"?}]`` in the service's shape.
        :param page_counts: Known page counts by envelope item id (saves the downloads).
        """
        if isinstance(fields, Mapping) or not isinstance(fields, Sequence) or not fields:
            raise DocsignValidationError(["fields must be a non-empty list"], "update_fields request")
        envelope = self.get_envelope(envelope_id)
        current = {f.id: f for f in envelope.fields}
        problems: list[str] = []
        merged: list[dict[str, Any]] = []
        for index, spec in enumerate(fields):
            fid = spec.get("id") if isinstance(spec, Mapping) else None
            if not isinstance(fid, int) or isinstance(fid, bool) or fid not in current:
                problems.append(f"field #{index}: id {fid!r} is not a field of envelope {envelope_id}")
                continue
            cur = current[fid]
            merged.append(
                {
                    "recipientId": cur.recipient_id,
                    "envelopeItemId": spec.get("envelopeItemId", cur.envelope_item_id),
                    "type": spec.get("type", cur.type),
                    "page": spec.get("page", cur.page),
                    "positionX": spec.get("positionX", cur.position_x),
                    "positionY": spec.get("positionY", cur.position_y),
                    "width": spec.get("width", cur.width),
                    "height": spec.get("height", cur.height),
                    **({"fieldMeta": spec["fieldMeta"]} if spec.get("fieldMeta") is not None else {}),
                }
            )
        if problems:
            raise DocsignValidationError(problems, "update_fields request")
        items = self._item_pages(envelope, merged, page_counts)
        validate_fields_for_envelope(
            merged,
            items=items,
            recipients={r.id: r for r in envelope.recipients},
            context="update_fields request",
        )
        plain: list[dict[str, Any]] = []
        moves: list[tuple[int, dict[str, Any]]] = []
        for spec, new in zip(fields, merged, strict=True):
            cur = current[spec["id"]]
            moved = (new["page"], float(new["positionX"]), float(new["positionY"])) != (
                cur.page,
                cur.position_x,
                cur.position_y,
            )
            if moved:
                if cur.field_meta is not None and "fieldMeta" not in new and new["type"] == cur.type:
                    new["fieldMeta"] = cur.field_meta
                moves.append((cur.id, new))
            else:
                plain.append(
                    {"type": new["type"], **{k: v for k, v in spec.items() if k not in _POSITION_KEYS}}
                )
        result: dict[int, Field] = {}
        if plain:
            body = self._call(ep.update_fields(envelope_id, plain))
            for data in (body or {}).get("data") or []:
                parsed = Field.from_json(data)
                result[parsed.id] = parsed
        for old_id, new in moves:
            created = self._call(ep.create_fields(envelope_id, [new]))
            new_field = Field.from_json(((created or {}).get("data") or [])[0])
            try:
                self._call(ep.delete_field(old_id))
            except DocsignError as exc:
                raise DocsignError(
                    f"field {old_id} was recreated at its new position as field {new_field.id}, but deleting "
                    f"the old field failed ({exc}); delete field {old_id} to avoid a duplicate"
                ) from None
            log.info("Docsign field %s moved by recreating it as field %s", old_id, new_field.id)
            result[old_id] = new_field
        out: list[Field] = []
        for spec in fields:
            fid = spec["id"]
            out.append(result[fid] if fid in result else self.get_field(fid))
        return out

    def delete_field(self, field_id: int) -> None:
        """Delete a field.

        :param field_id: The field id.
        """
        self._call(ep.delete_field(field_id))

    # -- folders ----------------------------------------------------------------------------------

    def list_folders(
        self, *, parent_id: str | None = None, folder_type: str | None = None
    ) -> Iterator[Folder]:
        """Iterate over folders, following every page.

        Note (real service): without ``parent_id`` folders at every level are listed.

        :param parent_id: Only folders directly inside this folder.
        :param folder_type: ``DOCUMENT`` or ``TEMPLATE``.
        """
        for data in self._pages(
            lambda page: ep.list_folders(page=page, parent_id=parent_id, folder_type=folder_type)
        ):
            yield Folder.from_json(data)

    def create_folder(
        self, name: str, *, parent_id: str | None = None, folder_type: str = "DOCUMENT"
    ) -> Folder:
        """Create a folder.

        :param name: The name (2-100 characters).
        :param parent_id: Create it inside this folder.
        :param folder_type: ``DOCUMENT`` or ``TEMPLATE``.
        """
        problems = []
        if not isinstance(name, str) or not 2 <= len(name.strip()) <= 100:
            problems.append(f"folder name must be 2-100 characters, not {name!r}")
        if folder_type not in ("DOCUMENT", "TEMPLATE"):
            problems.append(f"folder_type must be DOCUMENT or TEMPLATE, not {folder_type!r}")
        problems.extend(control_character_problems({"name": name, "parentId": parent_id}, "folder"))
        if problems:
            raise DocsignValidationError(problems, "create_folder")
        return Folder.from_json(self._call(ep.create_folder(name, parent_id, folder_type)))

    def update_folder(self, folder_id: str, **changes: Any) -> Folder:
        """Rename, move (``parent_id=None`` moves to the root), pin or change the visibility of a folder.

        :param folder_id: The folder id.
        :param changes: ``name``, ``parent_id``, ``visibility``, ``pinned`` (camelCase also accepted).
        """
        if not changes:
            raise DocsignValidationError(["nothing to update"], "update_folder")
        problems = control_character_problems(changes, "folder")
        if problems:
            raise DocsignValidationError(problems, "update_folder")
        return Folder.from_json(self._call(ep.update_folder(folder_id, _camel(changes))))

    def delete_folder(self, folder_id: str) -> None:
        """Delete a folder and its subfolders (the envelopes in it move to the root).

        :param folder_id: The folder id.
        """
        self._call(ep.delete_folder(folder_id))

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

    def _get_async_client(self) -> httpx.AsyncClient:
        """One shared client per event loop, with a bounded connection pool."""
        import httpx

        loop = asyncio.get_running_loop()
        if self._async_client is not None and self._async_loop is not None and self._async_loop() is loop:
            return self._async_client
        settings = self.settings
        connect, read = settings.timeout
        verify = _shared_ssl_context(settings.verify)
        mounts: dict[str, httpx.AsyncBaseTransport | None] | None = None
        if settings.proxies:
            mounts = {
                f"{scheme}://": httpx.AsyncHTTPTransport(proxy=url, verify=verify)
                for scheme, url in settings.proxies.items()
            }
        self._async_client = httpx.AsyncClient(
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            timeout=httpx.Timeout(connect=connect, read=read, write=read, pool=max(60.0, read * 4)),
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=8),
            verify=verify,
            mounts=mounts,
            trust_env=not settings.proxies,
            follow_redirects=True,
        )
        self._async_loop = weakref.ref(loop)
        return self._async_client

    async def aclose(self) -> None:
        """Close the async client of the running loop, if any."""
        client, self._async_client, self._async_loop = self._async_client, None, None
        if client is not None:
            await client.aclose()

    async def _asend(self, call: Call) -> Any:
        """The async twin of :meth:`_send` + :meth:`_json`, for reads only."""
        import httpx

        if call.kind != READ:
            raise DocsignError("the async path only performs reads")
        client = self._get_async_client()
        url = self._url(call)
        waited = 0.0
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await client.request(
                    call.method,
                    url,
                    params=call.params,
                    json=call.json,
                    headers={"Authorization": self.settings.api_key},
                )
            except httpx.HTTPError as exc:
                reason = "timed out" if isinstance(exc, httpx.TimeoutException) else "the connection failed"
                delay = self._no_answer(call, attempt, waited, reason, exc)
                await asyncio.sleep(delay)
                waited += delay
                continue
            status = response.status_code
            self.last_rate_limit = parse_rate_limit(response.headers) or self.last_rate_limit
            content = response.content[:MAX_ERROR_BODY] if status >= 300 else response.content
            log_response_body(call.method, call.path, status, content, self._redact)
            if 200 <= status < 300:
                try:
                    return json.loads(content) if content else {}
                except ValueError:
                    raise DocsignAPIError(
                        f"the service answered {call.what or call.path} with a body that is not JSON",
                        status_code=status,
                        method=call.method,
                        path=call.path,
                    ) from None
            delay = self._failed_answer(call, attempt, waited, response, content)
            await asyncio.sleep(delay)
            waited += delay

    async def async_get_envelope(self, envelope_id: str) -> Envelope:
        """Async :meth:`get_envelope`, for triggers.

        :param envelope_id: The envelope id.
        """
        return ep.parse_envelope(await self._asend(ep.get_envelope(envelope_id)))

    async def async_get_envelopes(self, envelope_ids: Iterable[str]) -> list[Envelope]:
        """Async :meth:`get_envelopes` (20 ids per request), in the order asked; unknown ids left out.

        :param envelope_ids: Envelope ids.
        """
        ids = list(dict.fromkeys(envelope_ids))
        batches = [ids[i : i + ep.GET_MANY_BATCH] for i in range(0, len(ids), ep.GET_MANY_BATCH)]
        calls = [ep.get_many(batch) for batch in batches]
        bodies = await asyncio.gather(*(self._asend(c) for c in calls))
        result: list[Envelope] = []
        for body, batch in zip(bodies, batches, strict=True):
            result.extend(ep.parse_envelopes_in_order(body, batch))
        return result

    async def async_get_envelope_status(self, envelope_id: str) -> EnvelopeStatus | str:
        """Async: the envelope's status only.

        :param envelope_id: The envelope id.
        """
        return (await self.async_get_envelope(envelope_id)).status
