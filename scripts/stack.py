"""``make stack`` / ``make stack-down``: a distributed Airflow 3 on 127.0.0.1, one process per component.

``python scripts/stack.py up`` starts, each as its own process (and process group):

* PostgreSQL (Debian's ``postgresql``: a throw-away cluster made with ``initdb`` in a temp directory;
  run as the ``postgres`` user when started by root, since PostgreSQL refuses root) as the metadata DB;
* ``redis-server`` as the Celery broker;
* moto's S3 server (buckets ``docsign-work`` and ``docsign-archive``) as the object store;
* the Docsign sandbox, whose signers sign by themselves a few seconds after distribution;
* Airflow's ``api-server``, ``scheduler``, ``dag-processor`` and ``triggerer``;
* two Celery workers, each with its own ``HOME``, ``TMPDIR``, ``AIRFLOW_HOME`` (and so its own log
  folder), working directory and hostname: they share only the broker, the database and S3.

The connections (``docsign_default`` to the sandbox, ``docsign_s3`` to moto) are added to the metadata
database with ``airflow connections add``, as users add theirs: no component gets an ``AIRFLOW_CONN_*``
variable, so the workers, the triggerer and the UI all read them from the database.

It prints the UI URL, the login and the connection ids, and records every PID (with its start time, so
a recycled PID is never signalled) in ``.stack/stack.json``. ``python scripts/stack.py down`` stops
exactly those processes and removes the temp directory. A missing ``postgresql`` or ``redis-server``
is reported with the ``apt-get`` command before anything starts; a component that fails to start
stops everything started so far. The tests (``-m distributed``) use the same :class:`Stack`.

``python scripts/stack.py preflight --browser --install`` is ``make test``'s pre-flight (standard
library only, so it runs before any venv exists): it checks PostgreSQL, Redis and Chromium, installs
the missing ones with one ``apt-get install`` when root or with passwordless sudo, and prints the
``export`` lines (``DOCSIGN_CHROMIUM``, the browser the tests drive); otherwise it exits 2 naming what
is missing, the install command and ``make test-core``.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
STATE_DIR = ROOT / ".stack"
STATE_FILE = STATE_DIR / "stack.json"
DAGS_FOLDER = ROOT / "dags_examples"
API_KEY = "api_stack_sandbox_key_0001"
USERNAME = "admin"
S3_CONN_ID = "docsign_s3"
WORK_BUCKET, ARCHIVE_BUCKET = "docsign-work", "docsign-archive"
WORKERS = ("worker1", "worker2")
STARTUP_TIMEOUT = 180.0
STOP_TIMEOUT = 20.0
# A module the components import as their hostname callable: the workers' recorded hostnames differ,
# as they would on two hosts (all processes really run on this machine).
HOSTNAME_MODULE = '''"""Hostname callable of the docsign stack (one name per component)."""
import os
import socket


def hostname() -> str:
    return os.environ.get("DOCSIGN_STACK_HOSTNAME") or socket.getfqdn()
'''


# Overrides, for machines with the binaries elsewhere and for the pre-flight's own tests:
# where Debian's PostgreSQL versions live, and the browser to drive (the pre-flight exports it).
POSTGRESQL_ROOT_ENV = "DOCSIGN_POSTGRESQL_ROOT"
CHROMIUM_ENV = "DOCSIGN_CHROMIUM"
APT_LOG = Path(tempfile.gettempdir()) / "docsign-apt-get.log"


def apt_hint(packages: list[str]) -> str:
    """The command that installs ``packages`` from Debian."""
    return f"sudo apt-get update && sudo apt-get install -y {' '.join(packages)}"


APT_HINT = apt_hint(["postgresql", "redis-server"])


class StackError(RuntimeError):
    """A prerequisite is missing or a component did not start."""


@dataclass(frozen=True)
class Prerequisites:
    """Where the system binaries the stack (and its browser test) use were found."""

    bindir: Path
    redis: str
    chromium: str | None = None

    def exports(self) -> str:
        """Shell ``export`` lines for ``make test``: the browser's path comes from here."""
        lines = [f"export {POSTGRESQL_ROOT_ENV}={shlex.quote(str(self.bindir.parent.parent))}"]
        if self.chromium:
            lines.append(f"export {CHROMIUM_ENV}={shlex.quote(self.chromium)}")
        return "\n".join(lines)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _find_postgres_bindir() -> Path | None:
    root = os.environ.get(POSTGRESQL_ROOT_ENV) or "/usr/lib/postgresql"
    found = [Path(p) for p in glob.glob(os.path.join(root, "*", "bin", "initdb"))]
    versions = sorted(
        (p for p in found if p.parent.parent.name.isdigit()), key=lambda p: int(p.parent.parent.name)
    )
    if versions:
        return versions[-1].parent
    if os.environ.get(POSTGRESQL_ROOT_ENV) is None:
        on_path = shutil.which("initdb")
        if on_path:
            return Path(on_path).parent
    return None


