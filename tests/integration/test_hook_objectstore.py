"""Uploads from and downloads to a remote ObjectStoragePath (S3 API served by moto on 127.0.0.1)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign._compat import ObjectStoragePath
from airflow_provider_docsign.exceptions import DocsignDownloadError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

BUCKET = "hook-objects"
CONN = "hook_s3"


@pytest.fixture
def s3(make_s3_bucket: Callable[..., Any]) -> Any:
    return make_s3_bucket(BUCKET, conn_id=CONN)


def _keys(s3: Any) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def test_upload_from_and_download_to_s3(
    docsign_conn: str, sandbox: SandboxServer, s3: Any, make_pdf: Callable[..., Path]
) -> None:
    local = make_pdf("remote.pdf", pages=2)
    s3.put_object(Bucket=BUCKET, Key="in/remote.pdf", Body=local.read_bytes())
    source = ObjectStoragePath(f"s3://{BUCKET}/in/remote.pdf", conn_id=CONN)
    signer = {
        "email": "s3@example.com",
        "name": "S3",
        "role": "SIGNER",
        "fields": [
            {
                "identifier": 0,
                "type": "SIGNATURE",
                "page": 2,
                "positionX": 1,
                "positionY": 1,
                "width": 9,
                "height": 9,
            }
        ],
    }
    with DocsignHook(docsign_conn) as hook:
        envelope_id = hook.create_envelope(title="From S3", files=[source], recipients=[signer])
        item = hook.get_envelope(envelope_id).items[0]
        assert item.title == "remote.pdf"
        assert sandbox.item_bytes(item.id, version="original") == local.read_bytes()

        target = ObjectStoragePath(f"s3://{BUCKET}/out/signed.pdf", conn_id=CONN)
        result = hook.download_envelope_item(item.id, target)
        expected = sandbox.item_bytes(item.id, version="signed")
        body = s3.get_object(Bucket=BUCKET, Key="out/signed.pdf")["Body"].read()
        assert body == expected
        assert result.sha256 == hashlib.sha256(expected).hexdigest()
        assert result.uri == str(target)

        s3.put_object(Bucket=BUCKET, Key="dir/README.txt", Body=b"archive")  # an existing prefix
        directory = ObjectStoragePath(f"s3://{BUCKET}/dir", conn_id=CONN)
        in_dir = hook.download_envelope_item(item.id, directory, version="original")
        assert in_dir.uri.endswith("/dir/remote.pdf")

        # a failed download writes nothing to the bucket
        before = _keys(s3)
        sandbox.inject_fault(method="GET", path="/envelope/item/*/download", action="truncate", count=1)
        with pytest.raises(DocsignDownloadError):
            hook.download_envelope_item(
                item.id, ObjectStoragePath(f"s3://{BUCKET}/out/broken.pdf", conn_id=CONN)
            )
        assert _keys(s3) == before
