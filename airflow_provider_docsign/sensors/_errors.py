"""Whether a hook error while reading envelopes means "poll again" or "fail the wait now", and its message.

:func:`classify_error` sorts an exception into transient, auth, not-found or permanent, the same in
every mode (``poke``, the trigger, the coalesced poller); :func:`read_error_message` and
:func:`describe_error` word the failure. No message ever contains the API key or a response body.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from airflow_provider_docsign.exceptions import (
    DocsignAPIError,
    DocsignAuthError,
    DocsignError,
    DocsignNotFoundError,
    DocsignRateLimitError,
    DocsignServerError,
)

__all__ = ["ErrorKind", "classify_error", "describe_error", "read_error_message"]

ErrorKind = Literal["transient", "auth", "not_found", "permanent"]

#: HTTP statuses that mean "try again later".
_TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


def classify_error(error: BaseException) -> ErrorKind:
    """Whether a read error means "not yet" (``transient``) or must fail the wait now.

    - ``auth``: 401/403, the key is wrong or was revoked; polling again cannot fix it.
    - ``not_found``: 404 on the read itself (for ``get-many`` this usually means a wrong base URL).
    - ``permanent``: any other 4xx (the request itself is wrong) or an error that is not the service's.
    - ``transient``: 429, 5xx, timeouts and connection errors, after the hook's own retries.

    :param error: The exception the hook raised.
    """
    if isinstance(error, DocsignAuthError):
        return "auth"
    if isinstance(error, DocsignNotFoundError):
        return "not_found"
    if isinstance(error, DocsignRateLimitError | DocsignServerError):
        return "transient"
    if isinstance(error, DocsignAPIError):
        if error.status_code is None or error.status_code in _TRANSIENT_STATUS:
            return "transient"
        return "permanent"
    if isinstance(error, DocsignError):
        # Not an HTTP error status: a dropped connection, a timeout or a garbled answer that the
        # hook wrapped. Reads are safe to repeat, so poll again.
        return "transient"
    if isinstance(error, OSError | asyncio.TimeoutError | TimeoutError):
        return "transient"
    module = type(error).__module__.split(".", 1)[0]
    if module in {"requests", "urllib3", "httpx", "httpcore"}:
        # Transport errors of the HTTP clients the hook uses (connection refused, reset, read timeout).
        return "transient"
    return "permanent"


def read_error_message(error: BaseException, *, count: int, conn_id: str) -> str:
    """The failure message for a read error that polling again cannot fix (same in every mode).

    :param error: The exception the hook raised.
    :param count: How many envelopes were being read.
    :param conn_id: The Airflow connection id, so the reader knows which connection to fix.
    """
    kind = classify_error(error)
    if kind == "auth":
        return (
            f"The signing service refused the API key of connection {conn_id!r}; check the connection's "
            f"password (the team API key). {describe_error(error)}"
        )
    if kind == "not_found":
        return (
            f"Reading {count} envelope(s) answered 404; check that the base URL of connection {conn_id!r} "
            f"ends in /api/v2. {describe_error(error)}"
        )
    return f"Reading {count} envelope(s) failed and polling again cannot help: {describe_error(error)}"


def describe_error(error: BaseException) -> str:
    """A one-line description of a hook error for logs and failure messages (no response bodies)."""
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}"[:500]
