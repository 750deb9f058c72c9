"""One distributed stack (``scripts/stack.py``) per test session, and a REST client for it.

The stack is Airflow 3 only (CeleryExecutor, PostgreSQL, Redis, moto S3, the sandbox, two workers);
``make test-airflow2`` deselects this group with ``-m "not distributed"``. Every process is stopped by
PID at the end of the session; the component logs are kept under pytest's temp folder.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from stack import API_KEY, USERNAME, Stack, StackError  # noqa: E402

from airflow_provider_docsign.sandbox import SandboxServer  # noqa: E402

RUN_TIMEOUT = 600.0


class StackSandbox(SandboxServer):
    """Control client for the stack's sandbox (a process the stack owns, not this object)."""

    def __init__(self, base_url: str, api_key: str) -> None:
        super().__init__(Path("/nonexistent"), api_key=api_key)
        self._base_url = base_url

    def faults(self) -> list[dict[str, Any]]:
        return list(self._control("GET", "/faults")["data"])


class Api:
    """The stack's REST API (``/api/v2``) with a token for the configured login."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.url = stack.api_url
        self.http = requests.Session()
        body = {"username": USERNAME, "password": stack.password}
        token = self.wait("a token", lambda: self.http.post(f"{self.url}/auth/token", json=body, timeout=10))
        self.http.headers["Authorization"] = f"Bearer {token.json()['access_token']}"

    def wait(self, what: str, check: Any, timeout: float = RUN_TIMEOUT, interval: float = 2.0) -> Any:
        """``check()`` until truthy (a ``requests`` response counts if it is 2xx); bounded in time."""
        deadline = time.monotonic() + timeout
        for _ in range(int(timeout / interval) + 1):
            self.stack.assert_alive()
            # Not there yet: a task instance not created, a component still starting.
            with contextlib.suppress(requests.RequestException, ValueError, KeyError):
                result = check()
                done = result.ok if isinstance(result, requests.Response) else result not in (None, False)
                if done:
                    return result
            if time.monotonic() > deadline:
                break
            time.sleep(interval)
        raise AssertionError(f"timed out waiting for {what}")

    def get(self, path: str, **params: Any) -> Any:
        resp = self.http.get(f"{self.url}/api/v2{path}", params=params, timeout=30)
        resp.raise_for_status()
        return resp.json()

    def trigger(self, dag_id: str, **conf: Any) -> str:
        self.wait(
            f"{dag_id} to be parsed", lambda: self.http.get(f"{self.url}/api/v2/dags/{dag_id}", timeout=10)
        )
        resp = self.http.post(
            f"{self.url}/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf}, timeout=30
        )
        assert resp.status_code == 200, resp.text
        return str(resp.json()["dag_run_id"])

    def finish(self, dag_id: str, run_id: str) -> str:
        def done() -> str | None:
            state = self.get(f"/dags/{dag_id}/dagRuns/{run_id}")["state"]
            return state if state in ("success", "failed") else None

        return str(self.wait(f"{dag_id} {run_id}", done))

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        return list(self.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", limit=1000)["task_instances"])


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The stack of this group, stopped by PID after its last test; logs copied to pytest's temp dir."""
    # Signers sign 25 s after sending: on a loaded machine a Celery worker can reach the sensor more than
    # 15 s after the distribute, and a sensor that finds the envelope signed never defers (a fresh-clone
    # CI run failed test_celery_runs so: no trigger log).
    stack = Stack(auto_sign_after=25.0, poke_interval=3.0)
    try:
        stack.start()
    except StackError as exc:
        shutil.rmtree(stack.base, ignore_errors=True)
        pytest.fail(f"the distributed stack did not start: {exc}")
    try:
        yield stack
    finally:
        stack.stop()
        logs = tmp_path_factory.mktemp("stack-logs")
        shutil.copytree(stack.base / "logs", logs / "components")
        for name in ("airflow-home", *(f"hosts/{w}" for w in ("worker1", "worker2"))):
            with contextlib.suppress(FileNotFoundError):
                shutil.copytree(stack.base / name, logs / name.replace("/", "-"), ignore=_no_pg)
        shutil.rmtree(stack.base, ignore_errors=True)


def _no_pg(_dir: str, names: list[str]) -> list[str]:
    return [n for n in names if n in ("tmp", "cwd")]


@pytest.fixture(scope="package")
def api(stack: Stack) -> Api:
    return Api(stack)


@pytest.fixture(scope="package")
def sandbox(stack: Stack) -> StackSandbox:
    return StackSandbox(stack.sandbox_url, API_KEY)


@pytest.fixture(scope="package")
def s3(stack: Stack) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=stack.s3_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )


@pytest.fixture(scope="package")
def db(stack: Stack) -> Iterator[Any]:
    """A psycopg2 connection to the stack's metadata database (autocommit, read only by the tests)."""
    import psycopg2

    conn = psycopg2.connect(host="127.0.0.1", port=stack.ports["postgres"], user="airflow", dbname="airflow")
    conn.autocommit = True
    try:
        yield conn
    finally:
        conn.close()


@pytest.fixture
def docsign_hook(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    conn = {"conn_type": "docsign", "host": stack.sandbox_url, "password": API_KEY}
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_STACK", json.dumps(conn))
    with DocsignHook("docsign_stack") as hook:
        yield hook
