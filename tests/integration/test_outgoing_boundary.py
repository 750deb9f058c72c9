"""One outgoing boundary: every class of hostile character, in every string field the hook sends, through
every endpoint, is refused before it reaches the sandbox (whose request log counts what arrives).

The cases are driven by the endpoint builders of ``hooks/_endpoints.py``: every builder that returns a
``Call`` must have at least one :class:`Case` here (or be listed in :data:`NO_TEXT` with the reason), so
an endpoint added later fails :func:`test_every_endpoint_builder_has_a_case` until a line is added. A
case names the builder, the JSON path the error must name, the route the refused request was for, and
the hook call that puts the text at that path; a few methods read the envelope first (to merge or check
against it), and those reads are listed with the case: nothing else may reach the sandbox.
"""

# One case per line, so that a new endpoint is one added line: the table's lines are long.
# ruff: noqa: E501

from __future__ import annotations

import asyncio
import inspect
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import sig, signer

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.models import Envelope

pytestmark = pytest.mark.integration

#: One character of each refused class, and how the problem names it (every class of
#: service/text_policy.py; each is tested with several code points in tests/unit/test_text_policy.py).
HOSTILE: dict[str, tuple[str, str]] = {
    "ESC": ("\x1b", "the control character U+001B"),
    "LF": ("\n", "the control character U+000A"),
    "DEL": ("\x7f", "the control character U+007F"),
    "NEL": ("\x85", "the control character U+0085"),
    "CSI": ("\x9b", "the control character U+009B"),
    "LS": ("\u2028", "the line separator U+2028"),
    "PS": ("\u2029", "the paragraph separator U+2029"),
    "RLO": ("\u202e", "the bidirectional control U+202E"),
    "LRI": ("\u2066", "the bidirectional control U+2066"),
    "LRM": ("\u200e", "the bidirectional control U+200E"),
    "RLM": ("\u200f", "the bidirectional control U+200F"),
    "ALM": ("\u061c", "the bidirectional control U+061C"),
    "ZWSP": ("\u200b", "the invisible character U+200B"),
    "ZWNJ": ("\u200c", "the invisible character U+200C"),
    "ZWJ": ("\u200d", "the invisible character U+200D"),
    "BOM": ("\ufeff", "the invisible character U+FEFF"),
    "SHY": ("\u00ad", "the invisible character U+00AD"),
    "CGJ": ("\u034f", "the invisible character U+034F"),
    "HF": ("\u3164", "the invisible character U+3164"),
    "HWHF": ("\uffa0", "the invisible character U+FFA0"),
    "VS16": ("\ufe0f", "the invisible character U+FE0F"),  # after a Latin letter: applies to nothing
    "IAA": ("\ufff9", "the format character U+FFF9"),
    "TAG": ("\U000e0041", "the tag character U+E0041"),
    "CANCEL": ("\U000e007f", "the tag character U+E007F"),
    "nonchar": ("\uffff", "the noncharacter U+FFFF"),
    "nonchar16": ("\U0010fffe", "the noncharacter U+10FFFE"),
    "unassigned": ("\u2065", "the unassigned code point U+2065"),
    "surrogate": ("\ud800", "a lone surrogate U+D800"),
}
#: Classes that the document's own content (prefill and form values) may hold: scripts need them.
SCRIPT = {"RLO", "LRI", "LRM", "RLM", "ALM", "ZWSP", "ZWNJ", "ZWJ", "BOM", "SHY", "CGJ", "HF", "HWHF", "VS16"}


@dataclass
class World:
    """What the cases write to: made once per module, never changed (every case is refused)."""

    draft_id: str
    item_id: str
    recipient_id: int
    text_field_id: int
    pending_id: str
    pending_recipient_id: int
    template: Envelope
    folder_id: str
    pdf: Path
    out: Path


