"""``SandboxServer``: run the sandbox in a subprocess on a free loopback port, for tests and the demo.

This module imports only the standard library and ``requests``; FastAPI and uvicorn are imported by the
subprocess alone.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
import weakref
from pathlib import Path
from types import TracebackType
from typing import Any

import requests

DEFAULT_API_KEY = "api_sandboxdevkey000"
#: The real instance's setting for webhook hosts exempt from the private-address refusal.
BYPASS_ENV = "NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS"


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    """Stop ``proc`` by its handle: terminate, then kill after 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


class SandboxError(RuntimeError):
    """The sandbox process failed to start, or a control call failed."""


class SandboxServer:
    """Start ``python -m airflow_provider_docsign.sandbox`` and talk to its control API.

    Use it as a context manager; the process is always stopped by its own handle on exit::

        with SandboxServer(tmp_path, api_key="api_...") as sb:
            sb.base_url  # "http://127.0.0.1:PORT/api/v2"

    :param data_dir: Directory for the sandbox's SQLite state and PDF files (kept after stop, so a new
        server on the same directory sees the same state).
    :param api_key: The team API key the sandbox accepts.
    :param host: Interface to bind (loopback by default).
    :param port: Port to bind; 0 picks a free one.
    :param auto_sign_after: Sign every recipient this many seconds after distribution (None: never).
    :param max_file_mb: Per-file upload limit in MB (50, as on the real service).
    :param startup_timeout: Seconds to wait for the server to listen.
    :param rate_limit: Enforce the real service's per-client window of this many requests per
        ``rate_window`` seconds (``1000`` is the real limit). ``None`` (the default here, unlike
        ``docsign sandbox``) only reports the ``X-RateLimit-*`` headers: the test suite's shared sandbox
        takes far more than 1,000 requests a minute, and a test of the limit starts its own.
    :param rate_window: The window in seconds (60, as on the real service).
    :param extra_args: More command-line arguments for the sandbox process (they come last, so they
        win over the options above).
    :param webhook_ssrf_bypass_hosts: Comma-separated webhook hosts exempt from the private-address
        refusal (the instance's ``NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS``, passed in that variable),
        e.g. ``"127.0.0.1"`` for a receiver on loopback. ``None``: none, whatever this process's
        environment says, so tests behave the same everywhere.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        api_key: str = DEFAULT_API_KEY,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        auto_sign_after: float | None = None,
        max_file_mb: float = 50,
        startup_timeout: float = 30.0,
        extra_args: list[str] | None = None,
        webhook_ssrf_bypass_hosts: str | None = None,
        rate_limit: int | None = None,
        rate_window: float = 60.0,
    ) -> None:
        self.data_dir = Path(data_dir)
        self._api_key = api_key
        self.host = host
        self.port = port
        self.auto_sign_after = auto_sign_after
        self.max_file_mb = max_file_mb
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args or [])
        self.webhook_ssrf_bypass_hosts = webhook_ssrf_bypass_hosts
        self.rate_limit = rate_limit
        self.rate_window = rate_window
        self._proc: subprocess.Popen[bytes] | None = None
        self._base_url: str | None = None
        self._session: requests.Session | None = None
        self._log: Any = None
        self._finalizer: Any = None

    def __repr__(self) -> str:
        state = f"pid={self._proc.pid}" if self._proc else "stopped"
        return f"SandboxServer({self._base_url or 'not started'}, {state})"

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> SandboxServer:
        """Start the subprocess and wait until it answers its health check."""
        if self._proc is not None:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable,
            "-m",
            "airflow_provider_docsign.sandbox",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
            "--max-file-mb",
            str(self.max_file_mb),
        ]
        if self.auto_sign_after is not None:
            cmd += ["--auto-sign-after", str(self.auto_sign_after)]
        cmd += ["--rate-limit", str(self.rate_limit or 0), "--rate-window", str(self.rate_window)]
        cmd += self.extra_args
        env = dict(os.environ, DOCSIGN_SANDBOX_API_KEY=self._api_key, PYTHONUNBUFFERED="1")
        env[BYPASS_ENV] = self.webhook_ssrf_bypass_hosts or ""
        self._log = open(self.data_dir / "sandbox.log", "ab")  # noqa: SIM115 - closed in stop()
        # The key goes through the environment, not argv, so it does not show up in process listings.
        self._proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=self._log, env=env, stdin=subprocess.DEVNULL
        )
        # Safety net: the process is stopped at interpreter exit even if stop() is never called.
        self._finalizer = weakref.finalize(self, _terminate, self._proc)
        try:
            self._base_url = self._read_url()
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        print(f"docsign sandbox listening at {self._base_url} (pid {self._proc.pid})", file=sys.stderr)
        return self

    def _read_url(self) -> str:
        assert self._proc is not None
        assert self._proc.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        buf = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self._proc.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    log = self.data_dir / "sandbox.log"
                    raise SandboxError(f"sandbox exited with code {self._proc.returncode}; see {log}")
                if not sel.select(timeout=0.1):
                    continue
                chunk = os.read(self._proc.stdout.fileno(), 4096)
                if not chunk:
                    continue
                buf += chunk
                for line in buf.decode("utf-8", "replace").splitlines():
                    if line.startswith("SANDBOX_URL="):
                        return line.split("=", 1)[1].strip()
        raise SandboxError(f"sandbox did not start within {self.startup_timeout}s")

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            try:
                if requests.get(self.root_url + "/_sandbox/health", timeout=2).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.05)
        raise SandboxError("sandbox did not become healthy")

    def stop(self) -> None:
        """Stop the subprocess (terminate, then kill after 10 s) and release resources."""
        proc, self._proc = self._proc, None
        if self._session is not None:
            self._session.close()
            self._session = None
        if proc is not None:
            self._finalizer.detach()
            _terminate(proc)
            if proc.stdout is not None:
                proc.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> SandboxServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- addresses ------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/api/v2``."""
        if self._base_url is None:
            raise SandboxError("sandbox is not running")
        return self._base_url

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return self.base_url[: -len("/api/v2")]

    @property
    def api_key(self) -> str:
        """The API key the sandbox accepts."""
        return self._api_key

    @property
    def pid(self) -> int:
        """The server process id."""
        if self._proc is None:
            raise SandboxError("sandbox is not running")
        return self._proc.pid

    # -- control API ----------------------------------------------------------------------------
    def _http(self) -> requests.Session:
        if self._session is None:
            self._session = requests.Session()
            self._session.headers["Authorization"] = f"Bearer {self._api_key}"
            # A new connection per control call: a kept-alive one that the server closes after its idle
            # timeout (uvicorn: 5 s) could be reused at that moment and reset (seen under load).
            self._session.headers["Connection"] = "close"
        return self._session

    def _control(self, method: str, path: str, json: Any = None, params: Any = None) -> Any:
        resp = self._http().request(
            method, self.root_url + "/_sandbox" + path, json=json, params=params, timeout=30
        )
        if resp.status_code != 200:
            raise SandboxError(
                f"sandbox control {method} {path} failed with HTTP {resp.status_code}: {resp.text[:500]}"
            )
        return resp.json()

    def sign(self, envelope_id: str, recipient_id: int | None = None) -> list[int]:
        """Sign as one recipient, or (None) as every unsigned non-CC recipient; sealing follows shortly."""
        body: dict[str, Any] = {"envelopeId": envelope_id, "recipientId": recipient_id}
        return list(self._control("POST", "/sign", json=body)["signed"])

    def reject(self, envelope_id: str, recipient_id: int, reason: str) -> None:
        """Reject as a recipient; the envelope becomes REJECTED shortly after."""
        self._control(
            "POST", "/reject", json={"envelopeId": envelope_id, "recipientId": recipient_id, "reason": reason}
        )

    def complete(self, envelope_id: str) -> list[int]:
        """Sign as everyone."""
        return list(self._control("POST", "/complete", json={"envelopeId": envelope_id})["signed"])

    def expire(self, envelope_id: str, recipient_id: int | None = None) -> list[int]:
        """Let a recipient's signing link (or, with None, every unsigned signer's) expire now."""
        body: dict[str, Any] = {"envelopeId": envelope_id, "recipientId": recipient_id}
        return list(self._control("POST", "/expire", json=body)["expired"])

    def backdate(self, envelope_id: str, days: float) -> str:
        """Move an envelope's ``createdAt`` ``days`` into the past; return the new ``createdAt``."""
        return str(
            self._control("POST", "/backdate", json={"envelopeId": envelope_id, "days": days})["createdAt"]
        )

    def set_clock_offset(self, seconds: float) -> str:
        """Skew the sandbox's clock ``seconds`` against the machine's (``0`` puts it back); return its now."""
        return str(self._control("POST", "/clock", json={"offsetSeconds": seconds})["now"])

    def reminders(self, envelope_id: str | None = None) -> dict[str, Any]:
        """Reminder e-mails counted (not sent): ``{data: [{envelopeId, recipientId, count}], total}``."""
        params = {"envelopeId": envelope_id} if envelope_id else None
        return dict(self._control("GET", "/reminders", params=params))

    def get_envelope(self, envelope_id: str) -> dict[str, Any]:
        """The envelope as ``GET /envelope/{id}`` returns it, read via the control API (not logged)."""
        data: dict[str, Any] = self._control("GET", f"/envelopes/{envelope_id}")
        return data

    def wait_status(self, envelope_id: str, status: str, timeout: float = 10) -> dict[str, Any]:
        """Poll until the envelope has ``status`` (bounded by ``timeout``); returns the envelope JSON."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            env = self.get_envelope(envelope_id)
            last = env["status"]
            if last == status:
                return env
            if time.monotonic() >= deadline:
                raise TimeoutError(f"envelope {envelope_id} is {last}, not {status}, after {timeout}s")
            time.sleep(0.05)

    def inject_fault(
        self,
        method: str = "POST",
        path: str = "/envelope/create",
        action: str = "status",
        count: int = 1,
        status: int | None = None,
        retry_after: float | None = None,
        delay: float | None = None,
        content_type: str | None = None,
        truncate_at: int | None = None,
        code: str | None = None,
    ) -> str:
        """Apply a fault to the next ``count`` requests matching ``method`` and ``path`` (under /api/v2).

        ``*`` in ``path`` matches one segment. Actions: ``status``, ``delay`` (before processing),
        ``delay_reply`` (process at once, answer ``delay`` seconds later), ``drop_after_commit``,
        ``drop_before``, ``wrong_content_type``, ``truncate``, ``ignore_order``, and for a sealed
        item's ``version=signed`` download ``tamper_signed``, ``unsigned``, ``modified_after_signing``.
        ``code`` sets the service's error code in a ``status`` fault's body. Returns the fault id.
        """
        body = {
            "method": method,
            "path": path,
            "action": action,
            "count": count,
            "status": status,
            "retry_after": retry_after,
            "delay": delay,
            "content_type": content_type,
            "truncate_at": truncate_at,
            "code": code,
        }
        return str(self._control("POST", "/faults", json=body)["id"])

    def faults(self) -> list[dict[str, Any]]:
        """The faults still pending (a fault leaves this list when its last request arrives)."""
        return list(self._control("GET", "/faults")["data"])

    def clear_faults(self) -> None:
        """Remove all pending faults."""
        self._control("POST", "/faults/clear")

    def requests(self, bodies: bool = False, *, times: bool = False) -> list[dict[str, Any]]:
        """``[{"method", "path", "status"}]`` of ``/api/v2`` requests so far, in order.

        ``path`` is relative to ``/api/v2`` (no query string). ``status`` is what the server answered; for
        ``drop_after_commit`` it is the status of the committed (never delivered) answer, and 0 when no
        answer was produced at all (``drop_before``). With ``bodies=True`` an entry also has ``body``: the
        parts of the request body its route notes (``meta`` of create/update, ``override`` of use, the
        body of redistribute and cancel). With ``times=True`` it also has ``at``: when the answer
        started, in epoch seconds.
        """
        params = {k: "true" for k, on in (("bodies", bodies), ("times", times)) if on} or None
        return list(self._control("GET", "/requests", params=params)["data"])

    def clear_requests(self) -> None:
        """Empty the request log."""
        self._control("POST", "/requests/clear")

    def seed(self, envelopes: list[dict[str, Any]]) -> list[str]:
        """Test-only: bulk-store envelopes with given times and states; returns their ids in order.

        Each spec: ``title``, ``status``, ``createdAt``/``updatedAt``/``completedAt``/``sentAt``,
        ``externalId``, ``folderId``, ``templateId`` and ``recipients`` (``email``, ``name``, ``role``,
        ``signingOrder``, ``readStatus``, ``sendStatus``, ``signingStatus``, ``signedAt``, ``expiresAt``,
        ``rejectionReason`` and ``fields``: ``type``, ``page``, ``fieldMeta``, ``customText``), and
        ``audit``: further audit entries ``{"type", "createdAt"}`` (``DOCUMENT_OPENED``...).
        """
        return list(self._control("POST", "/seed", json={"envelopes": envelopes})["ids"])

    def set_times(self, envelope_id: str, **times: Any) -> None:
        """Test-only: rewrite an envelope's timestamps.

        ``createdAt``/``updatedAt``/``completedAt``; a ``sentAt`` adds a ``DOCUMENT_SENT`` audit
        entry; ``recipients=[{"id", "signedAt", "expiresAt"}]`` sets recipients' times; ``audit=[{"type",
        "createdAt"}]`` adds audit entries.
        """
        self._control("POST", "/times", json={"envelopeId": envelope_id, **times})

    def add_webhook(self, url: str, secret: str, events: list[str] | None = None) -> dict[str, Any]:
        """Subscribe ``url`` to webhooks (default: completed, rejected, cancelled); see ``webhooks.py``."""
        body = {"url": url, "secret": secret, "events": events}
        return dict(self._control("POST", "/webhooks", json=body))

    def webhooks(self) -> dict[str, Any]:
        """Subscriptions (no secrets) and the delivery log: event, envelope id, url, attempt statuses."""
        return dict(self._control("GET", "/webhooks"))

    def drop_webhooks(self, count: int = 1) -> None:
        """Fault: lose the next ``count`` webhook deliveries (never sent)."""
        self._control("POST", "/webhooks/drop", json={"count": count})

    def clear_webhooks(self) -> None:
        """Remove every webhook subscription, the drop fault, the DNS answers and the delivery log."""
        self._control("POST", "/webhooks/clear")

    def set_webhook_dns(self, answers: dict[str, list[list[str]]]) -> None:
        """Give webhook host names fixed DNS answers, one address list per lookup (the last repeats).

        ``{"hooks.test": [["127.0.0.1"], ["127.0.0.3"]]}``: the first lookup answers 127.0.0.1, every
        later one 127.0.0.3 (a rebinding name); ``[[]]`` does not resolve. Other names use the system's.
        """
        self._control("POST", "/webhooks/dns", json={"answers": answers})

    def certificate_pem(self) -> bytes:
        """The sandbox's sealing certificate (PEM), from ``GET /_sandbox/certificate``."""
        resp = self._http().get(f"{self.root_url}/_sandbox/certificate", timeout=30)
        if resp.status_code != 200:
            raise SandboxError(f"GET /_sandbox/certificate failed with HTTP {resp.status_code}")
        return resp.content

    # -- the timestamp authority (``/tsa``) -------------------------------------------------------
    @property
    def tsa_url(self) -> str:
        """``http://127.0.0.1:PORT/tsa``: the sandbox's RFC 3161 timestamp authority."""
        return self.root_url + "/tsa"

    def tsa_certificate_pem(self) -> bytes:
        """The sandbox TSA's certificate (PEM), from ``GET /_sandbox/tsa/certificate``."""
        resp = self._http().get(f"{self.root_url}/_sandbox/tsa/certificate", timeout=30)
        if resp.status_code != 200:
            raise SandboxError(f"GET /_sandbox/tsa/certificate failed with HTTP {resp.status_code}")
        return resp.content

    def tsa_fault(
        self, action: str, count: int = 1, *, delay: float | None = None, status: int | None = None
    ) -> None:
        """Make the TSA misbehave for the next ``count`` requests.

        Actions: ``wrong_nonce``, ``wrong_imprint``, ``untrusted`` (signed by a second, unpinned TSA),
        ``delay`` (answer ``delay`` seconds late), ``reject`` (status *rejection*), ``http_status``,
        ``oversize`` (2 MiB of zeros).
        """
        body = {"action": action, "count": count, "delay": delay, "status": status}
        self._control("POST", "/tsa/faults", json=body)

    def tsa_requests(self) -> list[dict[str, Any]]:
        """The TSA's request log: ``[{at, auth, fault, status, outcome}]``, oldest first."""
        return list(self._control("GET", "/tsa/requests")["data"])

    def clear_tsa(self) -> None:
        """Drop pending TSA faults and empty the TSA's request log."""
        self._control("POST", "/tsa/clear")

    def item_bytes(self, envelope_item_id: str, version: str = "signed") -> bytes:
        """The bytes the sandbox would serve for an item version (``original`` or ``signed``)."""
        resp = self._http().get(
            f"{self.root_url}/_sandbox/items/{envelope_item_id}/bytes",
            params={"version": version},
            timeout=60,
        )
        if resp.status_code != 200:
            raise SandboxError(f"item bytes for {envelope_item_id} failed with HTTP {resp.status_code}")
        return resp.content
