from __future__ import annotations

import io
from pathlib import Path

import pytest

from airflow_provider_docsign._sources import open_source
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks._io import (
    FileObjectSink,
    LocalSink,
    SizedReader,
    filename_from_disposition,
    make_sink,
)


def test_sized_reader_reports_remaining_length_without_copying() -> None:
    stream = io.BytesIO(b"0123456789")
    stream.seek(3)
    reader = SizedReader(stream)
    assert reader.len == 7
    assert reader.read(4) == b"3456"
    assert reader.len == 3
    assert reader.read() == b"789"
    assert reader.len == 0


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('attachment; filename="contract_signed.pdf"', "contract_signed.pdf"),
        ("attachment; filename=plain.pdf", "plain.pdf"),
        ("attachment; filename*=UTF-8''Vertr%C3%A4ge.pdf", "Vertr_ge.pdf"),
        ('attachment; filename="../../etc/passwd"', "passwd"),
        ('attachment; filename=".hidden"', "hidden"),
        (None, None),
        ("inline", None),
    ],
)
def test_filename_from_disposition_is_safe(header: str | None, expected: str | None) -> None:
    assert filename_from_disposition(header) == expected


def test_local_sink_is_atomic(tmp_path: Path) -> None:
    target = tmp_path / "a.pdf"
    target.write_bytes(b"old")
    sink = make_sink(target)
    assert isinstance(sink, LocalSink)
    fh = sink.open("ignored.pdf")
    fh.write(b"%PDF-new")
    assert target.read_bytes() == b"old"  # not visible before commit
    assert sink.commit() == str(target)
    assert target.read_bytes() == b"%PDF-new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pdf"]
    sink = make_sink(target)
    sink.open("x").write(b"%PDF-partial")
    sink.abort()
    assert target.read_bytes() == b"%PDF-new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pdf"]


def test_file_object_sink_rolls_back() -> None:
    buffer = io.BytesIO(b"head")
    buffer.seek(4)
    sink = make_sink(buffer)
    assert isinstance(sink, FileObjectSink)
    sink.open("x").write(b"%PDF-partial")
    sink.abort()
    assert buffer.getvalue() == b"head"


def test_bad_destinations_refused(tmp_path: Path) -> None:
    with pytest.raises(DocsignValidationError, match="binary mode"):
        make_sink(io.StringIO())
    with pytest.raises(DocsignValidationError, match="unsupported destination"):
        make_sink(42)
    existing = tmp_path / "e.pdf"
    existing.write_bytes(b"x")
    with pytest.raises(DocsignValidationError, match="already exists"):
        make_sink(existing, overwrite=False)


def test_open_source_kinds(tmp_path: Path) -> None:
    path = tmp_path / "s.pdf"
    path.write_bytes(b"%PDF-1.7")
    stream, owned = open_source(path)
    assert owned
    stream.close()
    stream, owned = open_source(f"file://{path}")
    assert owned
    assert stream.read(5) == b"%PDF-"
    stream.close()
    mine = io.BytesIO(b"%PDF-")
    assert open_source(mine) == (mine, False)
    with pytest.raises(TypeError, match="binary"):
        open_source(io.StringIO("x"))
    with pytest.raises(FileNotFoundError):
        open_source(tmp_path / "missing.pdf")
