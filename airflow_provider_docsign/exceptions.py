"""Exceptions raised by the Docsign provider.

Every exception derives from :class:`DocsignError`. Service errors are :class:`DocsignAPIError`
subclasses chosen by HTTP status, so callers can catch exactly what they can act on. Messages never
contain the API key, and never include response bodies (which may hold signers' personal data).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DocsignAPIError",
    "DocsignAmbiguousWriteError",
    "DocsignArchiveConflictError",
    "DocsignArchiveError",
    "DocsignArchiveEscapeError",
    "DocsignArchiveEvidenceError",
    "DocsignArchiveRefusedError",
    "DocsignArchiveSignatureError",
    "DocsignArchiveTimestampError",
    "DocsignAuthError",
    "DocsignConnectionError",
    "DocsignDownloadError",
    "DocsignEnvelopeFailedError",
    "DocsignEnvelopeNotReadyError",
    "DocsignError",
    "DocsignInvalidRequestError",
    "DocsignNotFoundError",
    "DocsignRateLimitError",
    "DocsignRecipientExpiredError",
    "DocsignRefusedLocallyError",
    "DocsignServerError",
    "DocsignSignatureError",
    "DocsignValidationError",
]


class DocsignError(Exception):
    """Base class of every error raised by the Docsign provider."""


class DocsignAPIError(DocsignError):
    """The signing service answered a request with an error status.

    :param message: A human-readable message (the service's own message where it gave one).
    :param status_code: The HTTP status code (``None`` when no response was received).
    :param error_code: The service's error code: ``data.code``, else the top-level ``code``, else the
        download routes' ``code`` (for example ``NOT_FOUND``, ``MISSING_SIGNATURE_FIELD``).
    :param method: The HTTP method of the failed request.
    :param path: The request path relative to the base URL (no query string, no credentials).
    :param request_id: The ``x-request-id`` response header, to quote to the service operator.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        error_code: str | None = None,
        method: str | None = None,
        path: str | None = None,
        request_id: str | None = None,
    ) -> None:
        self.message = message
        self.status_code = status_code
        self.error_code = error_code
        self.method = method
        self.path = path
        self.request_id = request_id
        super().__init__(message)

    def __str__(self) -> str:
        parts = []
        if self.method or self.path:
            parts.append(f"{self.method or ''} {self.path or ''}".strip())
        if self.status_code is not None:
            parts.append(f"HTTP {self.status_code}")
        if self.error_code:
            parts.append(self.error_code)
        head = " ".join(parts)
        text = f"{head}: {self.message}" if head else self.message
        if self.request_id:
            text += f" (request id {self.request_id})"
        return text

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status_code={self.status_code!r}, error_code={self.error_code!r}, "
            f"method={self.method!r}, path={self.path!r}, message={self.message!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only arguments do not survive the default pickling of exceptions; Airflow pickles
        # task exceptions in some paths, so rebuild from the attributes.
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))


def _rebuild(cls: type[DocsignAPIError], message: str, state: dict[str, Any]) -> DocsignAPIError:
    obj = cls.__new__(cls)
    Exception.__init__(obj, message)
    obj.__dict__.update(state)
    return obj


class DocsignAuthError(DocsignAPIError):
    """The API key was refused (HTTP 401 or 403): check the connection's password (the team API key)."""


class DocsignNotFoundError(DocsignAPIError):
    """The envelope, item, recipient, field or folder does not exist or is not visible to the key (404)."""


class DocsignRateLimitError(DocsignAPIError):
    """The service rate-limited the request (HTTP 429) and the retries were exhausted.

    :param retry_after: Seconds the service asked to wait (from ``Retry-After``), if given.
    """

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class DocsignInvalidRequestError(DocsignAPIError):
    """The service refused the request as invalid (a 4xx other than 401, 403, 404 and 429)."""


class DocsignRefusedLocallyError(DocsignInvalidRequestError):
    """A change the service would refuse was refused before anything was sent.

    ``status_code``, ``error_code`` and ``message`` are what the service answers such a request with
    (for example 400 ``INVALID_REQUEST`` "Envelope already complete"), so code that handles the
    service's refusal handles this one too; ``method`` and ``path`` name the request that was not sent.
    """

    def __str__(self) -> str:
        return super().__str__() + " (refused locally, as the service would refuse it: nothing was sent)"


class DocsignServerError(DocsignAPIError):
    """The service failed (HTTP 5xx). Note: distribute on an unknown or completed envelope answers 500."""


class DocsignValidationError(DocsignError, ValueError):
    """Local validation failed before anything was sent; :attr:`problems` lists every problem found.

    :param problems: One human-readable line per problem, naming the recipient, field and file.
    :param context: What was being validated (for example ``"create_envelope payload"``).
    """

    def __init__(self, problems: list[str], context: str = "payload") -> None:
        self.problems = list(problems)
        self.context = context
        count = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"{context} is invalid ({count} problem{'s' if count != 1 else ''}); nothing was sent:\n{lines}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.problems, self.context))


class DocsignAmbiguousWriteError(DocsignError):
    """A write was sent but its outcome is unknown (timeout or dropped connection after sending).

    The write is never repeated automatically. Check the service before writing again; for a create,
    look the envelope up by its ``externalId`` (see ``DocsignHook.find_envelopes_by_external_id``).

    :param message: What happened and how to check.
    :param method: The HTTP method of the write.
    :param path: The request path relative to the base URL.
    :param external_id: The ``externalId`` sent with a create, to search for.
    """

    def __init__(
        self,
        message: str,
        *,
        method: str | None = None,
        path: str | None = None,
        external_id: str | None = None,
    ) -> None:
        self.message = message
        self.method = method
        self.path = path
        self.external_id = external_id
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_plain,
            (type(self), self.message, dict(self.__dict__)),
        )


