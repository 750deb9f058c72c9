"""The test-only seed and clock routes: all-or-nothing seeding, clear errors, times that stick."""

from __future__ import annotations

import pytest

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sandbox.server import SandboxError

pytestmark = pytest.mark.integration


def _count(hook: DocsignHook) -> int:
    return sum(1 for _ in hook.find_envelopes(query="seed-check"))


def test_a_bad_spec_stores_nothing_and_names_the_spec(sandbox: SandboxServer, api_key: str) -> None:
    hook = DocsignHook(base_url=sandbox.base_url, api_key=api_key)
    before = _count(hook)
    good = {"title": "seed-check ok", "status": "PENDING", "createdAt": "2026-11-02T01:00:00.000Z"}
    with pytest.raises(SandboxError, match=r"envelopes\[1\]\.status"):
        sandbox.seed([good, {"title": "seed-check bad", "status": "SIGNED"}])
    with pytest.raises(SandboxError, match=r"envelopes\[0\]\.createdAt"):
        sandbox.seed([{"title": "seed-check bad", "createdAt": "yesterday"}])
    assert _count(hook) == before


def test_times_are_set_on_an_envelope_made_through_the_api(sandbox: SandboxServer, api_key: str) -> None:
    hook = DocsignHook(base_url=sandbox.base_url, api_key=api_key)
    (envelope_id,) = sandbox.seed(
        [
            {
                "title": "seed-check times",
                "status": "PENDING",
                "recipients": [{"email": "a@example.test", "name": "A"}],
            }
        ]
    )
    recipient = hook.get_envelope(envelope_id).recipients[0].id
    sandbox.set_times(
        envelope_id,
        createdAt="2026-10-01T08:00:00.000Z",
        updatedAt="2026-10-02T08:00:00.000Z",
        recipients=[{"id": recipient, "signedAt": "2026-10-02T07:00:00.000Z"}],
    )
    env = hook.get_envelope(envelope_id)
    assert (env.created_at, env.updated_at) == ("2026-10-01T08:00:00.000Z", "2026-10-02T08:00:00.000Z")
    assert env.recipients[0].signed_at == "2026-10-02T07:00:00.000Z"
    with pytest.raises(SandboxError, match="404"):
        sandbox.set_times("envelope_doesnotexist", createdAt="2026-10-01T08:00:00.000Z")