@dataclass(frozen=True)
class Case:
    """One string field of one endpoint.

    :param builder: The ``_endpoints`` builder whose request carries the field.
    :param where: The JSON path (or ``the path``, ``?name``) the problem must name.
    :param route: What the refused request was, as the error's context names it (``POST /folder/create``).
    :param send: ``send(hook, world, text)`` puts ``text`` at that field (``{t}`` is ``ab<char>cd``).
    :param reads: Requests the method makes before it builds the refused one, as ``"GET /path"``.
    :param allows: Classes the field may hold (line breaks in the message, script characters in content).
    """

    builder: str
    where: str
    route: str
    send: Callable[[DocsignHook, World, str], Any]
    reads: Callable[[World], list[str]] = lambda w: []
    allows: frozenset[str] = frozenset()

    @property
    def id(self) -> str:
        return f"{self.builder}:{self.where}"


def _create(h: DocsignHook, w: World, **kw: Any) -> Any:
    kw.setdefault("title", "Boundary")
    kw.setdefault("files", [w.pdf])
    kw.setdefault("recipients", [signer(email="sam@example.com")])
    return h.create_envelope(**kw)


def _text_field(**meta: Any) -> dict[str, Any]:
    return sig(type="TEXT", positionY=40, fieldMeta={"type": "text", **meta})


def _use(
    h: DocsignHook, w: World, *, name: str = "Buyer", email: str = "buyer@example.com", **kw: Any
) -> Any:
    rid = next(r.id for r in w.template.recipients if r.role == "SIGNER")
    recipients = [{"id": rid, "email": email, "name": name}]
    return h.use_template(w.template.id, template=w.template, recipients=recipients, **kw)


def _field(w: World, **meta: Any) -> dict[str, Any]:
    return {
        "recipientId": w.recipient_id,
        "type": "TEXT",
        "page": 1,
        "positionX": 10,
        "positionY": 60,
        "width": 20,
        "height": 5,
        "fieldMeta": {"type": "text", **meta},
    }


def _read_draft(w: World) -> list[str]:
    return [f"GET /envelope/{w.draft_id}"]


MESSAGE = frozenset({"LF"})
CONTENT = frozenset(SCRIPT)

