"""The lifecycle, template, rate-limit and clean-up steps of ``scripts/record_contract.py``.

Distribute, redistribute, reject, cancel and the certificate need envelopes past DRAFT; ``use`` needs a
template; the ``429`` needs the instance's database (the organisation's API window is narrowed for a
few requests and always restored). :func:`clean_up` deletes every envelope and folder the run made and
checks that nothing of the run is left.
"""

from __future__ import annotations

from typing import Any

from record_contract_cases import UNKNOWN_ENVELOPE, UNKNOWN_INT, Scenario
from record_contract_io import org_rate_limit

from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._call import Call
from airflow_provider_docsign.service.models import Envelope
from airflow_provider_docsign.service.templates import validate_use_payload


def record_lifecycle(s: Scenario, draft: dict[str, Any]) -> None:
    """Distribute, redistribute, items of a sent envelope, reject, the certificate, cancel."""
    nofields = s.create_payload("nofields")
    del nofields["recipients"][0]["fields"]  # the hook refuses this; the service answers at distribution
    bare = s.new_state("nofields", payload=nofields)
    pending = s.pending(record=True)
    s.r("distribute_envelope", "unknown-id", ep.distribute_envelope(UNKNOWN_ENVELOPE, None))
    s.r("distribute_envelope", "bad-state", ep.distribute_envelope(bare["envelope"], None))
    env, recipient = pending["envelope"], pending["recipient"]
    s.r("redistribute_envelope", "success", ep.redistribute_envelope(env, [recipient]))
    s.r("redistribute_envelope", "unknown-id", ep.redistribute_envelope(UNKNOWN_ENVELOPE, [recipient]))
    none = Call("POST", "/envelope/redistribute", "create", json={"envelopeId": env, "recipients": []})
    s.r("redistribute_envelope", "bad-payload", none)
    s.r(
        "redistribute_envelope",
        "bad-state",
        ep.redistribute_envelope(draft["envelope"], [draft["recipient"]]),
    )
    s.r("create_items", "bad-state", ep.create_items(env, [s.annex], [s.annex.name]))
    s.r("download_item", "success-pending", ep.download_item(pending["item"], "pending"))

    refused = s.pending("pending")
    reason = "Not my contract"
    s.r("reject_recipient", "success", ep.reject_recipient(refused["recipient"], refused["envelope"], reason))
    s.r("reject_recipient", "unknown-id", ep.reject_recipient(UNKNOWN_INT, refused["envelope"], reason))
    s.r("reject_recipient", "bad-state", ep.reject_recipient(draft["recipient"], draft["envelope"], reason))
    s.name_state("rejected", s.wait_status(refused["envelope"], "REJECTED"))
    s.r("download_certificate", "success", ep.download_certificate(refused["envelope"]))
    s.r("download_item", "success-signed", ep.download_item(refused["item"], "signed"))

    s.r("cancel_envelope", "success", ep.cancel_envelope(env, "No longer needed"))
    s.r("cancel_envelope", "unknown-id", ep.cancel_envelope(UNKNOWN_ENVELOPE, None))
    s.r("cancel_envelope", "bad-state", ep.cancel_envelope(draft["envelope"], None))


def record_malformed(s: Scenario, draft: dict[str, Any]) -> None:
    """Malformed ids (which the hook's builders refuse) where the request has no other payload to spoil."""
    bad = "not-an-envelope-id"
    cases = [
        ("get_recipient", Call("GET", "/envelope/recipient/abc", "read")),
        ("get_field", Call("GET", "/envelope/field/abc", "read")),
        ("find_attachments", Call("GET", "/envelope/attachment", "read", params={"envelopeId": bad})),
        ("download_audit_log", Call("GET", f"/envelope/{bad}/audit-log/download", "read")),
        ("download_certificate", Call("GET", f"/envelope/{bad}/certificate/download", "read")),
        ("duplicate_envelope", ep.duplicate_envelope(bad, include_recipients=True, include_fields=True)),
        ("delete_field", Call("POST", "/envelope/field/delete", "write", json={"fieldId": "abc"})),
        (
            "delete_recipient",
            Call("POST", "/envelope/recipient/delete", "write", json={"recipientId": "abc"}),
        ),
        ("delete_attachment", Call("POST", "/envelope/attachment/delete", "write", json={"id": ""})),
        ("delete_folder", Call("POST", "/folder/delete", "write", json={"folderId": ""})),
        (
            "delete_item",
            Call(
                "POST",
                "/envelope/item/delete",
                "write",
                json={"envelopeId": draft["envelope"], "envelopeItemId": ""},
            ),
        ),
    ]
    for op, call in cases:
        s.track(s.r(op, "bad-payload", call))


