"""The async path used by the trigger: same endpoints, parsers and retry rules, many calls in one loop."""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_docsign.exceptions import DocsignAuthError, DocsignNotFoundError, DocsignRateLimitError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.models import EnvelopeStatus

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def envelopes(sandbox_session: SandboxServer, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """21 draft envelopes (more than one get-many batch), created once for this module."""
    pdf = write_sample_pdf(tmp_path_factory.mktemp("async") / "async.pdf")
    with DocsignHook(base_url=sandbox_session.base_url, api_key=sandbox_session.api_key) as setup:
        folder = setup.create_folder("Async folder")
        return [
            setup.create_envelope(title=f"async {n}", files=[pdf], folder_id=folder.id) for n in range(21)
        ]


async def test_async_get_envelope_and_status(hook: DocsignHook, envelopes: list[str]) -> None:
    env = await hook.async_get_envelope(envelopes[0])
    assert env.id == envelopes[0]
    assert env == hook.get_envelope(envelopes[0])  # same parser as the sync path
    assert await hook.async_get_envelope_status(envelopes[1]) is EnvelopeStatus.DRAFT
    await hook.aclose()


async def test_async_get_envelopes_batches(
    hook: DocsignHook, sandbox: SandboxServer, envelopes: list[str]
) -> None:
    sandbox.clear_requests()
    found = await hook.async_get_envelopes([*envelopes, "envelope_unknownunknown1"])
    assert [e.id for e in found] == envelopes
    assert len([r for r in sandbox.requests() if r["path"] == "/envelope/get-many"]) == 2
    await hook.aclose()


async def test_many_concurrent_calls_share_one_client(
    hook: DocsignHook, sandbox: SandboxServer, envelopes: list[str]
) -> None:
    ids = envelopes * 10  # 210 concurrent reads
    statuses = await asyncio.gather(*(hook.async_get_envelope_status(i) for i in ids))
    assert statuses == [EnvelopeStatus.DRAFT] * len(ids)
    client = hook._async_client
    assert client is not None
    assert await hook.async_get_envelope_status(envelopes[0]) is EnvelopeStatus.DRAFT
    assert hook._async_client is client  # reused within the loop
    await hook.aclose()


async def test_async_retries_503_and_429(
    hook: DocsignHook, sandbox: SandboxServer, envelopes: list[str]
) -> None:
    sandbox.clear_requests()
    sandbox.inject_fault(method="GET", path="/envelope/*", action="status", status=503, count=1)
    sandbox.inject_fault(
        method="POST", path="/envelope/get-many", action="status", status=429, retry_after=0, count=1
    )
    assert (await hook.async_get_envelope(envelopes[2])).id == envelopes[2]
    assert [e.id for e in await hook.async_get_envelopes(envelopes[:3])] == envelopes[:3]
    statuses = [r["status"] for r in sandbox.requests()]
    assert statuses.count(503) == 1
    assert statuses.count(429) == 1
    sandbox.inject_fault(
        method="GET", path="/envelope/*", action="status", status=429, retry_after=300, count=1
    )
    with pytest.raises(DocsignRateLimitError) as info:
        await hook.async_get_envelope(envelopes[0])
    assert info.value.retry_after == 300
    await hook.aclose()


async def test_async_errors_are_typed(hook: DocsignHook, sandbox: SandboxServer) -> None:
    with pytest.raises(DocsignNotFoundError) as info:
        await hook.async_get_envelope("envelope_doesnotexist00")
    assert info.value.error_code == "NOT_FOUND"
    await hook.aclose()
    wrong = DocsignHook(base_url=sandbox.base_url, api_key="api_wrongkeywrongkey", max_retries=0)
    with pytest.raises(DocsignAuthError):
        await wrong.async_get_envelope_status("envelope_doesnotexist00")
    await wrong.aclose()


def test_async_client_is_per_event_loop(hook: DocsignHook, envelopes: list[str]) -> None:
    # Two separate loops (as in two trigger runs): each gets a working client.
    assert asyncio.run(hook.async_get_envelope_status(envelopes[0])) is EnvelopeStatus.DRAFT
    assert asyncio.run(hook.async_get_envelope_status(envelopes[1])) is EnvelopeStatus.DRAFT
