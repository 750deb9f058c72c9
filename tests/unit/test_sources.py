"""``_sources.open_regular_file`` and ``open_source``: only regular files are opened, nothing blocks, and
a local path never imports Airflow.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign._sources import (
    NotARegularFileError,
    OutsideFolderError,
    open_regular_file,
    open_source,
)
from airflow_provider_docsign.service.payloads import inspect_files


def _guarded(call: Callable[[], Any]) -> BaseException | Any:
    """Run ``call`` in a thread: a regression that blocks on a FIFO fails the test instead of hanging it."""
    result: list[Any] = []

    def target() -> None:
        try:
            result.append(call())
        except BaseException as err:
            result.append(err)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the call blocked (it opened the FIFO)"
    return result[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Any:
    path = tmp_path / "pipe.pdf"
    os.mkfifo(path)
    yield path
    # Unblock a reader left waiting by a regression, so that its thread ends.
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    os.close(fd)


def test_a_fifo_is_refused_without_being_opened(fifo: Path) -> None:
    err = _guarded(lambda: open_regular_file(fifo))
    assert isinstance(err, NotARegularFileError)
    assert err.kind == "a FIFO (named pipe)"
    assert str(fifo) in str(err)
    err = _guarded(lambda: open_source(str(fifo)))
    assert isinstance(err, NotARegularFileError)


def test_a_fifo_given_as_a_pdf_to_upload_is_a_problem_not_a_hang(fifo: Path) -> None:
    results, problems = _guarded(lambda: inspect_files([str(fifo)]))
    assert results == [None]
    assert len(problems) == 1
    assert "a FIFO (named pipe), not a regular file" in problems[0]


def test_devices_sockets_and_directories_are_refused(tmp_path: Path) -> None:
    with pytest.raises(NotARegularFileError, match="a character device"):
        open_regular_file("/dev/zero")
    zero_link = tmp_path / "zero.pdf"
    zero_link.symlink_to("/dev/zero")
    with pytest.raises(NotARegularFileError, match="a character device"):
        open_regular_file(zero_link)
    with pytest.raises(IsADirectoryError):  # also an IsADirectoryError, as open() raises
        open_regular_file(tmp_path)
    with pytest.raises(NotARegularFileError, match="a directory"):
        open_regular_file(tmp_path)
    sock_path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(sock_path))
        with pytest.raises(NotARegularFileError, match="a socket"):
            open_regular_file(sock_path)
    finally:
        server.close()
    with pytest.raises(NotARegularFileError, match="NUL"):
        open_regular_file(str(tmp_path / "a\x00b.pdf"))


def test_links_are_resolved_and_must_stay_inside(tmp_path: Path) -> None:
    folder = tmp_path / "archive"
    folder.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_bytes(b"secret")
    inside = folder / "a.pdf"
    inside.write_bytes(b"%PDF-1.7 inside")
    (folder / "alias.pdf").symlink_to("a.pdf")
    (folder / "leak.pdf").symlink_to(outside)
    (folder / "dangling.pdf").symlink_to(folder / "nothing")

    with open_regular_file(folder / "alias.pdf", inside=folder) as fh:
        assert fh.read() == b"%PDF-1.7 inside"
    with pytest.raises(OutsideFolderError) as info:
        open_regular_file(folder / "leak.pdf", inside=folder)
    assert info.value.target == str(outside)
    with open_regular_file(folder / "leak.pdf") as fh:  # no folder given: a link may lead anywhere
        assert fh.read() == b"secret"
    with pytest.raises(FileNotFoundError):
        open_regular_file(folder / "dangling.pdf", inside=folder)
    # The folder itself may be a link (/archive -> /mnt/disk/archive).
    linked = tmp_path / "linked"
    linked.symlink_to(folder)
    with open_regular_file(linked / "a.pdf", inside=linked) as fh:
        assert fh.read(5) == b"%PDF-"


def test_a_local_source_imports_no_airflow(tmp_path: Path) -> None:
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(b"%PDF-1.7")
    script = (
        "import json, pathlib, sys\n"
        "from airflow_provider_docsign._sources import is_object_path, open_source\n"
        "for source in (sys.argv[1], pathlib.Path(sys.argv[1]), 'file://' + sys.argv[1]):\n"
        "    stream, owned = open_source(source)\n"
        "    assert stream.read(5) == b'%PDF-' and owned\n"
        "    stream.close()\n"
        "    assert not is_object_path(source)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'airflow')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(pdf)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
