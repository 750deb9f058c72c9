"""DocsignNotifier as a deadline alert's callback: Airflow's own ``CallbackTrigger`` (what the triggerer
runs for ``AsyncCallback(DocsignNotifier, kwargs=...)``) awaits it, and the signers are reminded once,
counted at the sandbox."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import numbered_signers

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


@pytest.mark.skipif(not AIRFLOW_V_3_0_PLUS, reason="deadline alerts (AsyncCallback) need Airflow 3.1+")
def test_an_async_deadline_callback_reminds_the_unsigned_signers(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    from airflow.sdk.definitions.callback import AsyncCallback
    from airflow.triggers.callback import CallbackTrigger

    from airflow_provider_docsign.notifications import DocsignNotifier

    envelope_id = hook.create_envelope(title="Late", files=[make_pdf()], recipients=numbered_signers(2))
    hook.distribute_envelope(envelope_id)
    first = hook.get_envelope(envelope_id).recipients[0].id
    sandbox.sign(envelope_id, first)
    callback = AsyncCallback(DocsignNotifier, kwargs={"envelope_id": envelope_id})
    trigger = CallbackTrigger(
        callback_path=callback.path, callback_kwargs={**callback.kwargs, "context": {"dag_run": None}}
    )

    async def events() -> list[Any]:
        return [event.payload async for event in trigger.run()]

    payloads = asyncio.run(events())
    assert [str(p["state"]) for p in payloads][-1].lower().endswith("success"), payloads
    counts = {row["recipientId"]: row["count"] for row in sandbox.reminders(envelope_id)["data"]}
    unsigned = [r.id for r in hook.get_envelope(envelope_id).recipients if r.id != first]
    assert counts == dict.fromkeys(unsigned, 1)
