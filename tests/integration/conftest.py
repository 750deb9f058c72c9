"""Fixtures shared by the integration tests: a hook on the sandbox and an S3 store (moto on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from airflow_provider_docsign.hooks.docsign import DocsignHook


@pytest.fixture
def hook(docsign_conn: str) -> Iterator[DocsignHook]:
    """A hook on ``docsign_default`` (the sandbox); its HTTP session is closed after the test."""
    with DocsignHook(docsign_conn) as h:
        yield h


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 for one test module, stopped by its handle at the end."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def make_s3_bucket(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    """Factory: ``make_s3_bucket(bucket, conn_id=...)`` creates ``bucket`` on the moto server, points the
    Airflow ``aws`` connection ``conn_id`` at it and returns a boto3 client; the bucket is emptied and
    deleted after the test."""
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    buckets: list[str] = []

    def _make(bucket: str, *, conn_id: str) -> Any:
        conn = {
            "conn_type": "aws",
            "login": "testing",
            "password": "testing",
            "extra": {"endpoint_url": moto_endpoint, "region_name": "us-east-1"},
        }
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
        client.create_bucket(Bucket=bucket)
        buckets.append(bucket)
        return client

    yield _make
    for bucket in buckets:
        for obj in client.list_objects_v2(Bucket=bucket).get("Contents", []):
            client.delete_object(Bucket=bucket, Key=obj["Key"])
        client.delete_bucket(Bucket=bucket)
