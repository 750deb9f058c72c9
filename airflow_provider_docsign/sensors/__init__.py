"""Sensors of the Docsign provider."""

from __future__ import annotations

from airflow_provider_docsign.sensors.envelope import DocsignEnvelopeSensor

__all__ = ["DocsignEnvelopeSensor"]
