"""The contract-signing pipeline on a live Airflow stack, every component in its own process.

The connections are made the way users make them, never with an ``AIRFLOW_CONN_*`` variable (no
component has one in its environment):

1. ``airflow connections add`` puts ``docsign_default`` (no port) and, on Airflow 3, the webhook
   secret ``docsign_webhook`` into the metadata database; ``docsign_contract_signing`` runs and
   archives the signed PDFs. On Airflow 3 the triggerer has no database access: the deferred wait
   finds the connection through ``aget_connection`` (before, it failed with "isn't defined").
2. Then ``docsign_default`` is deleted from the database and written to the file of Airflow's
   ``LocalFilesystemBackend`` secrets backend (configured from the start, empty until then), with its
   own ``web_url``; the DAG runs again, from that connection (its extra link shows that ``web_url``).

Airflow 3: ``api-server``, ``scheduler``, ``dag-processor`` and ``triggerer``, with SQLite and the
LocalExecutor (Airflow 3.3 accepts it with SQLite); the DAG is unpaused and triggered through the
REST API (``/api/v2``) with a JWT from the simple auth manager.

Airflow 2.11: the equivalents ``webserver`` (REST ``/api/v1``), ``scheduler`` and ``triggerer``. With
SQLite, 2.11 refuses both the LocalExecutor and a standalone ``dag-processor``, so the scheduler runs
the SequentialExecutor and parses the DAGs itself.

The DAGS_FOLDER is a temporary copy of ``dags_examples/`` plus ``docsign_legacy_imports.py``, a DAG
that imports three 0.2 module paths (``livestack_legacy``): run once while the first contract run is in
flight, its parse log and its task's log (on 2.11: its task process's output) each name every old path
and where it moved, and ``docsign moved-imports`` on the folder lists the three (issue 49, item 2).

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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import pytest
import requests
from e2e_helpers import AIRFLOW, airflow_cli, connections_add, load_manifests, sha256_file
from livestack_legacy import (
    LEGACY_DAG_ID,
    LEGACY_FILE,
    assert_command_lists_moves,
    assert_logged_moves,
    assert_task_saw_moves,
    dag_processor_logs,
    dags_folder_with_legacy_dag,
)
from statsd_helpers import StatsdSink

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = [pytest.mark.e2e, pytest.mark.livestack]

DAG_ID = "docsign_contract_signing"
#: Airflow 3: archives each envelope from the sandbox's completion webhook (AssetWatcher).
WEBHOOK_DAG_ID = "docsign_archive_on_completion"
WEBHOOK_SECRET = "livestack-webhook-secret"
STARTUP_TIMEOUT = 180.0  # api-server up and the DAG parsed
RUN_TIMEOUT = 300.0  # the DAG run reaching a final state
STOP_TIMEOUT = 20.0
CONNECTIONS_FILE = "connections.json"  # LocalFilesystemBackend's file, in AIRFLOW_HOME


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stack_env(home: Path, dags: Path, port: int, archive_dir: Path, webhook_port: int) -> dict[str, str]:
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            # Airflow's own file-based secrets backend, searched before the metadata database.
            "AIRFLOW__SECRETS__BACKEND": "airflow.secrets.local_filesystem.LocalFilesystemBackend",
            "AIRFLOW__SECRETS__BACKEND_KWARGS": json.dumps(
                {"connections_file_path": str(home / CONNECTIONS_FILE)}
            ),
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
                # docsign_archive_on_completion: its listener port and archive directory (its
                # secret is the docsign_webhook connection, in the metadata database).
                "DOCSIGN_WEBHOOK_PORT": str(webhook_port),
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


def _docsign_connection(sandbox: SandboxServer, **extra: Any) -> dict[str, Any]:
    """The ``docsign`` connection of the sandbox, with no port: the base URL carries it."""
    from airflow_provider_docsign.evidence.signatures import certificate_fingerprints

    extras = {
        "max_retries": 3,
        "backoff_factor": 0.05,
        "max_retry_wait": 2,
        "timeout": 10,
        "signing_certificate_fingerprints": certificate_fingerprints(sandbox.certificate_pem()),
        **extra,
    }
    return {"conn_type": "docsign", "host": sandbox.base_url, "password": sandbox.api_key, "extra": extras}


class _Rest:
    """The stack's REST API (``/api/v2`` on Airflow 3 with a JWT, ``/api/v1`` on 2.11)."""

    def __init__(self, port: int, stack: _Stack) -> None:
        self.api = f"http://127.0.0.1:{port}"
        self.rest = f"{self.api}/api/v2" if AIRFLOW_V_3_0_PLUS else f"{self.api}/api/v1"
        self.stack = stack
        self.http = requests.Session()
        if AIRFLOW_V_3_0_PLUS:
            token = _wait_for(
                "the api-server",
                lambda: self.http.get(f"{self.api}/auth/token", timeout=5).json().get("access_token"),
                stack,
                STARTUP_TIMEOUT,
            )
            self.http.headers["Authorization"] = f"Bearer {token}"

    def get(self, path: str) -> Any:
        response = self.http.get(self.rest + path, timeout=10)
        response.raise_for_status()
        return response.json()

    def unpause(self, dag_id: str) -> None:
        _wait_for(
            f"{dag_id} to be parsed and served",
            lambda: self.http.get(f"{self.rest}/dags/{dag_id}", timeout=5).status_code == 200,
            self.stack,
            STARTUP_TIMEOUT,
        )
        unpause = self.http.patch(f"{self.rest}/dags/{dag_id}", json={"is_paused": False}, timeout=10)
        assert unpause.status_code == 200, unpause.text

    def trigger(self, dag_id: str, conf: dict[str, Any]) -> str:
        """Trigger ``dag_id``: the run's id."""
        body: dict[str, Any] = {"conf": conf}
        if AIRFLOW_V_3_0_PLUS:
            body["logical_date"] = None
        trigger = self.http.post(f"{self.rest}/dags/{dag_id}/dagRuns", json=body, timeout=10)
        assert trigger.status_code == 200, trigger.text
        return str(trigger.json()["dag_run_id"])

    def wait(self, dag_id: str, run_id: str) -> tuple[str, str, dict[str, str]]:
        """Wait for a run to end; ``(run_id, state, {task_id: state})``."""

        def finished() -> str | None:
            state = self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id)}").get("state")
            return state if state in ("success", "failed") else None

        state = _wait_for(f"run {run_id} to finish", finished, self.stack, RUN_TIMEOUT, interval=2.0)
        tis = self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id)}/taskInstances")["task_instances"]
        return run_id, state, {ti["task_id"]: ti["state"] for ti in tis}

    def envelope_link(self, dag_id: str, run_id: str) -> str:
        links = self.get(f"/dags/{dag_id}/dagRuns/{quote(run_id)}/taskInstances/create_envelope/links")
        return str(links.get("extra_links", links)["Docsign envelope"])


