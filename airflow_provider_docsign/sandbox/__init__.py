"""A local stand-in for the Documenso v2 signing service, for development, the demo and tests.

Run it with ``python -m airflow_provider_docsign.sandbox --data-dir DIR --api-key KEY``, or from Python
with :class:`SandboxServer`. Importing this package does not import FastAPI or uvicorn; only the server
subprocess does.
"""

from __future__ import annotations

from .server import SandboxServer

__all__ = ["SandboxServer"]
