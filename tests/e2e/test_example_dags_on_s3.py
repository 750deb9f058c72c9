"""The example DAGs with object storage only: PDFs rendered to ``s3://`` and archived to ``s3://``.

The S3 API is moto's server on 127.0.0.1. What crosses between tasks is a URI carrying the
connection id (``s3://conn@bucket/key``), never a worker's local path, so the same runs work on
workers that share no disk (the distributed tests run them on two Celery workers).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from e2e_helpers import run_example, task_states

from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.e2e

CONN = "docsign_e2e_s3"
WORK, ARCHIVE = "docsign-work", "docsign-archive"


@pytest.fixture
def s3_env(example_env: dict[str, Any], make_s3_bucket: Callable[..., Any]) -> dict[str, Any]:
    client = make_s3_bucket(WORK, conn_id=CONN)
    make_s3_bucket(ARCHIVE, conn_id=CONN)
    example_env.update(
        {"work_dir": f"s3://{CONN}@{WORK}/runs", "archive_dir": f"s3://{CONN}@{ARCHIVE}/signed"},
        client=client,
    )
    return example_env


def _keys(client: Any, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", []))


def _manifests(client: Any) -> list[dict[str, Any]]:
    return [
        json.loads(client.get_object(Bucket=ARCHIVE, Key=key)["Body"].read())
        for key in _keys(client, ARCHIVE)
        if key.endswith("/manifest.json")
    ]


def _assert_signed_bytes(client: Any, sandbox: SandboxServer, manifest: dict[str, Any]) -> None:
    for entry in manifest["files"]:
        assert entry["uri"].startswith(f"s3://{ARCHIVE}/signed/")  # no connection id in manifests
        key = entry["uri"].removeprefix(f"s3://{ARCHIVE}/")
        body = client.get_object(Bucket=ARCHIVE, Key=key)["Body"].read()
        expected = sandbox.item_bytes(entry["item_id"], "signed")
        assert body == expected
        assert hashlib.sha256(body).hexdigest() == entry["sha256"]


def test_contract_signing_renders_to_and_archives_on_s3(
    s3_env: dict[str, Any], autosign_sandbox: SandboxServer
) -> None:
    client = s3_env.pop("client")
    dag_run = run_example("docsign_contract_signing", **s3_env)

    assert set(task_states(dag_run).values()) == {"success"}, task_states(dag_run)
    rendered = _keys(client, WORK)
    assert len(rendered) == 3
    assert all(key.startswith("runs/") and key.endswith(".pdf") for key in rendered)
    (manifest,) = _manifests(client)
    assert manifest["external_id"] == f"contract-{dag_run.run_id}-ACME-001"
    assert len(manifest["files"]) == 3
    _assert_signed_bytes(client, autosign_sandbox, manifest)
    # The uploads are the PDFs rendered on S3, byte for byte.
    originals = {
        hashlib.sha256(autosign_sandbox.item_bytes(e["item_id"], "original")).digest()
        for e in manifest["files"]
    }
    on_s3 = {hashlib.sha256(client.get_object(Bucket=WORK, Key=k)["Body"].read()).digest() for k in rendered}
    assert originals == on_s3


def test_bulk_campaign_keeps_rows_results_checkpoint_and_archive_on_s3(
    s3_env: dict[str, Any], autosign_sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = s3_env.pop("client")
    # The lease where docs/bulk.md puts it for workers that share no disk: an S3 prefix of its own,
    # set by the admin ([docsign] campaign_lease_dir), not beside the result table.
    monkeypatch.setenv("AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_DIR", f"s3://{WORK}/leases")
    monkeypatch.setenv("AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_CONN_ID", CONN)
    customers = [
        {"id": f"S-{n}", "name": f"Sam {n}", "email": f"sam{n}@example.test", "company": f"Co {n}"}
        for n in range(3)
    ]
    dag_run = run_example("docsign_bulk_signing", customers=customers, **s3_env)

    assert set(task_states(dag_run).values()) == {"success"}, task_states(dag_run)
    keys = _keys(client, WORK)
    # The campaign's lease (S3 conditional writes) under the configured prefix, given back at the end.
    (lease_key,) = [k for k in keys if k.startswith("leases/")]
    assert json.loads(client.get_object(Bucket=WORK, Key=lease_key)["Body"].read())["owner"] is None
    assert {key.rsplit("/", 1)[-1] for key in keys if key != lease_key} == {
        "rows.jsonl",
        "results.jsonl",
        "results.jsonl.checkpoint.json",
        "results.jsonl.outcome.jsonl",  # the wait's report: each envelope's final status
        "report.json",
    }
    (results_key,) = [k for k in _keys(client, WORK) if k.endswith("/results.jsonl")]
    table = [
        json.loads(line)
        for line in client.get_object(Bucket=WORK, Key=results_key)["Body"].read().splitlines()
    ]
    assert [r["status"] for r in table] == ["sent"] * 3
    manifests = _manifests(client)
    assert sorted(m["envelope_id"] for m in manifests) == sorted(r["envelope_id"] for r in table)
    for manifest in manifests:
        _assert_signed_bytes(client, autosign_sandbox, manifest)


def test_bulk_signing_mapped_renders_to_and_archives_on_s3(
    s3_env: dict[str, Any], autosign_sandbox: SandboxServer
) -> None:
    client = s3_env.pop("client")
    customers = [{"id": f"S-{n}", "name": f"Sam {n}", "email": f"sam{n}@example.test"} for n in range(3)]
    dag_run = run_example("docsign_bulk_signing_mapped", customers=customers, **s3_env)

    assert set(task_states(dag_run).values()) == {"success"}, task_states(dag_run)
    assert len(_keys(client, WORK)) == 3
    manifests = _manifests(client)
    assert sorted(m["external_id"] for m in manifests) == [
        f"renewal-{dag_run.run_id}-S-{n}" for n in range(3)
    ]
    for manifest in manifests:
        _assert_signed_bytes(client, autosign_sandbox, manifest)
