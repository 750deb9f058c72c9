"""The Contracts pages under test: a real ``airflow api-server`` process, and 50 seeded contracts.

:class:`ApiServer` starts Airflow's own api-server (the plugin loads through its ``airflow.plugins``
entry point, as after ``pip install``) on 127.0.0.1 against the test session's metadata database, with
two logins of the simple auth manager: ``admin`` (role admin) and ``viewer`` (role viewer: reads DAGs,
may not read connections), and any more a module asks for (``users``: name to role). Connections are
added through the REST API, as the UI's form adds them.
The process is stopped by its own process group at the end.

:func:`seed_contracts` stores 50 envelopes in a sandbox, in several states, and says which of them are
stalled by the provider's definition (PENDING for more than 7 days, or with an expired signing link).

:class:`Listener` stands in for an internal host (it counts the connections it is offered), and
:func:`rss_kib` reads the api-server's resident memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import requests

XSS_TITLE = "<img src=x onerror=alert(1)>"
STALLED_DAYS = 7
START_TIMEOUT = 120.0


def port_of(url: str) -> int:
    """The port of an ``http://host:port/...`` URL."""
    from urllib.parse import urlsplit

    port = urlsplit(url).port
    assert port is not None, url
    return port


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ApiServer:
    """``airflow api-server`` on 127.0.0.1 in its own process group (stopped by it at :meth:`stop`)."""

    def __init__(
        self,
        workdir: Path,
        *,
        cache_seconds: float = 60.0,
        extra_env: dict[str, str] | None = None,
        users: dict[str, str] | None = None,
    ):
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        roles = {"admin": "admin", "viewer": "viewer", **(users or {})}
        self.passwords = {name: secrets.token_urlsafe(10) for name in roles}
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "passwords.json").write_text(json.dumps(self.passwords))
        self.env = {
            **os.environ,
            "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager."
            "SimpleAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{n}:{r}" for n, r in roles.items()),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(workdir / "passwords.json"),
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(16),
            "AIRFLOW__DOCSIGN__UI_CACHE_SECONDS": str(cache_seconds),
            **(extra_env or {}),
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = workdir / "api-server.log"
        self.added: list[str] = []

    def start(self) -> ApiServer:
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "airflow",
                    "api-server",
                    "-H",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "-w",
                    "1",
                ],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the api-server exited: {self.log.read_text(errors='replace')[-3000:]}")
            try:
                if requests.get(f"{self.url}/api/v2/monitor/health", timeout=2).ok:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the api-server did not answer in {START_TIMEOUT:.0f} s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        if self.added:  # best effort: the process is stopped below whatever the server answers
            with contextlib.suppress(requests.RequestException):
                admin = self.session("admin")
                for name in self.added:
                    admin.delete(f"{self.url}/api/v2/connections/{name}", timeout=30)
            self.added.clear()
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def airflow(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the ``airflow`` CLI with the server's environment (the same metadata database)."""
        done = subprocess.run(
            [sys.executable, "-m", "airflow", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"airflow {' '.join(args[:2])} failed: {done.stderr[-2000:]}")
        return done

    def add_connection(self, conn_id: str, conn_type: str, host: str, password: str, port: int) -> None:
        """Add a connection as the UI's form does (``POST /api/v2/connections`` as ``admin``), into the
        metadata database; deleted again at :meth:`stop`.

        The REST API rather than ``airflow connections add``: the same row, stored by the server itself,
        without the two CLI processes (about 5 s of CPU each) a delete-then-add costs.
        """
        admin = self.session("admin")
        admin.delete(f"{self.url}/api/v2/connections/{conn_id}", timeout=30)  # 404 when absent
        body = {
            "connection_id": conn_id,
            "conn_type": conn_type,
            "host": host,
            "password": password,
            "port": port,
        }
        resp = admin.post(f"{self.url}/api/v2/connections", json=body, timeout=30)
        assert resp.status_code == 201, (resp.status_code, resp.text[:500])
        self.added.append(conn_id)

    def token(self, user: str) -> str:
        resp = requests.post(
            f"{self.url}/auth/token",
            json={"username": user, "password": self.passwords[user]},
            timeout=30,
        )
        resp.raise_for_status()
        return str(resp.json()["access_token"])

    def session(self, user: str | None) -> requests.Session:
        """A session with the user's bearer token (``None``: no credentials at all)."""
        http = requests.Session()
        if user is not None:
            http.headers["Authorization"] = f"Bearer {self.token(user)}"
        return http


@dataclass
class Seeded:
    """What :func:`seed_contracts` stored: every id, the stalled ones, and the plain e-mails used."""

    ids: list[str]
    stalled: set[str]
    xss: str
    folder_id: str
    in_folder: set[str]
    emails: set[str] = field(default_factory=set)
    by_status: dict[str, set[str]] = field(default_factory=dict)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def seed_contracts(sandbox: Any) -> Seeded:
    """Store 50 envelopes in ``sandbox``: 5 in a folder, the rest at the root, in every state.

    Stalled (PENDING and created more than 7 days ago, or with an expired link): 6 old at the root,
    4 recent with an expired link, 1 old in the folder = 11. Not stalled: recent PENDING ones, old
    DRAFTs (never sent), COMPLETED, REJECTED and CANCELLED ones however old.
    """
    now = datetime.now(timezone.utc)
    headers = {"Authorization": sandbox.api_key}
    made = requests.post(
        f"{sandbox.base_url}/folder/create", json={"name": "Legal <b>hold</b>"}, headers=headers, timeout=30
    )
    made.raise_for_status()
    folder_id = str(made.json()["id"])
    specs: list[dict[str, Any]] = []
    stalled: list[bool] = []
    emails: set[str] = set()

    def add(title: str, status: str, age_days: float, *, expired: bool = False, folder: bool = False) -> None:
        n = len(specs)
        email = f"signer.number{n}@customer-{n}.example"
        emails.add(email)
        recipient: dict[str, Any] = {"email": email, "name": f"Signer {n}", "role": "SIGNER"}
        if status == "PENDING":
            recipient.update(sendStatus="SENT", signingStatus="NOT_SIGNED")
            recipient["expiresAt"] = _iso(now + (timedelta(days=-1) if expired else timedelta(days=20)))
        elif status == "COMPLETED":
            recipient.update(
                sendStatus="SENT", signingStatus="SIGNED", signedAt=_iso(now - timedelta(hours=1))
            )
        elif status == "REJECTED":
            recipient.update(sendStatus="SENT", signingStatus="REJECTED", rejectionReason="no")
        spec: dict[str, Any] = {
            "title": title,
            "status": status,
            "createdAt": _iso(now - timedelta(days=age_days)),
            "externalId": f"ui-seed-{n:02d}",
            "recipients": [recipient],
        }
        if status in ("COMPLETED", "REJECTED", "CANCELLED"):
            spec["completedAt"] = _iso(now - timedelta(hours=2))
        if folder:
            spec["folderId"] = folder_id
        specs.append(spec)
        stalled.append(status == "PENDING" and (age_days > STALLED_DAYS or expired))

    for i in range(6):
        add(f"Old pending {i}", "PENDING", 10 + i)
    for i in range(4):
        add(f"Expired link {i}", "PENDING", 2, expired=True)
    for i in range(9):
        add(f"Fresh pending {i}", "PENDING", 1 + i * 0.5)
    add(XSS_TITLE, "PENDING", 3)
    for i in range(10):
        add(f"Signed {i}", "COMPLETED", 1 + i * 3)
    for i in range(5):
        add(f"Old draft {i}", "DRAFT", 30 + i)
    for i in range(5):
        add(f"Rejected {i}", "REJECTED", 12 + i)
    for i in range(5):
        add(f"Cancelled {i}", "CANCELLED", 20 + i)
    add("Folder old pending", "PENDING", 15, folder=True)
    for i in range(2):
        add(f"Folder fresh {i}", "PENDING", 1, folder=True)
    for i in range(2):
        add(f"Folder signed {i}", "COMPLETED", 9, folder=True)
    assert len(specs) == 50
    ids = sandbox.seed(specs)
    by_status: dict[str, set[str]] = {}
    for envelope_id, spec in zip(ids, specs, strict=True):
        by_status.setdefault(spec["status"], set()).add(envelope_id)
    return Seeded(
        ids=ids,
        stalled={i for i, s in zip(ids, stalled, strict=True) if s},
        xss=ids[[s["title"] for s in specs].index(XSS_TITLE)],
        folder_id=folder_id,
        in_folder={i for i, s in zip(ids, specs, strict=True) if s.get("folderId")},
        emails=emails,
        by_status=by_status,
    )


def tokens_of(sandbox: Any, ids: list[str]) -> set[str]:
    """The recipients' signing tokens the sandbox holds for ``ids`` (never to reach a browser)."""
    found = set()
    for envelope_id in ids:
        for recipient in sandbox.get_envelope(envelope_id).get("recipients", []):
            if recipient.get("token"):
                found.add(str(recipient["token"]))
    return found


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it is offered (stopped by its handle)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.sock.close()


def rss_kib(server: ApiServer) -> int:
    """The resident memory of every process of the api-server's process group, in KiB."""
    assert server.proc is not None
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == server.proc.pid:  # the process group
                status = (stat.parent / "status").read_text()
                total += int(status.split("VmRSS:")[1].split()[0]) if "VmRSS:" in status else 0
        except (OSError, IndexError, ValueError):
            continue
    return total


#: Debian's Chromium, headless, for the browser tests (Playwright cannot download its own here).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
]
#: Where the browser tests write their screenshots (the ones the guide shows are copied to docs/img/).
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "ui"


@contextlib.contextmanager
def signed_in_page(server: ApiServer, height: int, timeout_ms: int = 60_000) -> Iterator[Any]:
    """A Chromium page signed in to ``server``'s Airflow UI as ``admin``; closed on exit.

    ``page.dialogs`` collects every dialog's message (each dismissed): a script a hostile value ran
    would show there.
    """
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from stack_preflight import chromium

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": height})
            page.set_default_timeout(timeout_ms)
            page.dialogs = []
            page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
            page.goto(server.url + "/")
            page.locator("input[name=username]").fill("admin")
            page.locator("input[name=password]").fill(server.passwords["admin"])
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(lambda url: "/auth/login" not in url)
            yield page
        finally:
            browser.close()
