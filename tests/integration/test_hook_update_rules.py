"""Updates through the hook keep every setting the caller did not change, on a sandbox that resets as v2.17.

The sandbox resets an omitted ``fieldMeta`` on ``field/update-many`` and fills a partial
``meta.emailSettings`` with ``true`` flags, as the real service does (``tests/contract/test_update_rules.py``
pins that). So these tests fail for a client that sends only the change.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import sig, signer

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.models import Field

pytestmark = pytest.mark.integration

LABELLED = {"type": "text", "label": "Company number", "placeholder": "12345678", "required": True}


def _text_field(hook: DocsignHook, make_pdf: Callable[..., Path]) -> tuple[str, Field]:
    text = sig(type="TEXT", positionX=10, positionY=40, width=30, height=6, fieldMeta=dict(LABELLED))
    envelope_id = hook.create_envelope(
        title="Update rules", files=[make_pdf()], recipients=[signer(sig(), text)]
    )
    return envelope_id, next(f for f in hook.get_envelope(envelope_id).fields if f.type == "TEXT")


def _meta(field: Field) -> dict[str, Any]:
    return {k: (field.field_meta or {}).get(k) for k in ("type", "label", "placeholder", "required")}


def test_resizing_a_labelled_required_text_field_keeps_its_settings(
    hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    # The acceptance check of issue 28: only the width changes.
    envelope_id, field = _text_field(hook, make_pdf)
    (updated,) = hook.update_fields(envelope_id, [{"id": field.id, "width": 40}])
    assert updated.id == field.id
    assert updated.width == 40.0
    assert _meta(updated) == LABELLED
    assert _meta(hook.get_field(field.id)) == LABELLED


def test_a_partial_fieldmeta_changes_only_what_it_names(
    hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    envelope_id, field = _text_field(hook, make_pdf)
    hook.update_fields(envelope_id, [{"id": field.id, "fieldMeta": {"label": "Company no."}}])
    assert _meta(hook.get_field(field.id)) == {**LABELLED, "label": "Company no."}


def test_a_moved_field_is_recreated_with_its_settings_and_the_change(
    hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    envelope_id, field = _text_field(hook, make_pdf)
    (moved,) = hook.update_fields(
        envelope_id, [{"id": field.id, "positionY": 60, "fieldMeta": {"required": False}}]
    )
    assert moved.id != field.id
    assert moved.position_y == 60.0
    assert _meta(moved) == {**LABELLED, "required": False}


def test_a_type_change_starts_from_the_new_types_defaults(
    hook: DocsignHook, make_pdf: Callable[..., Path]
) -> None:
    envelope_id, field = _text_field(hook, make_pdf)
    (number,) = hook.update_fields(envelope_id, [{"id": field.id, "type": "NUMBER"}])
    assert number.type == "NUMBER"
    assert (number.field_meta or {}).get("type") == "number"  # not the TEXT field's settings
    assert (number.field_meta or {}).get("label") == ""


def test_a_partial_email_settings_keeps_the_other_flags(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    quiet = {"recipientSigned": False, "documentPending": False}
    envelope_id = hook.create_envelope(
        title="Quiet", files=[make_pdf()], recipients=[signer()], meta={"emailSettings": quiet}
    )
    hook.update_envelope(envelope_id, meta={"emailSettings": {"documentCompleted": False}})
    settings = hook.get_envelope(envelope_id).meta["emailSettings"]  # type: ignore[index]
    assert {k for k, v in settings.items() if v is False} == {
        "recipientSigned",
        "documentPending",
        "documentCompleted",
    }
    hook.distribute_envelope(envelope_id, meta={"emailSettings": {"documentDeleted": False}})
    settings = hook.get_envelope(envelope_id).meta["emailSettings"]  # type: ignore[index]
    assert {k for k, v in settings.items() if v is False} == {
        "recipientSigned",
        "documentPending",
        "documentCompleted",
        "documentDeleted",
    }
    # A complete object needs no read: it is sent as given.
    sandbox.clear_requests()
    hook.update_envelope(envelope_id, meta={"emailSettings": dict.fromkeys(settings, True)})
    assert [r["method"] for r in sandbox.requests()] == ["POST"]


def test_a_recipient_update_keeps_its_auth_options(hook: DocsignHook, make_pdf: Callable[..., Path]) -> None:
    # The service merges a recipient update over the stored recipient, auth options included (no reset):
    # the hook sends only the change.
    envelope_id = hook.create_envelope(title="Auth", files=[make_pdf()])
    (recipient,) = hook.create_recipients(
        envelope_id,
        [{"email": "auth@example.com", "name": "Auth", "role": "SIGNER", "accessAuth": ["ACCOUNT"]}],
    )
    (updated,) = hook.update_recipients(envelope_id, [{"id": recipient.id, "name": "Renamed"}])
    assert updated.name == "Renamed"
    assert (updated.raw.get("authOptions") or {}).get("accessAuth") == ["ACCOUNT"]
