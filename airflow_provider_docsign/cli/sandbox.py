"""``docsign sandbox --data-dir DIR --api-key KEY``: the local stand-in for the signing service.

Prints ``SANDBOX_URL=http://host:port/api/v2`` once it listens (``SandboxServer`` reads that line) and
serves until interrupted. For development, demos and tests, never production.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import stat
from typing import Any

from airflow_provider_docsign.cli import _arguments as types
from airflow_provider_docsign.cli._common import EXIT_OK, CliError, missing_extra

#: The top-level modules the ``sandbox`` extra brings (anything else failing to import is a bug).
_EXTRA_MODULES = frozenset({"uvicorn", "fastapi", "starlette", "multipart", "python_multipart"})
#: uvicorn's log levels.
_LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
#: A hundred years, in seconds: the longest a sealing certificate may live.
_CENTURY = 100 * 365 * 24 * 3600.0

_EPILOG = """example:
  docsign sandbox --data-dir .sandbox --port 8787 --api-key api_local_dev_key --auto-sign-after 5
  # then a connection: host http://127.0.0.1:8787/api/v2, password api_local_dev_key

Needs the sandbox extra: pip install "airflow-provider-docsign[sandbox]"."""


def register(subparsers: Any) -> None:
    """Add the ``sandbox`` subcommand."""
    parser = subparsers.add_parser(
        "sandbox",
        help="Run the local stand-in for the signing service",
        description="Local stand-in for the Documenso v2 signing API (development and tests only).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The sandbox's options."""
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        type=types.identifier("an interface to bind, e.g. 127.0.0.1", "address"),
        help="interface to bind (default: loopback only)",
    )
    parser.add_argument("--port", type=types.port(), default=0, help="port; 0 picks a free one (default)")
    parser.add_argument(
        "--data-dir",
        required=True,
        type=types.path("a directory for the sandbox's state"),
        help="directory for SQLite state and PDF files",
    )
    parser.add_argument(
        "--api-key",
        default=os.environ.get("DOCSIGN_SANDBOX_API_KEY"),
        help="team API key to accept (default: $DOCSIGN_SANDBOX_API_KEY)",
    )
    parser.add_argument(
        "--auto-sign-after",
        type=types.number(0, types.MAX_SECONDS, "seconds"),
        default=None,
        help="sign every recipient N seconds after distribution",
    )
    parser.add_argument(
        "--max-file-mb",
        type=types.number(0, 1024 * 1024, "megabytes", above=True),
        default=50,
        help="per-file upload limit in MB (default 50)",
    )
    parser.add_argument(
        "--rate-limit",
        type=types.whole(0, 10**9, "a number of requests per window", " (0: not enforced)"),
        default=1000,
        help="requests per window and client address, enforced with the real 429 and X-RateLimit-* "
        "headers (default 1000, the real service's; 0: report the headers, refuse nothing)",
    )
    parser.add_argument(
        "--rate-window",
        type=types.number(0, types.MAX_SECONDS, "seconds", above=True),
        default=60.0,
        help="the rate-limit window in seconds (default 60, the real service's)",
    )
    parser.add_argument(
        "--seal-delay",
        type=types.number(0, types.MAX_SECONDS, "seconds"),
        default=0.3,
        help="seconds from last signature to COMPLETED (default 0.3)",
    )
    parser.add_argument(
        "--webhook",
        action="append",
        default=[],
        type=types.url("the URL to send webhooks to"),
        help="send webhooks to this URL",
    )
    parser.add_argument("--webhook-secret", default="", help="X-Documenso-Secret for --webhook")
    parser.add_argument(
        "--webhook-events",
        default="DOCUMENT_COMPLETED,DOCUMENT_REJECTED,DOCUMENT_CANCELLED",
        type=_events,
        help="comma-separated events for --webhook",
    )
    parser.add_argument(
        "--webhook-ssrf-bypass-hosts",
        default=None,
        help="comma-separated webhook hosts exempt from the private-address refusal, as the real "
        "instance's NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS (default: that variable; none when unset)",
    )
    parser.add_argument(
        "--seal-cert-lifetime",
        type=types.number(0, _CENTURY, "seconds", above=True),
        default=None,
        metavar="SECONDS",
        help="seal each document with a certificate that expires SECONDS after signing (default: a "
        "ten-year certificate); for long-term validation tests",
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        type=types.choice(_LOG_LEVELS, "a log level"),
        help=f"uvicorn log level: {', '.join(_LOG_LEVELS)} (default: warning)",
    )


