"""expiration_period and reminders on the create operator, the template-use operator and the hook:
what reaches the service is read back from the sandbox's request log (real HTTP, no mocks)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, numbered_signers
from template_helpers import mapped, onboarding_recipients

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignCreateEnvelopeFromTemplateOperator,
    DocsignCreateEnvelopeOperator,
    DocsignCreateTemplateOperator,
)
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

FOURTEEN_DAYS = {"unit": "day", "amount": 14}
REMINDERS = {"sendAfter": {"unit": "day", "amount": 3}, "repeatEvery": {"unit": "day", "amount": 2}}


def _bodies(sandbox: SandboxServer, path: str) -> list[dict[str, Any]]:
    log = sandbox.requests(bodies=True)
    return [r.get("body") or {} for r in log if r["method"] == "POST" and r["path"] == path]


def test_create_operator_sends_the_service_fields(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    op = DocsignCreateEnvelopeOperator(
        task_id="create",
        title="Expiring contract",
        files=[str(make_pdf())],
        recipients=numbered_signers(1),
        meta={"subject": "Please sign"},
        expiration_period="14d",
        reminders={"send_after": "3d", "repeat_every": "2d"},
    )
    sandbox.clear_requests()
    envelope_id = op.execute(ctx())["envelope_id"]

    [meta] = [b["meta"] for b in _bodies(sandbox, "/envelope/create")]
    assert meta == {
        "subject": "Please sign",
        "envelopeExpirationPeriod": FOURTEEN_DAYS,
        "reminderSettings": REMINDERS,
    }
    # And the sandbox applies the period at distribute: the link lives 14 days.
    hook = DocsignHook()
    hook.distribute_envelope(envelope_id)
    expires = hook.get_envelope(envelope_id).recipients[0].expires_at or ""
    ahead = datetime.fromisoformat(expires.replace("Z", "+00:00")) - datetime.now(timezone.utc)
    assert timedelta(days=13) < ahead <= timedelta(days=14)


@pytest.mark.parametrize("bad", ["14 days", 0, -3, "0d", 14, "14", "3h"])
def test_bad_periods_are_refused_locally(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path], bad: Any
) -> None:
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError, match="expiration_period"):
        DocsignCreateEnvelopeOperator(
            task_id="create", title="t", files=[str(make_pdf())], expiration_period=bad
        )
    with pytest.raises(DocsignValidationError, match="expiration_period"):
        DocsignHook().create_envelope(title="t", files=[make_pdf()], expiration_period=bad)
    with pytest.raises(DocsignValidationError, match=r"reminders\['send_after'\]"):
        DocsignCreateEnvelopeOperator(
            task_id="create", title="t", files=[str(make_pdf())], reminders={"send_after": bad}
        )
    assert sandbox.requests(bodies=True) == []  # nothing reached the service


def test_never_expires_and_meta_conflict(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    sandbox.clear_requests()
    envelope_id = hook.create_envelope(
        title="Never",
        files=[make_pdf()],
        recipients=numbered_signers(1),
        expiration_period=None,
        reminders=None,
    )
    [meta] = [b["meta"] for b in _bodies(sandbox, "/envelope/create")]
    assert meta == {
        "envelopeExpirationPeriod": {"disabled": True},
        "reminderSettings": {"sendAfter": {"disabled": True}, "repeatEvery": {"disabled": True}},
    }
    hook.distribute_envelope(envelope_id)
    assert hook.get_envelope(envelope_id).recipients[0].expires_at is None
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError, match="not both"):
        hook.create_envelope(
            title="Both",
            files=[make_pdf()],
            meta={"envelopeExpirationPeriod": FOURTEEN_DAYS},
            expiration_period="1w",
        )
    assert sandbox.requests(bodies=True) == []


def test_template_use_sends_expiry_in_override_and_reminders_before_distribute(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path]
) -> None:
    template_id = DocsignCreateTemplateOperator(
        task_id="t",
        title=f"Onboarding {uuid.uuid4().hex[:8]}",
        files=[str(make_pdf("nda.pdf", pages=2))],
        recipients=onboarding_recipients(),
    ).execute(ctx())["template_id"]
    op = DocsignCreateEnvelopeFromTemplateOperator(
        task_id="use",
        template_id=template_id,
        recipients=mapped(),
        expiration_period="2w",
        reminders={"send_after": "3d", "repeat_every": "2d"},
    )
    sandbox.clear_requests()
    result = op.execute(ctx())

    order = [r["path"] for r in sandbox.requests(bodies=True) if r["method"] == "POST"]
    assert (
        order.index("/envelope/use") < order.index("/envelope/update") < order.index("/envelope/distribute")
    )
    [override] = [b["override"] for b in _bodies(sandbox, "/envelope/use")]
    assert override["envelopeExpirationPeriod"] == {"unit": "week", "amount": 2}
    [update] = [b["meta"] for b in _bodies(sandbox, "/envelope/update")]
    assert update == {"reminderSettings": REMINDERS}
    envelope = DocsignHook().get_envelope(result["envelope_id"])
    assert envelope.status == "PENDING"
    assert envelope.raw["documentMeta"]["envelopeExpirationPeriod"] == {"unit": "week", "amount": 2}
    assert "reminderSettings" not in envelope.raw["documentMeta"]  # as on the real service (OpenAPI)
