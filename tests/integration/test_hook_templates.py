"""DocsignHook template methods against the sandbox over real HTTP: create, find, get, use, duplicate."""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from pypdf import PdfReader
from template_helpers import mapped, onboarding_recipients

from airflow_provider_docsign.exceptions import DocsignAmbiguousWriteError, DocsignValidationError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.models import EnvelopeStatus

pytestmark = pytest.mark.integration


@pytest.fixture
def template_id(hook: DocsignHook, make_pdf: Callable[..., Path]) -> str:
    pdf = make_pdf("nda.pdf", pages=2)
    return hook.create_template(
        title=f"Onboarding NDA {uuid.uuid4().hex[:8]}", files=[pdf], recipients=onboarding_recipients()
    )


def _uses(sandbox: SandboxServer) -> list[dict[str, object]]:
    return [r for r in sandbox.requests() if r["path"] == "/envelope/use"]


def test_create_find_and_get_template_in_a_folder(hook: DocsignHook, make_pdf: Callable[..., Path]) -> None:
    folder = hook.create_folder(f"Templates {uuid.uuid4().hex[:6]}", folder_type="TEMPLATE")
    title = f"Folder NDA {uuid.uuid4().hex[:8]}"
    tid = hook.create_template(
        title=title,
        files=[make_pdf("nda.pdf", pages=2)],
        recipients=onboarding_recipients(),
        folder_id=folder.id,
    )
    assert [t.id for t in hook.find_templates_by_title(title, folder_id=folder.id)] == [tid]
    assert hook.find_templates_by_title(title) == []  # the root does not list folder contents
    template = hook.get_template(tid)
    assert template.type == "TEMPLATE"
    assert template.folder_id == folder.id
    assert [r.name for r in template.recipients] == ["Customer", "Provider", "Legal"]
    labels = [(f.field_meta or {}).get("label") for f in template.fields]
    assert labels[:3] == ["company", "amount", "start_date"]


def test_use_with_prefill_and_two_mapped_recipients(
    hook: DocsignHook, sandbox: SandboxServer, template_id: str
) -> None:
    result = hook.use_template(
        template_id,
        recipients=mapped(),
        prefill_fields={"company": "ACME Corp", "amount": "1250.50", "start_date": "2027-01-01"},
        external_id=f"use-{uuid.uuid4().hex[:8]}",
        override={"title": "NDA - ACME Corp"},
        distribute=True,
    )
    assert [(r.email, r.role) for r in result.recipients] == [
        ("buyer@example.com", "SIGNER"),
        ("sales@example.com", "SIGNER"),
        ("legal@placeholder.test", "CC"),
    ]
    envelope = hook.get_envelope(result.envelope_id)
    assert envelope.status is EnvelopeStatus.PENDING
    assert envelope.title == "NDA - ACME Corp"
    assert envelope.raw["source"] == "TEMPLATE"
    inserted = {f.custom_text for f in envelope.fields if f.inserted}
    assert inserted == {"ACME Corp", "1250.50", "2027-01-01"}

    sandbox.complete(result.envelope_id)
    sandbox.wait_status(result.envelope_id, "COMPLETED")
    signed = sandbox.item_bytes(envelope.items[0].id, version="signed")
    text = PdfReader(io.BytesIO(signed)).pages[0].extract_text()
    for value in ("ACME Corp", "1250.50", "2027-01-01"):
        assert value in text


def test_use_with_a_replacement_pdf(
    hook: DocsignHook, sandbox: SandboxServer, template_id: str, make_pdf: Callable[..., Path]
) -> None:
    replacement = make_pdf("nda-acme.pdf", pages=3, title="NDA for ACME")
    item = hook.get_template(template_id).items[0]
    result = hook.use_template(template_id, recipients=mapped(), files={item.id: replacement})
    envelope = hook.get_envelope(result.envelope_id)
    assert envelope.status is EnvelopeStatus.DRAFT
    assert sandbox.item_bytes(envelope.items[0].id, version="original") == replacement.read_bytes()
    assert envelope.items[0].title == "nda"  # the template item's title, without ".pdf", as recorded


