"""Shared fixtures: an isolated Airflow home, the sandbox server, a docsign connection, sample PDFs.

Environment defaults are set before anything imports Airflow, so every test process runs with a
throw-away ``AIRFLOW_HOME`` (SQLite) and no example DAGs, whatever the caller's environment holds.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

_HOME = os.environ.get("AIRFLOW_HOME") or ""
if not _HOME:  # run outside .ci/pytest.sh: make a private home and remove it at exit
    _HOME = tempfile.mkdtemp(prefix="docsign-airflow-home-")
    atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
# Under pytest-xdist every worker is its own Airflow: a home, a SQLite database and a Fernet key of
# its own, so two workers never share a metadata database (SQLite serialises writers, and a
# ``db migrate`` beside a running ``dag.test()`` would fail one of them).
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER:
    _HOME = os.path.join(_HOME, f"xdist-{_WORKER}")
    os.makedirs(_HOME, exist_ok=True)
    _shared_db = os.environ.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "")
    if _shared_db.startswith("sqlite"):  # the controller's SQLite file: never shared between workers
        del os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
os.environ["AIRFLOW_HOME"] = _HOME
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")
# One Fernet key for this test process and every ``airflow`` command it starts, as a deployment has
# one: a connection stored by ``airflow connections add`` in a subprocess is then readable here.
os.environ.setdefault("AIRFLOW__CORE__FERNET_KEY", base64.urlsafe_b64encode(os.urandom(32)).decode())
os.environ.setdefault("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", f"sqlite:///{_HOME}/airflow.db")
_DAGS = Path(__file__).resolve().parents[1] / "dags_examples"
os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(_DAGS))
os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "INFO")
# Never let a test reach a real service: the sandbox is the only server tests talk to.
os.environ.pop("AIRFLOW_CONN_DOCSIGN_DEFAULT", None)

import pytest  # noqa: E402
from helpers import SPEC_DIR, conn_json  # noqa: E402

from airflow_provider_docsign.samples import write_sample_pdf  # noqa: E402
from airflow_provider_docsign.sandbox import SandboxServer  # noqa: E402

API_KEY = "api_sandboxtestkey01"

# The ``system`` group talks to a real Documenso; it is collected only when both variables are set
# (``make system-test``). ``.ci/pytest.sh`` clears them for every other run.
SYSTEM_VARIABLES = ("DOCSIGN_SYSTEM_URL", "DOCSIGN_SYSTEM_API_KEY")
collect_ignore = [] if all(os.environ.get(v) for v in SYSTEM_VARIABLES) else ["system"]


#: What starts first (lower first): the longest work, so that no worker is left with it at the end.
#: The distributed stack (minutes), then the live Airflow stack and the api-server modules, then the
#: end-to-end runs; the rest keeps its collection order.
_FIRST = ("tests/distributed/", "tests/e2e/test_livestack.py", "_ui_contracts", "tests/e2e/")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``make check``'s tests ``quick``, and put the longest work first (see :data:`_FIRST`)."""
    for item in items:
        if _quick(item):
            item.add_marker(pytest.mark.quick)
    # A stable sort; ``make test-random`` shuffles after it (pytest-random-order's hook runs later).
    items.sort(key=lambda item: _rank(item.nodeid))


def _group(nodeid: str) -> str:
    """The unit of work a pytest-xdist worker takes whole: the test's module, or for the ``distributed``
    group (tests/distributed/) all of it, since its modules share one stack for the session."""
    path = nodeid.split("::", 1)[0]
    return "tests/distributed/" if path.startswith("tests/distributed/") else path


class _ModulePerWorker:
    """Under pytest-xdist (``make test``'s ``-n WORKERS``), each module runs whole on one worker.

    So a module-scoped fixture (an api-server, an auto-signing sandbox, a built wheel) starts once, and
    no module depends on how tests are spread. Modules run in parallel with each other: each worker has
    its own Airflow home, metadata database, sandbox and S3 server (the top of this file), and every
    server binds a free port. Units are handed out in collection order (longest first, see
    :func:`pytest_collection_modifyitems`), not xdist's default of the most tests first.

    (xdist's own ``--dist loadgroup`` marks cannot do this on pytest 9.2: xdist 3.8 renames a test by
    setting ``item._nodeid``, which pytest 9.2 no longer reads, so every test became its own group.)
    Registered only when xdist is loaded (:func:`pytest_configure`): its hook is unknown without it.
    """

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        from xdist.scheduler import LoadScopeScheduling

        class ModuleScheduling(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                return _group(nodeid)

        config.option.loadscopereorder = False
        return ModuleScheduling(config, log)


def pytest_configure(config: pytest.Config) -> None:
    """Hand xdist the module-per-worker scheduler when it is loaded (``-p no:xdist`` leaves it out)."""
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_ModulePerWorker(), "docsign-module-per-worker")


