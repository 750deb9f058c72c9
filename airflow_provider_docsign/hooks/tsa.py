r"""``DocsignTsaHook``: the RFC 3161 timestamp authority (TSA) connection of the archive.

A TSA is an Airflow connection of any type (``http`` is natural): the URL in ``host``, basic auth in
``login``/``password`` or a bearer token in ``password`` alone (or the ``token`` extra), and the TSA
certificates to pin in the extras ``trusted_certificates`` (PEM files or URIs, or PEM text) and
``certificate_fingerprints``. See :func:`airflow_provider_docsign.tsa_client.tsa_settings_from_connection`.

Examples::

    airflow connections add tsa_default --conn-type http \\
        --conn-host https://tsa.example/tsr \\
        --conn-extra '{"trusted_certificates": ["/etc/docsign/tsa.pem"]}'

The archive operator names it with ``tsa_conn_id``, or the docsign connection does with its
``tsa_conn_id`` extra. Requests themselves are made by :mod:`airflow_provider_docsign.timestamps`
(bounded in time and size); this hook only reads and checks the connection, lazily.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from airflow_provider_docsign._compat import BaseHook, get_connection, mask_secret
from airflow_provider_docsign.archive_evidence import Evidence
from airflow_provider_docsign.exceptions import DocsignError
from airflow_provider_docsign.object_lock import Retention
from airflow_provider_docsign.tsa_client import (
    TimestampResult,
    TsaSettings,
    request_timestamp,
    tsa_settings_from_connection,
)

__all__ = ["TSA_CONN_EXTRA", "DocsignTsaHook", "archive_evidence"]

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


class DocsignTsaHook(BaseHook):  # type: ignore[misc]
    """Reads a TSA connection into :class:`~airflow_provider_docsign.tsa_client.TsaSettings`.

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
        """A verified token over ``data`` (:func:`~airflow_provider_docsign.tsa_client.request_timestamp`)."""
        return request_timestamp(self.settings, data=data)


def archive_evidence(
    *,
    docsign_hook: Any,
    tsa_conn_id: str | None,
    timestamp: str,
    ltv: bool,
    retention: Retention | None,
    log: Any,
) -> Evidence:
    """The :class:`~airflow_provider_docsign.archive_evidence.Evidence` of an archive task.

    The TSA is ``tsa_conn_id``, else the docsign connection's ``tsa_conn_id`` extra, else none. Every
    archiving operator builds its evidence here, at run time (never while a DAG is parsed).

    :param docsign_hook: The task's ``DocsignHook`` (its connection may name the TSA).
    :param tsa_conn_id: The operator's ``tsa_conn_id``.
    :param timestamp: ``require`` or ``best_effort``.
    :param ltv: Store long-term validation copies.
    :param retention: Object Lock retention (S3 only).
    :param log: The task's logger.
    """
    conn_id = tsa_conn_id or docsign_hook.settings.tsa_conn_id
    tsa = DocsignTsaHook(conn_id).settings if conn_id else None
    return Evidence(tsa=tsa, timestamp=timestamp, ltv=ltv, retention=retention, log=log)
