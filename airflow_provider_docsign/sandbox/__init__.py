"""A local stand-in for the Documenso v2 signing service, for development, the demo and tests.

It is a development and test tool, never a production path. It serves the v2 envelope API under
``/api/v2`` with the real service's shapes, status codes and quirks (Documenso v2.17, as recorded in
``tests/contract/data/documenso-2.17``), keeps its state in SQLite plus PDF files under a data
directory (so it survives restarts), simulates signers and injects faults.

Command line::

    python -m airflow_provider_docsign.sandbox --data-dir DIR --api-key KEY
        [--host 127.0.0.1] [--port 0] [--auto-sign-after SECONDS] [--max-file-mb 50]
        [--rate-limit 1000] [--rate-window 60] [--seal-delay 0.3]

It prints ``SANDBOX_URL=http://HOST:PORT/api/v2`` once it listens. ``--port 0`` picks a free port; the
key may also come from ``$DOCSIGN_SANDBOX_API_KEY``.

From Python (importing this package does not import FastAPI or uvicorn; only the subprocess does)::

    with SandboxServer(data_dir, api_key="api_...") as sb:
        sb.base_url                 # "http://127.0.0.1:PORT/api/v2"
        sb.sign(envelope_id)        # every unsigned non-CC recipient; COMPLETED follows shortly after
        sb.reject(envelope_id, recipient_id, "reason")
        sb.inject_fault("POST", "/envelope/create", "drop_after_commit")
        sb.requests()               # [{"method", "path", "status"}] of /api/v2 requests

Control API (same key, not under ``/api/v2`` and not in the request log): ``POST /_sandbox/sign``,
``/_sandbox/complete``, ``/_sandbox/reject``, ``/_sandbox/faults`` (and ``/faults/clear``),
``GET /_sandbox/requests`` (and ``POST /requests/clear``), ``GET /_sandbox/envelopes/{id}``,
``GET /_sandbox/items/{id}/bytes?version=`` and the unauthenticated ``GET /_sandbox/health``.

Fault actions (for the next ``count`` requests matching a method and a path relative to ``/api/v2``,
where ``*`` matches one segment): ``status`` (reply with a status and the real error body, optionally
with ``Retry-After``, without processing), ``delay`` (before processing), ``delay_reply`` (process at
once, answer later), ``drop_after_commit`` (process, then close the
connection with no reply), ``drop_before``, ``wrong_content_type``, ``truncate`` and ``ignore_order``
(item update-many applies titles but silently ignores order changes).

May import: :mod:`..service` and :mod:`..evidence` (the service's own rules, where the real service
has them too), ``samples`` and the shared top-level modules. Never the hook or the Airflow face: it
stands where the real service stands (its ``__main__`` calls the cli).
"""

from __future__ import annotations

from .server import SandboxServer

__all__ = ["SandboxServer"]
