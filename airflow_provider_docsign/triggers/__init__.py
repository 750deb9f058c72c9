"""Triggers of the Docsign provider, run in Airflow's triggerer: polling and webhook deliveries.

``envelope`` polls the service (coalesced across triggers by ``_poller``); ``webhook`` listens for the
service's deliveries (``_listener``: the HTTP/1.1 listener and its connection policy).

May import: the hook and everything below it. Nothing below the face imports it.
"""

from __future__ import annotations

from airflow_provider_docsign.triggers.envelope import DocsignEnvelopeTrigger

__all__ = ["DocsignEnvelopeTrigger"]
