"""The states and the folder, envelope and envelope-part cases of ``scripts/record_contract.py``.

:class:`Scenario` holds the run (its prefix, folder, PDFs and everything it created, for the clean-up)
and makes the *states* a case starts from: ``draft`` (a DRAFT document in the run's folder with one
signer, ``signer1@example.com``, and a SIGNATURE field on its one PDF), ``pending`` (the same after
distribution), ``rejected``, ``nofields`` (a signer without a field) and ``template``. Every id of a state is
named (``draft.envelope``, ``draft.item``, ``draft.recipient``, ``draft.field``, ...) so that the replay
can build the same state in the sandbox and send the same request with its own ids.

Each ``record_*`` function records one operation's outcomes: ``success``, ``unknown-id`` (an id the
instance does not have), ``bad-payload`` / ``bad-state`` (a request the instance refuses) and others.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from record_contract_io import Recorder

from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._call import Call
from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.service.expiry import DEFAULT, merge_meta
from airflow_provider_docsign.service.payloads import validate_create_payload

#: The OpenAPI path template of each operation (the hook's builder name).
OPS = {
    "find_envelopes": "/envelope",
    "find_attachments": "/envelope/attachment",
    "get_field": "/envelope/field/{fieldId}",
    "download_item": "/envelope/item/{envelopeItemId}/download",
    "get_recipient": "/envelope/recipient/{recipientId}",
    "get_envelope": "/envelope/{envelopeId}",
    "audit_log": "/envelope/{envelopeId}/audit-log",
    "download_audit_log": "/envelope/{envelopeId}/audit-log/download",
    "download_certificate": "/envelope/{envelopeId}/certificate/download",
    "list_folders": "/folder",
    "create_attachment": "/envelope/attachment/create",
    "delete_attachment": "/envelope/attachment/delete",
    "update_attachment": "/envelope/attachment/update",
    "cancel_envelope": "/envelope/cancel",
    "create_envelope": "/envelope/create",
    "delete_envelope": "/envelope/delete",
    "distribute_envelope": "/envelope/distribute",
    "duplicate_envelope": "/envelope/duplicate",
    "create_fields": "/envelope/field/create-many",
    "delete_field": "/envelope/field/delete",
    "update_fields": "/envelope/field/update-many",
    "get_many": "/envelope/get-many",
    "create_items": "/envelope/item/create-many",
    "delete_item": "/envelope/item/delete",
    "update_items": "/envelope/item/update-many",
    "create_recipients": "/envelope/recipient/create-many",
    "delete_recipient": "/envelope/recipient/delete",
    "update_recipients": "/envelope/recipient/update-many",
    "reject_recipient": "/envelope/recipient/{recipientId}/reject",
    "redistribute_envelope": "/envelope/redistribute",
    "update_envelope": "/envelope/update",
    "use_template": "/envelope/use",
    "create_folder": "/folder/create",
    "delete_folder": "/folder/delete",
    "update_folder": "/folder/update",
}
UNKNOWN_ENVELOPE = "envelope_doesnotexistatall"
UNKNOWN_ITEM = "envelope_item_doesnotexistatal"
UNKNOWN_FOLDER = "cmdoesnotexist0000000000"
UNKNOWN_ATTACHMENT = "cmdoesnotexist0000000001"
UNKNOWN_INT = 999999999
SIGNER = {"email": "signer1@example.com", "name": "Signer One", "role": "SIGNER"}
SIGNATURE = {"type": "SIGNATURE", "page": 1, "positionX": 10, "positionY": 80, "width": 30, "height": 8}
#: The recorder's ``kind`` of each request.
READ, WRITE, CREATE = "read", "write", "create"


class Scenario:
    """One recording run: its prefix, folder, PDFs, states, and what to delete at the end."""

    def __init__(self, rec: Recorder, work: Path, prefix: str) -> None:
        self.rec = rec
        self.prefix = prefix
        self.pdf = write_sample_pdf(work / "contract.pdf", title="contract")
        self.annex = write_sample_pdf(work / "annex.pdf", title="annex")
        self.envelopes: list[str] = []
        self.folders: list[str] = []
        self.folder = ""
        self.team_id: int | None = None

    # -- sending ----------------------------------------------------------------------------------

    def r(self, op: str, family: str, call: Call, **kw: Any) -> Any:
        """Record ``call`` as ``op``/``family``; return the decoded body (``None`` when not JSON)."""
        response = self.rec.record(op, OPS[op], family, call, **kw)
        try:
            return response.json()
        except ValueError:
            return None

    def ok(self, call: Call, what: str) -> Any:
        """Send ``call`` unrecorded (a setup step); it must succeed."""
        response = self.rec.send(call)
        if response.status_code != 200:
            raise RuntimeError(f"{what}: HTTP {response.status_code} {response.text[:300]}")
        return response.json()

    def envelope(self, envelope_id: str) -> dict[str, Any]:
        """The envelope as ``GET /envelope/{id}`` returns it (unrecorded)."""
        body: dict[str, Any] = self.ok(ep.get_envelope(envelope_id), f"read {envelope_id}")
        return body

    def wait_status(self, envelope_id: str, status: str, timeout: float = 90) -> dict[str, Any]:
        """Poll (bounded) until the envelope has ``status``."""
        deadline = time.monotonic() + timeout
        while True:
            body = self.envelope(envelope_id)
            if body["status"] == status:
                return body
            if time.monotonic() > deadline:
                raise RuntimeError(f"{envelope_id} is {body['status']}, not {status}, after {timeout:.0f} s")
            time.sleep(1)

    # -- states -----------------------------------------------------------------------------------

    def create_payload(self, name: str, **kw: Any) -> dict[str, Any]:
        """The hook's own ``/envelope/create`` payload for a one-signer, one-field envelope."""
        kw.setdefault("recipients", [{**SIGNER, "fields": [dict(SIGNATURE)]}])
        kw.setdefault("folder_id", self.folder or None)
        payload, _pdfs = validate_create_payload(
            title=f"{self.prefix} {name}",
            files=[self.pdf],
            external_id=f"{self.prefix}-{name}",
            meta=merge_meta({"subject": "Please sign"}, DEFAULT, DEFAULT),
            **kw,
        )
        return payload

    def name_state(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        """Name the ids of an envelope as state ``kind`` (``kind.envelope``, ``kind.item``, ...)."""
        ids: dict[str, Any] = {"envelope": self.rec.ref(body["id"], f"{kind}.envelope")}
        if body.get("envelopeItems"):
            ids["item"] = self.rec.ref(body["envelopeItems"][0]["id"], f"{kind}.item")
        if body.get("recipients"):
            ids["recipient"] = self.rec.ref(body["recipients"][0]["id"], f"{kind}.recipient")
        if body.get("fields"):
            ids["field"] = self.rec.ref(body["fields"][0]["id"], f"{kind}.field")
        return ids

    def new_state(
        self, kind: str, *, record: bool = False, payload: dict[str, Any] | None = None, name: str = ""
    ) -> dict[str, Any]:
        """Create a ``draft``, ``nofields`` or ``template`` envelope (titled ``name``) and name its ids."""
        if payload is None:
            payload = self.create_payload(name or kind)
        call = ep.create_envelope(payload, [self.pdf], [self.pdf.name])
        body = self.r("create_envelope", "success", call) if record else self.ok(call, f"create {kind}")
        self.envelopes.append(body["id"])
        full = self.envelope(body["id"])
        self.rec.scrubber.learn_owner(full)
        self.team_id = int(full["teamId"])
        return self.name_state(kind, full)

    def pending(self, kind: str = "pending", *, record: bool = False) -> dict[str, Any]:
        """A draft, distributed (recorded as ``distribute_envelope`` success when ``record``)."""
        draft = self.new_state("draft", name=kind)
        call = ep.distribute_envelope(draft["envelope"], None)
        if record:
            self.r("distribute_envelope", "success", call)
        else:
            self.ok(call, "distribute")
        return self.name_state(kind, self.wait_status(draft["envelope"], "PENDING"))

    def track(self, body: Any, kind: str = "envelope") -> None:
        """Remember an object a case created by surprise (or on purpose), for the clean-up."""
        if isinstance(body, dict) and isinstance(body.get("id"), str):
            (self.envelopes if kind == "envelope" else self.folders).append(body["id"])


def record_folders(s: Scenario) -> None:
    """The four folder operations."""
    body = s.r("create_folder", "success", ep.create_folder(s.prefix, None, "DOCUMENT"))
    s.folder = s.rec.ref(body["id"], "folder.id")
    s.folders.append(s.folder)
    sub = s.ok(ep.create_folder(f"{s.prefix} sub", s.folder, "DOCUMENT"), "create a subfolder")
    s.folders.insert(0, s.rec.ref(sub["id"], "subfolder.id"))
    s.track(s.r("create_folder", "bad-payload", ep.create_folder("x", None, None)), "folder")
    orphan = ep.create_folder(f"{s.prefix} orphan", UNKNOWN_FOLDER, "DOCUMENT")
    s.track(s.r("create_folder", "unknown-id", orphan), "folder")
    listed = ep.list_folders(page=1, parent_id=s.folder, folder_type="DOCUMENT")
    s.r("list_folders", "success", listed, given=("subfolder",))
    s.r("list_folders", "unknown-id", ep.list_folders(page=1, parent_id=UNKNOWN_FOLDER, folder_type=None))
    bad = Call("GET", "/folder", READ, params={"type": "BOX", "page": 1, "perPage": 100})
    s.r("list_folders", "bad-payload", bad)
    s.r(
        "list_folders",
        "wrong-key",
        ep.list_folders(page=1, parent_id=None, folder_type=None),
        auth="wrong-key",
    )
    s.r("update_folder", "success", ep.update_folder(sub["id"], {"name": f"{s.prefix} renamed"}))
    s.r("update_folder", "unknown-id", ep.update_folder(UNKNOWN_FOLDER, {"name": f"{s.prefix} none"}))
    s.r("update_folder", "bad-payload", ep.update_folder(sub["id"], {"name": "x"}))
    s.r("delete_folder", "success", ep.delete_folder(sub["id"]))
    s.r("delete_folder", "unknown-id", ep.delete_folder(UNKNOWN_FOLDER))


def record_envelopes(s: Scenario, draft: dict[str, Any]) -> None:
    """Create (errors), get, get-many, find, update, audit log, downloads, duplicate and delete."""
    env, item = draft["envelope"], draft["item"]
    files = ([s.pdf], [s.pdf.name])
    untitled = {k: v for k, v in s.create_payload("untitled").items() if k != "title"}
    s.track(s.r("create_envelope", "bad-payload", ep.create_envelope(untitled, *files)))
    lost = s.create_payload("lost", folder_id=UNKNOWN_FOLDER)
    s.track(s.r("create_envelope", "unknown-id", ep.create_envelope(lost, *files)))
    wrong = ep.create_envelope(s.create_payload("wrong"), *files)
    s.track(s.r("create_envelope", "wrong-key", wrong, auth="wrong-key"))
    s.r("get_envelope", "success", ep.get_envelope(env))
    s.r("audit_log", "success", ep.audit_log(env, page=1))
    s.r("get_envelope", "unknown-id", ep.get_envelope(UNKNOWN_ENVELOPE))
    s.r("get_envelope", "bad-payload", ep.get_envelope("not-an-envelope-id"))
    s.r("get_envelope", "wrong-key", ep.get_envelope(env), auth="wrong-key")
    s.r("get_envelope", "no-key", ep.get_envelope(env), auth="no-key")
    s.r("get_many", "success", ep.get_many([env]))
    s.r("get_many", "unknown-id", ep.get_many([UNKNOWN_ENVELOPE]))
    empty = Call("POST", "/envelope/get-many", READ, json={"ids": {"type": "envelopeId", "ids": []}})
    s.r("get_many", "bad-payload", empty)
    # The draft is the only envelope of the folder whose title or external id holds "<prefix>-draft".
    find = ep.find_envelopes(page=1, query=f"{s.prefix}-draft", folder_id=s.folder)
    s.r("find_envelopes", "success", find, given=("draft",))
    s.r("find_envelopes", "unknown-id", ep.find_envelopes(page=1, folder_id=UNKNOWN_FOLDER))
    bad_status = Call("GET", "/envelope", READ, params={"status": "DONE", "page": 1, "perPage": 100})
    s.r("find_envelopes", "bad-payload", bad_status)
    s.r("find_envelopes", "wrong-key", ep.find_envelopes(page=1), auth="wrong-key")
    rename = {"title": f"{s.prefix} draft renamed"}
    s.r("update_envelope", "success", ep.update_envelope(env, rename, {"subject": "Please sign this"}))
    s.r("update_envelope", "unknown-id", ep.update_envelope(UNKNOWN_ENVELOPE, rename, None))
    s.r("update_envelope", "bad-payload", ep.update_envelope(env, {"visibility": "NOBODY"}, None))
    s.r("update_envelope", "wrong-key", ep.update_envelope(env, rename, None), auth="wrong-key")
    s.r("audit_log", "unknown-id", ep.audit_log(UNKNOWN_ENVELOPE, page=1))
    s.r("download_audit_log", "success", ep.download_audit_log(env))
    s.r("download_audit_log", "unknown-id", ep.download_audit_log(UNKNOWN_ENVELOPE))
    s.r("download_audit_log", "wrong-key", ep.download_audit_log(env), auth="wrong-key")
    s.r("download_item", "success", ep.download_item(item, "original"))
    s.r("download_item", "success-signed-draft", ep.download_item(item, "signed"))
    s.r("download_item", "unknown-id", ep.download_item(UNKNOWN_ITEM, "original"))
    bad_version = Call("GET", f"/envelope/item/{item}/download", READ, params={"version": "final"})
    s.r("download_item", "bad-payload", bad_version)
    s.r("download_item", "bad-state", ep.download_item(item, "pending"))
    s.r("download_item", "wrong-key", ep.download_item(item, "original"), auth="wrong-key")
    s.r("download_certificate", "bad-state", ep.download_certificate(env))
    s.r("download_certificate", "unknown-id", ep.download_certificate(UNKNOWN_ENVELOPE))
    dup = s.r(
        "duplicate_envelope",
        "success",
        ep.duplicate_envelope(env, include_recipients=True, include_fields=True),
    )
    s.track(dup)
    s.r(
        "duplicate_envelope",
        "unknown-id",
        ep.duplicate_envelope(UNKNOWN_ENVELOPE, include_recipients=True, include_fields=True),
    )
    s.rec.ref(dup["id"], "draft.envelope")
    s.r("delete_envelope", "success", ep.delete_envelope(dup["id"]))
    s.r("delete_envelope", "unknown-id", ep.delete_envelope(UNKNOWN_ENVELOPE))
    s.r("delete_envelope", "bad-payload", ep.delete_envelope("not-an-envelope-id"))


def record_parts(s: Scenario, draft: dict[str, Any], spare: dict[str, Any]) -> None:
    """Attachments, items, recipients and fields of a draft; the deletes on a ``spare`` draft."""
    env = draft["envelope"]
    terms = "https://example.com/terms"
    host = s.new_state("draft", name="attached")["envelope"]
    created = s.r("create_attachment", "success", ep.create_attachment(host, "Terms", terms))
    s.rec.ref(host, "attached.envelope")
    attachment = s.rec.ref(created["id"], "attached.attachment")
    s.r("create_attachment", "unknown-id", ep.create_attachment(UNKNOWN_ENVELOPE, "Terms", terms))
    not_a_url = {"envelopeId": env, "data": {"label": "Terms", "data": "not a url"}}
    s.r(
        "create_attachment",
        "bad-payload",
        Call("POST", "/envelope/attachment/create", CREATE, json=not_a_url),
    )
    s.r("find_attachments", "success", ep.find_attachments(host))
    s.r("find_attachments", "unknown-id", ep.find_attachments(UNKNOWN_ENVELOPE))
    s.r("update_attachment", "success", ep.update_attachment(attachment, "Terms v2", terms + "-v2"))
    s.r("update_attachment", "unknown-id", ep.update_attachment(UNKNOWN_ATTACHMENT, "Terms v2", terms))
    unlabelled = {"id": attachment, "data": {"label": "", "data": "not a url"}}
    s.r(
        "update_attachment",
        "bad-payload",
        Call("POST", "/envelope/attachment/update", WRITE, json=unlabelled),
    )
    s.r("delete_attachment", "success", ep.delete_attachment(attachment))
    s.r("delete_attachment", "unknown-id", ep.delete_attachment(UNKNOWN_ATTACHMENT))

    s.r("create_items", "success", ep.create_items(env, [s.annex], [s.annex.name]))
    s.r("create_items", "unknown-id", ep.create_items(UNKNOWN_ENVELOPE, [s.annex], [s.annex.name]))
    renamed = [{"envelopeItemId": draft["item"], "title": "contract-renamed.pdf"}]
    s.r("update_items", "success", ep.update_items(env, renamed))
    s.r("update_items", "unknown-id", ep.update_items(UNKNOWN_ENVELOPE, renamed))
    s.r("update_items", "bad-payload", ep.update_items(env, [{"envelopeItemId": draft["item"], "order": 0}]))

    second = {"email": "signer2@example.com", "name": "Signer Two", "role": "SIGNER"}
    s.r("create_recipients", "success", ep.create_recipients(env, [second]))
    s.r("create_recipients", "unknown-id", ep.create_recipients(UNKNOWN_ENVELOPE, [second]))
    s.r("create_recipients", "bad-payload", ep.create_recipients(env, [{**second, "email": "not-an-email"}]))
    s.r("get_recipient", "success", ep.get_recipient(draft["recipient"]))
    s.r("get_recipient", "unknown-id", ep.get_recipient(UNKNOWN_INT))
    change = [{"id": draft["recipient"], "name": "Signer One Renamed"}]
    s.r("update_recipients", "success", ep.update_recipients(env, change))
    s.r("update_recipients", "unknown-id", ep.update_recipients(UNKNOWN_ENVELOPE, change))
    s.r(
        "update_recipients",
        "bad-payload",
        ep.update_recipients(env, [{"id": draft["recipient"], "role": "BOSS"}]),
    )

    field = {"recipientId": draft["recipient"], "envelopeItemId": draft["item"], **SIGNATURE, "positionX": 50}
    s.r("create_fields", "success", ep.create_fields(env, [field]))
    s.r("create_fields", "unknown-id", ep.create_fields(UNKNOWN_ENVELOPE, [field]))
    s.r("create_fields", "bad-payload", ep.create_fields(env, [{**field, "positionX": 150}]))
    current = s.r("get_field", "success", ep.get_field(draft["field"]))
    s.r("get_field", "unknown-id", ep.get_field(UNKNOWN_INT))
    resize = {
        "id": draft["field"],
        "type": "SIGNATURE",
        "width": 25,
        "height": 6,
        "fieldMeta": current["fieldMeta"],
    }
    s.r("update_fields", "success", ep.update_fields(env, [resize]))
    s.r("update_fields", "unknown-id", ep.update_fields(UNKNOWN_ENVELOPE, [resize]))
    s.r("update_fields", "bad-payload", ep.update_fields(env, [{**resize, "type": "NOPE"}]))

    s.r("delete_field", "success", ep.delete_field(spare["field"]))
    s.r("delete_field", "unknown-id", ep.delete_field(UNKNOWN_INT))
    s.r("delete_recipient", "success", ep.delete_recipient(spare["recipient"]))
    s.r("delete_recipient", "unknown-id", ep.delete_recipient(UNKNOWN_INT))
    s.r("delete_item", "success", ep.delete_item(spare["envelope"], spare["item"]))
    s.r("delete_item", "unknown-id", ep.delete_item(spare["envelope"], UNKNOWN_ITEM))
