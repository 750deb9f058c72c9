"""Sensors of the Docsign provider: wait until an envelope (or a campaign's envelopes) is done.

The sensor polls or defers to :mod:`..triggers`; what a state means is decided once, in ``_evaluate``,
and for a batch wait (a campaign's) in ``_batch`` (settled, the allowance), run by ``_batch_wait`` with
the result table and its outcome report in ``_campaign``.

May import: the triggers, the hook and everything below it. Nothing below the face imports it.
"""

from __future__ import annotations

from airflow_provider_docsign.sensors.envelope import DocsignEnvelopeSensor

__all__ = ["DocsignEnvelopeSensor"]