def _find_chromium() -> str | None:
    configured = os.environ.get(CHROMIUM_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def missing_packages(browser: bool = False) -> list[str]:
    """The Debian packages of the prerequisites that are not installed (Chromium only if ``browser``)."""
    missing = []
    if _find_postgres_bindir() is None:
        missing.append("postgresql")
    if shutil.which("redis-server") is None:
        missing.append("redis-server")
    if browser and _find_chromium() is None:
        missing.append("chromium")
    return missing


def _names(missing: list[str]) -> str:
    return " and ".join([", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing)


def _not_installed(missing: list[str]) -> str:
    verb = "is" if len(missing) == 1 else "are"
    return f"{_names(missing)} {verb} not installed. Install with: {apt_hint(missing)}"


def postgres_bindir() -> Path:
    """The directory of Debian's ``initdb``/``postgres`` (newest version), or a clear error."""
    found = _find_postgres_bindir()
    if found is None:
        raise StackError(_not_installed(["postgresql"]))
    return found


def redis_server() -> str:
    """The ``redis-server`` binary, or a clear error."""
    found = shutil.which("redis-server")
    if not found:
        raise StackError(_not_installed(["redis-server"]))
    return found


def chromium() -> str:
    """The Chromium binary the browser test drives (``$DOCSIGN_CHROMIUM`` or ``chromium`` on PATH)."""
    found = _find_chromium()
    if not found:
        configured = os.environ.get(CHROMIUM_ENV)
        if configured:
            raise StackError(f"{CHROMIUM_ENV}={configured} is not an executable file")
        raise StackError(_not_installed(["chromium"]))
    return found


def preflight(browser: bool = False) -> Prerequisites:
    """Check every system prerequisite before anything starts; name every missing one in one message.

    :param browser: Also check for Chromium (the browser test of ``make test``; ``make stack`` does
        not need it).
    """
    missing = missing_packages(browser)
    if missing:
        raise StackError(_not_installed(missing))
    return Prerequisites(postgres_bindir(), redis_server(), chromium() if browser else None)


def _installer() -> list[str] | None:
    """The prefix that runs apt-get as root: [] as root, ``sudo -n`` with passwordless sudo, else None."""
    if os.geteuid() == 0:
        return []
    sudo = shutil.which("sudo")
    if sudo is None:
        return None
    try:
        ok = subprocess.run([sudo, "-n", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return None
    return [sudo, "-n"] if ok else None


def ensure(browser: bool = True, install: bool = True, what: str = "make test") -> Prerequisites:
    """``make test``'s pre-flight: find the prerequisites, installing the missing ones when it can.

    As root or with passwordless sudo the missing Debian packages are installed with one
    ``apt-get install`` (after ``apt-get update``), saying so in one line. Otherwise, within seconds,
    :class:`StackError` names exactly what is missing, the command that installs it, and
    ``make test-core`` (every test but the ``distributed`` group) as the offline alternative.
    """
    missing = missing_packages(browser)
    if not missing:
        return preflight(browser)
    prefix = _installer() if install else None
    if prefix is None:
        raise StackError(
            f"{what}: the distributed tests need {_names(missing)} (Debian packages), not installed here.\n"
            f"  Install: {apt_hint(missing)}\n"
            "  Or run every other test without them: make test-core"
        )
    print(
        f"[{what}] installing {' '.join(missing)} from Debian with apt-get, for the distributed tests "
        f"(log: {APT_LOG})",
        file=sys.stderr,
        flush=True,
    )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    with open(APT_LOG, "wb") as log:
        for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *missing]):
            done = subprocess.run([*prefix, *cmd], env=env, stdout=log, stderr=subprocess.STDOUT)
            if done.returncode != 0:
                tail = APT_LOG.read_text(errors="replace")[-2000:]
                raise StackError(f"{what}: {' '.join(cmd)} failed (exit {done.returncode}):\n{tail}")
    return preflight(browser)


def _start_time(pid: int) -> float | None:
    """The process's start time in clock ticks since boot (from /proc), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return float(stat.rsplit(")", 1)[1].split()[19])


def _alive(pid: int, started: float | None) -> bool:
    current = _start_time(pid)
    if current is None or (started is not None and current != started):
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


def stop_pid(
    pid: int, started: float | None, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT
) -> None:
    """Stop the process group led by ``pid`` (only if ``pid`` is still the process we started)."""
    if not _alive(pid, started):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(pid, started):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.2)
    if _alive(pid, started):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


class Stack:
    """The processes of one distributed stack, started and stopped by PID.

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
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USERNAME}:admin",
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
                "DOCSIGN_EXAMPLE_WORK_DIR": f"s3://{S3_CONN_ID}@{WORK_BUCKET}/runs",
                "DOCSIGN_EXAMPLE_ARCHIVE_DIR": f"s3://{S3_CONN_ID}@{ARCHIVE_BUCKET}/signed",
                "DOCSIGN_EXAMPLE_POKE_INTERVAL": str(self.poke_interval),
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

    # -- processes ---------------------------------------------------------------------------------
    def _spawn(self, name: str, cmd: list[str], env: dict[str, str], cwd: Path, **kwargs: Any) -> None:
        log = open(self.log_path(name), "ab")  # noqa: SIM115 - closed in close_logs()
        self._logs.append(log)
        proc = subprocess.Popen(
            cmd,
            env=env,
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            **kwargs,
        )
        self._popen[name] = proc
        self.stopped.discard(name)
        self.procs[name] = {"pid": proc.pid, "started": _start_time(proc.pid), "cmd": cmd[:4]}
        self.save()

    def save(self) -> None:
        """Record the ports and PIDs in the state file (read by ``down``), if there is one."""
        if self.state_file is None:
            return
        self.state_file.parent.mkdir(exist_ok=True)
        state = {"base": str(self.base), "ports": self.ports, "procs": self.procs}
        self.state_file.write_text(json.dumps(state, indent=2))

    def alive(self, name: str) -> bool:
        """Whether component ``name`` is still the running process this stack started."""
        info = self.procs.get(name)
        return bool(info) and _alive(info["pid"], info["started"])  # type: ignore[index]

    def assert_alive(self) -> None:
        """Raise :class:`StackError` with the output of any component that exited."""
        dead = [name for name in self.procs if name not in self.stopped and not self.alive(name)]
        if dead:
            tails = "\n".join(f"--- {n}\n{self.log(n)[-2000:]}" for n in dead)
            raise StackError(f"stack processes exited: {dead}\n{tails}")

    def _wait(self, what: str, check: Any, timeout: float = STARTUP_TIMEOUT) -> Any:
        deadline = time.monotonic() + timeout
        for _ in range(int(timeout / 0.5) + 1):
            self.assert_alive()
            with contextlib.suppress(Exception):
                result = check()
                if result:
                    return result
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        raise StackError(f"timed out waiting for {what}")

    def _listening(self, port: int) -> bool:
        with socket.socket() as sock:
            sock.settimeout(0.5)
            return sock.connect_ex(("127.0.0.1", port)) == 0

    def _as_postgres(self) -> dict[str, Any]:
        """Popen options that drop root for PostgreSQL (which refuses to run as root)."""
        return {"user": "postgres", "group": "postgres"} if os.geteuid() == 0 else {}

    def start_postgres(self) -> None:
        """``initdb`` a throw-away cluster, start ``postgres`` on 127.0.0.1 and create the database."""
        assert self.bindir is not None
        data, sockets = self.base / "pg" / "data", self.base / "pg" / "run"
        for folder in (data, sockets):
            folder.mkdir(parents=True)
        if os.geteuid() == 0:
            (self.base / "pg").chmod(0o755)
            self.base.chmod(0o755)
            for folder in (self.base / "pg", data, sockets):
                shutil.chown(folder, "postgres", "postgres")
        env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"}
        subprocess.run(
            [str(self.bindir / "initdb"), "-D", str(data), "-U", "airflow", "--auth=trust", "-E", "UTF8"],
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
            cwd="/",
            **self._as_postgres(),
        )
        cmd = [
            str(self.bindir / "postgres"),
            "-D",
            str(data),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.ports["postgres"]),
        ]
        cmd += [
            "-k",
            str(sockets),
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "max_connections=200",
        ]
        self._spawn("postgres", cmd, env, Path("/"), **self._as_postgres())
        self._wait("postgresql", lambda: self._listening(self.ports["postgres"]), 60)
        createdb = [str(self.bindir / "createdb"), "-h", "127.0.0.1", "-p", str(self.ports["postgres"])]
        self._wait(
            "the airflow database",
            lambda: (
                subprocess.run(
                    [*createdb, "-U", "airflow", "airflow"], env=env, capture_output=True, timeout=30
                ).returncode
                == 0
            ),
            60,
        )

    def start(self) -> Stack:
        """Start every component; on any failure stop what was started and raise :class:`StackError`."""
        if self.local:
            self.bindir, redis = None, ""
        else:
            found = preflight()
            self.bindir, redis = found.bindir, found.redis
        for folder in ("logs", "support", "airflow-home", "sandbox"):
            (self.base / folder).mkdir(parents=True, exist_ok=True)
        (self.base / "support" / "docsign_stack_host.py").write_text(HOSTNAME_MODULE)
        (self.base / "passwords.json").write_text(json.dumps({USERNAME: self.password}))
        try:
            self._start_all(redis)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_all(self, redis: str) -> None:
        if not self.local:
            self._start_broker_and_db(redis)
        self._start_services(sys.executable)

    def _start_broker_and_db(self, redis: str) -> None:
        self.start_postgres()
        self._spawn(
            "redis",
            [
                redis,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.ports["redis"]),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            {"PATH": os.environ.get("PATH", "")},
            self.base,
        )

    def _start_services(self, py: str) -> None:
        self._spawn(
            "s3",
            [py, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.ports["s3"])],
            dict(os.environ),
            self.base,
        )
        sandbox_cmd = [py, "-m", "airflow_provider_docsign.sandbox", "--port", str(self.ports["sandbox"])]
        sandbox_cmd += [
            "--data-dir",
            str(self.base / "sandbox"),
            "--auto-sign-after",
            str(self.auto_sign_after),
        ]
        # Webhooks to the stack's triggerer on 127.0.0.1: allowed only when listed, as on a real
        # instance, through the same environment variable.
        sandbox_env = dict(
            os.environ, DOCSIGN_SANDBOX_API_KEY=API_KEY, NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS="127.0.0.1"
        )
        self._spawn("sandbox", sandbox_cmd, sandbox_env, self.base)
        for name in ("s3", "sandbox") if self.local else ("redis", "s3", "sandbox"):
            self._wait(name, lambda n=name: self._listening(self.ports[n]), 60)
        self._make_buckets()

        env = self.airflow_env()
        migrate = subprocess.run(
            [py, "-m", "airflow", "db", "migrate"], env=env, capture_output=True, timeout=600
        )
        self.log_path("db-migrate").write_bytes(migrate.stdout + migrate.stderr)
        if migrate.returncode != 0:
            raise StackError(
                "airflow db migrate failed:\n"
                + (migrate.stdout + migrate.stderr)[-3000:].decode(errors="replace")
            )
        for conn_id, options in self.connections().items():
            added = subprocess.run(
                [py, "-m", "airflow", "connections", "add", conn_id, *options],
                env=env,
                capture_output=True,
                timeout=300,
            )
            if added.returncode != 0:
                raise StackError(
                    f"airflow connections add {conn_id} failed:\n"
                    + added.stderr[-2000:].decode(errors="replace")
                )
        airflow = [py, "-m", "airflow"]
        home = self.base / "airflow-home"
        self._spawn(
            "api-server",
            [*airflow, "api-server", "-H", "127.0.0.1", "-p", str(self.ports["api"]), "-w", "1"],
            env,
            home,
        )
        self._spawn(
            "scheduler", [*airflow, "scheduler", "--skip-serve-logs"], self.airflow_env("scheduler"), home
        )
        self._spawn("dag-processor", [*airflow, "dag-processor"], self.airflow_env("dag-processor"), home)
        self.start_triggerer()
        workers = () if self.local else WORKERS
        for name in workers:
            self.start_worker(name)
        self._wait("the api-server", lambda: self._listening(self.ports["api"]))
        for name in workers:
            self._wait(f"{name} to be ready", lambda n=name: " ready." in self.log(n))

    def start_triggerer(self) -> None:
        """Start the triggerer (again, after a restart test stopped it)."""
        env = self.airflow_env("triggerer")
        self._spawn(
            "triggerer",
            [sys.executable, "-m", "airflow", "triggerer", "--skip-serve-logs"],
            env,
            self.base / "airflow-home",
        )

    def start_scheduler(self) -> None:
        """Start the scheduler (again, after a restart test stopped it)."""
        env = self.airflow_env("scheduler")
        self._spawn(
            "scheduler",
            [sys.executable, "-m", "airflow", "scheduler", "--skip-serve-logs"],
            env,
            self.base / "airflow-home",
        )

    def start_worker(self, name: str) -> None:
        """Start Celery worker ``name`` in its own home, as if on its own host."""
        home = self.home(name)
        for folder in (home, home / "tmp", home / "airflow", home / "cwd"):
            folder.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "airflow", "celery", "worker", "--celery-hostname", f"{name}@%h"]
        cmd += [
            "--concurrency",
            str(self.worker_concurrency),
            "--skip-serve-logs",
            "--without-gossip",
            "--without-mingle",
        ]
        self._spawn(name, cmd, self.worker_env(name), home / "cwd")

    def stop_component(self, name: str, sig: int = signal.SIGTERM) -> None:
        """Stop one component by its PID (``SIGKILL`` to simulate losing a host)."""
        self.stopped.add(name)
        info = self.procs[name]
        stop_pid(info["pid"], info["started"], sig)
        proc = self._popen.get(name)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=STOP_TIMEOUT)

    def kill_host(self, name: str) -> list[int]:
        """Lose worker ``name`` as if its host died.

        SIGKILL its process group and every process still working in its home (a task process may
        have left the group). Returns the PIDs killed.
        """
        self.stopped.add(name)
        home = str(self.home(name))
        info = self.procs[name]
        victims = [info["pid"]] if _alive(info["pid"], info["started"]) else []
        with contextlib.suppress(ProcessLookupError):
            os.killpg(info["pid"], signal.SIGKILL)
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if os.readlink(entry / "cwd").startswith(home):
                    os.kill(int(entry.name), signal.SIGKILL)
                    victims.append(int(entry.name))
        proc = self._popen.get(name)
        if proc is not None:
            proc.wait(timeout=STOP_TIMEOUT)
        return victims

    def _make_buckets(self) -> None:
        import boto3

        s3 = boto3.client(
            "s3",
            endpoint_url=self.s3_url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",  # noqa: S106 - moto's fixed test credentials
            region_name="us-east-1",
        )
        for bucket in (WORK_BUCKET, ARCHIVE_BUCKET):
            self._wait(f"bucket {bucket}", lambda b=bucket: s3.create_bucket(Bucket=b), 30)

    def stop(self) -> None:
        """Stop every process this stack started (Airflow first, PostgreSQL last), by PID."""
        for name in reversed(list(self.procs)):
            info = self.procs[name]
            stop_pid(info["pid"], info["started"], signal.SIGINT if name == "postgres" else signal.SIGTERM)
        for proc in self._popen.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=STOP_TIMEOUT)
        for log in self._logs:
            log.close()
        self._logs.clear()
        if self.state_file is not None:
            self.state_file.unlink(missing_ok=True)

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
                f"Stack directory : {self.base}   (logs in {self.base / 'logs'})",
                "Stop it with    : make stack-down",
            ]
        )


