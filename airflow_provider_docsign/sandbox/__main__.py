"""Command line: ``python -m airflow_provider_docsign.sandbox --port 0 --data-dir DIR --api-key KEY``."""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys


def build_parser() -> argparse.ArgumentParser:
    """The CLI's argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_docsign.sandbox",
        description="Local stand-in for the Documenso v2 signing API (development and tests only).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback only)")
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    parser.add_argument("--data-dir", required=True, help="directory for SQLite state and PDF files")
    parser.add_argument(
        "--api-key",
        default=os.environ.get("DOCSIGN_SANDBOX_API_KEY"),
        help="team API key to accept (default: $DOCSIGN_SANDBOX_API_KEY)",
    )
    parser.add_argument(
        "--auto-sign-after",
        type=float,
        default=None,
        help="sign every recipient N seconds after distribution",
    )
    parser.add_argument(
        "--max-file-mb", type=float, default=50, help="per-file upload limit in MB (default 50)"
    )
    parser.add_argument(
        "--rate-limit", type=int, default=None, help="enforce N requests per minute (default: headers only)"
    )
    parser.add_argument(
        "--seal-delay", type=float, default=0.3, help="seconds from last signature to COMPLETED"
    )
    parser.add_argument("--webhook", action="append", default=[], help="send webhooks to this URL")
    parser.add_argument("--webhook-secret", default="", help="X-Documenso-Secret for --webhook")
    parser.add_argument(
        "--webhook-events",
        default="DOCUMENT_COMPLETED,DOCUMENT_REJECTED,DOCUMENT_CANCELLED",
        help="comma-separated events for --webhook",
    )
    parser.add_argument(
        "--webhook-ssrf-bypass-hosts",
        default=None,
        help="comma-separated webhook hosts exempt from the private-address refusal, as the real "
        "instance's NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS (default: that variable; none when unset)",
    )
    parser.add_argument("--log-level", default="warning", help="uvicorn log level")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Start the server and print its base URL (``SANDBOX_URL=http://host:port/api/v2``) once it listens."""
    args = build_parser().parse_args(argv)
    if not args.api_key:
        print("error: --api-key (or DOCSIGN_SANDBOX_API_KEY) is required", file=sys.stderr)
        return 2
    import uvicorn

    from .app import create_app

    app = create_app(
        args.data_dir,
        args.api_key,
        max_file_mb=args.max_file_mb,
        auto_sign_after=args.auto_sign_after,
        rate_limit=args.rate_limit,
        seal_delay=args.seal_delay,
        webhooks=[(url, args.webhook_secret, args.webhook_events) for url in args.webhook],
        webhook_ssrf_bypass_hosts=args.webhook_ssrf_bypass_hosts,
    )
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit TCP_NODELAY. uvicorn does not set it on sockets handed to it, and
    # without it every request after the first on a keep-alive connection waited ~40 ms (Nagle's
    # algorithm against delayed ACKs), penalising clients that pool connections (bench/).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((args.host, args.port))
    port = sock.getsockname()[1]
    # No "server: uvicorn" header: the real service does not send one.
    config = uvicorn.Config(
        app,
        log_level=args.log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=2,
        server_header=False,
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
