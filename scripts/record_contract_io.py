"""Sending, scrubbing and writing for ``scripts/record_contract.py`` (see that script's docstring).

:class:`Recorder` sends a :class:`~airflow_provider_docsign.hooks._call.Call` exactly as the hook does
(same headers, the raw key in ``Authorization``, ``params``, JSON body, or the streaming multipart body
the hook builds with ``multipart_body``), and turns a request and its answer into one recording: the
method, the OpenAPI path template, the path and request sent (multipart parts described by name and
size, never their bytes), the status, the headers the hook reads and the body, scrubbed of every
secret. :func:`org_rate_limit` narrows the organisation's API window in the instance's database for a
moment, and always puts the old value back.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from airflow_provider_docsign.hooks._call import Call
from airflow_provider_docsign.hooks._http import USER_AGENT
from airflow_provider_docsign.hooks._transfer import multipart_body
from airflow_provider_docsign.service.payloads import count_pdf_pages

#: A key in the service's format that no instance issues.
WRONG_KEY = "api_wrongwrongwrong00"
#: Response headers a recording keeps: what the hook reads (and nothing that could be a secret).
KEPT_HEADERS = (
    "content-type",
    "content-length",
    "content-disposition",
    "cache-control",
    "retry-after",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
)
#: Headers only worth their presence (their value changes on every call).
PRESENT_HEADERS = ("etag", "x-request-id")
#: Stable stand-ins for what must never be committed.
TOKEN = "redacted-token"  # noqa: S105 -- the stand-in, not a secret
SIGNING_URL = "https://documenso.example.com/sign/redacted-token"
OWNER_EMAIL = "owner@example.com"
OWNER_NAME = "Owner"
IP_ADDRESS = "192.0.2.1"
USER_AGENT_TEXT = "client/1.0"
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_SIGN_URL = re.compile(r"https?://[^\s\"']+/sign/[^\s\"'/?#]+")
_SECRET_KEYS = frozenset({"token", "secret", "password", "cookie", "apikey", "apiKey"})
#: Keys whose values are ids of objects (the replay maps the recorded ones to its own).
ID_KEYS = frozenset(
    {
        "envelopeId",
        "id",
        "ids",
        "recipientId",
        "fieldId",
        "envelopeItemId",
        "folderId",
        "parentId",
        "recipients",
    }
)


@dataclass
class Recording:
    """One request and its answer, as written to ``ops/<name>.json``."""

    operation: str
    family: str
    status: int
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The file name without ``.json``: ``<operation>.<family>.<status>``."""
        return f"{self.operation}.{self.family}.{self.status}"


