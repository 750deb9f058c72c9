"""``docsign templates show`` finds its connection where Airflow itself would, or says where it looked.

A newcomer runs ``airflow connections add`` with no ``AIRFLOW_HOME`` (Airflow then uses ``~/airflow``),
then ``docsign templates show``: the command must read that home too. Every run here is a subprocess
with a controlled environment (a temporary ``HOME``, no ``AIRFLOW_*`` variable, whatever the test
process has), as a user's shell has it; the requests are counted at the sandbox.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from template_helpers import field

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

BIN = Path(sys.executable).parent


def _env(home: Path) -> dict[str, str]:
    """A user's shell: this process's environment without any AIRFLOW_* or DOCSIGN_* variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "DOCSIGN"))}
    env["HOME"] = str(home)
    return env


def _run(argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=_env(home), capture_output=True, text=True, timeout=600, check=False)


def _docsign(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run([str(BIN / "docsign"), *args], home)


def _tree(path: Path) -> dict[str, str]:
    """Every file under ``path`` with its SHA-256: what a run changed there."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def airflow_user(tmp_path_factory: pytest.TempPathFactory, sandbox_session: SandboxServer) -> Path:
    """A HOME whose ``~/airflow`` was made by ``airflow db migrate`` and ``airflow connections add``."""
    home = tmp_path_factory.mktemp("user-home")
    for argv in (
        [str(BIN / "airflow"), "db", "migrate"],
        [
            str(BIN / "airflow"),
            "connections",
            "add",
            "docsign_default",
            "--conn-type",
            "docsign",
            "--conn-host",
            sandbox_session.base_url,
            "--conn-password",
            sandbox_session.api_key,
            "--conn-extra",
            json.dumps({"max_retries": 1, "backoff_factor": 0.05, "timeout": 10}),
        ],
    ):
        done = _run(argv, home)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (home / "airflow" / "airflow.cfg").is_file()
    return home


@pytest.fixture
def template_id(hook: DocsignHook, make_pdf: Callable[..., Path]) -> str:
    return hook.create_template(
        title="Home NDA",
        files=[make_pdf()],
        recipients=[
            {
                "email": "a@placeholder.test",
                "name": "Signer",
                "role": "SIGNER",
                "fields": [field("SIGNATURE", 1, 80)],
            }
        ],
    )


def _reads(sandbox: SandboxServer, template_id: str) -> list[dict[str, object]]:
    return [r for r in sandbox.requests() if r["path"] == f"/envelope/{template_id}"]


def test_a_connection_added_with_airflow_connections_add_in_home_airflow_is_found(
    airflow_user: Path, sandbox: SandboxServer, template_id: str, api_key: str
) -> None:
    before = _tree(airflow_user / "airflow")
    sandbox.clear_requests()
    done = _docsign(airflow_user, "templates", "show", template_id)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Template {template_id} 'Home NDA'")
    assert [r["status"] for r in _reads(sandbox, template_id)] == [200]  # the stored key was accepted
    assert api_key not in done.stdout + done.stderr
    assert _tree(airflow_user / "airflow")["airflow.cfg"] == before["airflow.cfg"]


def test_a_connection_that_home_airflow_lacks_names_the_home_it_searched(
    airflow_user: Path, sandbox: SandboxServer
) -> None:
    sandbox.clear_requests()
    done = _docsign(airflow_user, "templates", "show", "envelope_x", "--conn-id", "docsign_prod")
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("docsign templates: error: the connection 'docsign_prod' is not defined")
    assert (
        f"in the Airflow home {airflow_user / 'airflow'} (Airflow's default: AIRFLOW_HOME is not set)" in line
    )
    assert "airflow connections add" in line
    assert sandbox.requests() == []


@pytest.mark.parametrize(
    "layout",
    ["no ~/airflow", "an empty ~/airflow", "airflow.cfg is a directory"],
)
def test_without_an_airflow_in_home_the_error_says_so_and_home_is_left_as_it_was(
    tmp_path: Path, sandbox: SandboxServer, layout: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    if layout != "no ~/airflow":
        (home / "airflow").mkdir()
    if layout == "airflow.cfg is a directory":
        (home / "airflow" / "airflow.cfg").mkdir()
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    sandbox.clear_requests()
    done = _docsign(home, "templates", "show", "envelope_x")
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "AIRFLOW_HOME is not set and ~/airflow holds no Airflow (no airflow.cfg)" in line
    assert "AIRFLOW_CONN_DOCSIGN_DEFAULT" in line
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before  # nothing written there
    assert sandbox.requests() == []


def test_an_empty_airflow_home_variable_means_the_default_home(
    airflow_user: Path, sandbox: SandboxServer, template_id: str
) -> None:
    """``AIRFLOW_HOME=`` (set but empty, as a careless ``export`` leaves it) is not the current directory."""
    sandbox.clear_requests()
    env = _env(airflow_user) | {"AIRFLOW_HOME": ""}
    done = subprocess.run(
        [str(BIN / "docsign"), "templates", "show", template_id],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=airflow_user,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Template {template_id}")
    assert len(_reads(sandbox, template_id)) == 1
    assert not (airflow_user / "airflow.cfg").exists()  # no Airflow home made in the working directory
