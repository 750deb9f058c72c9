"""Bad input is refused with every problem listed, before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pypdf import PdfWriter
from test_preview_support import field

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.preview import render_field_preview

SIGNER = {"email": "a@example.com", "name": "A", "role": "SIGNER", "fields": [field(10, 10, 20, 5)]}


def test_missing_file_and_non_pdf_are_listed_together(make_pdf, tmp_path):
    good = make_pdf("good.pdf")
    fake = tmp_path / "fake.pdf"
    fake.write_text("<html>not a pdf</html>")
    out = tmp_path / "out"
    with pytest.raises(DocsignValidationError) as info:
        render_field_preview([good, tmp_path / "missing.pdf", fake], [SIGNER], out)

    problems = info.value.problems
    assert len(problems) == 2
    assert "files[1] (missing.pdf): no such file" in problems[0]
    assert "files[2] (fake.pdf)" in problems[1]
    assert "%PDF-" in problems[1]
    assert not out.exists()


def test_open_binary_file_is_accepted(make_pdf, tmp_path):
    pdf = make_pdf("opened.pdf")
    with open(pdf, "rb") as fh:
        result = render_field_preview([fh], [SIGNER], tmp_path / "out")
    assert [p.name for p in result.pngs] == ["00-opened.page001.png"]
    assert result.warnings == []


def test_empty_file_list_and_pdf_without_pages_are_refused(tmp_path):
    empty = tmp_path / "empty.pdf"
    with open(empty, "wb") as fh:
        PdfWriter().write(fh)
    with pytest.raises(DocsignValidationError) as info:
        render_field_preview([], [SIGNER], tmp_path / "out")
    assert info.value.problems == ["files is empty: give at least one PDF"]
    with pytest.raises(DocsignValidationError) as info:
        render_field_preview([empty], [SIGNER], tmp_path / "out")
    assert info.value.problems == ["files[0] (empty.pdf): the PDF has no pages"]
    assert not (tmp_path / "out").exists()


def test_damaged_pdf_is_refused(make_pdf, tmp_path):
    whole = make_pdf("whole.pdf").read_bytes()
    damaged = tmp_path / "damaged.pdf"
    damaged.write_bytes(whole[:200])  # starts with %PDF- but is cut off
    with pytest.raises(DocsignValidationError) as info:
        render_field_preview([damaged], [SIGNER], tmp_path / "out")
    assert info.value.problems[0].startswith("files[0] (damaged.pdf): the PDF cannot be parsed")
    assert not (tmp_path / "out").exists()


def test_field_without_coordinates_names_recipient_and_field(make_pdf, tmp_path):
    pdf = make_pdf("a.pdf")
    bad = [
        {
            "email": "a@example.com",
            "name": "Ann",
            "role": "SIGNER",
            "fields": [{"type": "SIGNATURE", "page": 1}],
        },
        {
            "email": "b@example.com",
            "role": "SIGNER",
            "fields": [field("x", 1, 2, 3), field(1, 1, 1, 1, page="2")],
        },
        "not-an-object",
    ]
    with pytest.raises(DocsignValidationError) as info:
        render_field_preview([pdf], bad, tmp_path / "out")

    problems = info.value.problems
    assert problems[0].startswith("recipients[0].fields[0] (Ann): missing or invalid positionX, positionY")
    assert problems[1].startswith("recipients[1].fields[0] (b@example.com): missing or invalid positionX")
    assert problems[2].startswith("recipients[1].fields[1] (b@example.com): missing or invalid page")
    assert problems[3].startswith("recipients[2]: must be an object")
    assert not (tmp_path / "out").exists()


def test_bad_input_leaves_an_existing_preview_untouched(make_pdf, tmp_path):
    pdf = make_pdf("a.pdf")
    out = tmp_path / "out"
    first = render_field_preview([pdf], [SIGNER], out)
    before = {p: p.read_bytes() for p in [*first.pdfs, *first.pngs]}

    with pytest.raises(DocsignValidationError):
        render_field_preview([pdf], [{"role": "SIGNER", "fields": [{"page": 1}]}], out)
    with pytest.raises(DocsignValidationError):
        render_field_preview([pdf], [SIGNER], out, dpi=5000)

    assert {p: p.read_bytes() for p in before} == before
    assert sorted(os.listdir(out)) == sorted(p.name for p in before)  # no scratch files left


def test_output_that_would_overwrite_an_input_is_refused(make_pdf, tmp_path):
    source = make_pdf("a.pdf")
    # The second input sits where the preview of the first would be written.
    trap = tmp_path / "out" / "00-a.preview.pdf"
    trap.parent.mkdir()
    trap.write_bytes(source.read_bytes() + b"\n%trap\n")
    before = trap.read_bytes()
    with pytest.raises(DocsignValidationError, match="would overwrite an input"):
        render_field_preview([source, trap], [SIGNER], tmp_path / "out")
    assert trap.read_bytes() == before
    assert sorted(os.listdir(tmp_path / "out")) == ["00-a.preview.pdf"]


def test_recipients_must_be_a_list_and_payload_form_is_accepted(make_pdf, tmp_path):
    pdf = make_pdf("a.pdf")
    with pytest.raises(DocsignValidationError, match="recipients must be a list"):
        render_field_preview([pdf], "SIGNER", tmp_path / "out")
    with pytest.raises(DocsignValidationError, match="files must be a list"):
        render_field_preview(str(pdf), [SIGNER], tmp_path / "out")  # type: ignore[arg-type]
    payload = {"title": "T", "type": "DOCUMENT", "recipients": [SIGNER]}
    result = render_field_preview([pdf], payload, tmp_path / "out")
    assert result.warnings == []
    assert len(result.pngs) == 1


def test_import_needs_no_airflow_database_and_no_rasterizer():
    code = (
        "import sys; import airflow_provider_docsign.preview as p; "
        "assert 'pypdfium2' not in sys.modules; assert 'airflow' not in sys.modules, 'airflow imported'; "
        "print(p.render_field_preview.__name__)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = "sqlite:////nonexistent/dir/airflow.db"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "render_field_preview"