class Scrubber:
    """Replaces e-mail addresses, tokens, signing URLs, the key and personal data by stable stand-ins.

    Addresses the script made up (``signerN@example.com``) stay; the API user's address becomes
    ``owner@example.com``; any other becomes ``personN@example.com`` (the same one every time).
    """

    def __init__(self, api_key: str) -> None:
        self.api_key = api_key
        self.owner_email: str | None = None
        self.owner_name: str | None = None
        self._emails: dict[str, str] = {}

    def learn_owner(self, envelope: Mapping[str, Any]) -> None:
        """Note the API user's e-mail and name from an envelope's ``user`` object."""
        user = envelope.get("user")
        if isinstance(user, Mapping):
            self.owner_email = str(user.get("email") or "") or None
            self.owner_name = str(user.get("name") or "") or None

    def _email(self, address: str) -> str:
        if self.owner_email and address.lower() == self.owner_email.lower():
            return OWNER_EMAIL
        if re.fullmatch(r"signer\d+@example\.com", address.lower()):
            return address
        if address not in self._emails:
            self._emails[address] = f"person{len(self._emails) + 1}@example.com"
        return self._emails[address]

    def text(self, value: str) -> str:
        """Scrub one string."""
        if self.api_key and self.api_key in value:
            value = value.replace(self.api_key, "api_redacted")
        value = _SIGN_URL.sub(SIGNING_URL, value)
        value = _EMAIL.sub(lambda m: self._email(m.group(0)), value)
        if self.owner_name and len(self.owner_name) > 2 and self.owner_name in value:
            value = value.replace(self.owner_name, OWNER_NAME)
        return value

    def json(self, value: Any, key: str = "") -> Any:
        """Scrub a decoded JSON value (recursively)."""
        if isinstance(value, Mapping):
            return {k: self.json(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json(v, key) for v in value]
        if not isinstance(value, str):
            return value
        if key in _SECRET_KEYS and value:
            return TOKEN
        if key == "signingUrl" and value:
            return SIGNING_URL
        if key == "ipAddress" and value:
            return IP_ADDRESS
        if key == "userAgent" and value:
            return USER_AGENT_TEXT
        return self.text(value)


def describe_parts(call: Call) -> list[dict[str, Any]]:
    """The multipart parts of ``call``: the JSON payload, and each file by name, size and page count."""
    parts: list[dict[str, Any]] = [{"name": "payload", "json": dict(call.payload or {})}]
    for source, name in zip(call.files, call.names, strict=True):
        path = Path(source)
        with path.open("rb") as fh:
            pages = count_pdf_pages(fh)
        parts.append(
            {
                "name": "files",
                "filename": name,
                "content_type": "application/pdf",
                "size": path.stat().st_size,
                "pages": pages,
            }
        )
    return parts


class Recorder:
    """Sends calls to the instance as the hook does and keeps the recordings of the ones asked for.

    :param base_url: The API base URL (ending in ``/api/v2``).
    :param api_key: The instance's API key (never written anywhere).
    :param prefix: The run's prefix (titles, external ids, folder name), kept in each recording: the
        replay names its objects the same way, so that a search for it finds them.
    :param max_requests: A bound on the number of requests one run may send.
    """

    def __init__(self, base_url: str, api_key: str, prefix: str, *, max_requests: int = 400) -> None:
        self.base_url = base_url.rstrip("/")
        self.prefix = prefix
        self.api_key = api_key
        self.max_requests = max_requests
        self.sent = 0
        self.scrubber = Scrubber(api_key)
        #: Recorded id (as text) -> what it is, e.g. ``"draft.envelope"``; the replay builds its own.
        self.refs: dict[str, str] = {}
        self.recordings: dict[str, Recording] = {}
        self._sessions: dict[str, requests.Session] = {}

    def session(self, auth: str) -> requests.Session:
        """A pooled session with the hook's headers and ``auth``: ``api-key``, ``wrong-key`` or ``no-key``."""
        if auth not in self._sessions:
            session = requests.Session()
            session.headers["User-Agent"] = USER_AGENT
            session.headers["Accept"] = "application/json"
            key = {"api-key": self.api_key, "wrong-key": WRONG_KEY}.get(auth)
            if key:
                session.headers["Authorization"] = key
            self._sessions[auth] = session
        return self._sessions[auth]

    def close(self) -> None:
        """Close every session."""
        for session in self._sessions.values():
            session.close()

    def ref(self, value: Any, what: str) -> Any:
        """Name an id the script made (``what`` like ``"draft.envelope"``); return it."""
        self.refs[str(value)] = what
        return value

    def send(self, call: Call, *, auth: str = "api-key", patient: bool = True) -> requests.Response:
        """Send ``call``; with ``patient``, an unplanned 429 is waited out (at most 3 minutes in all).

        Others may share the instance's per-IP window or narrow the organisation's for a moment (a system
        test does): such an answer is not the service's answer to this request, so it is never kept.
        """
        waited = 0.0
        while True:
            if self.sent >= self.max_requests:
                raise RuntimeError(f"more than {self.max_requests} requests: the run is not bounded")
            self.sent += 1
            kwargs: dict[str, Any] = {"params": call.params, "timeout": (10, 120)}
            kwargs["allow_redirects"] = call.kind == "read"
            closer = None
            if call.payload is not None:
                data, headers, closer = multipart_body(call.payload, call.files, call.names)()
                kwargs["data"], kwargs["headers"] = data, headers
            elif call.json is not None:
                kwargs["json"] = call.json
            try:
                response = self.session(auth).request(call.method, self.base_url + call.path, **kwargs)
                response.content  # noqa: B018 -- read the whole body now
            finally:
                if closer is not None:
                    closer()
            if response.status_code != 429 or not patient:
                return response
            if waited >= 180:
                raise RuntimeError(f"{call.method} {call.path}: still HTTP 429 after {waited:.0f} s")
            wait = min(65.0, max(1.0, float(response.headers.get("retry-after") or 5)))
            print(f"  (rate-limited on {call.method} {call.path}: waiting {wait:.0f} s)", flush=True)
            time.sleep(wait)
            waited += wait

    def _refs_in(self, value: Any, key: str = "", out: dict[str, str] | None = None) -> dict[str, str]:
        out = {} if out is None else out
        if isinstance(value, Mapping):
            for k, v in value.items():
                self._refs_in(v, str(k), out)
        elif isinstance(value, list):
            for v in value:
                self._refs_in(v, key, out)
        elif key in ID_KEYS and not isinstance(value, bool) and str(value) in self.refs:
            out[str(value)] = self.refs[str(value)]
        return out

    def record(
        self,
        operation: str,
        template: str,
        family: str,
        call: Call,
        *,
        auth: str = "api-key",
        patient: bool = True,
        given: tuple[str, ...] = (),
    ) -> requests.Response:
        """Send ``call`` and keep the recording ``<operation>.<family>.<status>``.

        :param given: States that must exist for the answer to be the same although the request names
            none of their ids (a search that finds them).
        """
        response = self.send(call, auth=auth, patient=patient)
        request: dict[str, Any] = {"auth": auth}
        if call.params:
            request["query"] = {k: v for k, v in call.params.items()}
        if call.payload is not None:
            request["multipart"] = describe_parts(call)
        elif call.json is not None:
            request["json"] = call.json
        refs: dict[str, str] = {}
        for segment in call.path.split("/"):
            if segment in self.refs:
                refs[segment] = self.refs[segment]
        self._refs_in(request.get("query"), out=refs)
        self._refs_in(request.get("json"), out=refs)
        for part in request.get("multipart", []):
            self._refs_in(part.get("json"), out=refs)
        headers = {k: response.headers[k] for k in KEPT_HEADERS if k in response.headers}
        for name in PRESENT_HEADERS:
            if name in response.headers:
                headers[name] = "<present>"
        content_type = response.headers.get("content-type", "")
        body: Any
        if "json" in content_type:
            body = self.scrubber.json(response.json())
        elif response.content.startswith(b"%PDF-"):
            body = {"pdf": True, "size": len(response.content)}
        else:
            body = {"text": self.scrubber.text(response.text[:500])}
        data = {
            "operation": operation,
            "family": family,
            "method": call.method,
            "path": template,
            "url_path": call.path,
            "refs": refs,
            "given": list(given),
            "run": self.prefix,
            "request": self.scrubber.json(request),
            "status": response.status_code,
            "headers": headers,
            "body": body,
        }
        recording = Recording(operation, family, response.status_code, data)
        self.recordings[recording.name] = recording
        print(f"  {recording.name:<58} {call.method} {call.path}", flush=True)
        return response

    def write(self, out_dir: Path, keep: tuple[str, ...] = ()) -> list[Path]:
        """Replace the ``*.json`` recordings in ``out_dir`` with this run's; return the files written.

        :param keep: Families this run did not record (``rate-limited`` without a database): their
            files stay as they are.
        """
        out_dir.mkdir(parents=True, exist_ok=True)
        for old in out_dir.glob("*.json"):
            if old.stem.split(".")[1] not in keep:
                old.unlink()
        written = []
        for name, recording in sorted(self.recordings.items()):
            path = out_dir / f"{name}.json"
            text = json.dumps(recording.data, indent=2, sort_keys=True, ensure_ascii=False)
            if self.api_key in text:  # the last line of defence
                raise RuntimeError(f"{name}: the API key would be written")
            path.write_text(text + "\n", encoding="utf-8")
            written.append(path)
        return written


@contextlib.contextmanager
def org_rate_limit(
    database_url: str, team_id: int, window: str = "10s", limit: int = 1, wait: float = 90
) -> Iterator[bool]:
    """Set the team's organisation ``apiRateLimits`` to ``[{window, max: limit}]``; always restore it.

    The instance reads the claim with the API token on every request, so the change applies to the next
    call. Someone else may be narrowing the same window (a system test): while the column is not ``[]``
    the script waits (at most ``wait`` seconds) and yields ``False`` if it stays so, touching nothing.
    The old value is put back in ``finally`` (also on Ctrl-C or SIGTERM), and only if the column still
    holds the script's own value, so a change made meanwhile by someone else is never undone.
    """
    import psycopg2  # only needed for this step

    conn = psycopg2.connect(database_url, connect_timeout=10)
    conn.autocommit = True
    previous_handler = signal.getsignal(signal.SIGTERM)
    mine = json.dumps([{"window": window, "max": limit}])

    def _terminate(signum: int, frame: Any) -> None:
        raise SystemExit(143)

    try:
        with conn.cursor() as cur:
            deadline = time.monotonic() + wait
            while True:
                cur.execute(
                    'SELECT oc.id, oc."apiRateLimits" FROM "Team" t '
                    'JOIN "Organisation" o ON o.id = t."organisationId" '
                    'JOIN "OrganisationClaim" oc ON oc.id = o."organisationClaimId" WHERE t.id = %s',
                    (team_id,),
                )
                row = cur.fetchone()
                if row is None:
                    raise RuntimeError(f"team {team_id} has no organisation claim")
                if not row[1] or time.monotonic() > deadline:
                    break
                time.sleep(1)
            if row[1]:
                print(f"  (the organisation's apiRateLimits stay {row[1]!r}: no 429 recorded)", flush=True)
                yield False
                return
            claim_id, before = row[0], json.dumps(row[1] if row[1] is not None else [])
            signal.signal(signal.SIGTERM, _terminate)
            try:
                cur.execute(
                    'UPDATE "OrganisationClaim" SET "apiRateLimits" = %s::jsonb WHERE id = %s',
                    (mine, claim_id),
                )
                yield True
            finally:
                cur.execute(
                    'UPDATE "OrganisationClaim" SET "apiRateLimits" = %s::jsonb '
                    'WHERE id = %s AND "apiRateLimits" = %s::jsonb',
                    (before, claim_id, mine),
                )
                signal.signal(signal.SIGTERM, previous_handler)
    finally:
        conn.close()