def _contract_run(
    rest: _Rest,
    stack: _Stack,
    tmp_path: Path,
    archive_dir: Path,
    name: str,
    meanwhile: Callable[[], object] = lambda: None,
) -> str:
    """One run of the contract DAG, which must succeed: its run id. ``meanwhile()`` once it is triggered."""
    conf = {"archive_dir": str(archive_dir), "work_dir": str(tmp_path / "work" / name)}
    run_id = rest.trigger(DAG_ID, conf)
    meanwhile()
    run_id, state, ti_states = rest.wait(DAG_ID, run_id)
    assert state == "success", (
        name,
        ti_states,
        stack.log("scheduler")[-4000:],
        stack.log("triggerer")[-4000:],
    )
    assert set(ti_states.values()) == {"success"}, ti_states
    return run_id


def _assert_waited_in_the_triggerer(home: Path, run_id: str, job_id: int) -> None:
    """The sensor's trigger crossed processes as serialized JSON and was run by the triggerer job."""
    pattern = f"dag_id={DAG_ID}/run_id={run_id}/task_id=wait_for_signatures/attempt=*.log.trigger.*.log"
    trigger_logs = list((home / "logs").rglob(pattern))
    assert [p.name.rsplit(".", 2)[-2] for p in trigger_logs] == [str(job_id)], trigger_logs
    trigger_log = trigger_logs[0].read_text()
    assert "Poll 1:" in trigger_log, trigger_log[-3000:]
    assert "reached COMPLETED" in trigger_log  # the trigger, not a worker poke, saw the signatures
    assert "isn't defined" not in trigger_log
    if AIRFLOW_V_3_0_PLUS:
        assert "DocsignEnvelopeTrigger" in trigger_log  # the trigger's logger name (structlog)


def _assert_archived(archive_dir: Path, sandbox: SandboxServer, run_id: str) -> dict[str, Any]:
    """The run's signed PDFs are archived under its external id, equal to the sandbox's signed bytes."""
    external_id = f"contract-{run_id}-ACME-001"
    found = [(p, m) for p, m in load_manifests(archive_dir) if m["external_id"] == external_id]
    found = [(p, m) for p, m in found if p.parent.name != m["envelope_id"]]  # not the webhook DAG's copy
    assert len(found) == 1, [m["external_id"] for _, m in load_manifests(archive_dir)]
    manifest_path, manifest = found[0]
    assert len(manifest["files"]) == 3
    for entry in manifest["files"]:
        path = Path(entry["uri"].removeprefix("file://"))
        expected = hashlib.sha256(sandbox.item_bytes(entry["item_id"], "signed")).hexdigest()
        assert sha256_file(path) == expected == entry["sha256"]
    assert json.loads(manifest_path.read_text())["status"] == "COMPLETED"
    return manifest


