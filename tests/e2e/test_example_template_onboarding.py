"""The ``docsign_template_onboarding`` example runs end to end with ``dag.test()`` against the sandbox."""

from __future__ import annotations

import hashlib
import io
import tempfile
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import load_manifests, run_example, sha256_file, task_states
from pypdf import PdfReader

from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.e2e

CUSTOMERS = [
    {
        "id": "N-1",
        "company": "Initech",
        "contact": "Bill Lumbergh",
        "email": "bill@initech.example",
        "amount": "4200.00",
        "start_date": "2027-03-01",
    },
    {
        "id": "N-2",
        "company": "Umbrella",
        "contact": "Alice Abernathy",
        "email": "alice@umbrella.example",
        "amount": "99",
        "start_date": "2027-04-15",
    },
]


def _hook() -> Any:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    return DocsignHook()


def _run(example_env: dict[str, Any]) -> Any:
    return run_example("docsign_template_onboarding", customers=CUSTOMERS, **example_env)


def test_template_onboarding_prefills_and_archives_signed_pdfs(
    example_env: dict[str, Any],
    autosign_sandbox: SandboxServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The tasks run in this process (dag.test()): whatever they put in the temp folder lands here.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    dag_run = _run(example_env)
    assert str(getattr(dag_run.state, "value", dag_run.state)) == "success"
    states = task_states(dag_run)
    assert set(states.values()) == {"success"}, states
    assert sorted(i for t, i in states if t == "create_from_template") == [0, 1]

    archive_dir = Path(example_env["archive_dir"])
    manifests = load_manifests(archive_dir)
    assert sorted(m["external_id"] for _, m in manifests) == [
        f"onboarding-{dag_run.run_id}-N-{n}" for n in (1, 2)
    ]
    hook = _hook()
    for manifest_path, manifest in manifests:
        assert manifest["status"] == "COMPLETED"
        (entry,) = manifest["files"]
        signed = autosign_sandbox.item_bytes(entry["item_id"], "signed")
        archived = Path(entry["uri"].removeprefix("file://"))
        if not archived.is_absolute():
            archived = manifest_path.parent / archived
        assert sha256_file(archived) == hashlib.sha256(signed).hexdigest() == entry["sha256"]
        customer = next(c for c in CUSTOMERS if manifest["external_id"].endswith(c["id"]))
        # The customer's own rendered PDF replaced the template's, and the prefilled values are drawn.
        text = PdfReader(io.BytesIO(signed)).pages[0].extract_text()
        assert f"Agreement with {customer['company']}" in text
        for value in (customer["company"], customer["amount"], customer["start_date"]):
            assert value in text
        envelope = hook.get_envelope(manifest["envelope_id"])
        assert [r.email for r in envelope.recipients] == [customer["email"], "sales@ourcompany.example"]
    rendered = sorted(p.name for p in Path(example_env["work_dir"]).rglob("*.pdf"))
    assert rendered == ["agreement-N-1.pdf", "agreement-N-2.pdf", "template.pdf"]
    # Every PDF went to work_dir: the run left no temporary folder behind (it left two before).
    assert [p.name for p in scratch.iterdir() if p.name.startswith("docsign-")] == []


def test_template_setup_is_idempotent(example_env: dict[str, Any], autosign_sandbox: SandboxServer) -> None:
    _run(example_env)
    _run(example_env)
    titles = [t.title for t in _hook().find_templates(query="Customer onboarding agreement")]
    assert titles == ["Customer onboarding agreement"]
