"""DocsignFieldPreviewOperator: draw where the fields land, in a DAG, before distribution."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException, BaseOperator, ObjectStoragePath

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.preview import PreviewResult

_CHUNK = 1024 * 1024


def _describe(warning: Any) -> str:
    """A warning without the recipient's name or email (task logs are widely readable)."""
    where = [
        f"field #{warning.field}" if warning.field is not None else "",
        f"and #{warning.other_field}" if warning.other_field is not None else "",
        f"in {warning.file}" if warning.file else "",
        f"page {warning.page}" if warning.page is not None else "",
    ]
    text = " ".join(part for part in where if part)
    return f"{warning.kind}: {text}" if text else str(warning.kind)


def _is_object_storage(value: Any) -> bool:
    return isinstance(value, ObjectStoragePath) or (isinstance(value, str) and "://" in value)


class DocsignFieldPreviewOperator(BaseOperator):
    """Render a field placement preview: annotated PDFs and one PNG per page, plus warnings.

    Give either ``files`` and ``recipients`` (a payload about to be sent; nothing is sent) or
    ``envelope_id`` (an existing envelope: its original PDFs and stored fields are downloaded). The
    preview is rendered in a local temporary directory and then copied to ``output_dir``, which may
    be a local directory or any ``ObjectStoragePath`` (``s3://``, ``gs://``, ``file://`` ...). Locally,
    each file is written under a fresh hidden name and renamed into place: a file of the same name is
    replaced whole (a symlink there is replaced, never followed), and a local ``output_dir`` that is
    a file fails the task before anything is read.

    Returns (as XCom) ``{"pdfs": [...], "pngs": [...], "warnings": [{kind, message, file, page,
    field, recipient, other_field}, ...]}``, where the file entries are absolute local paths or
    object-storage URIs.

    :param output_dir: Where to write the preview (templated).
    :param files: The PDFs in upload order: local paths, ``ObjectStoragePath`` or URI strings
        (templated).
    :param recipients: The payload's recipients in the service's JSON shape, with nested fields, or a
        whole creation payload; a JSON string is parsed (templated).
    :param envelope_id: Preview this existing envelope instead (templated).
    :param docsign_conn_id: The connection to the signing service (only used with ``envelope_id``).
    :param dpi: PNG resolution (18 to 600).
    :param fail_on_warnings: Fail the task, listing the warnings, when there are any (after the
        preview has been written, so it can be looked at).
    """

    template_fields: Sequence[str] = ("output_dir", "files", "recipients", "envelope_id")
    template_fields_renderers = {"recipients": "json", "files": "json"}
    ui_color = "#e8f1fa"

    def __init__(
        self,
        *,
        output_dir: str | os.PathLike[str] | ObjectStoragePath,
        files: Sequence[Any] | None = None,
        recipients: Any = None,
        envelope_id: str | None = None,
        docsign_conn_id: str = "docsign_default",
        dpi: int = 100,
        fail_on_warnings: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.output_dir = output_dir
        self.files = files
        self.recipients = recipients
        self.envelope_id = envelope_id
        self.docsign_conn_id = docsign_conn_id
        self.dpi = dpi
        self.fail_on_warnings = fail_on_warnings

    @cached_property
    def hook(self) -> DocsignHook:
        """The hook (created on first use, never while parsing the DAG)."""
        from airflow_provider_docsign.hooks.docsign import DocsignHook

        return DocsignHook(docsign_conn_id=self.docsign_conn_id)

    def _make_preview(self, scratch: Path) -> PreviewResult:
        from airflow_provider_docsign.preview import preview_envelope, render_field_preview

        if self.envelope_id:
            if self.files or self.recipients:
                raise ValueError("give either envelope_id, or files and recipients, not both")
            return preview_envelope(self.envelope_id, scratch, dpi=self.dpi, hook=self.hook)
        if not self.files:
            raise ValueError("give files and recipients (a payload to preview), or an envelope_id")
        recipients = self.recipients
        if isinstance(recipients, str):
            try:
                recipients = json.loads(recipients)
            except ValueError as err:
                raise ValueError(f"recipients: a string must be JSON ({err})") from None
        files = [self.files] if isinstance(self.files, (str, os.PathLike)) else list(self.files)
        return render_field_preview(files, recipients or [], scratch, dpi=self.dpi)

    def _publish(self, local: Sequence[Path]) -> list[str]:
        """Copy the rendered files to ``output_dir`` (locally: temp name + rename, never half-written)."""
        published: list[str] = []
        if _is_object_storage(self.output_dir):
            # Wrapping an ObjectStoragePath again goes through __fspath__ on Airflow 2.11 (deprecated
            # by universal_pathlib for remote filesystems), so only strings are converted.
            output: Any = self.output_dir
            base = output if isinstance(output, ObjectStoragePath) else ObjectStoragePath(output)
            base.mkdir(parents=True, exist_ok=True)
            for path in local:
                remote = base / path.name
                with open(path, "rb") as src, remote.open("wb") as dst:  # type: ignore[no-untyped-call]
                    shutil.copyfileobj(src, dst, _CHUNK)
                published.append(str(remote))
            return published
        directory = self._local_output()
        directory.mkdir(parents=True, exist_ok=True)
        for path in local:
            target = directory / path.name
            # A fresh name, created exclusively: never a file or a symlink someone left at a fixed name
            # (O_EXCL fails on a symlink too). Mode 0o666 less the umask, as a plain copy has.
            partial = directory / f".{path.name}.{secrets.token_hex(6)}.partial"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
            try:
                with os.fdopen(fd, "wb") as dst, open(path, "rb") as src:
                    shutil.copyfileobj(src, dst, _CHUNK)
                os.replace(partial, target)  # replaces a symlink at the target, never what it points to
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(partial)
                raise
            published.append(str(target))
        return published

    def _local_output(self) -> Path:
        output_dir: Any = self.output_dir
        return Path(os.fspath(output_dir)).expanduser().resolve()

    def execute(self, context: Context) -> dict[str, Any]:
        """Render the preview, copy it to ``output_dir`` and return ``{pdfs, pngs, warnings}``."""
        if not _is_object_storage(self.output_dir):
            directory = self._local_output()
            there = next((p for p in (directory, *directory.parents) if p.exists()), directory)
            if not there.is_dir():
                raise AirflowFailException(
                    f"output_dir {str(self.output_dir)!r}: {str(there)!r} is a file, not a directory; give "
                    "a directory for the preview (nothing was read or written)"
                )
        with tempfile.TemporaryDirectory(prefix="docsign-preview-") as scratch:
            result = self._make_preview(Path(scratch))
            pdfs = self._publish(result.pdfs)
            pngs = self._publish(result.pngs)
        warnings = [w.to_dict() for w in result.warnings]
        self.log.info(
            "Field preview: %d PDF(s), %d page image(s), %d warning(s) in %s",
            len(pdfs),
            len(pngs),
            len(warnings),
            self.output_dir,
        )
        # Messages name recipients; the log gets a version without personal data, XCom the full one.
        for warning in result.warnings:
            self.log.warning("Field placement: %s", _describe(warning))
        if warnings and self.fail_on_warnings:
            listing = "\n".join(f"  - {_describe(w)}" for w in result.warnings)
            raise AirflowFailException(
                f"field preview found {len(warnings)} warning(s) (fail_on_warnings=True); the preview "
                f"is in {self.output_dir}:\n{listing}"
            )
        return {"pdfs": pdfs, "pngs": pngs, "warnings": warnings}