def _assert_metrics(sink: StatsdSink, sandbox: SandboxServer, api_key: str) -> None:
    """Every request any component made is counted once, the triggerer's polls too; nothing personal.

    The deferred waits' polls run in the separate triggerer process, through the async hook: were its
    requests not counted there (its metrics not set up, or the async path not sending), the count
    would fall short of the sandbox's (46 of 58 when the async path's count was removed).
    """
    datagrams = sink.datagrams()
    requests_sent = [d for d in datagrams if d.name == "airflow.docsign.requests"]
    assert sum(int(d.value) for d in requests_sent) == len(sandbox.requests()), sorted(
        {d.tags.get("operation", "") for d in requests_sent}
    )
    assert {d.tags.get("conn_id") for d in requests_sent} == {"docsign_default"}
    # Each contract run's wait saw its envelope completed once and timed it from the audit log.
    timed = [d for d in datagrams if d.name == "airflow.docsign.time_to_sign"]
    assert [(d.kind, d.tags.get("source")) for d in timed] == [("ms", "audit")] * 2
    completed = [d for d in datagrams if d.name == "airflow.docsign.envelopes.completed"]
    assert sum(int(d.value) for d in completed) == 2
    assert api_key not in "\n".join(sink.lines())  # in no datagram at all, Airflow's own included
    # No e-mail in the provider's datagrams (Airflow's own may carry a StatsD sample rate, "|@0.1").
    assert "@" not in "\n".join(d.raw for d in datagrams)


