"""Make docs/preview-example.png: the field placement preview of a sample contract.

Run from the repository root:  ``.venv/bin/python docs/make_preview_example.py``

It writes a one-page sample contract (A4) with two signature blocks, places the fields of a creation
payload on it (one DATE field deliberately overlaps a signature, to show a warning), renders the
preview with :func:`airflow_provider_docsign.preview.render_field_preview` and copies the page image
to ``docs/preview-example.png``. The payload is also written next to it as
``docs/preview-example-payload.json`` so the command line can be tried on it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from airflow_provider_docsign.preview import render_field_preview

HERE = Path(__file__).resolve().parent
WIDTH, HEIGHT = 595.28, 841.89

BODY = [
    "This Service Agreement is made between Example Data Ltd (the Provider) and",
    "Acme Analytics GmbH (the Customer).",
    "",
    "1. Services. The Provider runs the Customer's nightly data pipelines and delivers",
    "   the reports described in Schedule A.",
    "2. Term. This agreement starts on the date of the last signature and runs for",
    "   twelve months.",
    "3. Fees. The Customer pays the fees in Schedule B within 30 days of invoice.",
    "4. Confidentiality. Each party keeps the other's information confidential.",
]

# Each signature block: (label, top of the block in percent of the page height).
BLOCKS = [("For the Provider", 62.0), ("For the Customer", 78.0)]

RECIPIENTS = [
    {
        "email": "ada@example-data.test",
        "name": "Ada Provider",
        "role": "SIGNER",
        "fields": [
            {
                "identifier": 0,
                "type": "SIGNATURE",
                "page": 1,
                "positionX": 12,
                "positionY": 63.4,
                "width": 35,
                "height": 6,
            },
            {
                "identifier": 0,
                "type": "DATE",
                "page": 1,
                "positionX": 58,
                "positionY": 65.9,
                "width": 22,
                "height": 3.5,
            },
        ],
    },
    {
        "email": "bo@acme-analytics.test",
        "name": "Bo Customer",
        "role": "SIGNER",
        "fields": [
            {
                "identifier": 0,
                "type": "SIGNATURE",
                "page": 1,
                "positionX": 12,
                "positionY": 79.4,
                "width": 35,
                "height": 6,
            },
            # Deliberately too far left: it overlaps the signature, and the preview says so.
            {
                "identifier": 0,
                "type": "DATE",
                "page": 1,
                "positionX": 40,
                "positionY": 81.9,
                "width": 22,
                "height": 3.5,
            },
        ],
    },
    {
        "email": "legal@example-data.test",
        "name": "Legal Team",
        "role": "APPROVER",
        "fields": [
            {
                "identifier": 0,
                "type": "INITIALS",
                "page": 1,
                "positionX": 76,
                "positionY": 92,
                "width": 17,
                "height": 4,
            }
        ],
    },
]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_contract(path: Path) -> Path:
    """Write the sample contract: a title, a few clauses and two signature blocks with lines."""
    ops = [f"BT /F1 20 Tf 60 {HEIGHT - 80:.2f} Td (Service Agreement) Tj ET"]
    y = HEIGHT - 120
    for line in BODY:
        ops.append(f"BT /F1 10.5 Tf 60 {y:.2f} Td ({_escape(line)}) Tj ET")
        y -= 16
    for label, top in BLOCKS:
        block_top = HEIGHT * (1 - top / 100)
        ops.append(f"BT /F1 11 Tf 60 {block_top:.2f} Td ({label}) Tj ET")
        line_y = block_top - 62
        ops.append(
            f"0.3 G 0.8 w 70 {line_y:.2f} m 280 {line_y:.2f} l S 340 {line_y:.2f} m 480 {line_y:.2f} l S"
        )
        ops.append(f"BT /F1 8 Tf 70 {line_y - 11:.2f} Td (Signature) Tj ET")
        ops.append(f"BT /F1 8 Tf 340 {line_y - 11:.2f} Td (Date) Tj ET")
    ops.append("BT /F1 8 Tf 60 40 Td (Page 1 of 1) Tj ET")
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    page = writer.add_blank_page(width=WIDTH, height=HEIGHT)
    stream = DecodedStreamObject()
    stream.set_data("\n".join(ops).encode("latin-1"))
    page[NameObject("/Contents")] = writer._add_object(stream)
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
    )
    with open(path, "wb") as fh:
        writer.write(fh)
    return path


def main() -> None:
    """Write the contract, render its preview and copy the page image into docs/."""
    with tempfile.TemporaryDirectory() as scratch:
        contract = write_contract(Path(scratch) / "service-agreement.pdf")
        result = render_field_preview([contract], RECIPIENTS, Path(scratch) / "out", dpi=80)
        shutil.copyfile(result.pngs[0], HERE / "preview-example.png")
    payload = {"type": "DOCUMENT", "title": "Service Agreement", "recipients": RECIPIENTS}
    (HERE / "preview-example-payload.json").write_text(json.dumps(payload, indent=2) + "\n")
    for warning in result.warnings:
        print("warning:", warning.message)
    print("wrote", HERE / "preview-example.png")


if __name__ == "__main__":
    main()