CASES: list[Case] = [
    # -- envelopes: create (multipart payload), read, find, update, send, cancel, delete, audit log
    Case("create_envelope", "title", "POST /envelope/create", lambda h, w, t: _create(h, w, title=t)),
    Case("create_envelope", "externalId", "POST /envelope/create", lambda h, w, t: _create(h, w, external_id=t)),
    Case("create_envelope", "folderId", "POST /envelope/create", lambda h, w, t: _create(h, w, folder_id=t)),
    Case("create_envelope", "meta.subject", "POST /envelope/create", lambda h, w, t: _create(h, w, meta={"subject": t})),
    Case("create_envelope", "meta.message", "POST /envelope/create", lambda h, w, t: _create(h, w, meta={"message": t}), allows=MESSAGE),
    Case("create_envelope", "meta.timezone", "POST /envelope/create", lambda h, w, t: _create(h, w, meta={"timezone": t})),
    Case("create_envelope", "meta.redirectUrl", "POST /envelope/create", lambda h, w, t: _create(h, w, meta={"redirectUrl": f"https://x.test/{t}"})),
    Case("create_envelope", "meta.emailReplyTo", "POST /envelope/create", lambda h, w, t: _create(h, w, meta={"emailReplyTo": f"{t}@x.test"})),
    Case("create_envelope", "recipients[0].name", "POST /envelope/create", lambda h, w, t: _create(h, w, recipients=[signer(name=t)])),
    Case("create_envelope", "recipients[0].email", "POST /envelope/create", lambda h, w, t: _create(h, w, recipients=[signer(email=f"{t}@x.test")])),
    Case("create_envelope", "recipients[0].fields[1].fieldMeta.label", "POST /envelope/create", lambda h, w, t: _create(h, w, recipients=[signer(sig(), _text_field(label=t))])),
    Case("create_envelope", "recipients[0].fields[1].fieldMeta.placeholder", "POST /envelope/create", lambda h, w, t: _create(h, w, recipients=[signer(sig(), _text_field(placeholder=t))])),
    Case("create_envelope", "recipients[0].fields[1].fieldMeta.text", "POST /envelope/create", lambda h, w, t: _create(h, w, recipients=[signer(sig(), _text_field(text=t))])),
    Case("create_envelope", "attachments[0].label", "POST /envelope/create", lambda h, w, t: _create(h, w, attachments=[{"label": t, "data": "https://x.test/a"}])),
    Case("create_envelope", "attachments[0].data", "POST /envelope/create", lambda h, w, t: _create(h, w, attachments=[{"label": "a", "data": f"https://x.test/{t}"}])),
    Case("create_envelope", "formValues.name", "POST /envelope/create", lambda h, w, t: _create(h, w, formValues={"name": t}), allows=CONTENT),
    Case("create_envelope", "the key 'ab", "POST /envelope/create", lambda h, w, t: _create(h, w, formValues={t: "x"})),
    Case("create_envelope", "the key 'vis", "POST /envelope/create", lambda h, w, t: _create(h, w, **{f"vis{t}": "x"})),
    Case("create_envelope", "the name of file #0", "POST /envelope/create", lambda h, w, t: _create(h, w, files=[_named_pdf(w, t)])),
    Case("create_envelope", "title", "POST /envelope/create", lambda h, w, t: h.create_template(title=t, files=[w.pdf])),
    Case("get_envelope", "the path", "GET /envelope/", lambda h, w, t: h.get_envelope(f"envelope_{t}")),
    Case("get_many", "ids.ids[0]", "POST /envelope/get-many", lambda h, w, t: h.get_envelopes([f"envelope_{t}"])),
    Case("find_envelopes", "?query", "GET /envelope", lambda h, w, t: list(h.find_envelopes(query=t))),
    Case("find_envelopes", "?folderId", "GET /envelope", lambda h, w, t: list(h.find_envelopes(folder_id=t))),
    Case("find_envelopes", "?query", "GET /envelope", lambda h, w, t: h.find_envelopes_by_external_id(t)),
    Case("update_envelope", "data.title", "POST /envelope/update", lambda h, w, t: h.update_envelope(w.draft_id, title=t)),
    Case("update_envelope", "data.externalId", "POST /envelope/update", lambda h, w, t: h.update_envelope(w.draft_id, external_id=t)),
    Case("update_envelope", "data.folderId", "POST /envelope/update", lambda h, w, t: h.update_envelope(w.draft_id, folder_id=t)),
    Case("update_envelope", "meta.subject", "POST /envelope/update", lambda h, w, t: h.update_envelope(w.draft_id, meta={"subject": t})),
    Case("update_envelope", "meta.message", "POST /envelope/update", lambda h, w, t: h.update_envelope(w.draft_id, meta={"message": t}), allows=MESSAGE),
    Case("update_envelope", "meta.redirectUrl", "POST /envelope/update", lambda h, w, t: h.update_envelope(w.draft_id, meta={"redirectUrl": f"https://x.test/{t}"})),
    Case("update_envelope", "meta.emailReplyTo", "POST /envelope/update", lambda h, w, t: h.update_envelope(w.draft_id, meta={"emailReplyTo": f"{t}@x.test"})),
    Case("update_envelope", "envelopeId", "POST /envelope/update", lambda h, w, t: h.update_envelope(f"envelope_{t}", title="x")),
    Case("delete_envelope", "envelopeId", "POST /envelope/delete", lambda h, w, t: h.delete_envelope(f"envelope_{t}")),
    Case("distribute_envelope", "meta.subject", "POST /envelope/distribute", lambda h, w, t: h.distribute_envelope(w.draft_id, meta={"subject": t})),
    Case("distribute_envelope", "meta.message", "POST /envelope/distribute", lambda h, w, t: h.distribute_envelope(w.draft_id, meta={"message": t}), allows=MESSAGE),
    Case("distribute_envelope", "envelopeId", "POST /envelope/distribute", lambda h, w, t: h.distribute_envelope(f"envelope_{t}")),
    Case("redistribute_envelope", "envelopeId", "POST /envelope/redistribute", lambda h, w, t: h.redistribute_envelope(f"envelope_{t}", [w.pending_recipient_id])),
    Case("cancel_envelope", "reason", "POST /envelope/cancel", lambda h, w, t: h.cancel_envelope(w.pending_id, reason=t)),
    Case("cancel_envelope", "envelopeId", "POST /envelope/cancel", lambda h, w, t: h.cancel_envelope(f"envelope_{t}")),
    Case("audit_log", "the path", "GET /envelope/", lambda h, w, t: list(h.get_audit_log(f"envelope_{t}"))),
    # -- templates: use (multipart payload), duplicate (reads the template first: refused at that read)
    Case("use_template", "recipients[0].name", "POST /envelope/use", lambda h, w, t: _use(h, w, name=t)),
    Case("use_template", "recipients[0].email", "POST /envelope/use", lambda h, w, t: _use(h, w, email=f"{t}@x.test")),
    Case("use_template", "externalId", "POST /envelope/use", lambda h, w, t: _use(h, w, external_id=t)),
    Case("use_template", "folderId", "POST /envelope/use", lambda h, w, t: _use(h, w, folder_id=t)),
    Case("use_template", "prefillFields[0].value", "POST /envelope/use", lambda h, w, t: _use(h, w, prefill_fields={"company": t}), allows=CONTENT),
    Case("use_template", "override.title", "POST /envelope/use", lambda h, w, t: _use(h, w, override={"title": t})),
    Case("use_template", "override.subject", "POST /envelope/use", lambda h, w, t: _use(h, w, override={"subject": t})),
    Case("use_template", "override.message", "POST /envelope/use", lambda h, w, t: _use(h, w, override={"message": t}), allows=MESSAGE),
    Case("use_template", "override.redirectUrl", "POST /envelope/use", lambda h, w, t: _use(h, w, override={"redirectUrl": f"https://x.test/{t}"})),
    Case("use_template", "attachments[0].label", "POST /envelope/use", lambda h, w, t: _use(h, w, attachments=[{"label": t, "data": "https://x.test/a"}])),
    Case("use_template", "formValues.name", "POST /envelope/use", lambda h, w, t: _use(h, w, form_values={"name": t}), allows=CONTENT),
    Case("use_template", "the key 'ab", "POST /envelope/use", lambda h, w, t: _use(h, w, form_values={t: "x"})),
    Case("use_template", "attachments[0].data", "POST /envelope/use", lambda h, w, t: _use(h, w, attachments=[{"label": "a", "url": f"https://x.test/{t}"}])),
    Case("use_template", "the name of file #0", "POST /envelope/use", lambda h, w, t: _use(h, w, files=[_named_pdf(w, t)])),
    Case("duplicate_envelope", "the path", "GET /envelope/", lambda h, w, t: h.duplicate_template(f"envelope_{t}")),
    Case("duplicate_envelope", "envelopeId", "POST /envelope/duplicate", lambda h, w, t: h.duplicate_envelope(f"envelope_{t}")),
    # the copy's title goes out in an update after the copy exists: checked before the copy is made
    Case("duplicate_envelope", "data.title", "POST /envelope/update", lambda h, w, t: h.duplicate_envelope(w.draft_id, title=t)),
    Case("duplicate_envelope", "data.externalId", "POST /envelope/update", lambda h, w, t: h.duplicate_envelope(w.draft_id, external_id=t)),
    # -- attachments (labelled links)
    Case("find_attachments", "?envelopeId", "GET /envelope/attachment", lambda h, w, t: h.find_attachments(f"envelope_{t}")),
    Case("create_attachment", "data.label", "POST /envelope/attachment/create", lambda h, w, t: h.create_attachment(w.draft_id, label=t, url="https://x.test/terms")),
    Case("create_attachment", "data.data", "POST /envelope/attachment/create", lambda h, w, t: h.create_attachment(w.draft_id, label="Terms", url=f"https://x.test/{t}")),
    Case("create_attachment", "envelopeId", "POST /envelope/attachment/create", lambda h, w, t: h.create_attachment(f"envelope_{t}", label="Terms", url="https://x.test/terms")),
    Case("update_attachment", "data.label", "POST /envelope/attachment/update", lambda h, w, t: h.update_attachment("attachment_1", label=t, url="https://x.test/terms")),
    Case("update_attachment", "data.data", "POST /envelope/attachment/update", lambda h, w, t: h.update_attachment("attachment_1", label="Terms", url=f"https://x.test/{t}")),
    Case("update_attachment", "id", "POST /envelope/attachment/update", lambda h, w, t: h.update_attachment(f"attachment_{t}", label="Terms", url="https://x.test/terms")),
    Case("delete_attachment", "id", "POST /envelope/attachment/delete", lambda h, w, t: h.delete_attachment(f"attachment_{t}")),
    # -- items: add (multipart), rename/reorder, delete, downloads
    Case("create_items", "envelopeId", "POST /envelope/item/create-many", lambda h, w, t: h.add_envelope_items(f"envelope_{t}", [w.pdf])),
    Case("create_items", "the name of file #0", "POST /envelope/item/create-many", lambda h, w, t: h.add_envelope_items(w.draft_id, [_named_pdf(w, t)])),
    Case("update_items", "data[0].title", "POST /envelope/item/update-many", lambda h, w, t: h.update_envelope_items(w.draft_id, [{"envelopeItemId": w.item_id, "title": t}])),
    Case("update_items", "data[0].envelopeItemId", "POST /envelope/item/update-many", lambda h, w, t: h.update_envelope_items(w.draft_id, [{"envelopeItemId": f"item_{t}", "order": 1}])),
    Case("delete_item", "envelopeItemId", "POST /envelope/item/delete", lambda h, w, t: h.delete_envelope_item(w.draft_id, f"item_{t}")),
    Case("download_item", "the path", "GET /envelope/item/", lambda h, w, t: h.download_envelope_item(f"item_{t}", w.out)),
    Case("download_audit_log", "the path", "GET /envelope/", lambda h, w, t: h.download_audit_log(f"envelope_{t}", w.out)),
    Case("download_certificate", "the path", "GET /envelope/", lambda h, w, t: h.download_certificate(f"envelope_{t}", w.out)),
    # -- recipients
    Case("create_recipients", "data[0].name", "POST /envelope/recipient/create-many", lambda h, w, t: h.create_recipients(w.draft_id, [{"email": "cc@x.test", "name": t, "role": "CC"}])),
    Case("create_recipients", "data[0].email", "POST /envelope/recipient/create-many", lambda h, w, t: h.create_recipients(w.draft_id, [{"email": f"{t}@x.test", "name": "C", "role": "CC"}])),
    Case("update_recipients", "data[0].name", "POST /envelope/recipient/update-many", lambda h, w, t: h.update_recipients(w.draft_id, [{"id": w.recipient_id, "name": t}])),
    Case("update_recipients", "data[0].email", "POST /envelope/recipient/update-many", lambda h, w, t: h.update_recipients(w.draft_id, [{"id": w.recipient_id, "email": f"{t}@x.test"}])),
    Case("reject_recipient", "reason", "POST /envelope/recipient/", lambda h, w, t: h.reject_recipient(w.pending_recipient_id, envelope_id=w.pending_id, reason=t)),
    Case("reject_recipient", "envelopeId", "POST /envelope/recipient/", lambda h, w, t: h.reject_recipient(w.pending_recipient_id, envelope_id=f"envelope_{t}", reason="no")),
    # -- fields (both read the envelope first, to check pages and recipients, and to merge fieldMeta)
    Case("create_fields", "data[0].fieldMeta.label", "POST /envelope/field/create-many", lambda h, w, t: h.create_fields(w.draft_id, [_field(w, label=t)]), reads=_read_draft),
    Case("create_fields", "data[0].fieldMeta.placeholder", "POST /envelope/field/create-many", lambda h, w, t: h.create_fields(w.draft_id, [_field(w, placeholder=t)]), reads=_read_draft),
    Case("update_fields", "data[0].fieldMeta.label", "POST /envelope/field/update-many", lambda h, w, t: h.update_fields(w.draft_id, [{"id": w.text_field_id, "fieldMeta": {"type": "text", "label": t}}]), reads=_read_draft),
    Case("update_fields", "data[0].fieldMeta.text", "POST /envelope/field/update-many", lambda h, w, t: h.update_fields(w.draft_id, [{"id": w.text_field_id, "fieldMeta": {"type": "text", "text": t}}]), reads=_read_draft),
    # -- folders
    Case("list_folders", "?parentId", "GET /folder", lambda h, w, t: list(h.list_folders(parent_id=t))),
    Case("create_folder", "name", "POST /folder/create", lambda h, w, t: h.create_folder(t)),
    Case("create_folder", "parentId", "POST /folder/create", lambda h, w, t: h.create_folder("Contracts", parent_id=t)),
    Case("update_folder", "data.name", "POST /folder/update", lambda h, w, t: h.update_folder(w.folder_id, name=t)),
    Case("update_folder", "data.parentId", "POST /folder/update", lambda h, w, t: h.update_folder(w.folder_id, parent_id=t)),
    Case("update_folder", "folderId", "POST /folder/update", lambda h, w, t: h.update_folder(f"folder_{t}", pinned=True)),
    Case("delete_folder", "folderId", "POST /folder/delete", lambda h, w, t: h.delete_folder(f"folder_{t}")),
]  # fmt: skip

