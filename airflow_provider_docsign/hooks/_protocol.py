"""What the hook's endpoint mixins need from :class:`~.docsign.DocsignHook`.

``DocsignHook`` is assembled from one mixin per resource (``_envelopes``, ``_items``, ``_recipients``,
``_fields``, ``_folders``, ``_templates``, ``_attachments``, ``_async``). Each mixin types ``self`` against
:class:`HookCore`, this small protocol: the settings, the one request loop, and the few endpoints one
resource calls on another. The mixins therefore import this module and the pure layers only, never the
hook itself, and the package has no import circle (``tests/unit/test_import_graph.py``).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from airflow_provider_docsign.exceptions import DocsignAmbiguousWriteError
from airflow_provider_docsign.hooks._endpoints import Call
from airflow_provider_docsign.hooks._http import RateLimit, Redactor, Settings
from airflow_provider_docsign.service.models import (
    DownloadResult,
    Envelope,
    EnvelopeStatus,
    EnvelopeSummary,
    Field,
)

if TYPE_CHECKING:
    import httpx
    import requests

__all__ = ["HookCore"]


class HookCore(Protocol):
    """The part of ``DocsignHook`` that its endpoint mixins use."""

    docsign_conn_id: str
    last_rate_limit: RateLimit | None
    last_service_time: datetime | None
    _async_client: httpx.AsyncClient | None
    _async_loop: weakref.ref[asyncio.AbstractEventLoop] | None

    @property
    def settings(self) -> Settings:
        """The parsed connection settings."""

    async def asettings(self) -> Settings: ...

    @property
    def _redact(self) -> Redactor: ...

    # -- the request loop (docsign.py) ------------------------------------------------------------

    def _url(self, call: Call) -> str: ...

    def _send(
        self,
        call: Call,
        *,
        stream: bool = False,
        headers: Mapping[str, str] | None = None,
        external_id: str | None = None,
    ) -> requests.Response: ...

    def _json(self, response: requests.Response, call: Call, external_id: str | None = None) -> Any: ...

    def _call(self, call: Call) -> Any: ...

    def _pages(self, make: Callable[[int], Call]) -> Iterator[Any]: ...

    def _ambiguous(self, call: Call, reason: str, external_id: str | None) -> DocsignAmbiguousWriteError: ...

    def _no_answer(self, call: Call, attempt: int, waited: float, reason: str, exc: Exception) -> float: ...

    def _failed_answer(
        self,
        call: Call,
        attempt: int,
        waited: float,
        response: requests.Response | httpx.Response,
        body: bytes,
        external_id: str | None = None,
    ) -> float: ...

    # -- endpoints one resource calls on another --------------------------------------------------

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
        expiration_period: Any = ...,
        reminders: Any = ...,
        **payload_extra: Any,
    ) -> str: ...

    def get_envelope(self, envelope_id: str) -> Envelope: ...

    def find_envelopes(
        self,
        *,
        query: str | None = None,
        status: str | EnvelopeStatus | None = None,
        folder_id: str | None = None,
        envelope_type: str | None = None,
        has_expired_recipients: bool | None = None,
        template_id: int | str | None = None,
        source: str | None = None,
        order_by: tuple[str, str] | None = None,
    ) -> Iterator[EnvelopeSummary]: ...

    def update_envelope(
        self,
        envelope_id: str,
        *,
        data: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        **changes: Any,
    ) -> EnvelopeSummary: ...

    def distribute_envelope(
        self, envelope_id: str, *, meta: Mapping[str, Any] | None = None
    ) -> dict[str, Any]: ...

    def duplicate_envelope(
        self,
        envelope_id: str,
        *,
        title: str | None = None,
        external_id: str | None = None,
        folder_id: str | None = None,
        include_recipients: bool = True,
        include_fields: bool = True,
    ) -> str: ...

    def download_envelope_item(
        self, envelope_item_id: str, destination: Any, *, version: str = "signed", overwrite: bool = True
    ) -> DownloadResult: ...

    def _item_page_count(self, envelope_item_id: str) -> int: ...

    def get_field(self, field_id: int) -> Field: ...

    def get_template(self, template_id: str) -> Envelope: ...

    def find_templates(
        self, *, query: str | None = None, folder_id: str | None = None
    ) -> Iterator[EnvelopeSummary]: ...

    async def async_get_envelope(self, envelope_id: str) -> Envelope: ...

    def _get_async_client(self) -> httpx.AsyncClient: ...

    async def _asend(self, call: Call) -> Any: ...