def record_templates(s: Scenario) -> None:
    """``POST /envelope/use`` from a template, kept in a template folder of the run's own."""
    folder = s.ok(ep.create_folder(f"{s.prefix} templates", None, "TEMPLATE"), "create a template folder")
    s.folders.append(folder["id"])
    payload = s.create_payload("template", folder_id=folder["id"], envelope_type="TEMPLATE")
    template = s.new_state("template", payload=payload)
    parsed = Envelope.from_json(s.envelope(template["envelope"]))
    third = [{"id": template["recipient"], "email": "signer3@example.com", "name": "Signer Three"}]
    body, sources, names = validate_use_payload(
        parsed, recipients=third, external_id=f"{s.prefix}-used", folder_id=s.folder
    )
    s.track(s.r("use_template", "success", ep.use_template(body, sources, names)))
    s.track(
        s.r("use_template", "unknown-id", ep.use_template({**body, "envelopeId": UNKNOWN_ENVELOPE}, [], []))
    )
    stranger = [{**third[0], "id": UNKNOWN_INT}]
    s.track(s.r("use_template", "bad-payload", ep.use_template({**body, "recipients": stranger}, [], [])))
    s.r("audit_log", "bad-state", ep.audit_log(template["envelope"], page=1))


def record_rate_limit(s: Scenario, draft: dict[str, Any], database_url: str) -> list[str]:
    """A 429 per request family while the organisation's window is one request; return the families hit."""
    assert s.team_id is not None
    env, item = draft["envelope"], draft["item"]
    files = ([s.pdf], [s.pdf.name])
    cases = [
        ("get_envelope", ep.get_envelope(env)),
        ("update_envelope", ep.update_envelope(env, {"title": f"{s.prefix} draft limited"}, None)),
        ("create_envelope", ep.create_envelope(s.create_payload("limited"), *files)),
        ("download_item", ep.download_item(item, "original")),
    ]
    limited = []
    with org_rate_limit(database_url, s.team_id, window="10s", limit=1) as narrowed:
        for op, call in cases if narrowed else []:
            for _attempt in range(4):
                body = s.r(op, "rate-limited", call, patient=False)
                name = f"{op}.rate-limited.200"
                if name not in s.rec.recordings:
                    limited.append(op)
                    break
                s.track(body)
                del s.rec.recordings[name]  # the window had room: try again
    s.ok(ep.get_envelope(env), "a read after the limit was lifted")
    return limited


def clean_up(s: Scenario) -> list[str]:
    """Delete every envelope and folder of the run; return what could not be removed."""
    failures = []
    found = []
    for folder in [*s.folders, None]:
        response = s.rec.send(ep.find_envelopes(page=1, query=s.prefix, folder_id=folder))
        if response.status_code == 200:
            found += [e["id"] for e in response.json()["data"]]
    for envelope_id in dict.fromkeys([*s.envelopes, *found]):
        status = s.rec.send(ep.delete_envelope(envelope_id)).status_code
        if status not in (200, 404):
            failures.append(f"envelope {envelope_id}: HTTP {status}")
    for folder_id in dict.fromkeys(s.folders):
        status = s.rec.send(ep.delete_folder(folder_id)).status_code
        if status not in (200, 404):
            failures.append(f"folder {folder_id}: HTTP {status}")
    # An envelope left in a deleted folder is moved to the root, so the root is where to look.
    left = s.rec.send(ep.find_envelopes(page=1, query=s.prefix)).json()["data"]
    failures += [f"envelope {e['id']} is still listed" for e in left]
    return failures