#: Builders that carry no caller text at all, with the reason.
NO_TEXT: dict[str, str] = {
    "get_recipient": "an integer recipient id only",
    "delete_recipient": "an integer recipient id only",
    "get_field": "an integer field id only",
    "delete_field": "an integer field id only",
}


def _named_pdf(w: World, name: str) -> io.BytesIO:
    """The world's PDF as a file object whose ``name`` (the multipart file name) is ``name``.pdf."""
    stream = io.BytesIO(w.pdf.read_bytes())
    stream.name = f"{name}.pdf"
    return stream


def _builders() -> set[str]:
    return {
        name
        for name, fn in inspect.getmembers(ep, inspect.isfunction)
        if fn.__module__ == ep.__name__ and inspect.signature(fn).return_annotation in ("Call", ep.Call)
    }


def test_every_endpoint_builder_has_a_case() -> None:
    builders = _builders()
    covered = {c.builder for c in CASES} | set(NO_TEXT)
    missing = sorted(builders - covered)
    assert not missing, (
        f"endpoint builder(s) {missing} of hooks/_endpoints.py have no hostile-text case: add one Case line "
        "per string field the new request carries to CASES (or, if it carries no caller text, a line to NO_TEXT)"
    )
    assert sorted(covered - builders) == [], "CASES name builders that no longer exist"
    assert len(builders) >= 30


