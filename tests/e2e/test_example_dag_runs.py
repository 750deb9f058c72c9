"""Each example DAG runs for real with ``dag.test()`` against the sandbox.

The sandbox's signers sign one second after an envelope is sent, so the deferrable sensors really
defer and resume. Archived files are checked byte for byte against what the sandbox serves as the
signed version of each item.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import (
    airflow_cli,
    connections_add,
    load_manifests,
    run_example,
    sandbox_conn_json,
    sha256_file,
    task_states,
)

from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.service.models import EnvelopeStatus

pytestmark = pytest.mark.e2e


def _state(value: Any) -> str:
    return str(getattr(value, "value", value))


def _file_entries(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return list(manifest["files"])


def _assert_archived_signed_bytes(
    sandbox: SandboxServer, manifest_path: Path, manifest: dict[str, Any], archive_dir: Path
) -> None:
    """Every archived PDF is inside the archive and equals the sandbox's signed bytes."""
    for entry in _file_entries(manifest):
        path = _local_path(entry["uri"], manifest_path)
        assert path.resolve().is_relative_to(archive_dir.resolve())
        expected = hashlib.sha256(sandbox.item_bytes(entry["item_id"], "signed")).hexdigest()
        assert sha256_file(path) == expected == entry["sha256"]
        # The signed version really differs from the upload, so this proves the *signed* PDF was kept.
        assert expected != hashlib.sha256(sandbox.item_bytes(entry["item_id"], "original")).hexdigest()
        assert path.read_bytes().startswith(b"%PDF-")


def _local_path(uri: str, manifest_path: Path) -> Path:
    if uri.startswith("file://"):
        return Path(uri[len("file://") :])
    path = Path(uri)
    return path if path.is_absolute() else manifest_path.parent / path


def _hook() -> Any:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    return DocsignHook()


