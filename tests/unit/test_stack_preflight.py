"""The pre-flight of `make test` and `make stack` (scripts/stack.py): every missing system package is
named, with the command that installs it, before anything starts; as root it is installed instead."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from helpers import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "stack.py"


@pytest.fixture(scope="module")
def stack() -> ModuleType:
    return load_script("stack")


def _executable(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with none of the three: an empty PATH and no Debian PostgreSQL."""
    bin_dir, pg_root = tmp_path / "bin", tmp_path / "postgresql"
    bin_dir.mkdir()
    pg_root.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("DOCSIGN_POSTGRESQL_ROOT", str(pg_root))
    monkeypatch.delenv("DOCSIGN_CHROMIUM", raising=False)
    return tmp_path


def _install_all(machine: Path) -> None:
    """What apt-get leaves behind: initdb in a versioned PostgreSQL folder, redis-server, chromium."""
    pg_bin = machine / "postgresql" / "17" / "bin"
    pg_bin.mkdir(parents=True)
    _executable(pg_bin, "initdb")
    _executable(machine / "bin", "redis-server")
    _executable(machine / "bin", "chromium")


def test_every_missing_package_is_named_with_one_install_command(stack: ModuleType, bare: Path) -> None:
    with pytest.raises(stack.StackError) as refused:
        stack.preflight(browser=True)
    message = str(refused.value)
    assert "postgresql, redis-server and chromium are not installed" in message
    assert "sudo apt-get update && sudo apt-get install -y postgresql redis-server chromium" in message


def test_make_stack_does_not_need_chromium(stack: ModuleType, bare: Path) -> None:
    _install_all(bare)
    (bare / "bin" / "chromium").unlink()
    found = stack.preflight()
    assert found.bindir == bare / "postgresql" / "17" / "bin"
    assert found.redis == str(bare / "bin" / "redis-server")
    with pytest.raises(stack.StackError, match="chromium is not installed"):
        stack.preflight(browser=True)


def test_the_browser_path_comes_from_the_preflight(
    stack: ModuleType, bare: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_all(bare)
    assert f"export DOCSIGN_CHROMIUM={bare / 'bin' / 'chromium'}" in stack.preflight(browser=True).exports()
    elsewhere = _executable(bare, "my-chromium")
    monkeypatch.setenv("DOCSIGN_CHROMIUM", str(elsewhere))
    assert stack.chromium() == str(elsewhere)
    monkeypatch.setenv("DOCSIGN_CHROMIUM", str(bare / "missing"))
    with pytest.raises(stack.StackError, match=r"DOCSIGN_CHROMIUM=.*missing is not an executable"):
        stack.chromium()


def test_as_root_the_missing_packages_are_installed_with_one_apt_get_install(
    stack: ModuleType, bare: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _install_all(bare)
    (bare / "bin" / "redis-server").unlink()
    (bare / "bin" / "chromium").unlink()
    commands: list[list[str]] = []

    def apt_get(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        commands.append(cmd)
        if cmd[:2] == ["apt-get", "install"]:
            _executable(bare / "bin", "redis-server")
            _executable(bare / "bin", "chromium")
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(stack.os, "geteuid", lambda: 0)
    monkeypatch.setattr(stack.subprocess, "run", apt_get)
    monkeypatch.setattr(
        sys.modules[stack.ensure.__module__], "APT_LOG", bare / "apt.log"
    )  # ensure() reads it
    found = stack.ensure(browser=True, install=True)
    assert commands == [
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "redis-server", "chromium"],
    ]
    assert found.chromium == str(bare / "bin" / "chromium")
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("[make test] installing redis-server chromium from Debian with apt-get")


def test_without_root_or_sudo_it_stops_naming_what_is_missing_and_make_test_core(bare: Path) -> None:
    """The command `make test` runs first, on a machine where it cannot install: exit 2, one message."""
    _install_all(bare)
    (bare / "bin" / "redis-server").unlink()
    (bare / "bin" / "chromium").unlink()
    env = {"PATH": str(bare / "bin"), "HOME": str(bare), "DOCSIGN_POSTGRESQL_ROOT": str(bare / "postgresql")}
    # Without --install (the Makefile passes it) the pre-flight never installs, even as root.
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "preflight", "--browser"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "make test: the distributed tests need redis-server and chromium (Debian packages), "
        "not installed here.",
        "  Install: sudo apt-get update && sudo apt-get install -y redis-server chromium",
        "  Or run every other test without them: make test-core",
    ]


def test_the_command_line_refuses_before_starting_anything(tmp_path: Path) -> None:
    """With neither on PATH and no Debian PostgreSQL, `stack.py up` exits non-zero and starts nothing."""
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "DOCSIGN_POSTGRESQL_ROOT": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "up"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "postgresql and redis-server are not installed" in result.stderr
    assert "sudo apt-get install -y postgresql redis-server" in result.stderr


def test_make_stack_without_root_stops_in_one_line_naming_the_packages_and_the_command(bare: Path) -> None:
    _install_all(bare)
    (bare / "bin" / "redis-server").unlink()
    env = {"PATH": str(bare / "bin"), "HOME": str(bare), "DOCSIGN_POSTGRESQL_ROOT": str(bare / "postgresql")}
    result = subprocess.run(  # no --install: as a user without root or passwordless sudo
        [sys.executable, str(SCRIPT), "preflight", "--for", "make stack"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "make stack: needs redis-server (Debian packages), not installed here, and cannot install them "
        "without root or passwordless sudo; install them with: sudo apt-get update && sudo apt-get install "
        "-y redis-server"
    ]


def test_make_stack_as_root_installs_what_it_needs_as_make_test_does(
    stack: ModuleType, bare: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _install_all(bare)
    (bare / "bin" / "redis-server").unlink()
    (bare / "bin" / "chromium").unlink()  # make stack needs no browser: not installed
    commands: list[list[str]] = []

    def apt_get(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        commands.append(cmd)
        if cmd[:2] == ["apt-get", "install"]:
            _executable(bare / "bin", "redis-server")
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(stack.os, "geteuid", lambda: 0)
    monkeypatch.setattr(stack.subprocess, "run", apt_get)
    monkeypatch.setattr(sys.modules[stack.ensure.__module__], "APT_LOG", bare / "apt.log")
    found = stack.ensure(browser=False, install=True, what="make stack")
    assert commands == [["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "redis-server"]]
    assert found.redis == str(bare / "bin" / "redis-server")
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("[make stack] installing redis-server from Debian with apt-get, for the stack")


def test_the_makefile_runs_the_pre_flight_before_make_stack_installs_anything() -> None:
    shown = subprocess.run(
        ["make", "--no-print-directory", "-n", "stack"],
        cwd=SCRIPT.parents[1],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    assert 'scripts/stack.py preflight --install --for "make stack"' in shown[0]
    assert shown.index("make --no-print-directory install") == 1
    assert shown[-1].endswith("scripts/stack.py up")
