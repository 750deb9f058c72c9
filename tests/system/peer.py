"""What the system tests do as a recipient: sign through the service's own signing path, no browser.

The public API cannot sign (a person signs in the web app). The web app's own tRPC routes can, with
the recipient's token that ``GET /envelope/{id}`` returns to the sender's API key:

1. ``POST /api/trpc/envelope.field.sign`` ``{"json": {"token", "fieldId", "fieldValue"}}`` for each of
   the recipient's fields;
2. ``POST /api/trpc/recipient.completeDocumentWithToken`` ``{"json": {"token", "documentId"}}`` with the
   number of the envelope's ``secondaryId`` (``document_<n>``).

Route names checked against Documenso v2.17.0. Every loop here is bounded in count and time.
"""

from __future__ import annotations

import os
import time
from typing import Any

import requests

#: Seconds a request to the instance may take.
TIMEOUT = 30


def app_url() -> str:
    """The instance's web-app URL: ``DOCSIGN_SYSTEM_URL`` without its ``/api/v2``."""
    url = os.environ["DOCSIGN_SYSTEM_URL"].rstrip("/")
    return url[: -len("/api/v2")] if url.endswith("/api/v2") else url


def raw_envelope(envelope_id: str) -> dict[str, Any]:
    """``GET /envelope/{id}`` as the service answers it (recipient tokens included: keep it in tests).

    A 429 (a test of the rate window may be running) is waited out per ``Retry-After``, five times at most.
    """
    for _ in range(5):
        resp = requests.get(
            f"{app_url()}/api/v2/envelope/{envelope_id}",
            headers={"Authorization": os.environ["DOCSIGN_SYSTEM_API_KEY"]},
            timeout=TIMEOUT,
        )
        if resp.status_code != 429:
            break
        time.sleep(min(float(resp.headers.get("Retry-After") or 5), 60.0))
    resp.raise_for_status()
    body: dict[str, Any] = resp.json()
    return body


def _trpc(route: str, body: dict[str, Any]) -> dict[str, Any]:
    resp = requests.post(f"{app_url()}/api/trpc/{route}", json={"json": body}, timeout=TIMEOUT)
    if resp.status_code != 200:
        raise AssertionError(f"{route}: HTTP {resp.status_code} {resp.text[:500]}")
    answer: dict[str, Any] = resp.json()
    return answer


def field_value(field: dict[str, Any], name: str) -> dict[str, Any]:
    """A value for one field of the recipient, of the field's type."""
    kind = field["type"]
    if kind in ("SIGNATURE", "FREE_SIGNATURE"):
        return {"type": "SIGNATURE", "value": name}
    if kind in ("NAME", "EMAIL", "INITIALS", "DATE"):
        return {"type": kind, "value": None}
    if kind == "TEXT":
        return {"type": "TEXT", "value": (field.get("customText") or "system test")}
    if kind == "NUMBER":
        return {"type": "NUMBER", "value": "1"}
    if kind == "CHECKBOX":
        return {"type": "CHECKBOX", "value": [0]}
    raise AssertionError(f"the system tests cannot fill a {kind} field")


def sign_as(envelope_id: str, email: str | None = None) -> list[str]:
    """Sign as one recipient (``email``) or as every unsigned non-CC recipient; return their e-mails.

    Fields already inserted (prefilled) are left alone.
    """
    raw = raw_envelope(envelope_id)
    number = int(str(raw["secondaryId"]).rsplit("_", 1)[1])
    signed = []
    for rec in raw["recipients"]:
        if rec["role"] == "CC" or rec["signingStatus"] != "NOT_SIGNED":
            continue
        if email is not None and rec["email"] != email:
            continue
        for fld in raw["fields"]:
            if fld["recipientId"] == rec["id"] and not fld.get("inserted"):
                _trpc(
                    "envelope.field.sign",
                    {
                        "token": rec["token"],
                        "fieldId": fld["id"],
                        "fieldValue": field_value(fld, rec["name"]),
                    },
                )
        _trpc("recipient.completeDocumentWithToken", {"token": rec["token"], "documentId": number})
        signed.append(str(rec["email"]))
    return signed