def test_contract_signing_on_a_live_airflow_stack(
    tmp_path: Path, slow_signing_sandbox: SandboxServer, api_key: str
) -> None:
    home, logs, archive_dir = tmp_path / "home", tmp_path / "logs", tmp_path / "archive"
    for folder in (home, logs, archive_dir):
        folder.mkdir()
    dags = dags_folder_with_legacy_dag(tmp_path)
    port, webhook_port = _free_port(), _free_port()
    env = _stack_env(home, dags, port, archive_dir, webhook_port)
    assert not [k for k in env if k.startswith("AIRFLOW_CONN_")]  # no component gets a connection this way
    (home / CONNECTIONS_FILE).write_text("{}")  # the secrets backend's file: empty for now
    airflow_cli(env, "db", "migrate")
    # Source 1: the metadata database, as `airflow connections add` (or the UI) puts them there.
    connections_add(env, "docsign_default", _docsign_connection(slow_signing_sandbox))
    if AIRFLOW_V_3_0_PLUS:
        connections_add(env, "docsign_webhook", {"conn_type": "generic", "password": WEBHOOK_SECRET})
    else:
        # 2.x's "all admins": anonymous requests get the Admin role (loopback, throw-away home only).
        (home / "webserver_config.py").write_text('AUTH_ROLE_PUBLIC = "Admin"\n')

    # Airflow's metrics on, with tags, to a real UDP socket: every component sends there.
    sink = StatsdSink().__enter__()
    env.update(
        AIRFLOW__METRICS__STATSD_ON="True",
        AIRFLOW__METRICS__STATSD_HOST="127.0.0.1",
        AIRFLOW__METRICS__STATSD_PORT=str(sink.port),
        AIRFLOW__METRICS__STATSD_DATADOG_ENABLED="True",
    )
    stack = _Stack(env, logs)
    runs: dict[str, str] = {}
    legacy_runs: list[str] = []
    try:
        for name, args in _components(port).items():
            stack.start(name, *args)
        rest = _Rest(port, stack)
        rest.unpause(DAG_ID)
        rest.unpause(LEGACY_DAG_ID)
        if AIRFLOW_V_3_0_PLUS:
            rest.unpause(WEBHOOK_DAG_ID)
            # The triggerer runs the AssetWatcher's trigger: its listener must be up before the
            # envelope completes, or the sandbox's 4 attempts would find nobody.
            _wait_for("the webhook listener", lambda: _port_open(webhook_port), stack, STARTUP_TIMEOUT)
            slow_signing_sandbox.add_webhook(
                f"http://127.0.0.1:{webhook_port}/", WEBHOOK_SECRET, ["DOCUMENT_COMPLETED"]
            )

        # The legacy DAG's run goes while this one waits for its signatures.
        runs["database"] = _contract_run(
            rest,
            stack,
            tmp_path,
            archive_dir,
            "database",
            meanwhile=lambda: legacy_runs.append(rest.trigger(LEGACY_DAG_ID, {})),
        )
        legacy = rest.wait(LEGACY_DAG_ID, legacy_runs[0])[1:]
        assert legacy == ("success", {"uses_old_paths": "success"}), stack.log("scheduler")[-4000:]
        default_link = rest.envelope_link(DAG_ID, runs["database"])

        # Source 2: Airflow's LocalFilesystemBackend. The database row goes, the file gets the
        # connection, with a web_url of its own that the run's extra link then shows.
        airflow_cli(env, "connections", "delete", "docsign_default")
        file_web_url = slow_signing_sandbox.base_url.removesuffix("/api/v2").replace("127.0.0.1", "localhost")
        from_file = _docsign_connection(slow_signing_sandbox, web_url=file_web_url)
        (home / CONNECTIONS_FILE).write_text(json.dumps({"docsign_default": from_file}))
        runs["file"] = _contract_run(rest, stack, tmp_path, archive_dir, "file")
        file_link = rest.envelope_link(DAG_ID, runs["file"])

        if AIRFLOW_V_3_0_PLUS:
            # Each completion webhook runs docsign_archive_on_completion, which archives the envelope
            # again under its id: wait for both copies, then for every run of that DAG to end.
            envelope_ids = [
                _assert_archived(archive_dir, slow_signing_sandbox, r)["envelope_id"] for r in runs.values()
            ]
            _wait_for(
                "the webhook DAG's archives",
                lambda: all((archive_dir / e / "manifest.json").exists() for e in envelope_ids),
                stack,
                RUN_TIMEOUT,
                interval=2.0,
            )

            def webhook_runs() -> list[str] | None:
                states = [r["state"] for r in rest.get(f"/dags/{WEBHOOK_DAG_ID}/dagRuns")["dag_runs"]]
                return states if states and all(s in ("success", "failed") for s in states) else None

            webhook_states = _wait_for(
                f"{WEBHOOK_DAG_ID} runs", webhook_runs, stack, RUN_TIMEOUT, interval=2.0
            )
            assert set(webhook_states) == {"success"}, (
                slow_signing_sandbox.webhooks(),
                stack.log("triggerer")[-4000:],
            )
    finally:
        stack.stop()
        sink.close()
    assert all(proc.returncode is not None for proc in stack.procs.values())
    _assert_metrics(sink, slow_signing_sandbox, api_key)

    # Both waits deferred to the one triggerer process, which found the connection each time.
    job_ids = _triggerer_job_ids(home)
    assert len(job_ids) == 1, job_ids
    manifests = {}
    for source, run_id in runs.items():
        _assert_waited_in_the_triggerer(home, run_id, job_ids[0])
        manifests[source] = _assert_archived(archive_dir, slow_signing_sandbox, run_id)

    # Each run used the connection of its source: the link of the file's run has the file's web_url.
    root = slow_signing_sandbox.base_url.removesuffix("/api/v2")
    assert default_link == f"{root}/t/personal_sandbox/documents/{manifests['database']['envelope_id']}"
    assert file_link == f"{file_web_url}/t/personal_sandbox/documents/{manifests['file']['envelope_id']}"

    # The DAG written for 0.2: its parse log and its task's own log name each old path and where it
    # moved (on 2.11 through the plugin's listener: see livestack_legacy), and the documented command
    # lists all three.
    assert_logged_moves("parse", dag_processor_logs(home), dags / LEGACY_FILE)
    assert_task_saw_moves(home, legacy_runs[0], dags / LEGACY_FILE)
    assert_command_lists_moves(dags)

    # The API key never reached any component's output or any task/trigger log.
    for log_file in [*logs.iterdir(), *(home / "logs").rglob("*.log")]:
        assert api_key not in log_file.read_text(errors="replace"), log_file

    if AIRFLOW_V_3_0_PLUS:
        # The completion webhooks (answered 200 at the first attempt) ran docsign_archive_on_completion
        # through the AssetWatcher, whose trigger read its secret from the database: each envelope was
        # archived again under its id, with no sensor.
        deliveries = slow_signing_sandbox.webhooks()["deliveries"]
        envelope_ids = sorted(m["envelope_id"] for m in manifests.values())
        assert sorted((d["envelopeId"], tuple(d["attempts"])) for d in deliveries) == [
            (e, (200,)) for e in envelope_ids
        ]
        for manifest in manifests.values():
            by_webhook = json.loads((archive_dir / manifest["envelope_id"] / "manifest.json").read_text())
            assert by_webhook["status"] == "COMPLETED"
            assert {f["sha256"] for f in by_webhook["files"]} == {f["sha256"] for f in manifest["files"]}
        for log_file in [*logs.iterdir(), *(home / "logs").rglob("*.log")]:
            assert WEBHOOK_SECRET not in log_file.read_text(errors="replace"), log_file


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0