def test_short_replacement_is_refused_before_any_use_request(
    hook: DocsignHook, sandbox: SandboxServer, template_id: str, make_pdf: Callable[..., Path]
) -> None:
    short = make_pdf("short.pdf", pages=1)
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError) as err:
        hook.use_template(template_id, recipients=mapped(), files=[short])
    assert any("has 1 page(s)" in p and "on page 2" in p for p in err.value.problems)
    assert _uses(sandbox) == []
    assert [r["method"] for r in sandbox.requests()] == ["GET"]  # only the template was read


def test_unmapped_recipient_and_wrong_prefill_type_are_refused_locally(
    hook: DocsignHook, sandbox: SandboxServer, template_id: str
) -> None:
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError) as err:
        hook.use_template(template_id, recipients=mapped()[:1], prefill_fields={"amount": "twelve"})
    text = "\n".join(err.value.problems)
    assert "(Provider) is a SIGNER who must act but is not mapped" in text
    assert "'twelve' is not a number" in text
    with pytest.raises(DocsignValidationError, match="a TEXT value must be a string, not list"):
        hook.use_template(template_id, recipients=mapped(), prefill_fields={"company": ["ACME"]})
    assert _uses(sandbox) == []


def test_ambiguous_use_raises_and_leaves_one_envelope(
    hook: DocsignHook, sandbox: SandboxServer, template_id: str
) -> None:
    ext = f"amb-use-{uuid.uuid4().hex[:8]}"
    sandbox.inject_fault(method="POST", path="/envelope/use", action="drop_after_commit", count=1)
    with pytest.raises(DocsignAmbiguousWriteError, match="find_envelopes_by_external_id"):
        hook.use_template(template_id, recipients=mapped(), external_id=ext)
    assert len(_uses(sandbox)) == 1  # never repeated by the hook
    assert len(hook.find_envelopes_by_external_id(ext)) == 1


def test_duplicate_template(hook: DocsignHook, template_id: str) -> None:
    copy_id = hook.duplicate_template(template_id)
    original, copy = hook.get_template(template_id), hook.get_template(copy_id)
    assert copy.title == f"{original.title} (copy)"
    assert [r.name for r in copy.recipients] == [r.name for r in original.recipients]
    assert len(copy.fields) == len(original.fields)
    assert {f.id for f in copy.fields}.isdisjoint({f.id for f in original.fields})


def test_a_document_is_not_a_template(hook: DocsignHook, make_pdf: Callable[..., Path]) -> None:
    doc = hook.create_envelope(title="Plain", files=[make_pdf()])
    with pytest.raises(DocsignValidationError, match="not a TEMPLATE"):
        hook.get_template(doc)


def test_show_command_prints_recipients_and_fields_by_label(
    template_id: str, docsign_conn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from airflow_provider_docsign.cli import run

    assert run(["templates", "show", template_id, "--conn-id", docsign_conn]) == 0
    out = capsys.readouterr().out
    assert f"Template {template_id}" in out
    assert "SIGNER  name 'Customer'" in out
    assert "CC  name 'Legal'" in out
    assert "(optional)" in out
    assert "TEXT  label 'company'" in out
    assert "NUMBER  label 'amount'" in out


def test_use_into_a_document_folder(hook: DocsignHook, template_id: str) -> None:
    folder = hook.create_folder(f"Onboarding {uuid.uuid4().hex[:6]}")
    ext = f"in-folder-{uuid.uuid4().hex[:8]}"
    result = hook.use_template(template_id, recipients=mapped(), external_id=ext, folder_id=folder.id)
    assert [e.id for e in hook.find_envelopes_by_external_id(ext, folder_id=folder.id)] == [
        result.envelope_id
    ]
    assert hook.find_envelopes_by_external_id(ext) == []


def test_use_never_logs_signing_tokens_or_the_key(
    hook: DocsignHook, template_id: str, api_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG", logger="airflow_provider_docsign")
    result = hook.use_template(template_id, recipients=mapped(), distribute=True)
    tokens = [str(r.raw["token"]) for r in result.recipients]
    assert all(tokens)
    assert "/envelope/use" in caplog.text  # the body was logged at DEBUG ...
    for secret in (*tokens, api_key):
        assert secret not in caplog.text  # ... with the tokens and the key blanked
    assert "token" not in repr(result)
