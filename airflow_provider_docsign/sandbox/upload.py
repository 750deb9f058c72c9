"""Streaming multipart/form-data parsing straight to disk.

File parts are written chunk by chunk to temporary files under the store's ``tmp/`` directory while the
sha256 is computed, so the server's memory does not grow with the upload size. A file larger than the
limit is still read to the end (the client gets a proper answer) but the excess bytes are discarded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

MAX_TEXT_PART = 16 * 1024 * 1024


@dataclass
class UploadedFile:
    """One file part spooled to disk."""

    filename: str
    content_type: str
    path: Path
    size: int = 0
    sha256: str = ""
    head: bytes = b""


@dataclass
class FormData:
    """The parsed body: text fields (last value wins, ``[]`` suffix dropped) and files in order."""

    fields: dict[str, Any] = field(default_factory=dict)
    files: list[UploadedFile] = field(default_factory=list)
    is_multipart: bool = False

    def cleanup(self) -> None:
        """Remove spooled files that were not moved into the store."""
        for f in self.files:
            with contextlib.suppress(OSError):
                f.path.unlink()


class _Collector:
    def __init__(self, tmp_dir: Path, max_file_bytes: int) -> None:
        self.tmp_dir = tmp_dir
        self.max_file_bytes = max_file_bytes
        self.form = FormData(is_multipart=True)
        self._header_field = b""
        self._header_value = b""
        self._headers: dict[bytes, bytes] = {}
        self._name = ""
        self._file: UploadedFile | None = None
        self._fh: Any = None
        self._hash: Any = None
        self._text = bytearray()

    def on_part_begin(self) -> None:
        self._headers = {}
        self._file = None
        self._text = bytearray()

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def on_header_end(self) -> None:
        self._headers[self._header_field.lower()] = self._header_value
        self._header_field = b""
        self._header_value = b""

    def on_headers_finished(self) -> None:
        _, params = parse_options_header(self._headers.get(b"content-disposition", b""))
        self._name = params.get(b"name", b"").decode("utf-8", "replace")
        if self._name.endswith("[]"):
            self._name = self._name[:-2]
        # Only ``files`` parts are spooled to disk; any other part (even one sent with a file name,
        # such as a ``payload`` attached as a file) is read as a bounded text field.
        if b"filename" in params and self._name == "files":
            ctype = self._headers.get(b"content-type", b"application/octet-stream").decode("latin-1").strip()
            fd, tmp = tempfile.mkstemp(dir=self.tmp_dir, suffix=".part")
            self._fh = os.fdopen(fd, "wb")
            self._hash = hashlib.sha256()
            self._file = UploadedFile(
                filename=params[b"filename"].decode("utf-8", "replace"),
                content_type=ctype.split(";")[0].strip(),
                path=Path(tmp),
            )
            self.form.files.append(self._file)

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self._file is not None:
            f = self._file
            if len(f.head) < 8:
                f.head += chunk[: 8 - len(f.head)]
            if f.size + len(chunk) <= self.max_file_bytes:
                self._fh.write(chunk)
                self._hash.update(chunk)
            f.size += len(chunk)
        elif len(self._text) + len(chunk) <= MAX_TEXT_PART:
            self._text += chunk

    def on_part_end(self) -> None:
        if self._file is not None:
            self._fh.close()
            self._file.sha256 = self._hash.hexdigest()
            self._fh = None
        else:
            self.form.fields[self._name] = self._text.decode("utf-8", "replace")

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


async def parse_body(request: Request, tmp_dir: Path, max_file_bytes: int) -> FormData:
    """Parse a request body: streaming multipart, JSON object, or urlencoded form.

    The real service accepts all three body encodings and turns them into one plain object.
    """
    ctype_raw = request.headers.get("content-type", "")
    ctype, params = parse_options_header(ctype_raw)
    if ctype == b"multipart/form-data" and b"boundary" in params:
        collector = _Collector(tmp_dir, max_file_bytes)
        parser = MultipartParser(
            params[b"boundary"],
            callbacks={
                "on_part_begin": collector.on_part_begin,
                "on_part_data": collector.on_part_data,
                "on_part_end": collector.on_part_end,
                "on_header_field": collector.on_header_field,
                "on_header_value": collector.on_header_value,
                "on_header_end": collector.on_header_end,
                "on_headers_finished": collector.on_headers_finished,
            },
        )
        try:
            async for chunk in request.stream():
                parser.write(chunk)
            parser.finalize()
        except BaseException:
            collector.close()
            collector.form.cleanup()
            raise
        return collector.form
    raw = await request.body()
    form = FormData()
    if ctype == b"application/x-www-form-urlencoded":
        form.fields = dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
        return form
    if raw.strip():
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if isinstance(data, dict):
            form.fields = data
    return form
