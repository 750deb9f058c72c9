"""Triggers of the Docsign provider (run in Airflow's triggerer)."""

from __future__ import annotations

from airflow_provider_docsign.triggers.envelope import DocsignEnvelopeTrigger

__all__ = ["DocsignEnvelopeTrigger"]