@pytest.fixture(scope="module")
def world(sandbox_session: SandboxServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("boundary")
    pdf = write_sample_pdf(tmp / "contract.pdf", pages=1, title="contract")
    with DocsignHook(base_url=sandbox_session.base_url, api_key=sandbox_session.api_key) as hook:
        draft_id = hook.create_envelope(
            title="Boundary draft",
            files=[pdf],
            recipients=[
                signer(sig(), _text_field(label="Company", placeholder="ACME"), email="sam@example.com")
            ],
        )
        draft = hook.get_envelope(draft_id)
        pending_id = hook.create_envelope(
            title="Boundary pending", files=[pdf], recipients=[signer(email="pat@example.com")]
        )
        hook.distribute_envelope(pending_id)
        template_id = hook.create_template(
            title="Boundary template",
            files=[pdf],
            recipients=[
                {
                    "email": "customer@placeholder.test",
                    "name": "Customer",
                    "role": "SIGNER",
                    "fields": [sig(), _text_field(label="company")],
                }
            ],
        )
        folder = hook.create_folder("Boundary folder")
        yield World(
            draft_id=draft_id,
            item_id=draft.items[0].id,
            recipient_id=draft.recipients[0].id,
            text_field_id=next(f.id for f in draft.fields if f.type == "TEXT"),
            pending_id=pending_id,
            pending_recipient_id=hook.get_envelope(pending_id).recipients[0].id,
            template=hook.get_template(template_id),
            folder_id=folder.id,
            pdf=pdf,
            out=tmp / "downloads",
        )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_text_never_reaches_the_service(
    hook: DocsignHook, sandbox: SandboxServer, world: World, case: Case
) -> None:
    world.out.mkdir(exist_ok=True)
    failures: list[str] = []
    for name, (char, words) in HOSTILE.items():
        if name in case.allows:
            continue
        sandbox.clear_requests()
        try:
            case.send(hook, world, f"ab{char}cd")
        except DocsignValidationError as exc:
            problems, context = exc.problems, exc.context
        else:
            failures.append(f"{name}: no DocsignValidationError")
            continue
        arrived = [f"{r['method']} {r['path']}" for r in sandbox.requests()]
        if arrived != case.reads(world):
            failures.append(f"{name}: requests reached the sandbox: {arrived}")
        if f"({case.route}" not in context:
            failures.append(f"{name}: refused for {context!r}, not for {case.route}")
        if not any(p.startswith(case.where) and f" contains {words} at position " in p for p in problems):
            failures.append(f"{name}: no problem names {case.where!r} and {words}: {problems}")
        if not all(p.isprintable() for p in problems):
            failures.append(f"{name}: a problem carries the raw character: {problems!r}")
    assert not failures, "\n".join(failures)
    assert not any(world.out.iterdir()), "a refused download wrote a file"


def test_the_async_reads_pass_the_same_check(hook: DocsignHook, sandbox: SandboxServer) -> None:
    async def reads() -> list[str]:
        contexts = []
        for call in (
            hook.async_get_envelope("envelope_a\u202eb"),
            hook.async_get_envelopes(["envelope_a\x85b"]),
        ):
            try:
                await call
            except DocsignValidationError as exc:
                contexts.append(exc.context)
        await hook.aclose()
        return contexts

    sandbox.clear_requests()
    contexts = asyncio.run(reads())
    assert [c.split(" (")[1] for c in contexts] == [
        "GET /envelope/envelope_a%E2%80%AEb)",
        "POST /envelope/get-many)",
    ]
    assert sandbox.requests() == []


def test_script_characters_in_content_fields_do_reach_the_service(
    hook: DocsignHook, sandbox: SandboxServer, world: World
) -> None:
    # The exception is real, not a hole in the test: a Persian prefill value with its zero-width
    # non-joiner and a right-to-left mark is sent, and the service stores it as given.
    value = "\u0645\u06cc\u200c\u0634\u0648\u062f \u200f(ACME)"
    result = _use(hook, world, prefill_fields={"company": value})
    envelope = hook.get_envelope(result.envelope_id)
    # (the service drops a prefilled field's label: recording templates/26)
    assert [(f.field_meta or {}).get("text") for f in envelope.fields if f.type == "TEXT"] == [value]
    hook.delete_envelope(result.envelope_id)


@pytest.mark.parametrize(
    ("name", "send", "where", "reads"),
    [
        # The real service answered 400 to a 255-character subject (its maximum is 254).
        ("subject 255", lambda h, w: h.update_envelope(w.draft_id, meta={"subject": "s" * 255}), "meta.subject", []),
        # A 1 MB label was created: the schema sets no bound, the default one applies.
        ("label 1 MB", lambda h, w: h.create_fields(w.draft_id, [_field(w, label="L" * 1_000_000)]), "data[0].fieldMeta.label", ["draft"]),
        ("javascript: link", lambda h, w: h.update_envelope(w.draft_id, meta={"redirectUrl": "javascript:alert(1)"}), "meta.redirectUrl", []),
        ("data: link", lambda h, w: _use(h, w, override={"redirectUrl": "data:text/html,<b>x</b>"}), "override.redirectUrl", []),
        ("dotless i", lambda h, w: h.create_recipients(w.draft_id, [{"email": "adm\u0131n@example.com", "name": "A", "role": "CC"}]), "data[0].email", []),
        ("Kelvin sign", lambda h, w: h.update_recipients(w.draft_id, [{"id": w.recipient_id, "email": "\u212aim@example.com"}]), "data[0].email", []),
        ("long s", lambda h, w: _create(h, w, recipients=[signer(email="\u017fam@example.com")]), "recipients[0].email", []),
        # attachment links: https only, at the boundary, whatever path put them in the request
        ("http link, create", lambda h, w: _create(h, w, attachments=[{"label": "T", "data": "http://x.test/t"}]), "attachments[0].data", []),
        ("http link, template", lambda h, w: h.create_template(title="T", files=[w.pdf], attachments=[{"label": "T", "data": "http://x.test/t"}]), "attachments[0].data", []),
        ("credentials, create", lambda h, w: _create(h, w, attachments=[{"label": "T", "data": "https://www.yourbank.example@evil.example/login"}]), "attachments[0].data", []),
        ("backslash, create", lambda h, w: _create(h, w, attachments=[{"label": "T", "data": "https://good.example\\@evil.example/"}]), "attachments[0].data", []),
        ("Cyrillic a, create", lambda h, w: _create(h, w, attachments=[{"label": "T", "data": "https://\u0430pple.com/"}]), "attachments[0].data", []),
        ("punycode, create", lambda h, w: _create(h, w, attachments=[{"label": "T", "data": "https://xn--pple-43d.com/"}]), "attachments[0].data", []),
        ("http link, use", lambda h, w: _use(h, w, attachments=[{"label": "T", "url": "http://x.test/t"}]), "attachments[0]", []),
        ("credentials, attach", lambda h, w: h.create_attachment(w.draft_id, label="T", url="https://a@evil.example/"), "attachment", []),
        ("punycode, relink", lambda h, w: h.update_attachment("attachment_1", label="T", url="https://xn--pple-43d.com/"), "attachment", []),
        ("credentials, redirect", lambda h, w: h.update_envelope(w.draft_id, meta={"redirectUrl": "https://a@evil.example/"}), "meta.redirectUrl", []),
    ],
)  # fmt: skip
def test_lengths_links_and_lookalike_emails_never_reach_the_service(
    hook: DocsignHook,
    sandbox: SandboxServer,
    world: World,
    name: str,
    send: Callable[[DocsignHook, World], Any],
    where: str,
    reads: list[str],
) -> None:
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError) as info:
        send(hook, world)
    assert any(p.startswith(where) for p in info.value.problems), info.value.problems
    expected = [f"GET /envelope/{world.draft_id}" for _ in reads]
    assert [f"{r['method']} {r['path']}" for r in sandbox.requests()] == expected