def _events(value: str) -> str:
    """``--webhook-events``: a comma-separated list of the events the sandbox sends."""
    try:
        from airflow_provider_docsign.sandbox.webhooks import EXTRA_EVENTS, SENT_EVENTS
    except ImportError:  # the extra is missing: run() says so
        return value
    known = SENT_EVENTS + EXTRA_EVENTS
    chosen = [e.strip().upper() for e in value.split(",") if e.strip()]
    unknown = [e for e in chosen if e not in known]
    give = f"give a comma-separated list of {', '.join(known)}"
    if not chosen:
        raise argparse.ArgumentTypeError(f"no event: {give}")
    if unknown:
        shown = ", ".join(repr(e[:40]) for e in unknown)
        raise argparse.ArgumentTypeError(f"{shown}: not an event the sandbox sends: {give}")
    return value


def _check_data_dir(data_dir: str) -> None:
    """``--data-dir`` is a directory, or nothing yet (it is created): a FIFO or a file is refused."""
    from airflow_provider_docsign._sources import file_kind

    try:
        mode = os.stat(data_dir).st_mode
    except FileNotFoundError:
        return
    except OSError as err:
        raise CliError(f"--data-dir {data_dir}: {types.describe(err)}: give a directory") from err
    if not stat.S_ISDIR(mode):
        raise CliError(f"--data-dir {data_dir} is {file_kind(mode)}, not a directory: give a directory")


def run(args: argparse.Namespace) -> int:
    """Start the server, print its base URL once it listens, and serve until stopped."""
    if not args.api_key:
        raise CliError("--api-key (or DOCSIGN_SANDBOX_API_KEY) is required: the key the sandbox accepts")
    _check_data_dir(args.data_dir)
    try:
        import uvicorn

        from airflow_provider_docsign.sandbox.app import create_app
    except ImportError as err:
        if (err.name or "").split(".")[0] not in _EXTRA_MODULES:
            raise
        raise missing_extra("sandbox", err) from err

    try:
        app = create_app(
            args.data_dir,
            args.api_key,
            max_file_mb=args.max_file_mb,
            auto_sign_after=args.auto_sign_after,
            rate_limit=args.rate_limit,
            rate_window=args.rate_window,
            seal_delay=args.seal_delay,
            webhooks=[(url, args.webhook_secret, args.webhook_events) for url in args.webhook],
            webhook_ssrf_bypass_hosts=args.webhook_ssrf_bypass_hosts,
            seal_cert_lifetime=args.seal_cert_lifetime,
        )
    except OSError as err:
        why = err.strerror or "it cannot be written"
        raise CliError(
            f"--data-dir {args.data_dir}: it cannot be created or written ({why}): give a directory this "
            "user may write"
        ) from err
    except ValueError as err:  # a webhook subscription the sandbox refuses: its message says which rule
        raise CliError(f"{err}: check --webhook and --webhook-events") from err
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit TCP_NODELAY. uvicorn does not set it on sockets handed to it, and
    # without it every request after the first on a keep-alive connection waited ~40 ms (Nagle's
    # algorithm against delayed ACKs), penalising clients that pool connections (bench/).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((args.host, args.port))
    except (OSError, ValueError, TypeError) as err:  # a host name that cannot be encoded, too
        sock.close()
        why = getattr(err, "strerror", None) or "not an address or host name of this machine"
        raise CliError(
            f"cannot listen on {args.host}:{args.port}: {why}: give another --host (an address of this "
            "machine) or --port (0 picks a free one)"
        ) from err
    port = sock.getsockname()[1]
    # No "server: uvicorn" header: the real service does not send one.
    config = uvicorn.Config(
        app,
        log_level=args.log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=2,
        server_header=False,
        date_header=False,  # the app sends Date from the sandbox's clock (see POST /_sandbox/clock)
    )
    server = uvicorn.Server(config)
    host = f"[{args.host}]" if family == socket.AF_INET6 else args.host

    async def serve() -> None:
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            print(f"SANDBOX_URL=http://{host}:{port}/api/v2", flush=True)
        await task

    asyncio.run(serve())
    return EXIT_OK
