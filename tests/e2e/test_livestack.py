"""The contract-signing pipeline on a live Airflow stack, every component in its own process.

Airflow 3: ``api-server``, ``scheduler``, ``dag-processor`` and ``triggerer``, with SQLite and the
LocalExecutor (Airflow 3.3 accepts it with SQLite); the DAG is unpaused and triggered through the
REST API (``/api/v2``) with a JWT from the simple auth manager.

Airflow 2.11: the equivalents ``webserver`` (REST ``/api/v1``), ``scheduler`` and ``triggerer``. With
SQLite, 2.11 refuses both the LocalExecutor and a standalone ``dag-processor``, so the scheduler runs
the SequentialExecutor and parses the DAGs itself.

Everything binds to 127.0.0.1 and runs in a throw-away AIRFLOW_HOME. The sensor defers, so the
trigger is serialized by the worker and run by the *separate* triggerer process: the test finds the
trigger's log written by that triggerer job ("….log.trigger.<job id>.log") with the trigger's polls
in it. Every process is stopped by its PID (process group) even when the test fails.

The sandbox signs 15 s after sending: a deferral that ends within a few seconds can hit a known
Airflow 3.3 race (apache/airflow#71580), and a real signature never comes that fast anyway.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
import requests
from e2e_helpers import DAGS_FOLDER, load_manifests, sandbox_conn_json, sha256_file

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = [pytest.mark.e2e, pytest.mark.livestack]

DAG_ID = "docsign_contract_signing"
#: Airflow 3: archives each envelope from the sandbox's completion webhook (AssetWatcher).
WEBHOOK_DAG_ID = "docsign_archive_on_completion"
WEBHOOK_SECRET = "livestack-webhook-secret"
AIRFLOW = [sys.executable, "-m", "airflow"]
STARTUP_TIMEOUT = 180.0  # api-server up and the DAG parsed
RUN_TIMEOUT = 300.0  # the DAG run reaching a final state
STOP_TIMEOUT = 20.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stack_env(
    home: Path, port: int, sandbox: SandboxServer, archive_dir: Path, webhook_port: int
) -> dict[str, str]:
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            "AIRFLOW_CONN_DOCSIGN_DEFAULT": sandbox_conn_json(sandbox),
            "DOCSIGN_EXAMPLE_POKE_INTERVAL": "3",
            # Executors start `airflow tasks run …`: the venv's airflow must come first on PATH.
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        }
    )
    if AIRFLOW_V_3_0_PLUS:
        env.update(
            {
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
                "AIRFLOW__API__BASE_URL": base,
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base}/execution/",
                # Shared by every component, so tokens minted by one are accepted by the others.
                "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
                "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                # docsign_archive_on_completion: its listener port, secret and archive directory.
                "DOCSIGN_WEBHOOK_PORT": str(webhook_port),
                "AIRFLOW_CONN_DOCSIGN_WEBHOOK": json.dumps(
                    {"conn_type": "generic", "password": WEBHOOK_SECRET}
                ),
                "DOCSIGN_EXAMPLE_ARCHIVE_DIR": str(archive_dir),
            }
        )
    else:
        env.update(
            {
                "AIRFLOW__CORE__EXECUTOR": "SequentialExecutor",
                "AIRFLOW__SCHEDULER__DAG_DIR_LIST_INTERVAL": "5",
                "AIRFLOW__API__AUTH_BACKENDS": "airflow.api.auth.backend.default",
                "AIRFLOW__WEBSERVER__SECRET_KEY": secrets.token_urlsafe(32),
                "AIRFLOW__WEBSERVER__BASE_URL": base,
            }
        )
    return env


def _components(port: int) -> dict[str, list[str]]:
    web = ["api-server", "-H", "127.0.0.1", "-p", str(port), "-w", "1"]
    if not AIRFLOW_V_3_0_PLUS:
        web = ["webserver", "-H", "127.0.0.1", "-p", str(port), "-w", "1"]
    # No log-serving sidecars (they bind every interface): the components share the local log folder.
    components = {
        web[0]: web,
        "scheduler": ["scheduler", "--skip-serve-logs"],
        "triggerer": ["triggerer", "--skip-serve-logs"],
    }
    if AIRFLOW_V_3_0_PLUS:
        components["dag-processor"] = ["dag-processor"]
    return components


def _triggerer_job_ids(home: Path) -> list[int]:
    """Ids of the triggerer jobs recorded in the stack's metadata database."""
    with contextlib.closing(sqlite3.connect(home / "airflow.db")) as db:
        return [row[0] for row in db.execute("SELECT id FROM job WHERE job_type = 'TriggererJob'")]


