"""The service's correction rules (pure): which recipient, field and attachment changes Documenso v2.17
refuses, with its own code and message, judged from an envelope as ``GET /envelope/{id}`` returns it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign.exceptions import DocsignInvalidRequestError, DocsignRefusedLocallyError
from airflow_provider_docsign.service import corrections as c
from airflow_provider_docsign.service.models import Envelope


@pytest.fixture
def recorded(spec_dir: Path) -> dict[str, Any]:
    """The recorded draft (one SIGNER, id 1, with one SIGNATURE field, id 1), plus a CC and a VIEWER."""
    data: dict[str, Any] = json.loads((spec_dir / "recorded" / "02_get_envelope.json").read_text())
    signer = data["recipients"][0]
    for rid, role in ((2, "CC"), (3, "VIEWER")):
        data["recipients"].append(
            {**copy.deepcopy(signer), "id": rid, "role": role, "email": f"r{rid}@x.test"}
        )
    data["fields"].append({**copy.deepcopy(data["fields"][0]), "id": 3, "recipientId": 3})
    return data


def envelope(data: dict[str, Any], **changes: Any) -> Envelope:
    data = copy.deepcopy(data)
    data.update(changes)
    return Envelope.from_json(data)


def test_a_draft_may_change_everything(recorded: dict[str, Any]) -> None:
    draft = envelope(recorded)
    assert c.recipients_update_refusal(draft, [1, 2, 3]) is None
    assert c.recipient_delete_refusal(draft, 1) is None
    assert c.fields_update_refusal(draft, [1]) is None
    assert c.field_delete_refusal(draft, 1) is None
    assert c.attachment_change_refusal(draft, "/envelope/attachment/create") is None


@pytest.mark.parametrize("status", ["COMPLETED", "REJECTED", "CANCELLED"])
def test_a_finished_envelope_refuses_with_the_services_messages(
    recorded: dict[str, Any], status: str
) -> None:
    done = envelope(recorded, status=status, completedAt="2026-11-20T10:00:00.000Z")
    assert c.recipients_update_refusal(done, [1]) == c.Refusal(
        "POST", "/envelope/recipient/update-many", "Envelope already complete"
    )
    assert c.recipient_delete_refusal(done, 1) == c.Refusal(
        "POST", "/envelope/recipient/delete", "Document already complete"
    )
    assert c.fields_update_refusal(done, [1]).message == "Envelope already complete"  # type: ignore[union-attr]
    assert c.field_delete_refusal(done, 1).message == "Envelope already complete"  # type: ignore[union-attr]
    attachment = c.attachment_change_refusal(done, "/envelope/attachment/create")
    if status == "CANCELLED":  # the service still lets a cancelled envelope's attachments change
        assert attachment is None
    else:
        assert attachment is not None
        assert attachment.message == (
            "Attachments can not be modified after the document has been completed or rejected"
        )


def test_pending_refuses_only_a_recipient_who_interacted(recorded: dict[str, Any]) -> None:
    pending = envelope(recorded, status="PENDING")
    assert c.recipients_update_refusal(pending, [1]) is None
    signed = copy.deepcopy(recorded)
    signed["status"] = "PENDING"
    signed["recipients"][0]["signingStatus"] = "SIGNED"
    refusal = c.recipients_update_refusal(Envelope.from_json(signed), [2, 1])
    assert refusal is not None
    assert refusal.message == "Cannot modify a recipient who has already interacted with the document"
    assert c.recipient_delete_refusal(Envelope.from_json(signed), 1).message == (  # type: ignore[union-attr]
        "Recipient has already interacted with the document."
    )
    # A recipient who filled in a field has interacted, even before signing.
    filled = copy.deepcopy(recorded)
    filled["status"] = "PENDING"
    filled["fields"][0]["inserted"] = True
    assert c.fields_update_refusal(Envelope.from_json(filled), [1]).message == (  # type: ignore[union-attr]
        "Cannot modify a field where the recipient has already interacted with the document"
    )
    # Others' changes stay allowed.
    assert c.recipients_update_refusal(Envelope.from_json(filled), [2, 3]) is None


def test_cc_is_never_interacted_but_cc_and_viewer_fields_are_locked(recorded: dict[str, Any]) -> None:
    data = copy.deepcopy(recorded)
    data["recipients"][1]["signingStatus"] = "SIGNED"  # a CC starts SIGNED on the real service
    env = Envelope.from_json(data)
    assert c.recipients_update_refusal(env, [2]) is None
    assert c.recipient_delete_refusal(env, 2) is None
    assert c.fields_update_refusal(env, [3]).message.startswith("Cannot modify a field")  # type: ignore[union-attr]
    assert c.field_delete_refusal(env, 3).message == "Recipient has already interacted with the document."  # type: ignore[union-attr]


def test_the_refusal_error_is_the_services_error_and_says_nothing_was_sent(recorded: dict[str, Any]) -> None:
    done = envelope(recorded, status="COMPLETED", completedAt="2026-11-20T10:00:00.000Z")
    refusal = c.recipients_update_refusal(done, [1])
    assert refusal is not None
    err = refusal.error()
    assert isinstance(err, DocsignRefusedLocallyError)
    assert isinstance(err, DocsignInvalidRequestError)  # caught like the service's own refusal
    assert (err.status_code, err.error_code, err.message) == (
        400,
        "INVALID_REQUEST",
        "Envelope already complete",
    )
    assert str(err).startswith("POST /envelope/recipient/update-many HTTP 400 INVALID_REQUEST")
    assert "nothing was sent" in str(err)
