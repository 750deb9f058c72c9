"""The command line for template designers: python -m airflow_provider_docsign.preview."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from PIL import Image
from test_preview_support import close, field, pixel

from airflow_provider_docsign.preview import recipient_color


def _run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_provider_docsign.preview", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_writes_previews_and_prints_json(make_pdf, tmp_path):
    a = make_pdf("a.pdf", pages=2)
    b = make_pdf("b.pdf", page_size="LETTER")
    payload = tmp_path / "payload.json"
    payload.write_text(
        json.dumps(
            {
                "type": "DOCUMENT",
                "title": "Contract",
                "recipients": [
                    {
                        "email": "a@example.com",
                        "name": "A",
                        "role": "SIGNER",
                        "fields": [field(20, 30, 30, 6, page=2)],
                    },
                    {
                        "email": "b@example.com",
                        "name": "B",
                        "role": "SIGNER",
                        "fields": [field(50, 50, 30, 6, identifier=1)],
                    },
                ],
            }
        )
    )
    out = tmp_path / "out"
    done = _run(payload, a, b, "-o", out, "--json")

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["warnings"] == []
    assert [Path(p).name for p in result["pdfs"]] == ["00-a.preview.pdf", "01-b.preview.pdf"]
    assert len(result["pngs"]) == 3
    assert all(Path(p).is_file() for p in result["pdfs"] + result["pngs"])
    page2 = Image.open(result["pngs"][1]).convert("RGB")
    assert close(pixel(page2, 20, 33), recipient_color(0))
    letter = Image.open(result["pngs"][2]).convert("RGB")
    assert close(pixel(letter, 50, 53), recipient_color(1))


def test_cli_exits_1_on_warnings_and_prints_them(make_pdf, tmp_path):
    pdf = make_pdf("a.pdf")
    payload = tmp_path / "recipients.json"
    payload.write_text(
        json.dumps([{"email": "a@example.com", "role": "SIGNER", "fields": [field(90, 10, 20, 5)]}])
    )

    done = _run(payload, pdf, "-o", tmp_path / "out")
    assert done.returncode == 1
    assert "warning: field #1" in done.stderr
    assert "runs off the page" in done.stderr
    assert (tmp_path / "out" / "00-a.page001.png").is_file()

    again = _run(payload, pdf, "-o", tmp_path / "out2", "--no-fail-on-warnings")
    assert again.returncode == 0


def test_cli_exits_2_on_bad_input_and_writes_nothing(tmp_path):
    payload = tmp_path / "payload.json"
    payload.write_text("[]")
    done = _run(payload, tmp_path / "nope.pdf", "-o", tmp_path / "out")
    assert done.returncode == 2
    assert "files[0] (nope.pdf): no such file" in done.stderr
    assert not (tmp_path / "out").exists()

    payload.write_text("{not json")
    bad_json = _run(payload, tmp_path / "nope.pdf", "-o", tmp_path / "out")
    assert bad_json.returncode == 2
    assert "cannot read the payload" in bad_json.stderr
