"""What a create operator's XCom says about the envelope's recipients and fields: their ids, for later tasks.

A DAG that corrects, reminds or removes a recipient or a field after the create needs their ids, which
only the service knows. The create operators return them beside the envelope id, each recipient with
what tells it apart (its e-mail, name, role and signing order) and each field with its recipient,
item, page and label, so that a later task can pick one out with Jinja:
``{{ ti.xcom_pull(task_ids='create')['recipients'][0]['id'] }}``.

The e-mail addresses are the ones the DAG gave (the service lower-cases them), as the distribute and
update operators already return them; the signing tokens and links are never included.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_docsign.service.models import Envelope

__all__ = ["recipient_and_field_ids"]


def recipient_and_field_ids(envelope: Envelope) -> dict[str, list[dict[str, Any]]]:
    """``{"recipients": [...], "fields": [...]}`` of an envelope, each list in the order of its ids.

    Ids grow in the order the service made them, so the recipients come in the order they were given
    to the create (or, from a template, in the template's order).

    :param envelope: The envelope as read after the create.
    """
    recipients = [
        {
            "id": r.id,
            "email": r.email,
            "name": r.name,
            "role": r.role,
            "signing_order": r.signing_order,
        }
        for r in sorted(envelope.recipients, key=lambda r: r.id)
    ]
    fields = [
        {
            "id": f.id,
            "type": f.type,
            "recipient_id": f.recipient_id,
            "envelope_item_id": f.envelope_item_id,
            "page": f.page,
            "label": (f.field_meta or {}).get("label") or None,
        }
        for f in sorted(envelope.fields, key=lambda f: f.id)
    ]
    return {"recipients": recipients, "fields": fields}