def test_contract_signing_runs_to_success_and_archives_signed_pdfs(
    example_env: dict[str, Any],
    autosign_sandbox: SandboxServer,
    api_key: str,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    dag_run = run_example("docsign_contract_signing", **example_env)
    out, err = capfd.readouterr()
    logs = out + err + caplog.text
    assert "Service agreement" in logs  # the task logs were captured (stdout on 3.x, logging on 2.11)
    assert api_key not in logs  # never in task logs, rendered templates or XCom

    assert _state(dag_run.state) == "success"
    states = task_states(dag_run)
    assert set(states.values()) == {"success"}, states
    archive_dir = Path(example_env["archive_dir"])
    manifests = load_manifests(archive_dir)
    assert len(manifests) == 1
    manifest_path, manifest = manifests[0]
    assert manifest["external_id"] == f"contract-{dag_run.run_id}-ACME-001"
    assert manifest["status"] == "COMPLETED"
    # Three PDFs, renamed and reordered by the DAG: the added price schedule is second.
    assert [(e["order"], e["title"]) for e in _file_entries(manifest)] == [
        (1, "Service agreement"),
        (2, "Price schedule"),
        (3, "Data processing annex"),
    ]
    _assert_archived_signed_bytes(autosign_sandbox, manifest_path, manifest, archive_dir)
    # Every archived PDF is sealed by the sandbox, verified, and trusted through the pinned fingerprint.
    for entry in _file_entries(manifest):
        (check,) = entry["signature"]["signatures"]
        assert (check["intact"], check["valid"], check["coverage"]) == (True, True, "entire_file")
        assert check["trusted"] is True
    audit = manifest["audit_log"]
    assert _local_path(audit["uri"], manifest_path).read_bytes().startswith(b"%PDF-")
    assert audit["signature"]["signed"] is False

    envelope = _hook().get_envelope(manifest["envelope_id"])
    assert envelope.status == EnvelopeStatus.COMPLETED
    assert [r.email for r in envelope.recipients] == ["jane.doe@acme.example", "legal@ourcompany.example"]
    # Fields on both of the two files the envelope was created from, for both signers.
    first_two = {manifest["files"][0]["item_id"], manifest["files"][2]["item_id"]}
    for recipient in envelope.recipients:
        on_items = {f.envelope_item_id for f in envelope.fields if f.recipient_id == recipient.id}
        assert on_items == first_two


def test_dag_test_finds_the_connection_in_the_metadata_database(
    example_env: dict[str, Any], autosign_sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``airflow dags test`` with ``docsign_default`` stored by ``airflow connections add``, as ``make demo``.

    On Airflow 3 the deferred wait's trigger runs inside ``dag.test()`` with a supervisor channel that
    has no ``asend``, so the SDK's async look-up finds only environment variables there; the provider
    falls back to the sync look-up in exactly that case (``_compat.aget_connection``).
    """
    monkeypatch.delenv("AIRFLOW_CONN_DOCSIGN_DEFAULT")
    # The tests' metadata database and Fernet key, and no AIRFLOW_CONN_* at all.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    connections_add(env, "docsign_default", json.loads(sandbox_conn_json(autosign_sandbox)))
    try:
        dag_run = run_example("docsign_contract_signing", **example_env)
    finally:
        airflow_cli(env, "connections", "delete", "docsign_default")
    states = task_states(dag_run)
    assert states[("wait_for_signatures", -1)] == "success", states
    assert _state(dag_run.state) == "success", states
    [(_, manifest)] = load_manifests(Path(example_env["archive_dir"]))
    assert manifest["status"] == "COMPLETED"


def test_bulk_signing_maps_one_envelope_per_customer(
    example_env: dict[str, Any], autosign_sandbox: SandboxServer
) -> None:
    customers = [
        {"id": "K-1", "name": "Kim One", "email": "kim1@example.test"},
        {"id": "K-2", "name": "Kim Two", "email": "kim2@example.test"},
        {"id": "K-3", "name": "Kim Three", "email": "kim3@example.test"},
        {"id": "K-4", "name": "Kim Four", "email": "kim4@example.test"},
    ]
    dag_run = run_example("docsign_bulk_signing_mapped", customers=customers, **example_env)

    assert _state(dag_run.state) == "success"
    states = task_states(dag_run)
    assert set(states.values()) == {"success"}, states
    assert sorted(i for t, i in states if t == "create_envelope") == [0, 1, 2, 3]
    assert sorted(i for t, i in states if t == "archive") == [0, 1, 2, 3]
    assert [i for t, i in states if t == "wait_for_signatures"] == [-1]  # one sensor for all

    archive_dir = Path(example_env["archive_dir"])
    manifests = load_manifests(archive_dir)
    assert sorted(m["external_id"] for _, m in manifests) == [
        f"renewal-{dag_run.run_id}-K-{n}" for n in range(1, 5)
    ]
    for manifest_path, manifest in manifests:
        assert len(manifest["files"]) == 1
        _assert_archived_signed_bytes(autosign_sandbox, manifest_path, manifest, archive_dir)


def test_folders_dag_is_idempotent_per_month(
    example_env: dict[str, Any], autosign_sandbox: SandboxServer
) -> None:
    first = run_example("docsign_folders", **example_env)
    second = run_example("docsign_folders", **example_env)

    for dag_run in (first, second):
        assert _state(dag_run.state) == "success"
        assert set(task_states(dag_run).values()) == {"success"}
    hook = _hook()
    month_folders = [f for f in hook.list_folders() if f.name.startswith("Contracts ")]
    assert len(month_folders) == 1, month_folders
    in_folder = list(hook.find_envelopes(folder_id=month_folders[0].id))
    expected = {f"{kind}-{run.run_id}" for run in (first, second) for kind in ("nda", "order-form")}
    assert {e.external_id for e in in_folder} >= expected
    archive_dir = Path(example_env["archive_dir"])
    manifests = load_manifests(archive_dir)
    assert len(manifests) == 4
    for manifest_path, manifest in manifests:
        assert manifest["status"] == "COMPLETED"
        _assert_archived_signed_bytes(autosign_sandbox, manifest_path, manifest, archive_dir)


@pytest.fixture
def quiet_sandbox(tmp_path: Path, api_key: str) -> Iterator[SandboxServer]:
    """A sandbox whose signers never sign by themselves; stopped by its handle."""
    with SandboxServer(tmp_path / "no-autosign", api_key=api_key) as server:
        yield server


def test_rejected_signer_fails_at_the_sensor_and_archives_nothing(
    example_env: dict[str, Any],
    quiet_sandbox: SandboxServer,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    reason = "Clause 7 caps our liability too low"
    # Not the module's auto-signing sandbox (it signs 1 s after sending): on a busy machine that
    # signature could land before the DAG records the rejection, which is then refused.
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", sandbox_conn_json(quiet_sandbox))
    dag_run = run_example("docsign_rejected_signer", reason=reason, **example_env)

    assert _state(dag_run.state) == "failed"
    states = task_states(dag_run)
    assert states[("record_rejection", -1)] == "success"
    assert states[("wait_for_signatures", -1)] == "failed"
    assert states[("archive", -1)] == "upstream_failed"
    assert list(Path(example_env["archive_dir"]).rglob("*")) == []
    out, err = capfd.readouterr()
    # Airflow 3 task logs reach stdout (structlog); Airflow 2.11 ones go through logging (caplog).
    log = "\n".join((out, err, caplog.text))
    assert "AirflowFailException" in log
    # The sensor's failure names the envelope's status and the signer's reason on one line.
    assert [line for line in log.splitlines() if "is REJECTED" in line and reason in line]
