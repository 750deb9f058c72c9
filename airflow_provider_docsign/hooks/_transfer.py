"""Streaming transfers: the multipart upload body and the verified, atomic download.

Neither ever holds a whole file in memory: uploads are read part by part by requests-toolbelt's
encoder as the socket accepts them, and downloads are written chunk by chunk to a :class:`~._io.Sink`
only after the status, ``Content-Type`` and ``%PDF-`` checks passed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

import requests
import urllib3.exceptions
from requests_toolbelt import MultipartEncoder

from airflow_provider_docsign._sources import open_source
from airflow_provider_docsign.exceptions import DocsignDownloadError
from airflow_provider_docsign.hooks._endpoints import Call
from airflow_provider_docsign.hooks._io import (
    CHUNK_SIZE,
    HashingWriter,
    Sink,
    SizedReader,
    filename_from_disposition,
)
from airflow_provider_docsign.service.models import DownloadResult

BodyFactory = Callable[[], tuple[Any, dict[str, str], Callable[[], None]]]


def multipart_body(payload: Mapping[str, Any], files: Sequence[Any], names: Sequence[str]) -> BodyFactory:
    """A factory for a fresh streaming multipart body (files re-opened or rewound for every attempt).

    The ``payload`` part is JSON text; each file is a ``files`` part with ``application/pdf``, in order.
    The Content-Type header (with the boundary) comes from the encoder, never written by hand.

    :param payload: The JSON payload.
    :param files: Upload sources (paths, ``ObjectStoragePath`` or seekable binary file objects).
    :param names: The file name of each part.
    """
    payload_text = json.dumps(payload)
    starts: dict[int, int] = {}
    for index, source in enumerate(files):
        if hasattr(source, "read") and hasattr(source, "tell"):
            starts[index] = source.tell()

    def factory() -> tuple[Any, dict[str, str], Callable[[], None]]:
        opened: list[IO[bytes]] = []
        parts: list[tuple[str, Any]] = [("payload", payload_text)]
        try:
            for index, source in enumerate(files):
                stream, owned = open_source(source)
                if owned:
                    opened.append(stream)
                else:
                    stream.seek(starts[index])
                parts.append(("files", (names[index], SizedReader(stream), "application/pdf")))
            encoder = MultipartEncoder(fields=parts)
        except BaseException:
            for stream in opened:
                stream.close()
            raise

        def close() -> None:
            for stream in opened:
                stream.close()

        return _LargeReads(encoder), {"Content-Type": encoder.content_type}, close

    return factory


#: How much of the multipart body each read hands to urllib3 (which sends whatever a read returns).
#: 256 KiB (issue 38): against documenso-sdk in the same run, alternating upload by upload, 1 MiB
#: reads gave 0.98 (quiet) and 1.02 (busy) as sdk wall / hook wall, 256 KiB 1.00 and 1.05, 64 KiB
#: 1.04 and 0.98 (32 uploads of 120 MB each); the differences are within the noise, but 256 KiB was
#: never behind, and keeps the client's peak RSS growth under 1 MB (1 MiB reads: about 5 MB).
UPLOAD_CHUNK = 256 * 1024


class _LargeReads:
    """The multipart encoder read in chunks of at least :data:`UPLOAD_CHUNK`.

    urllib3 reads a request body 16 KB at a time, and each read of the toolbelt encoder costs a
    few ``fstat``/``tell`` calls per part: for 120 MB that was 3x the CPU of the upload itself
    (``bench/bench_upload.py``). Returning more than asked is fine for urllib3, which sends
    whatever a read returns. ``len`` gives requests the Content-Length, as the encoder did.
    """

    def __init__(self, encoder: MultipartEncoder) -> None:
        self._encoder = encoder
        self.len: int = encoder.len
        self.content_type: str = encoder.content_type

    def read(self, size: int | None = -1) -> bytes:
        """Read at least ``UPLOAD_CHUNK`` bytes (everything left when ``size`` is negative or ``None``)."""
        if size is None or size < 0:
            return self._encoder.read()  # type: ignore[no-any-return]
        return self._encoder.read(max(size, UPLOAD_CHUNK))  # type: ignore[no-any-return]


def stream_download(
    response: requests.Response, call: Call, sink: Sink, *, fallback_name: str
) -> DownloadResult:
    """Verify and stream a 200 download ``response`` into ``sink``; leave nothing behind on failure.

    :param response: A streamed (``stream=True``) 2xx response.
    :param call: The request, for messages.
    :param sink: Where the bytes go (opened only after the checks passed).
    :param fallback_name: File name when the service sends no ``Content-Disposition``.
    """
    opened = False
    try:
        content_type = response.headers.get("content-type", "")
        media = content_type.split(";", 1)[0].strip().lower()
        if media != "application/pdf":
            # Never write, and never JSON-parse, a body that is not declared a PDF.
            raise DocsignDownloadError(
                f"{call.method} {call.path}: expected application/pdf but the service sent "
                f"{content_type or 'no Content-Type'}; nothing was written",
                path=call.path,
                content_type=content_type,
            )
        length_header = response.headers.get("content-length")
        encoded = response.headers.get("content-encoding", "identity").lower() not in ("", "identity")
        expected = int(length_header) if length_header and length_header.isdigit() and not encoded else None
        chunks = response.iter_content(CHUNK_SIZE)
        head = b""
        for chunk in chunks:
            head += chunk
            if len(head) >= 5:
                break
        if not head.startswith(b"%PDF-"):
            raise DocsignDownloadError(
                f"{call.method} {call.path}: the body is not a PDF (it does not start with %PDF-); "
                "nothing was written",
                path=call.path,
                content_type=content_type,
            )
        filename = filename_from_disposition(response.headers.get("content-disposition")) or fallback_name
        writer = HashingWriter(sink.open(filename))
        opened = True
        writer.write(head)
        for chunk in chunks:
            writer.write(chunk)
        if expected is not None and writer.size != expected:
            raise DocsignDownloadError(
                f"{call.method} {call.path}: truncated download ({writer.size} of {expected} bytes); "
                "nothing was kept",
                path=call.path,
                content_type=content_type,
            )
        uri = sink.commit()
        opened = False
        return DownloadResult(
            uri=uri,
            sha256=writer.sha256.hexdigest(),
            size=writer.size,
            content_type=content_type,
            filename=filename,
            raw={
                "etag": response.headers.get("etag"),
                "x-request-id": response.headers.get("x-request-id"),
                "content-length": length_header,
            },
        )
    except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, ConnectionError) as exc:
        # (a local OSError, such as a full disk, is not caught here and propagates as is)
        raise DocsignDownloadError(
            f"{call.method} {call.path}: the connection broke during the download "
            f"({type(exc).__name__}); nothing was kept",
            path=call.path,
        ) from None
    finally:
        if opened:
            sink.abort()
        response.close()
