"""The ``docsign://`` URI scheme: one name for what the signing service holds (pure; no Airflow import).

Airflow assets (datasets on 2.11) and OpenLineage datasets name the service's objects the same way::

    docsign://<host[:port]>/<envelope id>              an envelope of the instance at host
    docsign://<host[:port]>/template/<template id>      a template
    docsign://<host[:port]>/webhooks/<event>            the instance's webhook deliveries of one event

``<host[:port]>`` is the host (and port, if any) of the connection's base URL, without scheme,
credentials or path: ``https://app.documenso.com/api/v2`` gives ``docsign://app.documenso.com``. The
OpenLineage namespace is that ``docsign://<host[:port]>`` and the name is the path without its leading
slash (``envelope_abc``, ``template/envelope_t1``), which is what
:mod:`airflow_provider_docsign.export.lineage`
emits. The event is written in lower case with hyphens (``DOCUMENT_COMPLETED`` is
``document-completed``).

The scheme is registered with Airflow in ``get_provider_info()`` (``asset-uris`` on Airflow 3,
``dataset-uris`` on 2.11): :func:`normalize_uri` is its normaliser, so the spellings of one object give one
asset, and a URI without a host is refused; :func:`to_openlineage` turns such an asset into its
OpenLineage dataset.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import SplitResult, urlsplit

__all__ = [
    "SCHEME",
    "envelope_uri",
    "namespace",
    "normalize_uri",
    "template_uri",
    "to_openlineage",
    "webhook_uri",
]

SCHEME = "docsign"
_EVENT = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def _authority(base_url_or_host: str) -> str:
    """``host[:port]`` of a base URL (``https://h:8443/api/v2``) or of a bare ``host[:port]``."""
    text = str(base_url_or_host).strip()
    parts = urlsplit(text if "://" in text else f"//{text}")
    host = (parts.hostname or "").lower()
    if not host:
        raise ValueError(f"no host in {base_url_or_host!r}: give the service's base URL or its host")
    if ":" in host:  # an IPv6 address keeps its brackets in a URI
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port else host


def namespace(base_url_or_host: str) -> str:
    """``docsign://<host[:port]>`` of the service: the OpenLineage namespace of its envelopes.

    :param base_url_or_host: The connection's base URL (``https://app.documenso.com/api/v2``) or a host.
    """
    return f"{SCHEME}://{_authority(base_url_or_host)}"


def envelope_uri(base_url_or_host: str, envelope_id: str) -> str:
    """``docsign://<host[:port]>/<envelope id>``.

    :param base_url_or_host: The connection's base URL or the service's host.
    :param envelope_id: The envelope id.
    """
    return f"{namespace(base_url_or_host)}/{envelope_id}"


def template_uri(base_url_or_host: str, template_id: str) -> str:
    """``docsign://<host[:port]>/template/<template id>``.

    :param base_url_or_host: The connection's base URL or the service's host.
    :param template_id: The template's envelope id.
    """
    return f"{namespace(base_url_or_host)}/template/{template_id}"


def _event_slug(event: str) -> str:
    return str(event).strip().lower().replace("_", "-")


def webhook_uri(base_url_or_host: str, event: str) -> str:
    """``docsign://<host[:port]>/webhooks/<event>``: the asset of one webhook event of an instance.

    :param base_url_or_host: The instance sending the webhooks: its base URL or its host.
    :param event: The event, e.g. ``DOCUMENT_COMPLETED`` (written ``document-completed``).
    """
    slug = _event_slug(event)
    if not _EVENT.match(slug):
        raise ValueError(f"not a webhook event name: {event!r}")
    return f"{namespace(base_url_or_host)}/webhooks/{slug}"


def normalize_uri(parts: SplitResult) -> SplitResult:
    """Airflow's URI normaliser of the ``docsign`` scheme (``asset-uris`` / ``dataset-uris``).

    Lower-cases the host and the event of a ``/webhooks/<event>`` path (``_`` becomes ``-``); refuses a
    URI with no host or no path, and the old ``docsign://webhooks/<event>`` form, naming the right one.

    :param parts: The URI, split (Airflow has already dropped any credentials and trailing slashes).
    :raises ValueError: If the URI does not name an object of an instance.
    """
    host = (parts.hostname or "").lower()
    if not host:
        raise ValueError(
            f"a {SCHEME}:// URI names the service's host first, e.g. "
            f"{SCHEME}://app.documenso.com/webhooks/document-completed; got {_uri_text(parts)!r}"
        )
    path = parts.path.rstrip("/")
    if host == "webhooks":
        raise ValueError(
            f"{_uri_text(parts)!r} is the old form of a webhook asset: name the instance, e.g. "
            f"{SCHEME}://app.documenso.com/webhooks{path or '/document-completed'}"
        )
    if not path:
        raise ValueError(
            f"a {SCHEME}:// URI names an envelope, template/<id> or webhooks/<event> after the host; "
            f"got {_uri_text(parts)!r}"
        )
    segments = path.split("/")
    if len(segments) == 3 and segments[1] == "webhooks":
        slug = _event_slug(segments[2])
        if not _EVENT.match(slug):
            raise ValueError(f"not a webhook event name in {_uri_text(parts)!r}: {segments[2]!r}")
        path = f"/webhooks/{slug}"
    authority = host if ":" not in host else f"[{host}]"
    netloc = f"{authority}:{parts.port}" if parts.port else authority
    return parts._replace(netloc=netloc, path=path)


def _uri_text(parts: SplitResult) -> str:
    """The URI of ``parts`` as text (for messages)."""
    return parts.geturl()


def to_openlineage(asset: Any, lineage_context: Any = None) -> Any:
    """The OpenLineage dataset of a ``docsign://`` asset: namespace ``docsign://<host>``, name the path.

    Registered as the scheme's ``to_openlineage_converter``; called by the OpenLineage provider only.

    :param asset: An Airflow ``Asset`` (``Dataset`` on 2.11) with a normalised ``docsign://`` URI.
    :param lineage_context: Unused (part of Airflow's converter signature).
    """
    from airflow.providers.common.compat.openlineage.facet import Dataset

    parts = urlsplit(asset.uri)
    if parts.scheme != SCHEME or not parts.netloc:
        raise ValueError(f"not a {SCHEME}:// asset: {asset.uri!r}")
    return Dataset(namespace=f"{SCHEME}://{parts.netloc}", name=parts.path.lstrip("/"))
