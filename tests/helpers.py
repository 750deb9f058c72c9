"""Payload builders shared by unit and integration tests (imported as ``helpers``: tests/ is on sys.path)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.sandbox import SandboxServer

# The Documenso version the contract fixtures were recorded from (and the sandbox follows).
DOCUMENSO_VERSION = "2.17"
# Committed contract fixtures: ``recorded/`` real responses and ``openapi-facts.json``, the facts-only
# extract of that version's OpenAPI document made by ``scripts/extract_contract.py``.
SPEC_DIR = Path(__file__).resolve().parent / "contract" / "data" / f"documenso-{DOCUMENSO_VERSION}"

T = TypeVar("T")


def sig(**overrides: Any) -> dict[str, Any]:
    """A SIGNATURE field on page 1 of the first document, with any key overridden."""
    field = {
        "identifier": 0,
        "type": "SIGNATURE",
        "page": 1,
        "positionX": 10,
        "positionY": 10,
        "width": 20,
        "height": 5,
    }
    field.update(overrides)
    return field


def signer(
    *fields: dict[str, Any], email: str = "signer@example.com", name: str = "Sam", **overrides: Any
) -> dict[str, Any]:
    """A SIGNER recipient with ``fields`` (one :func:`sig` when none are given), any key overridden."""
    rec = {"email": email, "name": name, "role": "SIGNER", "fields": list(fields) or [sig()]}
    rec.update(overrides)
    return rec


def numbered_signers(count: int) -> list[dict[str, Any]]:
    """``count`` SIGNERs (signer0@example.test, ...), each with a signature field lower on page 1."""
    return [
        signer(sig(positionY=10 + 10 * i), email=f"signer{i}@example.test", name=f"Signer {i}")
        for i in range(count)
    ]


def conn_json(server: SandboxServer, *, password: str | None = None, **extra: Any) -> str:
    """A ``docsign`` connection in Airflow's JSON form pointing at ``server``, with fast retries.

    ``password`` replaces the sandbox's API key (to test a refused key); ``extra`` adds or overrides extras.
    """
    extras = {"max_retries": 3, "backoff_factor": 0.01, "max_retry_wait": 2, "timeout": 10}
    extras.update(extra)
    return json.dumps(
        {
            "conn_type": "docsign",
            "host": server.base_url,
            "password": server.api_key if password is None else password,
            "extra": extras,
        }
    )


def tsa_conn_json(server: SandboxServer, **extra: Any) -> str:
    """An ``http`` connection in Airflow's JSON form to the sandbox's TSA, its certificate pinned.

    ``extra`` adds extras (``timeout``...).
    """
    pinned = {"trusted_certificates": server.tsa_certificate_pem().decode("ascii"), **extra}
    return json.dumps({"conn_type": "http", "host": server.tsa_url, "extra": pinned})


def completed_envelope(
    hook: DocsignHook, sandbox: SandboxServer, files: list[Path], *, title: str, external_id: str | None
) -> str:
    """An envelope of ``files`` for one signer, distributed and then signed by the sandbox: COMPLETED."""
    recipient = signer(email="signer@example.test", name="Sam Signer")
    envelope_id = hook.create_envelope(
        title=title, files=files, recipients=[recipient], external_id=external_id
    )
    hook.distribute_envelope(envelope_id)
    sandbox.complete(envelope_id)
    sandbox.wait_status(envelope_id, "COMPLETED", timeout=20)
    return envelope_id


def self_signed_certificate(cn: str, *, serial: int = 4242) -> tuple[Any, Any]:
    """An EC key and a self-signed certificate for ``cn``, made with ``cryptography`` alone.

    Deliberately not the sandbox's signer code: a verifier test built on it proves the verifier does not
    depend on how the sandbox signs.
    """
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .sign(key, hashes.SHA256())
    )
    return key, cert


def load_script(name: str) -> Any:
    """Import ``scripts/<name>.py`` (not a package) as a module, for unit tests of the scripts."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"docsign_script_{name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class FakeTI:
    """The parts of a task instance the operators use: ``try_number`` and ``xcom_push``."""

    def __init__(self, try_number: int = 1) -> None:
        self.try_number = try_number
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        json.dumps(value)  # XCom values must be JSON-safe
        self.pushed[key] = value


def ctx(try_number: int = 1) -> Any:
    return {"ti": FakeTI(try_number)}


def asset_events(uri: str) -> list[dict[str, Any]]:
    """Asset (Dataset on 2.11) events recorded in the metadata DB for ``uri``."""
    from airflow.utils.session import create_session

    from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS

    if AIRFLOW_V_3_0_PLUS:
        from airflow.models.asset import AssetEvent, AssetModel

        with create_session() as session:
            rows = (
                session.query(AssetEvent)
                .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
                .filter(AssetModel.uri == uri)
                .all()
            )
            return [dict(r.extra or {}) for r in rows]
    from airflow.models.dataset import DatasetEvent, DatasetModel

    with create_session() as session:
        rows = (
            session.query(DatasetEvent)
            .join(DatasetModel, DatasetEvent.dataset_id == DatasetModel.id)
            .filter(DatasetModel.uri == uri)
            .all()
        )
        return [dict(r.extra or {}) for r in rows]


def race_a_delayed_create(
    sandbox: SandboxServer, path: str, this_run: Callable[[], T], other_run: Callable[[], None]
) -> T:
    """Two runs at once: this run's ``POST path`` waits 3 s at the sandbox while ``other_run`` goes.

    ``other_run`` starts (in a thread) once this run's create has reached the sandbox (its delay fault
    is taken), so it finds nothing yet and creates its own, which is then the older one; ``this_run``
    runs on the main thread (on Airflow 2.11 an operator runs there only). Bounded: the wait for the
    fault 20 s, the thread's join 30 s.
    """
    fault = sandbox.inject_fault("POST", path, action="delay", delay=3)

    def other() -> None:
        deadline = time.monotonic() + 20
        while fault in {f["id"] for f in sandbox.faults()} and time.monotonic() < deadline:
            time.sleep(0.02)  # until this run's create has reached the service
        other_run()

    thread = threading.Thread(target=other)
    thread.start()
    try:
        return this_run()
    finally:
        thread.join(timeout=30)
