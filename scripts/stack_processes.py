"""The processes of one distributed stack: start each component, watch it, stop it by PID.

Each component runs in its own process group; a PID is recorded with its start time, so a recycled
PID is never signalled. Standard library only at import (see ``scripts/stack.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from stack_layout import (
    API_KEY,
    ARCHIVE_BUCKET,
    HOSTNAME_MODULE,
    USERNAME,
    VIEWER,
    WORK_BUCKET,
    WORKERS,
    StackLayout,
)
from stack_preflight import StackError, preflight

STARTUP_TIMEOUT = 180.0
STOP_TIMEOUT = 20.0


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


class Stack(StackLayout):
    """The processes of one distributed stack, started and stopped by PID (see :class:`StackLayout`)."""

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
        (self.base / "passwords.json").write_text(
            json.dumps({USERNAME: self.password, VIEWER: self.viewer_password})
        )
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
