"""S3 Object Lock retention on every archived object: moto in server mode on 127.0.0.1, the sandbox
over HTTP, the bucket reached through an Airflow ``aws`` connection as a user configures MinIO.

Buckets with Object Lock keep their locked versions (that is the point), so each test makes its own
bucket and leaves it; the moto server goes away with the module.
"""

from __future__ import annotations

import datetime
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from helpers import completed_envelope

from airflow_provider_docsign.exceptions import DocsignArchiveEvidenceError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

CONN_ID = "archive_locked"


@pytest.fixture
def s3(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    import boto3

    conn = {
        "conn_type": "aws",
        "login": "testing",
        "password": "testing",
        "extra": {"endpoint_url": moto_endpoint, "region_name": "us-east-1"},
    }
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(conn))
    return boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )


@pytest.fixture
def tsa_conn(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> str:
    sandbox.clear_tsa()
    conn = {"conn_type": "http", "host": sandbox.tsa_url}
    monkeypatch.setenv("AIRFLOW_CONN_TSA_SANDBOX", json.dumps(conn))
    return "tsa_sandbox"


def _bucket(s3: Any, *, locked: bool) -> str:
    name = f"legal-{'locked' if locked else 'plain'}-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=locked)
    return name


def _keys(s3: Any, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))


def _archive(envelope_id: str, bucket: str, **kwargs: Any) -> dict[str, Any]:
    operator = DocsignArchiveSignedDocumentsOperator(
        task_id="archive",
        envelope_id=envelope_id,
        destination=f"s3://{bucket}/contracts",
        destination_conn_id=CONN_ID,
        **kwargs,
    )
    return operator.execute({})  # type: ignore[arg-type]


@pytest.fixture
def envelope(docsign_conn: str, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> str:
    with DocsignHook() as hook:
        files = [make_pdf("r/Lease.pdf", title="Lease"), make_pdf("r/Inventory.pdf", title="Inventory")]
        return completed_envelope(hook, sandbox, files, title="Retention", external_id="LOCK-1")


@pytest.mark.parametrize("mode", ["COMPLIANCE", "GOVERNANCE"])
def test_every_archived_object_carries_the_requested_retention(
    s3: Any, envelope: str, tsa_conn: str, sandbox: SandboxServer, mode: str
) -> None:
    bucket = _bucket(s3, locked=True)
    before = datetime.datetime.now(datetime.timezone.utc)

    manifest = _archive(
        envelope, bucket, tsa_conn_id=tsa_conn, ltv=True, retention={"mode": mode, "days": 3650}
    )

    keys = _keys(s3, bucket)
    assert keys == [
        "contracts/LOCK-1/01-Lease.ltv.pdf",
        "contracts/LOCK-1/01-Lease.pdf",
        "contracts/LOCK-1/02-Inventory.ltv.pdf",
        "contracts/LOCK-1/02-Inventory.pdf",
        "contracts/LOCK-1/manifest.json",
        "contracts/LOCK-1/manifest.json.tsr",
    ]
    until = datetime.datetime.fromisoformat(manifest["retention"]["retain_until"].replace("Z", "+00:00"))
    assert manifest["retention"]["mode"] == mode
    assert (until - before).days in (3649, 3650)
    for key in keys:
        head = s3.head_object(Bucket=bucket, Key=key)
        assert head["ObjectLockMode"] == mode, key
        assert head["ObjectLockRetainUntilDate"] == until, key

    # The lock holds: the archived version of the token cannot be deleted.
    version = s3.head_object(Bucket=bucket, Key="contracts/LOCK-1/manifest.json.tsr")["VersionId"]
    with pytest.raises(ClientError, match="AccessDenied"):
        s3.delete_object(Bucket=bucket, Key="contracts/LOCK-1/manifest.json.tsr", VersionId=version)

    # A re-run finds the archive complete: same manifest, same retention, no new token.
    requests = len(sandbox.tsa_requests())
    assert _archive(
        envelope, bucket, tsa_conn_id=tsa_conn, ltv=True, retention={"mode": mode, "days": 3650}
    ) == (manifest)
    assert len(sandbox.tsa_requests()) == requests
    assert s3.head_object(Bucket=bucket, Key=keys[0])["ObjectLockRetainUntilDate"] == until


def test_a_bucket_without_object_lock_is_refused_before_any_download(
    s3: Any, envelope: str, sandbox: SandboxServer
) -> None:
    bucket = _bucket(s3, locked=False)
    sandbox.clear_requests()
    with pytest.raises(DocsignArchiveEvidenceError, match=f"bucket '{bucket}'.*has no Object Lock enabled"):
        _archive(envelope, bucket, retention={"mode": "COMPLIANCE", "days": 30})
    assert _keys(s3, bucket) == []
    assert not [r for r in sandbox.requests() if r["path"].endswith("/download")]
