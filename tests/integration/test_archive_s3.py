"""Archiving to an S3-compatible store: moto in server mode on 127.0.0.1, the sandbox over HTTP.

The destination is ``ObjectStoragePath("s3://bucket/prefix", conn_id=...)`` through an Airflow ``aws``
connection whose ``endpoint_url`` points at the moto server, exactly as a user would configure MinIO.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_envelope

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive import (
    DocsignArchiveConflictError,
    DocsignArchiveError,
    DocsignArchiveSignedDocumentsOperator,
)
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

BUCKET = "legal-archive"


@pytest.fixture
def s3(make_s3_bucket: Callable[..., Any]) -> Any:
    return make_s3_bucket(BUCKET, conn_id="archive_s3")


def _keys(s3: Any) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def _completed_envelope(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], external_id: str
) -> str:
    names = ["Service agreement", "Annex A", "Price list"]
    files = [make_pdf(f"{external_id}/{n}.pdf", title=n, pages=i + 1) for i, n in enumerate(names)]
    return completed_envelope(hook, sandbox, files, title="S3 contract", external_id=external_id)


def _archive(**kwargs: Any) -> dict[str, Any]:
    operator = DocsignArchiveSignedDocumentsOperator(task_id="archive", **kwargs)
    return operator.execute({})  # type: ignore[arg-type]


def test_three_item_envelope_is_archived_to_s3_with_verified_checksums(
    s3: Any, docsign_conn: str, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    from airflow_provider_docsign._compat import ObjectStoragePath

    hook = DocsignHook()
    envelope_id = _completed_envelope(hook, sandbox, make_pdf, "S3-ACME-1")
    destination = ObjectStoragePath(f"s3://{BUCKET}/contracts", conn_id="archive_s3")

    manifest = _archive(envelope_id=envelope_id, destination=destination)

    assert _keys(s3) == [
        "contracts/S3-ACME-1/01-Service agreement.pdf",
        "contracts/S3-ACME-1/02-Annex A.pdf",
        "contracts/S3-ACME-1/03-Price list.pdf",
        "contracts/S3-ACME-1/manifest.json",
    ]
    assert manifest["destination"] == f"s3://{BUCKET}/contracts"
    for entry in manifest["files"]:
        key = entry["uri"].removeprefix(f"s3://{BUCKET}/")
        body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        expected = hashlib.sha256(sandbox.item_bytes(entry["item_id"], "signed")).hexdigest()
        assert hashlib.sha256(body).hexdigest() == expected == entry["sha256"]
        assert entry["size"] == len(body)
        assert "archive_s3" not in entry["uri"]  # the connection id never leaks into the manifest
    stored = json.loads(s3.get_object(Bucket=BUCKET, Key="contracts/S3-ACME-1/manifest.json")["Body"].read())
    assert stored == manifest
    assert manifest["manifest_uri"] == f"s3://{BUCKET}/contracts/S3-ACME-1/manifest.json"

    # a re-run (string URI + destination_conn_id this time) is idempotent
    again = _archive(
        envelope_id=envelope_id, destination=f"s3://{BUCKET}/contracts", destination_conn_id="archive_s3"
    )
    assert [e["outcome"] for e in again["files"]] == ["unchanged"] * 3
    assert len(_keys(s3)) == 4


def test_s3_conflict_and_failed_download_leave_the_bucket_as_it_was(
    s3: Any, docsign_conn: str, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    hook = DocsignHook()
    envelope_id = _completed_envelope(hook, sandbox, make_pdf, "S3-ACME-2")
    s3.put_object(Bucket=BUCKET, Key="c/S3-ACME-2/03-Price list.pdf", Body=b"%PDF-1.4 other\n")

    with pytest.raises(DocsignArchiveConflictError, match=r"03-Price list\.pdf"):
        _archive(envelope_id=envelope_id, destination=f"s3://{BUCKET}/c", destination_conn_id="archive_s3")
    assert _keys(s3) == ["c/S3-ACME-2/03-Price list.pdf"]
    body = s3.get_object(Bucket=BUCKET, Key="c/S3-ACME-2/03-Price list.pdf")["Body"].read()
    assert body == b"%PDF-1.4 other\n"

    second = hook.get_envelope(envelope_id).items[1]
    sandbox.inject_fault(
        method="GET", path=f"/envelope/item/{second.id}/download", action="truncate", count=10
    )
    with pytest.raises(DocsignArchiveError, match=second.id):
        _archive(envelope_id=envelope_id, destination=f"s3://{BUCKET}/d", destination_conn_id="archive_s3")
    assert _keys(s3) == ["c/S3-ACME-2/03-Price list.pdf"]
