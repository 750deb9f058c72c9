"""The ``docsign`` console script, run as a user runs it: a subprocess of ``.venv/bin/docsign``.

Every failure is one line on stderr with exit status 2 (unusable input, missing extra, missing
connection) or 1 (a check failed); a traceback only with ``--debug``; nothing is created under the
user's home when ``AIRFLOW_HOME`` is unset.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
DOCSIGN = BIN / "docsign"
PREVIEW_EXTRA = 'pip install "airflow-provider-docsign[preview]"'


def run(
    *args: object, home: Path, blocked: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``args`` (``docsign ...`` or ``python -m ...``) with an empty HOME and no AIRFLOW_HOME.

    ``blocked`` modules cannot be imported in the child (a ``sitecustomize`` puts ``None`` in
    ``sys.modules`` for each, as if the extra that brings them were not installed).
    """
    child = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "DOCSIGN"))}
    child["HOME"] = str(home)
    if blocked:
        site = home.parent / "blocked-site"
        site.mkdir(exist_ok=True)
        lines = [f"sys.modules[{name!r}] = None" for name in blocked]
        (site / "sitecustomize.py").write_text("import sys\n" + "\n".join(lines) + "\n")
        child["PYTHONPATH"] = str(site)
    child.update(env or {})
    argv = [str(DOCSIGN), *map(str, args)] if args[0] != "-m" else [sys.executable, *map(str, args)]
    return subprocess.run(argv, capture_output=True, text=True, env=child, timeout=120, check=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty HOME for the child; the tests check it is still empty afterwards."""
    path = tmp_path / "home"
    path.mkdir()
    return path


def one_line_error(done: subprocess.CompletedProcess[str], home: Path, status: int = 2) -> str:
    """Assert the run failed with ``status``, one line on stderr, no traceback, HOME untouched."""
    assert done.returncode == status, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert list(home.iterdir()) == []
    return lines[0]


def test_help_lists_every_subcommand_with_examples(home: Path) -> None:
    done = run("--help", home=home)
    assert done.returncode == 0
    for command in ("verify", "templates", "preview", "sandbox", "webhooks"):
        assert command in done.stdout
    for args in (("templates", "show"), ("preview",), ("sandbox",)):
        sub = run(*args, "--help", home=home)
        assert sub.returncode == 0, sub.stderr
        assert f"usage: docsign {' '.join(args)}" in sub.stdout
        assert "example" in sub.stdout
        assert f"docsign {' '.join(args)} " in sub.stdout.split("example", 1)[1]
    assert list(home.iterdir()) == []


def test_templates_show_without_a_connection_is_one_line(home: Path) -> None:
    line = one_line_error(run("templates", "show", "envelope_x", home=home), home)
    assert line.startswith("docsign templates: error: the connection 'docsign_default' is not defined")
    assert "AIRFLOW_CONN_DOCSIGN_DEFAULT" in line
    other = one_line_error(run("templates", "show", "x", "--conn-id", "prod_sign", home=home), home)
    assert "'prod_sign' is not defined: AIRFLOW_HOME is not set and ~/airflow holds no Airflow" in other
    assert "set AIRFLOW_CONN_PROD_SIGN" in other


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("templates",), "docsign templates: error: the following arguments are required: ACTION"),
        (("nosuch",), "docsign: error: argument COMMAND: invalid choice: 'nosuch'"),
        (
            ("preview", "p.json", "a.pdf"),
            "docsign preview: error: the following arguments are required: -o/--output",
        ),
        (
            ("sandbox", "--data-dir", "d", "--port", "x"),
            "docsign sandbox: error: argument --port: 'x' is not a whole number: give a port from 0 to",
        ),
    ],
)
def test_a_usage_error_is_one_line_pointing_at_help(home: Path, args: tuple[str, ...], expected: str) -> None:
    line = one_line_error(run(*args, home=home), home)
    assert line.startswith(expected)
    assert line.endswith("--help)")


def test_debug_shows_the_traceback(home: Path) -> None:
    done = run("--debug", "templates", "show", "x", home=home)
    assert done.returncode == 2  # --debug adds the traceback, never another exit status
    assert "Traceback" in done.stderr
    # The one line comes after the traceback (Airflow 2.11 may log its pool's disposal after it, at exit).
    errors = [line for line in done.stderr.splitlines() if line.startswith("docsign templates: error: ")]
    assert len(errors) == 1
    assert errors[0].startswith("docsign templates: error: the connection")
    assert "AirflowNotFoundException" in done.stderr
    after = run("templates", "show", "x", "--debug", home=home)
    assert "Traceback" in after.stderr


def test_the_python_m_forms_are_the_same_commands(home: Path) -> None:
    line = one_line_error(run("-m", "airflow_provider_docsign.templates", "show", "x", home=home), home)
    assert line.startswith("python -m airflow_provider_docsign.templates: error: the connection")
    usage = run("-m", "airflow_provider_docsign.sandbox", "--help", home=home)
    assert usage.returncode == 0
    assert usage.stdout.startswith("usage: python -m airflow_provider_docsign.sandbox")
    assert "docsign sandbox --data-dir" in usage.stdout  # the example
    bad = run("-m", "airflow_provider_docsign.preview", "--dpi", "x", home=home)
    assert one_line_error(bad, home).startswith("python -m airflow_provider_docsign.preview: error: ")


def test_preview_without_the_extra_names_the_install_line(
    home: Path, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    payload = Path(__file__).resolve().parents[2] / "docs" / "preview-example-payload.json"
    pdf = make_pdf()
    out = tmp_path / "out"
    for blocked in (("pypdfium2",), ("PIL",)):
        done = run("preview", payload, pdf, "-o", out, home=home, blocked=blocked)
        line = one_line_error(done, home)
        assert line.startswith('docsign preview: error: the "preview" extra is not installed')
        assert PREVIEW_EXTRA in line
        assert f"({blocked[0]} cannot be imported)" in line
    as_module = run(
        "-m", "airflow_provider_docsign.preview", payload, pdf, "-o", out, home=home, blocked=("pypdfium2",)
    )
    assert PREVIEW_EXTRA in one_line_error(as_module, home)
    assert not out.exists()


def test_preview_warnings_exit_1_and_bad_input_exits_2(
    home: Path, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    pdf = make_pdf()
    field = {"identifier": 0, "type": "SIGNATURE", "page": 1, "positionX": 90, "positionY": 10, "width": 30}
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps([{"email": "a@x.example", "name": "A", "role": "SIGNER",
                                    "fields": [{**field, "height": 5}]}]))  # fmt: skip
    warned = run("preview", payload, pdf, "-o", tmp_path / "out", home=home)
    assert warned.returncode == 1, warned.stderr
    assert "runs off the page" in warned.stderr
    assert "Traceback" not in warned.stderr
    missing = run("preview", payload, tmp_path / "nope.pdf", "-o", tmp_path / "out2", home=home)
    line = one_line_error(missing, home)
    assert "nope.pdf" in line
    assert not (tmp_path / "out2").exists()
    unreadable = one_line_error(
        run("preview", tmp_path / "no.json", pdf, "-o", tmp_path / "o3", home=home), home
    )
    assert "cannot read the payload" in unreadable


def test_sandbox_failures_are_one_line(home: Path, tmp_path: Path) -> None:
    no_key = one_line_error(run("sandbox", "--data-dir", tmp_path / "sb", home=home), home)
    assert "--api-key (or DOCSIGN_SANDBOX_API_KEY) is required" in no_key
    no_extra = run(
        "sandbox", "--data-dir", tmp_path / "sb", "--api-key", "k", home=home, blocked=("uvicorn",)
    )
    assert 'pip install "airflow-provider-docsign[sandbox]"' in one_line_error(no_extra, home)


def test_templates_module_does_not_import_the_hook(home: Path) -> None:
    code = (
        "import sys, airflow_provider_docsign.service.templates as t; "
        "print(sorted(m for m in sys.modules if m.startswith('airflow_provider_docsign.hooks'))); "
        "print(hasattr(t, 'main'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["[]", "False"]


def test_preview_json_is_alone_on_stdout(home: Path, make_pdf: Callable[..., Path], tmp_path: Path) -> None:
    payload = Path(__file__).resolve().parents[2] / "docs" / "preview-example-payload.json"
    done = run(
        "preview", payload, make_pdf(), "-o", tmp_path / "out", "--json", "--no-fail-on-warnings", home=home
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [Path(p).name for p in result["pdfs"]] == ["00-contract.preview.pdf"]
    assert {w["kind"] for w in result["warnings"]} == {"overlap"}  # the example overlaps on purpose
    assert list(home.iterdir()) == []


def test_sandbox_serves_until_stopped(home: Path, tmp_path: Path) -> None:
    import requests

    child = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "DOCSIGN"))}
    child["HOME"] = str(home)
    child["TMPDIR"] = str(tmp_path / "tmp")  # where the throw-away AIRFLOW_HOME is made
    (tmp_path / "tmp").mkdir()
    proc = subprocess.Popen(
        [str(DOCSIGN), "sandbox", "--data-dir", str(tmp_path / "sb"), "--api-key", "api_clitest"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("SANDBOX_URL=http://127.0.0.1:")
        base = line.split("=", 1)[1]
        assert base.endswith("/api/v2")
        health = requests.get(base.removesuffix("/api/v2") + "/_sandbox/health", timeout=10)
        assert health.status_code == 200
        refused = requests.post(f"{base}/envelope/get-many", json={"envelopeIds": []}, timeout=10)
        assert refused.status_code == 401  # no key
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 128 + 15, proc.stderr.read() if proc.stderr else ""  # SIGTERM, cleanly
    assert list(home.iterdir()) == []
    assert list((tmp_path / "tmp").iterdir()) == []  # the throw-away Airflow home is gone


def test_an_in_process_run_gives_the_caller_its_logging_and_warnings_back(tmp_path: Path) -> None:
    """cli.run() called in-process (python -m forms, tests, notebooks) must not leave the root logger
    silenced and redirected: a later task's INFO lines would be lost (seen on Airflow 2.11)."""
    import logging
    import warnings

    from airflow_provider_docsign.cli import run

    root, pyhanko = logging.getLogger(), logging.getLogger("pyhanko")

    def state() -> tuple[object, ...]:
        return (
            root.level,
            list(root.handlers),
            pyhanko.propagate,
            list(pyhanko.handlers),
            list(warnings.filters),
            list(sys.warnoptions),
        )

    # A stdout handler first, as Airflow's logging config installs one: log_to_stderr removes it, and
    # it must come back in its place.
    stdout_handler = logging.StreamHandler(sys.stdout)
    root.handlers.insert(0, stdout_handler)
    try:
        before = state()
        assert run(["verify", str(tmp_path / "missing.pdf")]) == 2
        assert state() == before
    finally:
        root.removeHandler(stdout_handler)
