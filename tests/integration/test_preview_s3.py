"""Preview from and to S3: moto in server mode on 127.0.0.1, reached through an Airflow ``aws`` connection."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image

from airflow_provider_docsign._compat import ObjectStoragePath
from airflow_provider_docsign.operators import DocsignFieldPreviewOperator
from airflow_provider_docsign.preview import recipient_color

pytestmark = pytest.mark.integration

BUCKET = "contract-previews"
RECIPIENTS = [
    {
        "email": "ann@example.com",
        "name": "Ann",
        "role": "SIGNER",
        "fields": [
            {
                "identifier": 0,
                "type": "SIGNATURE",
                "page": 2,
                "positionX": 20,
                "positionY": 60,
                "width": 30,
                "height": 6,
            }
        ],
    }
]


@pytest.fixture
def s3(make_s3_bucket: Callable[..., Any]) -> Any:
    return make_s3_bucket(BUCKET, conn_id="preview_s3")


def test_preview_reads_pdfs_from_s3_and_writes_the_preview_to_s3(s3, make_pdf):
    pdf = make_pdf("contract.pdf", pages=2, page_size="LETTER")
    s3.put_object(Bucket=BUCKET, Key="in/contract.pdf", Body=pdf.read_bytes())

    op = DocsignFieldPreviewOperator(
        task_id="preview",
        files=[ObjectStoragePath(f"s3://{BUCKET}/in/contract.pdf", conn_id="preview_s3")],
        recipients=RECIPIENTS,
        output_dir=ObjectStoragePath(f"s3://{BUCKET}/previews/run-1", conn_id="preview_s3"),
    )
    xcom = op.execute(context={})  # type: ignore[arg-type]

    assert xcom["warnings"] == []
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="previews/")["Contents"])
    assert keys == [
        "previews/run-1/00-contract.page001.png",
        "previews/run-1/00-contract.page002.png",
        "previews/run-1/00-contract.preview.pdf",
    ]
    # Airflow writes the connection id into the URI (s3://conn@bucket/key), so it reads back as is.
    assert [uri.rsplit("/", 1)[1] for uri in xcom["pngs"]] == [
        "00-contract.page001.png",
        "00-contract.page002.png",
    ]
    assert all(uri.startswith("s3://") and "/previews/run-1/" in uri for uri in xcom["pdfs"] + xcom["pngs"])
    png_key = "previews/run-1/00-contract.page002.png"
    assert (
        ObjectStoragePath(xcom["pngs"][1]).read_bytes()
        == s3.get_object(Bucket=BUCKET, Key=png_key)["Body"].read()
    )
    body = s3.get_object(Bucket=BUCKET, Key="previews/run-1/00-contract.page002.png")["Body"].read()
    image = Image.open(io.BytesIO(body)).convert("RGB")
    width, height = image.size
    assert image.getpixel((int(0.20 * width), int(0.63 * height))) == recipient_color(0)
    assert (
        s3.get_object(Bucket=BUCKET, Key="previews/run-1/00-contract.preview.pdf")["Body"].read(5) == b"%PDF-"
    )
