"""Notifiers of the Docsign provider (Airflow ``BaseNotifier``): turn a callback into a signing request.

May import: the hook and everything below it. Nothing below the face imports it.
"""

from __future__ import annotations

from airflow_provider_docsign.notifications.docsign import DocsignNotifier

__all__ = ["DocsignNotifier"]