#: Fixtures that start a server or an Airflow database: a hostile test that uses none is ``quick``.
SERVER_FIXTURES = frozenset({"sandbox_session", "autosign_sandbox", "airflow_db", "moto_endpoint"})


def _quick(item: pytest.Item) -> bool:
    """``make check``'s tests: every unit and contract test, and the hostile tests that need no server."""
    path = item.nodeid.split("::", 1)[0]
    if path.startswith(("tests/unit/", "tests/contract/")):
        return True
    return path.startswith("tests/hostile/") and not SERVER_FIXTURES & set(getattr(item, "fixturenames", ()))


def _rank(nodeid: str) -> int:
    return next((i for i, part in enumerate(_FIRST) if part in nodeid), len(_FIRST))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say that the system tests did not run, and why, at the end of every run without an instance."""
    if collect_ignore:
        missing = " and ".join(v for v in SYSTEM_VARIABLES if not os.environ.get(v))
        count = len(list((Path(__file__).parent / "system").glob("test_*.py")))
        terminalreporter.write_line(
            f"system tests skipped: tests/system ({count} modules) runs against a real Documenso only, and "
            f"{missing} {'is' if ' and ' not in missing else 'are'} not set; run them with "
            "`make system-test` (docs/development.md, 'Testing against a real Documenso')"
        )


@pytest.fixture(scope="session")
def api_key() -> str:
    """The sandbox's API key; tests search captured output for it to prove it never leaks."""
    return API_KEY


@pytest.fixture(scope="session")
def spec_dir() -> Path:
    """The committed contract fixtures: ``recorded/`` real responses and ``openapi-facts.json``."""
    return SPEC_DIR


@pytest.fixture(scope="session")
def sandbox_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    """One sandbox server process for the whole test session, stopped by its handle at the end."""
    # The tests' webhook receivers listen on 127.0.0.1, which the real service (and so the sandbox)
    # refuses unless the instance lists it in NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS.
    with SandboxServer(
        tmp_path_factory.mktemp("sandbox-data"), api_key=API_KEY, webhook_ssrf_bypass_hosts="127.0.0.1"
    ) as server:
        yield server


@pytest.fixture
def sandbox(sandbox_session: SandboxServer) -> Iterator[SandboxServer]:
    """The session sandbox with no pending faults and an empty request log."""
    sandbox_session.clear_faults()
    sandbox_session.clear_requests()
    yield sandbox_session
    sandbox_session.clear_faults()
    sandbox_session.set_clock_offset(0)  # a test that skewed the service's clock puts it back


@pytest.fixture
def docsign_conn(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """Configure ``docsign_default`` (through ``AIRFLOW_CONN_DOCSIGN_DEFAULT``) to reach the sandbox."""
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox))
    return "docsign_default"


@pytest.fixture
def make_pdf(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``make_pdf("a.pdf", pages=2, page_size="LETTER")`` writes a valid PDF under tmp_path."""

    def _make(name: str = "contract.pdf", **kwargs: Any) -> Path:
        kwargs.setdefault("title", Path(name).stem)
        return write_sample_pdf(tmp_path / "pdfs" / name, **kwargs)

    return _make


@pytest.fixture(scope="session")
def airflow_db() -> str:
    """Create the SQLite metadata database once per session (needed by ``dag.test()``)."""
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        check=True,
        capture_output=True,
        env=os.environ.copy(),
        timeout=600,
    )
    return os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 for the session, stopped by its handle at the end.

    One server, one endpoint: Airflow caches an object store's file system per connection id, so a
    server started anew (for another module, in a shuffled order) would leave later tests writing to
    the port of one that is gone. Buckets are made and removed per test by :func:`make_s3_bucket`.
    """
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def make_s3_bucket(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    """Factory: ``make_s3_bucket(bucket, conn_id=...)`` creates ``bucket`` on the moto server, points the
    Airflow ``aws`` connection ``conn_id`` at it and returns a boto3 client; the bucket is emptied and
    deleted after the test."""
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    buckets: list[str] = []

    def _make(bucket: str, *, conn_id: str) -> Any:
        conn = {
            "conn_type": "aws",
            "login": "testing",
            "password": "testing",
            "extra": {"endpoint_url": moto_endpoint, "region_name": "us-east-1"},
        }
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
        client.create_bucket(Bucket=bucket)
        buckets.append(bucket)
        return client

    yield _make
    for bucket in buckets:
        for obj in client.list_objects_v2(Bucket=bucket).get("Contents", []):
            client.delete_object(Bucket=bucket, Key=obj["Key"])
        client.delete_bucket(Bucket=bucket)
