"""Error bodies in the exact shapes the real service sends.

Two families exist on the real service: tRPC-routed JSON endpoints answer
``{"message", "code", "data": {"code", "httpStatus", "path", "appError"?}}`` and the download routes
(a separate router) answer ``{"error", "code"?}``.
"""

from __future__ import annotations

from typing import Any

# AppError code -> HTTP status on tRPC routes (codes missing from the map give 400).
APP_ERROR_STATUS: dict[str, int] = {
    "UNAUTHORIZED": 401,
    "TWO_FACTOR_AUTH_FAILED": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "TOO_MANY_REQUESTS": 429,
    "UNKNOWN_ERROR": 500,
    "MISSING_ENV_VAR": 500,
    "RETRY_EXCEPTION": 500,
    "SCHEMA_FAILED": 500,
    "NOT_IMPLEMENTED": 501,
}

TRPC_STATUS_CODES: dict[int, str] = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_SUPPORTED",
    408: "TIMEOUT",
    409: "CONFLICT",
    413: "PAYLOAD_TOO_LARGE",
    429: "TOO_MANY_REQUESTS",
    500: "INTERNAL_SERVER_ERROR",
    501: "NOT_IMPLEMENTED",
    502: "BAD_GATEWAY",
    503: "SERVICE_UNAVAILABLE",
    504: "GATEWAY_TIMEOUT",
}

RATE_LIMIT_BODY = {"error": "Too many requests, please try again later."}


class ApiError(Exception):
    """An error to answer with a given status and JSON body."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        super().__init__(str(body.get("message") or body.get("error")))
        self.status = status
        self.body = body
        self.headers = headers or {}


def app_error(path: str, code: str, message: str, *, extra: dict[str, Any] | None = None) -> ApiError:
    """An AppError thrown by a service function, wrapped by tRPC (top-level code INTERNAL_SERVER_ERROR)."""
    status = APP_ERROR_STATUS.get(code, 400)
    inner: dict[str, Any] = {"code": code, "message": message}
    if extra:
        inner.update(extra)
    body = {
        "message": message,
        "code": "INTERNAL_SERVER_ERROR",
        "data": {"code": code, "httpStatus": status, "path": path, "appError": inner},
    }
    return ApiError(status, body)


def plain_error(path: str, message: str) -> ApiError:
    """A plain ``Error`` thrown by a service function: HTTP 500 without ``appError``."""
    body = {
        "message": message,
        "code": "INTERNAL_SERVER_ERROR",
        "data": {"code": "INTERNAL_SERVER_ERROR", "httpStatus": 500, "path": path},
    }
    return ApiError(500, body)


def trpc_error(path: str | None, status: int, message: str) -> ApiError:
    """A tRPC error raised by the framework itself (auth, not found, injected faults)."""
    code = TRPC_STATUS_CODES.get(status, "INTERNAL_SERVER_ERROR")
    data: dict[str, Any] = {"code": code, "httpStatus": status}
    if path is not None:
        data["path"] = path
    return ApiError(status, {"message": message, "code": code, "data": data})


def validation_error(path: str, issues: list[dict[str, Any]]) -> ApiError:
    """Zod input validation failure: 400 with the issues list."""
    body = {
        "message": "Input validation failed",
        "code": "BAD_REQUEST",
        "data": {"code": "BAD_REQUEST", "httpStatus": 400, "path": path},
        "issues": issues,
    }
    return ApiError(400, body)


def download_error(status: int, message: str, code: str | None = None) -> ApiError:
    """Error body of the download routes: ``{"error", "code"?}``."""
    body: dict[str, Any] = {"error": message}
    if code is not None:
        body["code"] = code
    return ApiError(status, body)


def unauthorized(path: str, *, download: bool, provided: bool) -> ApiError:
    """The real answers for a missing or unknown API token."""
    if download:
        if not provided:
            return download_error(401, "API token was not provided", "UNAUTHORIZED")
        return download_error(401, "Invalid token", "UNAUTHORIZED")
    if not provided:
        return trpc_error(path, 401, "Invalid session or API token.")
    return app_error(path, "UNAUTHORIZED", "Invalid token", extra={"statusCode": 401})


def not_found_route() -> ApiError:
    """Unknown route under ``/api/v2``."""
    return ApiError(
        404, {"message": "Not found", "code": "NOT_FOUND", "data": {"code": "NOT_FOUND", "httpStatus": 404}}
    )
