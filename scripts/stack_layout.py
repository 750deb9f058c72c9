"""The layout of one distributed stack: ports, addresses, environments and connections.

:class:`StackLayout` holds a stack's parameters and state and says how its components are configured;
:class:`stack_processes.Stack` starts and stops them. Standard library only (see ``scripts/stack.py``).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
DAGS_FOLDER = ROOT / "dags_examples"
API_KEY = "api_stack_sandbox_key_0001"
USERNAME = "admin"
#: The stack's second login: Airflow's "viewer" role (DAGs yes, connections no).
VIEWER = "viewer"
S3_CONN_ID = "docsign_s3"
WORK_BUCKET, ARCHIVE_BUCKET = "docsign-work", "docsign-archive"
#: Where every worker keeps the campaigns' leases (``[docsign] campaign_lease_dir``): the workers share
#: no disk, so the default (``$AIRFLOW_HOME/docsign/campaign-leases``, one per worker) would let two
#: tries of one campaign on two workers both send. An S3 prefix, read with ``docsign_s3``, as
#: docs/bulk.md tells a deployment on several machines.
LEASE_DIR = f"s3://{WORK_BUCKET}/campaign-leases"
WORKERS = ("worker1", "worker2")
# A module the components import as their hostname callable: the workers' recorded hostnames differ,
# as they would on two hosts (all processes really run on this machine).
HOSTNAME_MODULE = '''"""Hostname callable of the docsign stack (one name per component)."""
import os
import socket


def hostname() -> str:
    return os.environ.get("DOCSIGN_STACK_HOSTNAME") or socket.getfqdn()
'''


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class StackLayout:
    """The ports, addresses, environments and connections of one distributed stack.

    :param base: The stack's temp directory (a new one when None).
    :param auto_sign_after: Seconds after distribution at which the sandbox's signers sign.
    :param poke_interval: The example DAGs' sensor poke interval in seconds.
    :param worker_concurrency: Task slots per Celery worker.
    :param executor: ``"celery"`` (PostgreSQL, Redis, two workers) or ``"local"`` (LocalExecutor on
        SQLite, no workers: the single-machine baseline of ``bench/bench_distributed.py``).
    :param state_file: Where to record PIDs for ``down`` (``make stack``); None for a stack that is
        stopped by the process that started it (the tests).
    """

    def __init__(
        self,
        base: Path | None = None,
        *,
        auto_sign_after: float = 15.0,
        poke_interval: float = 3.0,
        worker_concurrency: int = 4,
        state_file: Path | None = None,
        executor: str = "celery",
    ) -> None:
        self.state_file = state_file
        self.local = executor == "local"
        self.base = base or Path(tempfile.mkdtemp(prefix="docsign-stack-"))
        self.auto_sign_after = auto_sign_after
        self.poke_interval = poke_interval
        self.worker_concurrency = worker_concurrency
        self.ports = {name: _free_port() for name in ("postgres", "redis", "s3", "sandbox", "api")}
        self.password = secrets.token_urlsafe(12)
        #: A second user with Airflow's "viewer" role: reads DAGs, may not read connections.
        self.viewer_password = secrets.token_urlsafe(12)
        self.procs: dict[str, dict[str, Any]] = {}
        self.stopped: set[str] = set()  # stopped on purpose (restart tests): not a failure
        self._popen: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: list[IO[bytes]] = []
        self.bindir: Path | None = None

    # -- addresses ---------------------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        """The api-server (UI and REST) URL."""
        return f"http://127.0.0.1:{self.ports['api']}"

    @property
    def sandbox_url(self) -> str:
        """The sandbox's API base URL (``…/api/v2``)."""
        return f"http://127.0.0.1:{self.ports['sandbox']}/api/v2"

    @property
    def s3_url(self) -> str:
        """The moto S3 endpoint."""
        return f"http://127.0.0.1:{self.ports['s3']}"

    @property
    def sql_conn(self) -> str:
        """The metadata database's SQLAlchemy URL."""
        if self.local:
            return f"sqlite:///{self.base / 'airflow.db'}"
        return f"postgresql+psycopg2://airflow@127.0.0.1:{self.ports['postgres']}/airflow"

    def log_path(self, name: str) -> Path:
        """Where component ``name`` writes its output."""
        return self.base / "logs" / f"{name}.log"

    def log(self, name: str) -> str:
        """The output of component ``name`` so far."""
        return self.log_path(name).read_text(errors="replace")

    def home(self, name: str) -> Path:
        """The private directory of a worker (its HOME, TMPDIR, AIRFLOW_HOME and cwd live here)."""
        return self.base / "hosts" / name

    # -- environment -------------------------------------------------------------------------------
    def airflow_env(self, hostname: str = "control-plane") -> dict[str, str]:
        """The environment of the Airflow components (``hostname`` is what they record as theirs)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
        api = self.api_url
        env.update(
            {
                "AIRFLOW_HOME": str(self.base / "airflow-home"),
                "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor" if self.local else "CeleryExecutor",
                # Celery: 2 workers x worker_concurrency slots; LocalExecutor: the same 8 slots.
                "AIRFLOW__CORE__PARALLELISM": "8" if self.local else "32",
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                "AIRFLOW__CORE__HOSTNAME_CALLABLE": "docsign_stack_host.hostname",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USERNAME}:admin,{VIEWER}:viewer",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.base / "passwords.json"),
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{api}/execution/",
                # The connection form's Test button (off by default in Airflow 3).
                "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.sql_conn,
                "AIRFLOW__CELERY__BROKER_URL": f"redis://127.0.0.1:{self.ports['redis']}/0",
                "AIRFLOW__CELERY__RESULT_BACKEND": f"db+postgresql+psycopg2://airflow@127.0.0.1:{self.ports['postgres']}/airflow",
                "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(self.worker_concurrency),
                "AIRFLOW__API__BASE_URL": api,
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__PORT": str(self.ports["api"]),
                "AIRFLOW__API_AUTH__JWT_SECRET": self._secret("jwt"),
                "AIRFLOW__API__SECRET_KEY": self._secret("api"),
                "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
                "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
                # A killed worker's task is noticed within ~30 s instead of 5 minutes.
                "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
                "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "10",
                # One place for every worker's campaign leases (see LEASE_DIR).
                "AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_DIR": LEASE_DIR,
                "AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_CONN_ID": S3_CONN_ID,
                # The Contracts UI reads campaign files only here, with this connection (docs/ui.md).
                "AIRFLOW__DOCSIGN__UI_RESULT_LOCATIONS": f"s3://{S3_CONN_ID}@{WORK_BUCKET}/runs",
                "DOCSIGN_EXAMPLE_WORK_DIR": f"s3://{S3_CONN_ID}@{WORK_BUCKET}/runs",
                "DOCSIGN_EXAMPLE_ARCHIVE_DIR": f"s3://{S3_CONN_ID}@{ARCHIVE_BUCKET}/signed",
                "DOCSIGN_EXAMPLE_POKE_INTERVAL": str(self.poke_interval),
                # The Contracts page's browser test sends a campaign with a few invalid rows.
                "DOCSIGN_EXAMPLE_MAX_INVALID": "25",
                "DOCSIGN_STACK_HOSTNAME": hostname,
                "PYTHONPATH": os.pathsep.join(
                    filter(None, [str(self.base / "support"), env.get("PYTHONPATH")])
                ),
                "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
            }
        )
        return env

    def connections(self) -> dict[str, list[str]]:
        """``airflow connections add`` arguments of the stack's connections (ids to options)."""
        aws_extra = {"endpoint_url": self.s3_url, "region_name": "us-east-1"}
        docsign_extra = {"max_retries": 3, "backoff_factor": 0.2, "max_retry_wait": 5, "timeout": 30}
        return {
            # No --conn-port: the base URL carries it (a connection stored without one works).
            "docsign_default": [
                "--conn-type", "docsign", "--conn-host", self.sandbox_url, "--conn-password", API_KEY,
                "--conn-extra", json.dumps(docsign_extra),
            ],
            S3_CONN_ID: [
                "--conn-type", "aws", "--conn-login", "testing", "--conn-password", "testing",
                "--conn-extra", json.dumps(aws_extra),
            ],
        }  # fmt: skip

    def _secret(self, name: str) -> str:
        path = self.base / f"{name}.secret"
        if not path.exists():
            path.write_text(secrets.token_urlsafe(32))
        return path.read_text()

    def worker_env(self, name: str) -> dict[str, str]:
        """A worker's environment: its own HOME, TMPDIR, AIRFLOW_HOME (logs) and hostname."""
        home = self.home(name)
        env = self.airflow_env(hostname=f"{name}.stack.test")
        env.update({"HOME": str(home), "TMPDIR": str(home / "tmp"), "AIRFLOW_HOME": str(home / "airflow")})
        return env

    def summary(self) -> str:
        """What ``make stack`` prints: URLs, login, connection ids."""
        return "\n".join(
            [
                f"Airflow UI      : {self.api_url}   (login {USERNAME} / {self.password})",
                f"Executor        : CeleryExecutor, workers {', '.join(WORKERS)} (redis://127.0.0.1:{self.ports['redis']})",
                f"Metadata DB     : {self.sql_conn}",
                f"Connections     : docsign_default -> {self.sandbox_url}  (in the metadata DB)",
                f"                  {S3_CONN_ID} -> S3 at {self.s3_url}",
                f"Object storage  : s3://{WORK_BUCKET}/runs (work_dir)",
                f"                  s3://{ARCHIVE_BUCKET}/signed (archive)",
                f"                  {LEASE_DIR} (campaign leases, every worker)",
                f"Stack directory : {self.base}   (logs in {self.base / 'logs'})",
                "Stop it with    : make stack-down",
            ]
        )
