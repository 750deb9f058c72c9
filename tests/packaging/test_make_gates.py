"""The Makefile's gates fail when they should: on a scratch copy of the repository, never this tree.

- ``make lint`` with one unused import exits non-zero (every recipe runs with ``bash -e``: before, a
  recipe's status was its last line's, so a ruff error followed by a clean ``ruff format --check``
  passed);
- an install that fails (the package index is an unreachable port on 127.0.0.1) leaves no venv marker,
  so the next ``make install`` tries again instead of believing the venv is ready;
- ``make -n test`` only prints: it neither runs the suite nor installs anything.

The scratch copy's ``.venv`` holds only a link to this venv's ``ruff`` and a fresh marker, so
``make lint`` there runs the real ruff with the repository's configuration and installs nothing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _tracked_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return [name for name in out.split("\0") if name and (ROOT / name).is_file()]


def _scratch_copy(dest: Path) -> Path:
    """The repository's tracked files (as they are in the work tree) copied to ``dest``."""
    for name in _tracked_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return dest


def _make(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=repo,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


def _ready_venv(repo: Path) -> None:
    """A ``.venv`` in ``repo`` that make takes as installed: this venv's ruff and a fresh marker."""
    venv_bin = repo / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "ruff").symlink_to(BIN / "ruff")
    (repo / ".venv" / ".installed").touch()  # newer than the copied Makefile and pyproject.toml


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = _scratch_copy(tmp_path_factory.mktemp("repo"))
    _ready_venv(repo)
    return repo


def test_make_lint_fails_on_an_unused_import(scratch: Path) -> None:
    clean = _make(scratch, "lint")
    assert clean.returncode == 0, clean.stdout + clean.stderr  # the copy itself is clean

    module = scratch / "airflow_provider_docsign" / "_text.py"
    original = module.read_text()
    future = "from __future__ import annotations\n"
    assert future in original
    module.write_text(original.replace(future, future + "\nimport json\n", 1))
    try:
        dirty = _make(scratch, "lint")
        # Formatted as ruff wants it: the unused import (F401) is the only fault, so the old recipe,
        # whose status was that of its last line (ruff format --check), passed.
        formatted = subprocess.run(
            [str(BIN / "ruff"), "format", "--check", "."], cwd=scratch, capture_output=True, timeout=120
        )
    finally:
        module.write_text(original)
    assert formatted.returncode == 0, formatted.stdout
    assert dirty.returncode != 0, dirty.stdout + dirty.stderr
    assert "F401" in dirty.stdout, dirty.stdout
    # ruff check failed, and the recipe stopped there: ruff format --check never ran.
    assert "already formatted" not in dirty.stdout


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens there once the socket is closed


def test_a_failed_install_leaves_no_marker_and_the_next_make_tries_again(tmp_path: Path) -> None:
    repo = _scratch_copy(tmp_path / "repo")
    venv = tmp_path / "venv"
    # uv resolves Airflow from an index nobody serves; uv itself comes from pip's configuration.
    unreachable = f"http://127.0.0.1:{_closed_port()}/simple"
    env = {"UV_INDEX_URL": unreachable, "UV_DEFAULT_INDEX": unreachable, "UV_HTTP_RETRIES": "0"}
    args = ("install", f"VENV={venv}", f"PYTHON={sys.executable}")

    first = _make(repo, *args, env=env)
    assert first.returncode != 0, first.stdout + first.stderr
    assert (venv / "bin" / "uv").exists(), first.stderr  # it got as far as the uv install, which failed
    assert not (venv / ".installed").exists()
    assert "touch" not in first.stderr
    # make sees the venv as not installed ...
    assert _make(repo, "-q", *args, env=env).returncode == 1
    # ... and the next `make install` runs the install again (and fails the same way).
    second = _make(repo, *args, env=env)
    assert second.returncode != 0
    assert "uv pip install" in second.stdout, second.stdout
    assert "127.0.0.1" in second.stderr, second.stderr[-2000:]
    assert not (venv / ".installed").exists()


def test_make_n_test_prints_the_suite_without_running_it(tmp_path: Path) -> None:
    repo = _scratch_copy(tmp_path / "repo")
    dry = _make(repo, "-n", "test")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "bash .ci/pytest.sh .venv" in dry.stdout
    # Nothing ran: no venv, no install, no pytest.
    assert not (repo / ".venv").exists()
    assert "passed" not in dry.stdout