class _Stack:
    """The Airflow processes of the test; each in its own process group, stopped by PID."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: list[IO[bytes]] = []

    def start(self, name: str, *args: str) -> None:
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed in stop()
        self._logs.append(log)
        self.procs[name] = subprocess.Popen(
            [*AIRFLOW, *args], env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")

    def assert_alive(self) -> None:
        dead = {name: p.returncode for name, p in self.procs.items() if p.poll() is not None}
        assert not dead, f"Airflow processes exited early: {dead}\n" + "\n".join(
            f"--- {name}\n{self.log(name)[-3000:]}" for name in dead
        )

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=STOP_TIMEOUT)
        for log in self._logs:
            log.close()


@pytest.fixture
def slow_signing_sandbox(tmp_path: Path, api_key: str) -> Iterator[SandboxServer]:
    # The triggerer's listener is on 127.0.0.1: allowed only when listed, as on a real instance.
    with SandboxServer(
        tmp_path / "sandbox", api_key=api_key, auto_sign_after=15.0, webhook_ssrf_bypass_hosts="127.0.0.1"
    ) as sandbox:
        yield sandbox


def _wait_for(what: str, check: Any, stack: _Stack, timeout: float, interval: float = 1.0) -> Any:
    """Call ``check()`` until it returns a truthy value; bounded in time and attempts."""
    deadline = time.monotonic() + timeout
    attempts = int(timeout / interval) + 1
    for _ in range(attempts):
        stack.assert_alive()
        with contextlib.suppress(requests.RequestException):
            result = check()
            if result:
                return result
        if time.monotonic() > deadline:
            break
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def test_contract_signing_on_a_live_airflow_stack(
    tmp_path: Path, slow_signing_sandbox: SandboxServer, api_key: str
) -> None:
    home, logs, archive_dir = tmp_path / "home", tmp_path / "logs", tmp_path / "archive"
    for folder in (home, logs, archive_dir):
        folder.mkdir()
    port, webhook_port = _free_port(), _free_port()
    env = _stack_env(home, port, slow_signing_sandbox, archive_dir, webhook_port)
    subprocess.run([*AIRFLOW, "db", "migrate"], env=env, check=True, capture_output=True, timeout=600)
    if not AIRFLOW_V_3_0_PLUS:
        # 2.x's "all admins": anonymous requests get the Admin role (loopback, throw-away home only).
        (home / "webserver_config.py").write_text('AUTH_ROLE_PUBLIC = "Admin"\n')

    stack = _Stack(env, logs)
    api = f"http://127.0.0.1:{port}"
    rest = f"{api}/api/v2" if AIRFLOW_V_3_0_PLUS else f"{api}/api/v1"
    try:
        for name, args in _components(port).items():
            stack.start(name, *args)

        http = requests.Session()
        if AIRFLOW_V_3_0_PLUS:
            token = _wait_for(
                "the api-server",
                lambda: http.get(f"{api}/auth/token", timeout=5).json().get("access_token"),
                stack,
                STARTUP_TIMEOUT,
            )
            http.headers["Authorization"] = f"Bearer {token}"
        _wait_for(
            f"{DAG_ID} to be parsed and served",
            lambda: http.get(f"{rest}/dags/{DAG_ID}", timeout=5).status_code == 200,
            stack,
            STARTUP_TIMEOUT,
        )
        unpause = http.patch(f"{rest}/dags/{DAG_ID}", json={"is_paused": False}, timeout=10)
        assert unpause.status_code == 200, unpause.text
        if AIRFLOW_V_3_0_PLUS:
            _wait_for(
                f"{WEBHOOK_DAG_ID} to be parsed and served",
                lambda: http.get(f"{rest}/dags/{WEBHOOK_DAG_ID}", timeout=5).status_code == 200,
                stack,
                STARTUP_TIMEOUT,
            )
            unpause = http.patch(f"{rest}/dags/{WEBHOOK_DAG_ID}", json={"is_paused": False}, timeout=10)
            assert unpause.status_code == 200, unpause.text
            # The triggerer runs the AssetWatcher's trigger: its listener must be up before the
            # envelope completes, or the sandbox's 4 attempts would find nobody.
            _wait_for("the webhook listener", lambda: _port_open(webhook_port), stack, STARTUP_TIMEOUT)
            slow_signing_sandbox.add_webhook(
                f"http://127.0.0.1:{webhook_port}/", WEBHOOK_SECRET, ["DOCUMENT_COMPLETED"]
            )
        conf = {"archive_dir": str(archive_dir), "work_dir": str(tmp_path / "work")}
        body: dict[str, Any] = {"conf": conf}
        if AIRFLOW_V_3_0_PLUS:
            body["logical_date"] = None
        trigger = http.post(f"{rest}/dags/{DAG_ID}/dagRuns", json=body, timeout=10)
        assert trigger.status_code == 200, trigger.text
        run_id = trigger.json()["dag_run_id"]

        def finished() -> str | None:
            state = http.get(f"{rest}/dags/{DAG_ID}/dagRuns/{run_id}", timeout=5).json().get("state")
            return state if state in ("success", "failed") else None

        state = _wait_for(f"run {run_id} to finish", finished, stack, RUN_TIMEOUT, interval=2.0)
        tis = http.get(f"{rest}/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances", timeout=10).json()
        ti_states = {ti["task_id"]: ti["state"] for ti in tis["task_instances"]}
        assert state == "success", (ti_states, stack.log("scheduler")[-4000:], stack.log("triggerer")[-4000:])
        assert set(ti_states.values()) == {"success"}, ti_states
        if AIRFLOW_V_3_0_PLUS:

            def webhook_run() -> str | None:
                runs = http.get(f"{rest}/dags/{WEBHOOK_DAG_ID}/dagRuns", timeout=5).json()["dag_runs"]
                states = [r["state"] for r in runs]
                return "success" if "success" in states else ("failed" if "failed" in states else None)

            webhook_state = _wait_for(
                f"a {WEBHOOK_DAG_ID} run", webhook_run, stack, RUN_TIMEOUT, interval=2.0
            )
            assert webhook_state == "success", (
                slow_signing_sandbox.webhooks(),
                stack.log("triggerer")[-4000:],
            )
    finally:
        stack.stop()
    assert all(proc.returncode is not None for proc in stack.procs.values())

    # The sensor's trigger crossed processes as serialized JSON and was run by the separate
    # triggerer: the task's trigger log is written by that triggerer job and holds the trigger's polls.
    job_ids = _triggerer_job_ids(home)
    assert len(job_ids) == 1, job_ids
    trigger_logs = list((home / "logs").rglob("task_id=wait_for_signatures/attempt=*.log.trigger.*.log"))
    assert [p.name.rsplit(".", 2)[-2] for p in trigger_logs] == [str(job_ids[0])], trigger_logs
    trigger_log = trigger_logs[0].read_text()
    assert "Poll 1:" in trigger_log, trigger_log[-3000:]
    assert "reached COMPLETED" in trigger_log  # the trigger, not a worker poke, saw the signatures
    if AIRFLOW_V_3_0_PLUS:
        assert "DocsignEnvelopeTrigger" in trigger_log  # the trigger's logger name (structlog)

    # The API key never reached any component's output or any task/trigger log.
    for log_file in [*logs.iterdir(), *(home / "logs").rglob("*.log")]:
        assert api_key not in log_file.read_text(errors="replace"), log_file

    # docsign_archive_on_completion (Airflow 3) archives under <envelope_id>/; the contract DAG under
    # its externalId.
    manifests = [(p, m) for p, m in load_manifests(archive_dir) if p.parent.name != m["envelope_id"]]
    assert len(manifests) == 1
    manifest_path, manifest = manifests[0]
    assert manifest["external_id"] == f"contract-{run_id}-ACME-001"
    assert len(manifest["files"]) == 3
    for entry in manifest["files"]:
        path = Path(entry["uri"].removeprefix("file://"))
        expected = hashlib.sha256(slow_signing_sandbox.item_bytes(entry["item_id"], "signed")).hexdigest()
        assert sha256_file(path) == expected == entry["sha256"]
    assert json.loads(manifest_path.read_text())["status"] == "COMPLETED"
    if AIRFLOW_V_3_0_PLUS:
        # The completion webhook (answered 200 at the first attempt) ran docsign_archive_on_completion
        # through the AssetWatcher, which archived the same envelope under its id, with no sensor.
        envelope_id = manifest["envelope_id"]
        deliveries = slow_signing_sandbox.webhooks()["deliveries"]
        assert [(d["envelopeId"], d["attempts"]) for d in deliveries] == [(envelope_id, [200])]
        by_webhook = json.loads((archive_dir / envelope_id / "manifest.json").read_text())
        assert by_webhook["status"] == "COMPLETED"
        assert {f["sha256"] for f in by_webhook["files"]} == {f["sha256"] for f in manifest["files"]}
        for log_file in [*logs.iterdir(), *(home / "logs").rglob("*.log")]:
            assert WEBHOOK_SECRET not in log_file.read_text(errors="replace"), log_file


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0