class DocsignDownloadError(DocsignError):
    """A download was refused locally: wrong content type, not a PDF, or truncated. No file was left.

    :param message: What was wrong.
    :param path: The download path relative to the base URL.
    :param content_type: The ``Content-Type`` the service sent.
    """

    def __init__(self, message: str, *, path: str | None = None, content_type: str | None = None) -> None:
        self.message = message
        self.path = path
        self.content_type = content_type
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_plain, (type(self), self.message, dict(self.__dict__)))


def _rebuild_plain(cls: type[Exception], message: str, state: dict[str, Any]) -> Exception:
    obj = cls.__new__(cls)
    Exception.__init__(obj, message)
    obj.__dict__.update(state)
    return obj


class DocsignConnectionError(DocsignAPIError):
    """The service could not be reached (connection refused, DNS, TLS, timeout) after every retry.

    It has no ``status_code``. For writes this is raised only when the request provably never reached
    the service; otherwise :class:`DocsignAmbiguousWriteError` is raised.
    """


class DocsignSignatureError(DocsignError):
    """A downloaded PDF's digital signature failed verification (or a signed PDF carries none).

    :param failures: One ``(file, reason)`` pair per failed file, the file as a URI or path.
    """

    def __init__(self, failures: list[tuple[str, str]]) -> None:
        self.failures = list(failures)
        lines = "\n".join(f"  - {name}: {reason}" for name, reason in self.failures)
        super().__init__(
            f"signature verification failed for {len(self.failures)} file(s); nothing was archived:\n{lines}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.failures,))


class DocsignRecipientExpiredError(DocsignError):
    """A recipient's signing link expired, so the envelope can never complete until it is renewed.

    On the real service the envelope stays PENDING when a link expires; signing is refused with
    ``RECIPIENT_EXPIRED``. ``POST /envelope/redistribute`` (the
    :class:`~airflow_provider_docsign.operators.DocsignRemindRecipientsOperator`) renews the link.

    :param message: A message naming each envelope, recipient (id, role, masked e-mail) and when the
        link expired, and how to renew it.
    :param expired: One ``{"envelope_id", "recipient_id", "role", "email", "expires_at"}`` per expired
        recipient (``email`` masked).
    """

    def __init__(self, message: str, expired: list[dict[str, Any]] | None = None) -> None:
        self.expired = list(expired or [])
        super().__init__(message)

    @property
    def envelope_ids(self) -> list[str]:
        """The ids of the envelopes with an expired recipient, in order, without repeats."""
        return list(dict.fromkeys(str(e.get("envelope_id")) for e in self.expired))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.expired))


# -- archiving ------------------------------------------------------------------------------------
#
# Raised by the archive's pure modules (archive_store, archiver). The archive operators raise every
# DocsignArchiveRefusedError as a subclass that is also Airflow's AirflowFailException, so the task
# fails at once instead of spending its retries (operators/archive.py); catching these classes
# catches both.


class DocsignArchiveError(DocsignError):
    """Archiving failed for a reason that retrying the task may fix (e.g. a download failed)."""


class DocsignEnvelopeNotReadyError(DocsignArchiveError):
    """The envelope's status does not (yet) allow the requested download version.

    Raised for ``version="signed"`` before COMPLETED (the real service would silently return the
    unsigned upload) and for ``version="pending"`` outside PENDING. A later try may succeed.
    """


class DocsignArchiveTimestampError(DocsignArchiveError):
    """The TSA failed, timed out, or answered a token that fails a check (``timestamp="require"``).

    Raised before anything moves into place: nothing is published as complete, and a retry (with the
    TSA back) completes the archive.
    """


class DocsignArchiveRefusedError(DocsignError):
    """Archiving cannot succeed by trying again: the base of the archive failures that skip retries."""


class DocsignArchiveEvidenceError(DocsignArchiveRefusedError):
    """The evidence asked for cannot be made at this destination; refused before any download.

    Retention on a store or an S3 bucket without Object Lock, a long-term validation copy without a
    TSA, or a timestamp without a manifest to put it on. A retry would meet the same configuration.
    """


class DocsignArchiveConflictError(DocsignArchiveRefusedError):
    """A different file already exists at an archive name and ``overwrite`` is off.

    The existing file is left untouched. Retrying cannot help, so the task fails without retries.
    """


class DocsignEnvelopeFailedError(DocsignArchiveRefusedError):
    """The envelope was rejected or cancelled: its documents will never be signed. No retries."""


class DocsignArchiveEscapeError(DocsignArchiveRefusedError):
    """An archive path would lead outside the destination (a symlinked folder or file name).

    Nothing was written. A retry would meet the same link, so the task fails without retries; remove
    the link (or archive elsewhere) and clear the task.
    """


class DocsignArchiveSignatureError(DocsignArchiveRefusedError, DocsignSignatureError):
    """A downloaded PDF failed signature verification under ``verify_signatures="require"``. No retries.

    A retry cannot help: it downloads the same bytes again. The service stores the sealed PDF once
    and serves it unchanged, and a download that was cut short or altered in transit is already
    caught before verification (content type, ``%PDF-`` magic, size and SHA-256 cross-checked with
    the hook). So a signature that does not verify, a missing signature, a change after signing or an
    untrusted signer is a property of the document (or of the trust policy), and the task fails at
    once instead of spending its retries. It is a :class:`DocsignSignatureError`, so code catching
    that still catches it.
    """