def wait_status(envelope_id: str, status: str, timeout: float = 60.0) -> dict[str, Any]:
    """Poll until the envelope has ``status`` (sealing takes about a second after the last signature)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        raw = raw_envelope(envelope_id)
        last = raw["status"]
        if last == status:
            return raw
        time.sleep(0.5)
    raise AssertionError(f"envelope {envelope_id} is {last}, not {status}, after {timeout}s")


def reject_as(envelope_id: str, email: str, reason: str) -> None:
    """Reject the envelope as the recipient ``email``, with ``reason``, as the web app's reject dialog does.

    ``POST /api/trpc/recipient.rejectDocumentWithToken`` ``{"json": {"token", "documentId", "reason"}}``
    (route and input checked against Documenso v2.17.0).
    """
    raw = raw_envelope(envelope_id)
    number = int(str(raw["secondaryId"]).rsplit("_", 1)[1])
    matches = [r for r in raw["recipients"] if r["email"] == email]
    if len(matches) != 1:
        raise AssertionError(f"envelope {envelope_id} has {len(matches)} recipient(s) {email!r}, not one")
    _trpc(
        "recipient.rejectDocumentWithToken",
        {"token": matches[0]["token"], "documentId": number, "reason": reason},
    )


def sign_prefetched(raw: dict[str, Any], email: str | None = None) -> list[str]:
    """:func:`sign_as` from an envelope already read with :func:`raw_envelope` (no API request).

    Only the web app's tRPC signing routes are called, so it works while the organisation's API rate
    window is exhausted.
    """
    number = int(str(raw["secondaryId"]).rsplit("_", 1)[1])
    signed = []
    for rec in raw["recipients"]:
        if rec["role"] == "CC" or rec["signingStatus"] != "NOT_SIGNED":
            continue
        if email is not None and rec["email"] != email:
            continue
        for fld in raw["fields"]:
            if fld["recipientId"] == rec["id"] and not fld.get("inserted"):
                value = field_value(fld, rec["name"])
                body = {"token": rec["token"], "fieldId": fld["id"], "fieldValue": value}
                _trpc("envelope.field.sign", body)
        _trpc("recipient.completeDocumentWithToken", {"token": rec["token"], "documentId": number})
        signed.append(str(rec["email"]))
    return signed


def api_answer(method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, str | None, str]:
    """Send one API request straight to the service (no client-side check); return its status, code, message.

    The code is the service's own (``data.code``, else the top-level ``code``).
    """
    resp = requests.request(
        method,
        f"{app_url()}/api/v2{path}",
        json=body,
        headers={"Authorization": os.environ["DOCSIGN_SYSTEM_API_KEY"]},
        timeout=TIMEOUT,
    )
    try:
        answer = resp.json()
    except ValueError:
        return resp.status_code, None, resp.text[:500]
    data = answer.get("data") if isinstance(answer, dict) else None
    code = data.get("code") if isinstance(data, dict) else None
    if code is None and isinstance(answer, dict):
        code = answer.get("code")
    message = (answer.get("message") or answer.get("error")) if isinstance(answer, dict) else None
    return resp.status_code, code, str(message)


class ActAfterFirstRead:
    """Run ``action`` in a thread once ``hook.get_envelopes`` (the sensor's read) has answered once.

    Recipients then act only after the sensor has seen the envelopes open, so the sensor really waits.
    Use as a context manager around the sensor's ``execute``; ``reads`` counts the sensor's reads. If the
    action fails, the sensor's next read raises (the wait ends at once) and leaving the block re-raises
    the action's own error.
    Bounded: the thread waits at most ``timeout`` seconds for the first read, and is joined as long.
    """

    def __init__(self, hook: Any, action: Any, timeout: float = 120.0) -> None:
        import threading

        self.action, self.timeout = action, timeout
        self.reads = 0
        self.result: Any = None
        self.error: BaseException | None = None
        self._read_once = threading.Event()
        read = hook.get_envelopes

        def counted(*args: Any, **kwargs: Any) -> Any:
            if self.error is not None:  # the recipients' action failed: end the wait now, not at its timeout
                raise AssertionError(f"the recipients' action failed: {self.error!r}"[:500])
            answer = read(*args, **kwargs)
            self.reads += 1
            self._read_once.set()
            return answer

        hook.get_envelopes = counted
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            if not self._read_once.wait(timeout=self.timeout):
                raise AssertionError(f"the sensor did not read the envelopes within {self.timeout}s")
            self.result = self.action()
        except BaseException as error:  # reported by __exit__
            self.error = error

    def __enter__(self) -> ActAfterFirstRead:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join(timeout=self.timeout)
        if self._thread.is_alive():
            raise AssertionError(f"the recipients' actions did not finish within {self.timeout}s")
        if self.error is not None:
            raise self.error


def patiently(action: Any, *args: Any, attempts: int = 6, **kwargs: Any) -> Any:
    """``action(*args, **kwargs)``, tried again (at most ``attempts`` times, about a minute in all) while
    the instance answers 429: its per-IP limits (100 tRPC calls a minute) are shared by every test.

    Safe for :func:`sign_as` and :func:`reject_as`: each reads the envelope afresh and skips what is done.
    """
    for attempt in range(1, attempts + 1):
        try:
            return action(*args, **kwargs)
        except (AssertionError, requests.HTTPError) as error:
            response = getattr(error, "response", None)
            limited = getattr(response, "status_code", None) == 429 or ": HTTP 429 " in str(error)
            if not limited or attempt == attempts:
                raise
            time.sleep(min(2**attempt, 20))
    raise AssertionError("unreachable")  # pragma: no cover