def down() -> int:
    """Stop the processes recorded in ``.stack/stack.json`` (exactly those, by PID) and clean up."""
    if not STATE_FILE.exists():
        print("[stack] no stack is running (no .stack/stack.json)")
        return 0
    state = json.loads(STATE_FILE.read_text())
    for name, info in reversed(list(state["procs"].items())):
        stop_pid(info["pid"], info["started"], signal.SIGINT if name == "postgres" else signal.SIGTERM)
        print(f"[stack] stopped {name} (pid {info['pid']})")
    still = [n for n, i in state["procs"].items() if _alive(i["pid"], i["started"])]
    STATE_FILE.unlink()
    shutil.rmtree(state["base"], ignore_errors=True)
    if still:
        print(f"[stack] could not stop: {still}", file=sys.stderr)
        return 1
    return 0


def up() -> int:
    """Start a stack in the background and print how to use it; 1 if it could not start."""
    if STATE_FILE.exists():
        print("[stack] a stack is already running; `make stack-down` first", file=sys.stderr)
        return 1
    stack = Stack(state_file=STATE_FILE)
    try:
        stack.start()
    except (StackError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(stack.base, ignore_errors=True)
        print(f"[stack] {exc}", file=sys.stderr)
        return 1
    for log in stack._logs:
        log.close()
    print(stack.summary())
    return 0


def check(install: bool, browser: bool) -> int:
    """``preflight``: print the ``export`` lines of the prerequisites, or one message and exit 2."""
    try:
        found = ensure(browser=browser, install=install)
    except StackError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(found.exports())
    return 0


def main(argv: list[str] | None = None) -> int:
    """``up``, ``down`` or ``preflight``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["up", "down", "preflight"])
    parser.add_argument(
        "--install",
        action="store_true",
        help="preflight: install what is missing with apt-get when root or with passwordless sudo",
    )
    parser.add_argument("--browser", action="store_true", help="preflight: Chromium is needed too")
    args = parser.parse_args(argv)
    if args.command == "preflight":
        return check(args.install, args.browser)
    return up() if args.command == "up" else down()


if __name__ == "__main__":
    sys.exit(main())
