"""System tests: updates keep every setting the caller did not change, on a real Documenso (opt-in).

Documenso v2.17 resets a field's ``fieldMeta`` when ``field/update-many`` leaves it out (documenso#3286;
recordings ``fieldmeta/50``-``52``) and fills a partial ``meta.emailSettings`` with ``true`` flags: the
hook sends the current settings with each change. Nothing here sends an e-mail (drafts only).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import sig, signer

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.service.models import Field

LABELLED = {"type": "text", "label": "Company number", "placeholder": "12345678", "required": True}


def _meta(field: Field) -> dict[str, Any]:
    return {k: (field.field_meta or {}).get(k) for k in ("type", "label", "placeholder", "required")}


def test_update_fields_keeps_label_placeholder_and_required(
    system_hook: DocsignHook, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    text = sig(type="TEXT", positionX=10, positionY=40, width=30, height=6, fieldMeta=dict(LABELLED))
    envelope_id = new_envelope("fieldmeta", [pdf("fieldmeta.pdf")], [signer(sig(), text)])
    field = next(f for f in system_hook.get_envelope(envelope_id).fields if f.type == "TEXT")
    assert _meta(field) == LABELLED

    (resized,) = system_hook.update_fields(envelope_id, [{"id": field.id, "width": 40}])
    current = system_hook.get_field(resized.id)
    assert current.width == 40.0
    assert _meta(current) == LABELLED

    system_hook.update_fields(envelope_id, [{"id": field.id, "fieldMeta": {"label": "Company no."}}])
    assert _meta(system_hook.get_field(field.id)) == {**LABELLED, "label": "Company no."}


def test_a_partial_email_settings_keeps_the_other_flags(
    system_hook: DocsignHook, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    envelope_id = new_envelope(
        "emailsettings", [pdf("quiet.pdf")], [signer()], meta={"emailSettings": {"recipientSigned": False}}
    )
    system_hook.update_envelope(envelope_id, meta={"emailSettings": {"documentCompleted": False}})
    settings = system_hook.get_envelope(envelope_id).meta["emailSettings"]  # type: ignore[index]
    assert {k for k, v in settings.items() if v is False} == {"recipientSigned", "documentCompleted"}
