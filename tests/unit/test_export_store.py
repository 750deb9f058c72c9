"""Staging left by an export run that was killed outright (``kill -9``) is removed by the next run, and
the staging of a run still alive is never touched.

The killed run is a real process: it stages a partition, says so, and is killed with SIGKILL, so it
leaves exactly what a killed worker leaves. No timers: the test waits on the process's own output.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_docsign.export.rows import TABLES
from airflow_provider_docsign.export.store import PartitionWriter, sweep_stale_staging

DATE = "2026-11-02"

#: A writer that stages a partition, prints "staged", then waits for a line on stdin: on "commit" it
#: publishes, on anything else (or EOF) it aborts; unless it is killed first.
_WRITER = """
import sys
from airflow_provider_docsign.export.store import PartitionWriter
root = sys.argv[1]
if "://" in root:
    from airflow_provider_docsign._compat import ObjectStoragePath
    root = ObjectStoragePath(root)
writer = PartitionWriter(root, sys.argv[2])
writer.write({"envelopes": [{"schema_version": 1, "envelope_id": "envelope_killed"}]})
print("staged", flush=True)
if sys.stdin.readline().strip() == "commit":
    writer.commit()
else:
    writer.abort()
print("done", flush=True)
"""


class _Writer:
    """An export writer in its own process, stopped by its handle."""

    def __init__(self, root: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, root, DATE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self._expect("staged")

    def _expect(self, word: str) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # Airflow may log to stdout first, when it is imported
            if line.strip() == word:
                return
        raise AssertionError(f"the writer ended without saying {word!r} (exit {self.proc.wait(timeout=60)})")

    def kill(self) -> None:
        self.proc.kill()  # SIGKILL: no cleanup runs
        self.proc.wait(timeout=60)

    def finish(self, line: str = "abort") -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        self._expect("done")
        self.proc.wait(timeout=60)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=60)


@pytest.fixture
def writers() -> Iterator[list[_Writer]]:
    started: list[_Writer] = []
    yield started
    for writer in started:
        writer.stop()


def _staging(root: Path) -> list[str]:
    """Every staging or lock entry below ``root`` (hidden names of the writer)."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob(".*")
        if ".tmp-" in p.name or ".old-" in p.name or ".lock" in p.name
    )


def test_a_killed_runs_staging_is_removed_by_the_next_run(tmp_path: Path, writers: list[_Writer]) -> None:
    root = tmp_path / "export"
    killed = _Writer(str(root))
    writers.append(killed)
    left = _staging(root)
    assert len([name for name in left if ".tmp-" in name]) == len(TABLES)  # one staged dir per table
    assert any(name.endswith(".lock") for name in left)
    killed.kill()
    assert _staging(root) == left  # kill -9: nothing cleaned up

    writer = PartitionWriter(root, DATE)
    assert sorted(writer.swept) == sorted(f"removed {root / name}" for name in left if ".tmp-" in name)
    writer.commit()

    assert _staging(root) == []
    for table in TABLES:
        assert sorted(p.name for p in (root / table / f"date={DATE}").iterdir()) == [
            "_SUCCESS",
            "part-0000.jsonl",
        ]


def test_a_live_runs_staging_is_left_alone(tmp_path: Path, writers: list[_Writer]) -> None:
    root = tmp_path / "export"
    alive = _Writer(str(root))
    writers.append(alive)
    theirs = _staging(root)

    writer = PartitionWriter(root, DATE)
    assert writer.swept == []
    writer.abort()
    assert _staging(root) == theirs  # still there: its lock is held

    alive.finish()
    assert _staging(root) == []  # it cleaned up after itself


def test_a_partition_moved_aside_by_a_killed_publish_is_put_back(tmp_path: Path) -> None:
    """Killed between its two renames: the published partition sits in ``.old-``, the final name is gone."""
    root = tmp_path / "export"
    first = PartitionWriter(root, DATE)
    first.write({"envelopes": [{"schema_version": 1, "envelope_id": "envelope_published"}]})
    first.commit()
    published = root / "envelopes" / f"date={DATE}"
    before = (published / "part-0000.jsonl").read_bytes()
    aside = published.with_name(f".date={DATE}.old-0123456789ab")
    os.replace(published, aside)  # what the dead run did; its lock file died with it (never held now)
    (root / ".docsign-export-0123456789ab.lock").write_text("4242\n")

    swept = sweep_stale_staging(root, root)

    assert swept == [f"restored {published}"]
    assert (published / "part-0000.jsonl").read_bytes() == before
    assert _staging(root) == []


def test_object_store_staging_in_the_temp_dir_is_swept_too(tmp_path: Path, writers: list[_Writer]) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    killed = _Writer("memory://contract-data/docsign", env=env)
    writers.append(killed)
    killed.kill()
    left = sorted(p.name for p in scratch.iterdir())
    assert len(left) == 2  # the staging directory and its lock file
    assert any(name.startswith("docsign-export-") for name in left)

    old = tempfile.tempdir
    tempfile.tempdir = str(scratch)  # this process's writer stages there too
    try:
        from airflow_provider_docsign._compat import ObjectStoragePath

        writer = PartitionWriter(ObjectStoragePath("memory://contract-data/docsign"), DATE)
        assert len(writer.swept) == 1
        assert writer.swept[0].startswith(f"removed {scratch}/docsign-export-")
        writer.abort()
    finally:
        tempfile.tempdir = old
    assert list(scratch.iterdir()) == []
