"""Every recorded answer of the real service to the hook's operations, replayed against the sandbox.

``data/documenso-2.17/recorded/ops/`` holds one recording per operation and outcome, made by
``scripts/record_contract.py`` against a real Documenso v2.17 (see ``data/README.md``). For each one, the
sandbox is brought to the same state (the recording's ``refs`` say which recorded id is which object:
``draft.envelope``, ``pending.recipient``, ``folder.id``...), the same request is sent with the
sandbox's ids, and the answer is compared with the recorded one:

* the status and the content type;
* the JSON shape: the same keys and JSON types at every level (:func:`contract_shapes.shape_diff`), with
  one allowance: inside the ``issues`` list of a validation error (zod's own detail, which the hook only
  reads ``path`` and ``message`` of) extra or missing keys are not counted;
* the fields the hook and its models read (:data:`READ_FIELDS`): the value where the request decides it
  (a status, a role, a page, an error's ``data.code``; ids through the same mapping), the JSON type
  (and so null or not) where it is the service's own (timestamps, new ids, messages);
* for a PDF, the content type, that it is a PDF, and the kind of file name; for a 429, ``Retry-After``
  and the ``X-RateLimit-*`` headers.

Left out on purpose, as values: what the sandbox cannot share with a real instance. Its signing links
point at itself (it has no web app of its own, ``signingUrl`` is compared as a string), its tokens,
ids, timestamps and PDFs are its own (it seals with its own certificate: a download is compared as a
PDF, not byte for byte). The ``rate-limited`` recordings are replayed on a second sandbox that enforces
a small window: the states are built, the window is used up, then the recorded requests are sent.

A difference the sandbox has on purpose, or that is known and not yet fixed, is listed once in
:data:`KNOWN_DIFFERENCES` with its reason; any other difference fails. A listed difference that is no
longer seen fails too, so the table stays true. The last tests check coverage: every operation the hook
calls (found as ``tests/unit/test_api_coverage.py`` finds them) has a recorded success, and the error
families it handles.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from contract_shapes import json_type, shape_diff
from helpers import SPEC_DIR

from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._call import Call
from airflow_provider_docsign.hooks._http import USER_AGENT
from airflow_provider_docsign.hooks._transfer import multipart_body
from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.expiry import DEFAULT, merge_meta
from airflow_provider_docsign.service.payloads import validate_create_payload

pytestmark = pytest.mark.integration

OPS_DIR = SPEC_DIR / "recorded" / "ops"
RECORDINGS = sorted(p.stem for p in OPS_DIR.glob("*.json"))
WRONG_KEY = "api_wrongwrongwrong00"
#: Operations whose success makes something the replay then deletes.
CREATING = frozenset({"create_envelope", "duplicate_envelope", "use_template", "create_folder"})
#: Keys whose values are ids (mapped from the recording's to the sandbox's).
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
#: The state the recorder gave every envelope: one signer with one SIGNATURE field on one PDF.
SIGNER = {"email": "signer1@example.com", "name": "Signer One", "role": "SIGNER"}
SIGNATURE = {"type": "SIGNATURE", "page": 1, "positionX": 10, "positionY": 80, "width": 30, "height": 8}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((OPS_DIR / f"{name}.json").read_text(encoding="utf-8"))
    return data


# -- the known differences -------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """A difference between the sandbox and the real service that is known, with its reason.

    :param recordings: ``fnmatch`` patterns of the recordings it concerns.
    :param problem: A regular expression a problem line must match (``re.search``).
    :param reason: Why the sandbox differs.
    :param to_fix_in_sandbox: Our code depends on the real behaviour: the sandbox's owner decides.
    """

    recordings: tuple[str, ...]
    problem: str
    reason: str
    to_fix_in_sandbox: bool = False


_ORG_WINDOW = (
    "The sandbox's limiter is the instance's per-IP one (1,000 a minute), which answers before routing "
    "with {error}; these recordings hit the organisation's window (OrganisationClaim.apiRateLimits), which "
    "the service checks with the API token inside the route. "
)
KNOWN_DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        ("audit_log.success.200",),
        r"^shape \$\.data\[\d+\]\.(email|ipAddress|name): type string, recorded null$",
        "The service logs an action made with an API token by userId only (name, e-mail and IP address "
        "null); the sandbox writes the API user's name and e-mail and the client's address. The hook and the "
        "operators read an entry's id, type and createdAt only.",
    ),
    Difference(
        ("create_attachment.bad-payload.400", "update_attachment.bad-payload.400"),
        r"^\$\.issues: \d+ entries, recorded \d+$",
        "For a link that is not a URL at all the service reports two issues on data.data (not a URL, then "
        "its own http/https rule); the sandbox reports one issue per field. Status, data.code and each "
        "issue's path and message agree; the hook only joins the messages into its error text.",
    ),
    Difference(
        ("delete_item.bad-payload.500", "delete_item.unknown-id.500"),
        r"^(status 404, recorded 500|shape \$\.data: extra keys \['appError'\]|"
        r"field \$\.data\.code: 'NOT_FOUND', recorded 'INTERNAL_SERVER_ERROR')$",
        "The service crashes on an item id it does not have (HTTP 500, Prisma's 'record to delete does not "
        "exist'); the sandbox answers 404 NOT_FOUND. The hook raises DocsignServerError for the one and "
        "DocsignNotFoundError for the other; DeleteEnvelopeItemOperator reads the envelope first and only "
        "sends ids it lists, and catches neither, so a task fails either way.",
    ),
    Difference(
        (
            "download_certificate.bad-payload.400",
            "duplicate_envelope.bad-payload.400",
            "find_attachments.bad-payload.400",
        ),
        r"^(status 404, recorded 400|field \$\.data\.code: 'NOT_FOUND', recorded 'INVALID_BODY'|"
        r"shape \$: missing keys \['code'\]|field \$\.code: None, recorded 'INVALID_BODY')$",
        "A malformed envelope id (not envelope_ and 2+ characters) is refused by the service with 400 "
        "INVALID_BODY on every route that takes one; the sandbox checks the format on get but answers 404 on "
        "duplicate, the attachment list and the certificate download. The hook's id check lets such an id "
        "through (it only refuses empty ids, spaces and '/'), so a typo gives DocsignInvalidRequestError "
        "on the service and DocsignNotFoundError on the sandbox; no operator branches on it for these "
        "routes.",
    ),
    Difference(
        ("*.rate-limited.429",),
        r"^header x-ratelimit-(limit|remaining|reset) '[^,]*', recorded '[^']*, [^']*'$",
        _ORG_WINDOW
        + "A refusal by the organisation's window carries each X-RateLimit-* header twice, joined "
        "with ', ' (the per-IP window's value, then the organisation's: '1000, 1'). parse_rate_limit "
        "(hooks/_headers.py) keeps the tightest of the joined windows "
        "(tests/unit/test_trigger_pacing.py), so the pacing sees the window that refused the call either "
        "way; the sandbox has no organisation window to send a second value for.",
    ),
    Difference(
        ("*.rate-limited.429",),
        r"^(shape \$: (missing|extra) keys \[.*\]|field \$\.message: null, recorded string)$",
        _ORG_WINDOW + "Its 429 has the tRPC error body {message, code, data.code TOO_MANY_REQUESTS}; the "
        "sandbox's has the per-IP limiter's {error}. The hook reads message or error, and the status and "
        "Retry-After: both give DocsignRateLimitError (error_code TOO_MANY_REQUESTS only on the service).",
    ),
    Difference(
        ("download_item.rate-limited.500",),
        r"^(status 429, recorded 500|header retry-after '\d+', recorded none|"
        r"shape \$: missing keys \['code'\]|field \$\.code: None, recorded 'TOO_MANY_REQUESTS')$",
        _ORG_WINDOW + "The download routes look the token up (and check the window) themselves and turn its "
        "TOO_MANY_REQUESTS into HTTP 500 {error: 'Something went wrong', code: 'TOO_MANY_REQUESTS'} without "
        "Retry-After; the sandbox answers 429 with Retry-After. The hook reads a 500 with that code as "
        "DocsignRateLimitError and retries it like a 429 (hooks/_http.py api_error; the sandbox gives the "
        "real answer on request: inject_fault(status=500, code='TOO_MANY_REQUESTS'), "
        "tests/integration/test_hook_faults.py).",
    ),
)


def _listed(name: str, problem: str) -> Difference | None:
    for diff in KNOWN_DIFFERENCES:
        matches = any(fnmatch.fnmatchcase(name, pattern) for pattern in diff.recordings)
        if matches and re.search(diff.problem, problem):
            return diff
    return None


# -- the fields the hook reads ----------------------------------------------------------------------

#: ``value``: equal (ids through the mapping); ``type``: the same JSON type (so null or not).
ITEM = {"id": "type", "title": "type", "order": "value", "envelopeId": "value", "documentDataId": "type"}
FIELD = {
    "id": "type",
    "recipientId": "value",
    "envelopeItemId": "value",
    "type": "value",
    "page": "value",
    "positionX": "value",
    "positionY": "value",
    "width": "value",
    "height": "value",
    "envelopeId": "value",
    "inserted": "value",
    "customText": "value",
    "fieldMeta": "type",
}
RECIPIENT = {
    "id": "type",
    "email": "value",
    "name": "value",
    "role": "value",
    "signingStatus": "value",
    "rejectionReason": "value",
    "envelopeId": "value",
    "readStatus": "value",
    "sendStatus": "value",
    "signingOrder": "value",
    "signedAt": "type",
    "expiresAt": "type",
    "expirationNotifiedAt": "type",
    "token": "type",
    "fields": [FIELD],
}
SUMMARY = {
    "id": "value",
    "status": "value",
    "title": "type",
    "externalId": "type",
    "folderId": "value",
    "type": "value",
    "createdAt": "type",
    "updatedAt": "type",
    "completedAt": "type",
    "deletedAt": "type",
    "secondaryId": "type",
    "recipients": [RECIPIENT],
}
ENVELOPE = {**SUMMARY, "envelopeItems": [ITEM], "fields": [FIELD], "documentMeta": "type"}
FOLDER = {
    "id": "type",
    "name": "type",
    "parentId": "value",
    "type": "value",
    "visibility": "value",
    "pinned": "value",
}
ATTACHMENT = {"id": "type", "label": "value", "data": "value", "type": "value"}
SENT = {
    "id": "type",
    "recipients": [{"id": "type", "email": "value", "name": "value", "role": "value", "signingUrl": "type"}],
}
AUDIT = {"id": "type", "type": "value", "createdAt": "type"}
NEW_ID = {"id": "type"}
ERROR = {"data": {"code": "value"}, "message": "type", "issues": [{"path": "type", "message": "type"}]}
DOWNLOAD_ERROR = {"error": "type", "code": "value"}
READ_FIELDS: dict[str, Any] = {
    "get_envelope": ENVELOPE,
    "get_many": {"data": [ENVELOPE]},
    "find_envelopes": {"data": [SUMMARY], "totalPages": "type"},
    "update_envelope": SUMMARY,
    "create_envelope": NEW_ID,
    "duplicate_envelope": NEW_ID,
    "use_template": {
        **NEW_ID,
        "recipients": [
            {"id": "type", "email": "value", "name": "value", "role": "value", "signingOrder": "value"}
        ],
    },
    "distribute_envelope": SENT,
    "redistribute_envelope": SENT,
    "audit_log": {"data": [AUDIT], "totalPages": "type"},
    "find_attachments": {"data": [ATTACHMENT]},
    "create_attachment": NEW_ID,
    "create_items": {"data": [ITEM]},
    "update_items": {"data": [{"id": "value", "title": "value", "order": "value"}]},
    "get_recipient": RECIPIENT,
    "create_recipients": {"data": [RECIPIENT]},
    "update_recipients": {"data": [RECIPIENT]},
    "reject_recipient": RECIPIENT,
    "get_field": FIELD,
    "create_fields": {"data": [FIELD]},
    "update_fields": {"data": [FIELD]},
    "list_folders": {"data": [FOLDER], "totalPages": "type"},
    "create_folder": FOLDER,
    "update_folder": FOLDER,
}


# -- replaying --------------------------------------------------------------------------------------


class Replay:
    """One sandbox, the states recordings start from, and the mapping of recorded ids to its own."""

    def __init__(self, server: SandboxServer, tmp: Path, run: str) -> None:
        self.server = server
        self.tmp = tmp
        self.run = run
        self.pdf = write_sample_pdf(tmp / "contract.pdf", title="contract")
        self.states: dict[str, dict[str, Any]] = {}
        self._sessions: dict[str, requests.Session] = {}
        #: What the replay made, deleted by :meth:`close` (the session sandbox is shared).
        self.envelopes: list[str] = []
        self.folders: list[str] = []

    def session(self, auth: str) -> requests.Session:
        if auth not in self._sessions:
            session = requests.Session()
            session.headers.update({"User-Agent": USER_AGENT, "Accept": "application/json"})
            key = {"api-key": self.server.api_key, "wrong-key": WRONG_KEY}.get(auth)
            if key:
                session.headers["Authorization"] = key
            self._sessions[auth] = session
        return self._sessions[auth]

    def made(self, operation: str, response: requests.Response) -> None:
        """Note what a replayed request created (a success of a create, duplicate or use)."""
        if response.status_code != 200 or operation not in CREATING:
            return
        (self.folders if operation == "create_folder" else self.envelopes).append(response.json()["id"])

    def close(self) -> None:
        """Delete what this replay made (envelopes first, then folders, the newest first)."""
        if self.server.rate_limit is None:
            for envelope_id in self.envelopes:
                self.send(ep.delete_envelope(envelope_id))
            for folder_id in reversed(self.folders):
                self.send(ep.delete_folder(folder_id))
        for session in self._sessions.values():
            session.close()

    def send(self, call: Call, auth: str = "api-key") -> requests.Response:
        """Send ``call`` as the hook does (its headers, its multipart encoder)."""
        kwargs: dict[str, Any] = {
            "params": call.params,
            "timeout": 60,
            "allow_redirects": call.kind == "read",
        }
        closer = None
        if call.payload is not None:
            data, headers, closer = multipart_body(call.payload, call.files, call.names)()
            kwargs["data"], kwargs["headers"] = data, headers
        elif call.json is not None:
            kwargs["json"] = call.json
        try:
            response = self.session(auth).request(call.method, self.server.base_url + call.path, **kwargs)
            response.content  # noqa: B018
        finally:
            if closer is not None:
                closer()
        return response

    def ok(self, call: Call) -> Any:
        response = self.send(call)
        assert response.status_code == 200, f"{call.method} {call.path}: {response.text[:300]}"
        return response.json()

    # -- states --

    def payload(self, name: str, **kw: Any) -> dict[str, Any]:
        kw.setdefault("recipients", [{**SIGNER, "fields": [dict(SIGNATURE)]}])
        if "folder_id" not in kw:
            kw["folder_id"] = self.state("folder")["id"]
        payload, _ = validate_create_payload(
            title=f"{self.run} {name}",
            files=[self.pdf],
            external_id=f"{self.run}-{name}",
            meta=merge_meta({"subject": "Please sign"}, DEFAULT, DEFAULT),
            **kw,
        )
        return payload

    def _folder(self, name: str, parent: str | None, folder_type: str) -> dict[str, Any]:
        folder_id = self.ok(ep.create_folder(name, parent, folder_type))["id"]
        self.folders.append(folder_id)
        return {"id": folder_id}

    def _envelope(self, payload: dict[str, Any]) -> dict[str, Any]:
        created = self.ok(ep.create_envelope(payload, [self.pdf], [self.pdf.name]))
        self.envelopes.append(created["id"])
        body = self.ok(ep.get_envelope(created["id"]))
        ids = {"envelope": body["id"], "item": body["envelopeItems"][0]["id"]}
        if body["recipients"]:
            ids["recipient"] = body["recipients"][0]["id"]
        if body["fields"]:
            ids["field"] = body["fields"][0]["id"]
        return ids

    def _build(self, kind: str) -> dict[str, Any]:
        if kind == "folder":
            return self._folder(self.run, None, "DOCUMENT")
        if kind == "subfolder":
            return self._folder(f"{self.run} sub", self.state("folder")["id"], "DOCUMENT")
        if kind == "draft":
            return self._envelope(self.payload("draft"))
        if kind == "attached":
            ids = self._envelope(self.payload("attached"))
            terms = ep.create_attachment(ids["envelope"], "Terms", "https://example.com/terms")
            return {**ids, "attachment": self.ok(terms)["id"]}
        if kind == "nofields":
            payload = self.payload("nofields")
            del payload["recipients"][0]["fields"]
            return self._envelope(payload)
        if kind == "template":  # in a template folder, as recorded
            folder = self._folder(f"{self.run} templates", None, "TEMPLATE")["id"]
            return self._envelope(self.payload("template", folder_id=folder, envelope_type="TEMPLATE"))
        if kind in ("pending", "rejected"):
            ids = self._envelope(self.payload(kind))
            self.ok(ep.distribute_envelope(ids["envelope"], None))
            if kind == "rejected":
                self.ok(ep.reject_recipient(ids["recipient"], ids["envelope"], "Not my contract"))
                self.server.wait_status(ids["envelope"], "REJECTED", timeout=30)
            return ids
        raise AssertionError(f"no state {kind!r}")

    def state(self, kind: str) -> dict[str, Any]:
        if kind not in self.states:
            self.states[kind] = self._build(kind)
        return self.states[kind]

    def mapping(self, refs: dict[str, str], given: list[str]) -> dict[str, Any]:
        """Build the states; return recorded id (as text) -> the sandbox's id of the same object."""
        for kind in given:
            self.state(kind)
        out = {}
        for recorded, what in refs.items():
            kind, role = what.split(".")
            out[recorded] = self.state(kind)[role]
        return out

    def request(self, rec: dict[str, Any], ids: dict[str, Any]) -> tuple[Call, str]:
        """The recorded request with the sandbox's ids; and its auth."""
        path = "/".join(str(ids.get(seg, seg)) for seg in rec["url_path"].split("/"))
        req = rec["request"]
        payload = files = names = None
        for part in req.get("multipart", []):
            if part["name"] == "payload":
                payload = _mapped(part["json"], ids)
            else:
                pdf = write_sample_pdf(
                    self.tmp / "parts" / part["filename"], pages=part["pages"], title="part"
                )
                files, names = [*(files or []), pdf], [*(names or []), part["filename"]]
        call = Call(
            rec["method"],
            path,
            "read" if rec["method"] == "GET" else "write",
            params=_mapped(req.get("query"), ids),
            json=_mapped(req.get("json"), ids),
            payload=payload,
            files=tuple(files or ()),
            names=tuple(names or ()),
        )
        return call, req["auth"]


