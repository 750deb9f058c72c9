"""Preview of a template from the sandbox: role colours, prefill values, replacement PDFs, missing pages."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from pypdf import PdfReader
from template_helpers import onboarding_recipients

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.preview import preview_envelope

pytestmark = pytest.mark.integration


@pytest.fixture
def template_id(hook: DocsignHook, make_pdf: Callable[..., Path]) -> str:
    return hook.create_template(
        title=f"Preview NDA {uuid.uuid4().hex[:8]}",
        files=[make_pdf("nda.pdf", pages=2)],
        recipients=onboarding_recipients(),
    )


def _text(pdf: Path) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(pdf).pages)


def test_template_preview_draws_prefill_values(hook: DocsignHook, template_id: str, tmp_path: Path) -> None:
    result = preview_envelope(
        template_id, tmp_path / "out", hook=hook, prefill_fields={"company": "ACME Corp", "amount": "1250.50"}
    )
    assert result.warnings == []
    assert len(result.pngs) == 2
    text = _text(result.pdfs[0])
    assert "= ACME Corp" in text
    assert "= 1250.50" in text
    assert "Customer" in text  # the role's label, in its colour
    assert "Provider" in text


def test_template_preview_on_a_short_replacement_flags_missing_pages(
    hook: DocsignHook, template_id: str, tmp_path: Path, make_pdf: Callable[..., Path]
) -> None:
    short = make_pdf("acme.pdf", pages=1, title="ACME contract")
    result = preview_envelope(template_id, tmp_path / "out", hook=hook, files=[short])
    missing = [w for w in result.warnings if w.kind == "missing_page"]
    assert len(missing) == 3  # the customer's DATE and SIGNATURE, and the provider's SIGNATURE
    assert all("page 2 does not exist" in w.message for w in missing)
    assert "ACME contract" in _text(result.pdfs[0])  # drawn on the replacement, not the template's PDF


def test_template_preview_refuses_unknown_prefill_labels(
    hook: DocsignHook, template_id: str, tmp_path: Path
) -> None:
    with pytest.raises(DocsignValidationError, match="label 'nope' matches no template field"):
        preview_envelope(template_id, tmp_path / "out", hook=hook, prefill_fields={"nope": "x"})
    assert not (tmp_path / "out").exists()
