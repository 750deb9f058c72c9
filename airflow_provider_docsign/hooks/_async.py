"""The async path of :class:`~.docsign.DocsignHook`, for triggers: reads only, one client per event loop.

Its connection is looked up with ``aget_connection`` (:meth:`~.docsign.DocsignHook.asettings`) before
the first request, never with the sync look-up, which on Airflow 3 cannot reach a connection stored in
the metadata database from the triggerer.

A mixin typed against :class:`~._protocol.HookCore`. It builds its requests from the same endpoint
definitions and parsers as the sync path, and follows the same retry policy (:mod:`._http`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import ssl
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign import metrics
from airflow_provider_docsign.exceptions import DocsignAPIError, DocsignError
from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._endpoints import Call
from airflow_provider_docsign.hooks._http import (
    MAX_ERROR_BODY,
    READ,
    USER_AGENT,
    log_response_body,
    parse_http_date,
    parse_rate_limit,
)
from airflow_provider_docsign.hooks._protocol import HookCore
from airflow_provider_docsign.service.models import Envelope, EnvelopeStatus

if TYPE_CHECKING:
    import httpx


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


class AsyncMethods:
    """The trigger's async reads (mixed into ``DocsignHook``)."""

    _async_client: httpx.AsyncClient | None = None
    _async_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def _get_async_client(self: HookCore) -> httpx.AsyncClient:
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
        client = httpx.AsyncClient(
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            timeout=httpx.Timeout(connect=connect, read=read, write=read, pool=max(60.0, read * 4)),
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=8),
            verify=verify,
            mounts=mounts,
            trust_env=not settings.proxies,
            follow_redirects=True,
        )
        self._async_client, self._async_loop = client, weakref.ref(loop)
        return client

    async def aclose(self: HookCore) -> None:
        """Close the async client of the running loop, if any."""
        client, self._async_client, self._async_loop = self._async_client, None, None
        if client is not None:
            await client.aclose()

    async def _asend(self: HookCore, call: Call) -> Any:
        """The async twin of :meth:`_send` + :meth:`_json`, for reads only."""
        import httpx

        if call.kind != READ:
            raise DocsignError("the async path only performs reads")
        ep.check_outgoing(call)  # the same one check as the sync loop's
        await self.asettings()  # aget_connection: the sync look-up finds no DB connection in a triggerer
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
                metrics.request(self.docsign_conn_id, call.what, None)
                delay = self._no_answer(call, attempt, waited, reason, exc)
                metrics.retry(self.docsign_conn_id, call.what, delay)
                await asyncio.sleep(delay)
                waited += delay
                continue
            status = response.status_code
            metrics.request(self.docsign_conn_id, call.what, status)
            self.last_rate_limit = parse_rate_limit(response.headers) or self.last_rate_limit
            self.last_service_time = parse_http_date(response.headers.get("date")) or self.last_service_time
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
            metrics.retry(self.docsign_conn_id, call.what, delay)
            await asyncio.sleep(delay)
            waited += delay

    async def async_get_envelope(self: HookCore, envelope_id: str) -> Envelope:
        """Async :meth:`get_envelope`, for triggers.

        :param envelope_id: The envelope id.
        """
        return ep.parse_envelope(await self._asend(ep.get_envelope(envelope_id)))

    async def async_get_envelopes(self: HookCore, envelope_ids: Iterable[str]) -> list[Envelope]:
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

    async def async_get_envelope_status(self: HookCore, envelope_id: str) -> EnvelopeStatus | str:
        """Async: the envelope's status only.

        :param envelope_id: The envelope id.
        """
        return (await self.async_get_envelope(envelope_id)).status
