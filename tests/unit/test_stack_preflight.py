"""`make stack` names every missing system package, with the command that installs it, before it starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from helpers import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "stack.py"


@pytest.fixture(scope="module")
def stack() -> ModuleType:
    return load_script("stack")


def test_both_missing_packages_are_named_with_the_install_command(
    stack: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(stack.shutil, "which", lambda name: None)
    with pytest.raises(stack.StackError) as refused:
        stack.preflight()
    message = str(refused.value)
    assert "postgresql is not installed" in message
    assert "redis-server is not installed" in message
    assert "apt-get install -y postgresql redis-server" in message


def test_the_command_line_refuses_before_starting_anything(tmp_path: Path) -> None:
    """With neither on PATH and no Debian PostgreSQL, `stack.py up` exits non-zero and starts nothing."""
    if Path("/usr/lib/postgresql").exists():
        # Debian's PostgreSQL is installed here (CI installs it): only redis-server can be hidden.
        expected = "redis-server is not installed"
    else:
        expected = "postgresql is not installed"
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "up"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert expected in result.stderr + result.stdout
    assert "apt-get install" in result.stderr + result.stdout
