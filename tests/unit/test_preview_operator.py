"""DocsignFieldPreviewOperator with a payload: local and ObjectStoragePath destinations, XCom, failing."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from PIL import Image
from test_preview_support import close, field, pixel

from airflow_provider_docsign._compat import AirflowFailException, ObjectStoragePath
from airflow_provider_docsign.operators import DocsignFieldPreviewOperator
from airflow_provider_docsign.preview import recipient_color

RECIPIENTS = [{"email": "a@example.com", "name": "Ann", "role": "SIGNER", "fields": [field(20, 40, 30, 6)]}]


def test_local_destination_returns_json_safe_xcom(make_pdf, tmp_path):
    pdf = make_pdf("contract.pdf", pages=2)
    op = DocsignFieldPreviewOperator(
        task_id="preview", files=[str(pdf)], recipients=RECIPIENTS, output_dir=str(tmp_path / "dest")
    )
    xcom = op.execute(context={})  # type: ignore[arg-type]

    assert json.loads(json.dumps(xcom)) == xcom
    assert xcom["warnings"] == []
    assert [Path(p).name for p in xcom["pdfs"]] == ["00-contract.preview.pdf"]
    assert [Path(p).name for p in xcom["pngs"]] == ["00-contract.page001.png", "00-contract.page002.png"]
    assert all(Path(p).is_absolute() and Path(p).is_file() for p in xcom["pdfs"] + xcom["pngs"])
    image = Image.open(xcom["pngs"][0]).convert("RGB")
    assert close(pixel(image, 20, 43), recipient_color(0))
    assert not [p for p in (tmp_path / "dest").iterdir() if p.name.startswith(".")]  # no partial files


def test_object_storage_destination_and_json_string_recipients(make_pdf, tmp_path):
    pdf = make_pdf("contract.pdf")
    dest = ObjectStoragePath(f"file://{tmp_path}/bucket/previews")
    op = DocsignFieldPreviewOperator(
        task_id="preview",
        files=[ObjectStoragePath(f"file://{pdf}")],
        recipients=json.dumps(RECIPIENTS),
        output_dir=dest,
    )
    xcom = op.execute(context={})  # type: ignore[arg-type]

    assert all(p.startswith("file://") for p in xcom["pdfs"] + xcom["pngs"])
    written = ObjectStoragePath(xcom["pngs"][0])
    local = tmp_path / "copy.png"
    local.write_bytes(written.read_bytes())
    assert close(pixel(Image.open(local).convert("RGB"), 20, 43), recipient_color(0))
    assert ObjectStoragePath(xcom["pdfs"][0]).read_bytes().startswith(b"%PDF-")


def test_fail_on_warnings_fails_after_writing_and_lists_the_warnings(make_pdf, tmp_path, caplog, capsys):
    caplog.set_level(logging.INFO)
    pdf = make_pdf("contract.pdf")
    overlapping = [
        {
            "email": "secret.person@example.com",
            "name": "Secret Person",
            "role": "SIGNER",
            "fields": [field(20, 40, 30, 6), field(25, 42, 30, 6), field(90, 90, 20, 5)],
        }
    ]
    default = DocsignFieldPreviewOperator(
        task_id="lenient", files=[pdf], recipients=overlapping, output_dir=tmp_path / "lenient"
    )
    assert default.fail_on_warnings is False
    xcom = default.execute(context={})  # type: ignore[arg-type]
    assert [w["kind"] for w in xcom["warnings"]] == ["off_page", "overlap"]

    strict = DocsignFieldPreviewOperator(
        task_id="strict",
        files=[pdf],
        recipients=overlapping,
        output_dir=tmp_path / "strict",
        fail_on_warnings=True,
    )
    with pytest.raises(AirflowFailException) as info:
        strict.execute(context={})  # type: ignore[arg-type]
    message = str(info.value)
    assert "2 warning(s)" in message
    assert "off_page: field #3" in message
    assert "overlap: field #1 and #2" in message
    assert (tmp_path / "strict" / "00-contract.page001.png").is_file()  # written, so it can be inspected
    # Task logs and the failure carry no personal data (names, emails); XCom has the full messages.
    assert "Secret Person" not in message
    assert "secret.person" not in message
    # Airflow 3 logs through structlog to stdout, Airflow 2.11 through logging: look at both.
    captured = capsys.readouterr()
    logs = caplog.text + captured.out + captured.err
    assert "Field placement: overlap: field #1 and #2" in logs  # the log is captured...
    assert "Secret Person" not in logs  # ...and holds no names
    assert "secret.person" not in logs


def test_needs_either_a_payload_or_an_envelope(tmp_path):
    with pytest.raises(ValueError, match="give files and recipients"):
        DocsignFieldPreviewOperator(task_id="p", output_dir=tmp_path).execute(context={})  # type: ignore[arg-type]
    both = DocsignFieldPreviewOperator(
        task_id="q", output_dir=tmp_path, envelope_id="envelope_x", files=["a.pdf"], recipients=[]
    )
    with pytest.raises(ValueError, match="not both"):
        both.execute(context={})  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_templated_fields_and_no_hook_at_construction():
    op = DocsignFieldPreviewOperator(task_id="p", output_dir="/tmp/x", envelope_id="{{ ti.xcom_pull('c') }}")
    assert set(op.template_fields) == {"output_dir", "files", "recipients", "envelope_id"}
    assert "hook" not in op.__dict__  # created lazily, never while parsing the DAG