def _mapped(value: Any, ids: dict[str, Any], key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mapped(v, ids, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_mapped(v, ids, key) for v in value]
    if key in ID_KEYS and not isinstance(value, bool) and str(value) in ids:
        return ids[str(value)]
    return value


# -- comparing ----------------------------------------------------------------------------------------


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _read_fields(spec: Any, recorded: Any, actual: Any, ids: dict[str, Any], path: str) -> list[str]:
    """Compare the fields ``spec`` names (see :data:`READ_FIELDS`); the shape comparison covers the rest."""
    if isinstance(spec, list):
        if not isinstance(recorded, list) or not isinstance(actual, list):
            return []  # a type difference is the shape comparison's
        if len(recorded) != len(actual):
            return [f"{path}: {len(actual)} entries, recorded {len(recorded)}"]
        out = []
        for i, (r, a) in enumerate(zip(recorded, actual, strict=True)):
            out += _read_fields(spec[0], r, a, ids, f"{path}[{i}]")
        return out
    if isinstance(spec, dict):
        if not isinstance(recorded, dict) or not isinstance(actual, dict):
            return []
        out = []
        for key, sub in spec.items():
            if key in recorded or key in actual:
                out += _read_fields(sub, recorded.get(key), actual.get(key), ids, f"{path}.{key}")
        return out
    key = path.rsplit(".", 1)[-1]
    if spec == "value" and key in ID_KEYS and _is_id(recorded):
        if str(recorded) not in ids:  # an object the request made: its id is the sandbox's own
            spec = "type"
        else:
            recorded_value, expected = recorded, ids[str(recorded)]
            if expected == actual:
                return []
            return [f"field {path}: {actual!r}, recorded {recorded_value!r} (here {expected!r})"]
    if spec == "type":
        if json_type(recorded) != json_type(actual):
            return [f"field {path}: {json_type(actual)}, recorded {json_type(recorded)}"]
        return []
    return [] if recorded == actual else [f"field {path}: {actual!r}, recorded {recorded!r}"]


def _shape(recorded: Any, actual: Any) -> list[str]:
    problems = shape_diff(recorded, actual)
    # zod's issue objects carry detail by issue kind; the hook reads only ``path`` and ``message``.
    return [p for p in problems if not re.match(r"\$\.issues\[\d+\](\.\w+)*: (missing|extra) keys", p)]


_FILE_KIND = re.compile(r"(_audit-log|_certificate|_signed|_pending)?\.pdf")


def compare(rec: dict[str, Any], response: requests.Response, ids: dict[str, Any]) -> list[str]:
    """Every difference between the recorded answer and the sandbox's."""
    problems = []
    if response.status_code != rec["status"]:
        problems.append(f"status {response.status_code}, recorded {rec['status']}")
    ctype = response.headers.get("content-type", "").split(";")[0]
    if ctype != rec["headers"].get("content-type", "").split(";")[0]:
        problems.append(f"content-type {ctype!r}, recorded {rec['headers'].get('content-type')!r}")
    for name in ("retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"):
        recorded = rec["headers"].get(name)
        if recorded is not None and name not in response.headers:
            problems.append(f"header {name} missing, recorded {recorded!r}")
        elif recorded is not None and "," in recorded and "," not in response.headers[name]:
            problems.append(f"header {name} {response.headers[name]!r}, recorded {recorded!r}")
        elif recorded is None and name == "retry-after" and name in response.headers:
            problems.append(f"header {name} {response.headers[name]!r}, recorded none")
    for name in ("etag", "x-request-id"):  # recorded by their presence only (the hook logs them)
        if name in rec["headers"] and name not in response.headers:
            problems.append(f"header {name} missing")
    body = rec["body"]
    if body.get("pdf"):
        if not response.content.startswith(b"%PDF-"):
            problems.append("not a PDF, recorded a PDF")
        for name in ("content-disposition", "content-length"):
            if name in rec["headers"] and name not in response.headers:
                problems.append(f"header {name} missing")
        r_kind = _FILE_KIND.search(rec["headers"].get("content-disposition", ""))
        a_kind = _FILE_KIND.search(response.headers.get("content-disposition", ""))
        if (r_kind and r_kind.group(1)) != (a_kind and a_kind.group(1)):
            problems.append(
                f"file name kind {a_kind and a_kind.group(0)!r}, recorded {r_kind and r_kind.group(0)!r}"
            )
        return problems
    try:
        actual = response.json()
    except ValueError:
        return [*problems, f"body is not JSON: {response.text[:100]!r}"]
    problems += [f"shape {p}" for p in _shape(body, actual)]
    if rec["status"] >= 400:
        spec = DOWNLOAD_ERROR if "error" in body else ERROR
    else:
        spec = READ_FIELDS.get(rec["operation"], {})
    problems += _read_fields(spec, body, actual, ids, "$")
    return problems


# -- replaying every recording ---------------------------------------------------------------------


def replay(
    names: list[str], server: SandboxServer, tmp: Path, *, exhaust: bool = False
) -> dict[str, list[str]]:
    """Replay ``names`` on ``server``; with ``exhaust``, use its rate window up first (after the setup)."""
    players = []
    for name in names:
        rec = load(name)
        player = Replay(server, tmp / name, rec["run"])
        ids = player.mapping(rec["refs"], rec["given"])
        players.append((name, rec, player, ids))
    if exhaust:
        _exhaust(players[0][2])
    out = {}
    for name, rec, player, ids in players:
        call, auth = player.request(rec, ids)
        response = player.send(call, auth)
        out[name] = compare(rec, response, ids)
        player.made(rec["operation"], response)
        player.close()
    return out


def _exhaust(player: Replay) -> None:
    """Send cheap reads until the sandbox's window is used up (bounded)."""
    for _ in range(RATE_LIMIT + 5):
        response = player.send(ep.list_folders(page=1, parent_id=None, folder_type=None))
        if response.status_code == 429 or int(response.headers["x-ratelimit-remaining"]) <= 1:
            return
    raise AssertionError("the sandbox's rate window was not used up")


#: The replay of the ``rate-limited`` recordings runs on its own sandbox that enforces a window of this many
#: requests (so long that it never rolls over during the test): the states are built, the window is used
#: up, then the recorded requests are sent.
RATE_LIMIT = 40
LIMITED = [n for n in RECORDINGS if ".rate-limited." in n]


@pytest.fixture(scope="module")
def limited_results(tmp_path_factory: pytest.TempPathFactory, api_key: str) -> dict[str, list[str]]:
    tmp = tmp_path_factory.mktemp("limited")
    with SandboxServer(tmp / "data", api_key=api_key, rate_limit=RATE_LIMIT, rate_window=10**7) as server:
        return replay(LIMITED, server, tmp, exhaust=True)


@pytest.fixture(scope="module")
def results(
    sandbox_session: SandboxServer,
    tmp_path_factory: pytest.TempPathFactory,
    limited_results: dict[str, list[str]],
) -> dict[str, list[str]]:
    """``{recording: [difference, ...]}`` for every recording (replayed once per module)."""
    tmp = tmp_path_factory.mktemp("replay")
    sandbox_session.clear_faults()
    out = {n: replay([n], sandbox_session, tmp)[n] for n in RECORDINGS if n not in limited_results}
    return {**out, **limited_results}


@pytest.mark.parametrize("name", RECORDINGS)
def test_the_sandbox_answers_as_the_service_did(name: str, results: dict[str, list[str]]) -> None:
    unlisted = [p for p in results[name] if _listed(name, p) is None]
    assert unlisted == [], f"{name}: differences not in KNOWN_DIFFERENCES"


def test_every_known_difference_is_still_seen(results: dict[str, list[str]]) -> None:
    seen = {d for name, problems in results.items() for p in problems if (d := _listed(name, p))}
    stale = [d for d in KNOWN_DIFFERENCES if d not in seen]
    assert stale == [], "listed differences the sandbox no longer has: remove them"


def test_the_comparison_catches_a_changed_answer() -> None:
    rec = load("get_envelope.success.200")
    body = json.loads(json.dumps(rec["body"]))
    body["status"] = "PENDING"
    body["recipients"][0].pop("signingStatus")
    body["envelopeItems"][0]["order"] = "1"

    class Fake(requests.Response):
        def __init__(self) -> None:
            super().__init__()
            self.status_code = 200
            self.headers["content-type"] = "application/json"
            self._content = json.dumps(body).encode()

    problems = compare(rec, Fake(), {})
    assert "field $.status: 'PENDING', recorded 'DRAFT'" in problems
    assert all(_listed("get_envelope.success.200", p) is None for p in problems)
    assert "shape $.recipients[0]: missing keys ['signingStatus']" in problems
    assert "shape $.envelopeItems[0].order: type string, recorded number" in problems


# -- coverage ---------------------------------------------------------------------------------------


def _coverage_module() -> Any:
    """``tests/unit/test_api_coverage.py``: the enumeration of the hook's operations, used as is."""
    path = Path(__file__).resolve().parents[1] / "unit" / "test_api_coverage.py"
    spec = importlib.util.spec_from_file_location("_docsign_api_coverage", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The hook's operations: ``{builder name: (method, path template)}``, found as test_api_coverage finds them.
OPERATIONS = {name: op for op, name in _coverage_module().covered_operations().items()}
#: One request of each kind the hook sends, for the 401s: how the key travels does not differ, but the
#: route family does (tRPC routes and the download routes answer errors in different shapes).
REQUEST_FAMILIES = {
    "JSON read": {"get_envelope", "find_envelopes", "list_folders"},
    "JSON write": {"update_envelope"},
    "multipart upload": {"create_envelope"},
    "download": {"download_item", "download_audit_log"},
}
#: Why there is no 403 recording.
NO_403 = (
    "Documenso v2.17 answers 403 on none of the routes the hook calls: its OpenAPI document lists 403 for "
    "every operation, but the only FORBIDDEN the server raises (AppErrorCode.FORBIDDEN, at v2.17.0) is the "
    "licence check of CSC signing (packages/lib/server-only/license/assert-licensed-for.ts), which none of "
    "these routes reach. The hook maps a 403 to DocsignAuthError all the same."
)


def _recorded(operation: str) -> list[dict[str, Any]]:
    return [load(n) for n in RECORDINGS if n.split(".")[0] == operation]


def test_the_recordings_name_the_hook_s_operations_rightly() -> None:
    assert len(OPERATIONS) == 35
    for name in RECORDINGS:
        rec = load(name)
        assert name == f"{rec['operation']}.{rec['family']}.{rec['status']}"
        assert (rec["method"], rec["path"]) == OPERATIONS[rec["operation"]], name


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_each_operation_has_a_recorded_success_and_its_error_families(operation: str) -> None:
    recs = _recorded(operation)
    families = {r["family"] for r in recs}
    assert any(r["family"] == "success" and r["status"] == 200 for r in recs), "no recorded success"
    assert "unknown-id" in families, "no answer to an id the service does not have"
    assert families & {"bad-payload", "bad-state"}, "no answer to a request the service refuses"


def test_each_kind_of_request_has_a_recorded_401() -> None:
    for kind, operations in REQUEST_FAMILIES.items():
        found = [load(n) for n in RECORDINGS if n.split(".")[0] in operations and ".wrong-key." in n]
        assert [r["status"] for r in found if r["status"] == 401], f"no 401 for a {kind}"


def test_a_429_is_recorded_with_its_headers_and_no_403_exists() -> None:
    limited = [load(n) for n in LIMITED]
    found = [r for r in limited if r["status"] == 429]
    assert found, "no recorded 429"
    for rec in found:
        assert float(rec["headers"]["retry-after"]) >= 1
        assert {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} <= set(rec["headers"])
    assert not [n for n in RECORDINGS if n.endswith(".403")], NO_403


def test_the_recordings_hold_no_secret() -> None:
    text = "\n".join((OPS_DIR / f"{n}.json").read_text(encoding="utf-8") for n in RECORDINGS)
    assert not re.search(r"api_[0-9a-z]{16}", text), "an API key"
    assert not re.search(
        r'"(token|signingUrl)": "(?!redacted-token|https://documenso\.example\.com/sign/redacted-token)', text
    )
    assert set(re.findall(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", text)) <= {
        "owner@example.com",
        "signer1@example.com",
        "signer2@example.com",
        "signer3@example.com",
    }
