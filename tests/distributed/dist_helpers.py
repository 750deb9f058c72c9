"""Helpers of the distributed tests, imported relatively by the tests of this package."""

from __future__ import annotations

import json
from typing import Any

from stack import ARCHIVE_BUCKET, S3_CONN_ID


def hostnames(db: Any, dag_id: str, run_id: str) -> dict[tuple[str, int], str]:
    """``{(task_id, map_index): hostname}`` from the metadata database's ``task_instance`` table."""
    with db.cursor() as cur:
        cur.execute(
            "SELECT task_id, map_index, hostname FROM task_instance WHERE dag_id = %s AND run_id = %s",
            (dag_id, run_id),
        )
        return {(task_id, index): host for task_id, index, host in cur.fetchall()}


def archive_prefix(name: str) -> str:
    """An archive destination of its own for one test (``archive_dir`` conf of the example DAGs)."""
    return f"s3://{S3_CONN_ID}@{ARCHIVE_BUCKET}/{name}"


def keys(s3: Any, bucket: str, prefix: str) -> list[str]:
    """Every key under ``prefix`` (bounded: at most 20 pages)."""
    out: list[str] = []
    token: dict[str, Any] = {}
    for _ in range(20):
        page = s3.list_objects_v2(Bucket=bucket, Prefix=prefix, **token)
        out += [o["Key"] for o in page.get("Contents", [])]
        if not page.get("IsTruncated"):
            break
        token = {"ContinuationToken": page["NextContinuationToken"]}
    return sorted(out)


def manifests(s3: Any, prefix: str) -> list[dict[str, Any]]:
    """The archive manifests under ``prefix`` of the archive bucket."""
    return [
        json.loads(s3.get_object(Bucket=ARCHIVE_BUCKET, Key=key)["Body"].read())
        for key in keys(s3, ARCHIVE_BUCKET, prefix)
        if key.endswith("/manifest.json")
    ]


def assert_signed_bytes(s3: Any, sandbox: Any, manifest: dict[str, Any]) -> None:
    """Every archived PDF of ``manifest`` is on S3 and equals the sandbox's signed bytes."""
    for entry in manifest["files"]:
        key = entry["uri"].removeprefix(f"s3://{ARCHIVE_BUCKET}/")
        body = s3.get_object(Bucket=ARCHIVE_BUCKET, Key=key)["Body"].read()
        assert body == sandbox.item_bytes(entry["item_id"], "signed"), entry["uri"]