@pytest.mark.parametrize("name", [n for n in HOSTILE if n != "surrogate"])
def test_a_query_value_given_as_bytes_is_checked_as_text(
    hook: DocsignHook, sandbox: SandboxServer, name: str
) -> None:
    char, words = HOSTILE[name]
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError) as info:
        list(hook.find_envelopes(query=f"ab{char}cd".encode()))  # type: ignore[arg-type]
    assert info.value.problems[0].startswith(f"?query contains {words} at position 2")
    with pytest.raises(DocsignValidationError) as info:
        list(hook.find_envelopes(query=b"\xff\xfe"))  # type: ignore[arg-type]
    assert info.value.problems == ["?query is bytes that are not UTF-8 text (invalid start byte)"]
    assert sandbox.requests() == []


def test_well_formed_emoji_and_scripts_do_reach_the_service(
    hook: DocsignHook, sandbox: SandboxServer, world: World
) -> None:
    # VS16 after an emoji, ZWJ inside emoji sequences, a skin tone, the flag of England and a Persian
    # name with its zero-width non-joiner: well-formed text, sent once and stored as given.
    title = "Team \U0001f469\u200d\U0001f4bb \u2764\ufe0f \U0001f3f3\ufe0f\u200d\U0001f308 \U0001f469\U0001f3fd\u200d\U0001f52c"
    flag = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
    name = "\u0639\u0644\u06cc\u200c\u0631\u0636\u0627"
    sandbox.clear_requests()
    envelope_id = _create(
        hook,
        world,
        title=title,
        recipients=[signer(name=name, email="ali@example.com")],
        meta={"subject": f"{flag} contract"},
    )
    assert [r["path"] for r in sandbox.requests() if r["method"] == "POST"] == ["/envelope/create"]
    envelope = hook.get_envelope(envelope_id)
    assert envelope.title == title
    assert envelope.recipients[0].name == name
    hook.delete_envelope(envelope_id)
