r"""``DocsignTsaHook``: the RFC 3161 timestamp authority (TSA) connection of the archive.

A TSA is an Airflow connection of any type (``http`` is natural): the URL in ``host``, basic auth in
``login``/``password`` or a bearer token in ``password`` alone (or the ``token`` extra), and the TSA
certificates to pin in the extras ``trusted_certificates`` (PEM files or URIs, or PEM text) and
``certificate_fingerprints``. See
:func:`airflow_provider_docsign.evidence.tsa_client.tsa_settings_from_connection`.

Examples::

    airflow connections add tsa_default --conn-type http \\
        --conn-host https://tsa.example/tsr \\
        --conn-extra '{"trusted_certificates": ["/etc/docsign/tsa.pem"]}'

The archive operator names it with ``tsa_conn_id``, or the docsign connection does with its
``tsa_conn_id`` extra. Requests themselves are made by :mod:`airflow_provider_docsign.evidence.timestamps`
(bounded in time and size); this hook only reads and checks the connection, lazily.
"""

from __future__ import annotations

import time
from functools import cached_property

import requests

from airflow_provider_docsign._compat import BaseHook, get_connection, mask_secret
from airflow_provider_docsign.evidence.timestamps import (
    CONTENT_TYPE_QUERY,
    CONTENT_TYPE_REPLY,
    TimestampError,
)
from airflow_provider_docsign.evidence.tsa_client import (
    MAX_RESPONSE_BYTES,
    TimestampResult,
    TsaSettings,
    request_timestamp,
    tsa_settings_from_connection,
)
from airflow_provider_docsign.exceptions import DocsignError

__all__ = ["TSA_CONN_EXTRA", "DocsignTsaHook", "post_timestamp_query"]

#: The docsign connection's extra that names the TSA connection.
TSA_CONN_EXTRA = "tsa_conn_id"
_MAX_PEM_BYTES = 1024 * 1024


def _read_pem(location: str) -> bytes:
    from airflow_provider_docsign._sources import open_source, to_path_like

    stream, owned = open_source(to_path_like(location))
    try:
        return bytes(stream.read(_MAX_PEM_BYTES))
    finally:
        if owned:
            stream.close()


def post_timestamp_query(settings: TsaSettings, body: bytes) -> bytes:
    """One bounded POST of a timestamp query to the TSA: the answer's bytes.

    The content type is checked, the answer is read up to
    :data:`~airflow_provider_docsign.evidence.tsa_client.MAX_RESPONSE_BYTES`, and the whole exchange
    is bounded by twice the settings' timeout. No retries (the task's retries are the retry policy).

    :param settings: Where the TSA is and how to authenticate.
    :param body: The DER ``TimeStampReq``.
    :raises TimestampError: The TSA could not be reached, timed out, or answered anything but a token.
    """
    headers = {"Content-Type": CONTENT_TYPE_QUERY, "Accept": CONTENT_TYPE_REPLY}
    auth = None
    if settings.username:
        auth = (settings.username, settings.password or "")
    elif settings.token:
        headers["Authorization"] = f"Bearer {settings.token}"
    deadline = time.monotonic() + 2 * settings.timeout
    where = f"the TSA at {settings.url}"
    try:
        with requests.post(
            settings.url,
            data=body,
            headers=headers,
            auth=auth,
            timeout=(settings.timeout, settings.timeout),
            verify=settings.verify,
            stream=True,
            allow_redirects=False,
        ) as response:
            if response.status_code != 200:
                raise TimestampError(f"{where} answered HTTP {response.status_code}")
            content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if content_type != CONTENT_TYPE_REPLY:
                raise TimestampError(
                    f"{where} answered {content_type or 'no content type'}, not {CONTENT_TYPE_REPLY}"
                )
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_content(64 * 1024):
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise TimestampError(f"{where} answered more than {MAX_RESPONSE_BYTES} bytes")
                if time.monotonic() > deadline:
                    raise TimestampError(
                        f"{where} did not finish answering within {2 * settings.timeout:g} s"
                    )
                chunks.append(chunk)
            return b"".join(chunks)
    except requests.Timeout as err:
        raise TimestampError(
            f"{where} did not answer within {settings.timeout:g} s ({type(err).__name__})"
        ) from None
    except requests.RequestException as err:
        raise TimestampError(f"{where} could not be reached: {type(err).__name__}") from None


class DocsignTsaHook(BaseHook):  # type: ignore[misc]
    """Reads a TSA connection into :class:`~airflow_provider_docsign.evidence.tsa_client.TsaSettings`.

    :param tsa_conn_id: The Airflow connection of the TSA.
    """

    conn_name_attr = "tsa_conn_id"
    hook_name = "Docsign timestamp authority"

    def __init__(self, tsa_conn_id: str) -> None:
        super().__init__()
        self.tsa_conn_id = tsa_conn_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}(tsa_conn_id={self.tsa_conn_id!r})"

    @cached_property
    def settings(self) -> TsaSettings:
        """The parsed connection (looked up on first access; secrets are masked in logs)."""
        conn = get_connection(self.tsa_conn_id)
        extras = conn.extra_dejson if conn.extra else {}
        try:
            settings = tsa_settings_from_connection(
                conn_type=conn.conn_type,
                host=conn.host,
                port=conn.port,
                schema=conn.schema,
                login=conn.login,
                password=conn.password,
                extras=extras,
                read_source=_read_pem,
                transport=post_timestamp_query,
            )
        except (OSError, ValueError) as err:
            raise DocsignError(f"TSA connection {self.tsa_conn_id!r}: {err}") from None
        for secret in (settings.password, settings.token):
            if secret:
                mask_secret(secret)
        return settings

    def get_conn(self) -> TsaSettings:
        """The settings (Airflow's hook protocol)."""
        return self.settings

    def timestamp(self, data: bytes) -> TimestampResult:
        """A verified token over ``data``.

        See :func:`~airflow_provider_docsign.evidence.tsa_client.request_timestamp`.
        """
        return request_timestamp(self.settings, data=data)
