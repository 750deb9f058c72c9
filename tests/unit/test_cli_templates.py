"""``docsign templates show`` against the sandbox, over real HTTP: the template, a 401, a 404, no service."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import conn_json
from template_helpers import onboarding_recipients
from test_cli_docsign import one_line_error, run

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def show(
    sandbox: SandboxServer, home: Path, template_id: str, **conn: str
) -> subprocess.CompletedProcess[str]:
    env = {"AIRFLOW_CONN_DOCSIGN_DEFAULT": conn_json(sandbox, **conn)}
    return run("templates", "show", template_id, home=home, env=env)


def test_show_prints_the_template(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path], home: Path
) -> None:
    with DocsignHook(docsign_conn) as hook:
        template_id = hook.create_template(
            title=f"CLI NDA {uuid.uuid4().hex[:8]}",
            files=[make_pdf(pages=2)],
            recipients=onboarding_recipients(),
        )
    done = show(sandbox, home, template_id)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Template {template_id} 'CLI NDA ")
    assert "SIGNER  name 'Customer'" in done.stdout
    assert "TEXT  label 'company'" in done.stdout
    assert done.stderr == ""
    assert list(home.iterdir()) == []


def test_an_unknown_template_is_one_line_naming_the_404(sandbox: SandboxServer, home: Path) -> None:
    line = one_line_error(show(sandbox, home, "envelope_doesnotexist"), home)
    assert line.startswith(
        "docsign templates: error: template envelope_doesnotexist was not found (HTTP 404)"
    )
    assert "check the id, and that connection 'docsign_default' points to the instance" in line


def test_a_refused_key_is_one_line_naming_the_password(sandbox: SandboxServer, home: Path) -> None:
    line = one_line_error(show(sandbox, home, "envelope_x", password="api_wrongkey"), home)
    assert "refused the API key of connection 'docsign_default' (HTTP 401)" in line
    assert "check the connection's password" in line
    assert "api_wrongkey" not in line


def test_a_document_is_not_a_template(
    sandbox: SandboxServer, docsign_conn: str, make_pdf: Callable[..., Path], home: Path
) -> None:
    with DocsignHook(docsign_conn) as hook:
        doc = hook.create_envelope(title="Plain", files=[make_pdf()])
    line = one_line_error(show(sandbox, home, doc), home)
    assert f"{doc} is a DOCUMENT, not a TEMPLATE" in line


def test_an_unreachable_service_is_one_line_naming_the_host(sandbox: SandboxServer, home: Path) -> None:
    conn = '{"conn_type": "docsign", "host": "http://127.0.0.1:9/api/v2", "password": "api_x", ' \
        '"extra": {"max_retries": 0, "timeout": 2}}'  # fmt: skip
    done = run("templates", "show", "envelope_x", home=home, env={"AIRFLOW_CONN_DOCSIGN_DEFAULT": conn})
    line = one_line_error(done, home)
    assert "could not be reached through connection 'docsign_default': check its host" in line


def test_show_finds_a_connection_added_to_the_metadata_database(
    sandbox: SandboxServer,
    docsign_conn: str,
    make_pdf: Callable[..., Path],
    home: Path,
    airflow_db: str,
    api_key: str,
) -> None:
    """`airflow connections add` (as a user does), then `docsign templates show --conn-id`: no variable.

    On Airflow 3 the Task SDK's look-up in a plain process searches neither the metadata database nor
    anything but variables and secrets backends; the command must still find the connection.
    """
    with DocsignHook(docsign_conn) as hook:
        template_id = hook.create_template(
            title=f"DB NDA {uuid.uuid4().hex[:8]}",
            files=[make_pdf(pages=2)],
            recipients=onboarding_recipients(),
        )
    airflow = [sys.executable, "-m", "airflow", "connections"]
    from cryptography.fernet import Fernet

    # One Fernet key for every process here (in unit-test mode each Airflow process would make its own).
    fernet = {"AIRFLOW__CORE__FERNET_KEY": Fernet.generate_key().decode()}
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")} | fernet
    conn_id = f"docsign_db_{uuid.uuid4().hex[:8]}"
    add = [*airflow, "add", conn_id, "--conn-type", "docsign", "--conn-host", sandbox.base_url]
    subprocess.run([*add, "--conn-password", api_key], env=env, check=True, capture_output=True, timeout=300)
    try:
        db_env = {
            "AIRFLOW_HOME": os.environ["AIRFLOW_HOME"],
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": airflow_db,
        }
        done = run("templates", "show", template_id, "--conn-id", conn_id, home=home, env=db_env | fernet)
    finally:
        deleted = subprocess.run(
            [*airflow, "delete", conn_id], env=env, capture_output=True, text=True, timeout=300
        )
        assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Template {template_id} 'DB NDA ")
    assert list(home.iterdir()) == []
