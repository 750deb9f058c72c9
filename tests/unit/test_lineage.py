"""OpenLineage facets of create, template-use, archive and export (provider installed), and the soft path."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

API_KEY = "api_lineagetestkey01"
SIGNER = {"email": "secret.person@example.test", "name": "Secret Person", "role": "SIGNER"}


class TI:
    """What the OpenLineage listener hands over: the task id and the task's XCom return value."""

    def __init__(self, task_id: str, value: Any) -> None:
        self.task_id = task_id
        self.value = value

    def xcom_pull(self, task_ids: str, key: str) -> Any:
        assert (task_ids, key) == (self.task_id, "return_value")
        return self.value


@pytest.fixture(autouse=True)
def _conn(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = {"conn_type": "docsign", "host": "https://app.documenso.com/api/v2", "password": API_KEY}
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", json.dumps(conn))


def _json(lineage: Any) -> str:
    from openlineage.client.serde import Serde

    return json.dumps([json.loads(Serde.to_json(d)) for d in [*lineage.inputs, *lineage.outputs]])


def _names(datasets: list[Any]) -> list[tuple[str, str]]:
    return [(d.namespace, d.name) for d in datasets]


def test_create_inputs_are_the_pdfs_and_the_output_is_the_envelope(tmp_path: Path) -> None:
    from airflow_provider_docsign.operators import DocsignCreateEnvelopeOperator

    pdf = tmp_path / "nda.pdf"
    op = DocsignCreateEnvelopeOperator(
        task_id="create",
        title="NDA",
        files=[str(pdf), "s3://contracts/2026/order.pdf"],
        recipients=[SIGNER],
        external_id="nda-{{ run_id }}",
    )
    lineage = op.get_openlineage_facets_on_complete(
        TI("create", {"envelope_id": "envelope_abc", "item_ids": []})
    )
    assert _names(lineage.inputs) == [("file", str(pdf)), ("s3://contracts", "2026/order.pdf")]
    assert _names(lineage.outputs) == [("docsign://app.documenso.com", "envelope_abc")]
    text = _json(lineage)
    assert API_KEY not in text
    assert "secret.person" not in text


def test_template_use_inputs_are_the_template_and_the_output_the_envelope() -> None:
    from airflow_provider_docsign.operators import DocsignCreateEnvelopeFromTemplateOperator

    op = DocsignCreateEnvelopeFromTemplateOperator(
        task_id="use", template_id="envelope_template1", recipients=[SIGNER], external_id="x-{{ run_id }}"
    )
    lineage = op.get_openlineage_facets_on_complete(TI("use", {"envelope_id": "envelope_new"}))
    assert _names(lineage.inputs) == [("docsign://app.documenso.com", "template/envelope_template1")]
    assert _names(lineage.outputs) == [("docsign://app.documenso.com", "envelope_new")]
    assert API_KEY not in _json(lineage)


def test_archive_input_is_the_envelope_and_outputs_the_files_and_manifest(tmp_path: Path) -> None:
    from airflow_provider_docsign.operators import DocsignArchiveSignedDocumentsOperator

    op = DocsignArchiveSignedDocumentsOperator(
        task_id="archive", envelope_id="envelope_abc", destination=str(tmp_path)
    )
    manifest = {
        "envelope_id": "envelope_abc",
        "files": [{"uri": f"file://{tmp_path}/a/01-nda.pdf"}],
        "audit_log": {"uri": f"file://{tmp_path}/a/audit-log.pdf"},
        "certificate": None,
        "manifest_uri": f"file://{tmp_path}/a/manifest.json",
    }
    lineage = op.get_openlineage_facets_on_complete(TI("archive", manifest))
    assert _names(lineage.inputs) == [("docsign://app.documenso.com", "envelope_abc")]
    assert _names(lineage.outputs) == [
        ("file", f"{tmp_path}/a/01-nda.pdf"),
        ("file", f"{tmp_path}/a/audit-log.pdf"),
        ("file", f"{tmp_path}/a/manifest.json"),
    ]


def test_export_outputs_are_the_partitions_with_the_documented_schema(tmp_path: Path) -> None:
    from airflow_provider_docsign.export import TABLES
    from airflow_provider_docsign.operators import DocsignExportEnvelopesOperator

    op = DocsignExportEnvelopesOperator(task_id="export", destination=str(tmp_path), pii="drop")
    op.partitions = {t: f"{tmp_path}/{t}/date=2026-11-02" for t in TABLES}  # as execute() leaves it
    lineage = op.get_openlineage_facets_on_complete(TI("export", None))
    assert lineage.inputs == []
    assert _names(lineage.outputs) == [("file", f"{tmp_path}/{t}/date=2026-11-02") for t in sorted(TABLES)]
    for dataset in lineage.outputs:
        table = dataset.name.split("/")[-2]
        fields = [(f.name, f.type) for f in dataset.facets["schema"].fields]
        assert fields == [(c.name, c.type) for c in TABLES[table]]


def test_operators_import_nothing_of_openlineage_until_the_listener_asks(tmp_path: Path) -> None:
    """The soft dependency: importing and building the operators loads no OpenLineage module.

    Airflow's own start-up may read the installed provider's metadata, so the modules loaded after
    ``import airflow`` are the baseline; our package must add none (without the provider installed
    there is then nothing to import at all: see the Airflow 2.11 venv, which does not install it).
    """
    code = textwrap.dedent(
        f"""
        import sys
        import airflow
        from airflow_provider_docsign import _compat
        before = sorted(m for m in sys.modules if "openlineage" in m)
        from airflow_provider_docsign.operators import (
            DocsignArchiveSignedDocumentsOperator, DocsignCreateEnvelopeFromTemplateOperator,
            DocsignCreateEnvelopeOperator, DocsignExportEnvelopesOperator)
        import airflow_provider_docsign.lineage
        DocsignCreateEnvelopeOperator(task_id="c", title="t", files=["a.pdf"], recipients=[], external_id="x")
        DocsignCreateEnvelopeFromTemplateOperator(task_id="u", template_id="envelope_t", recipients=[])
        where = {str(tmp_path)!r}
        DocsignArchiveSignedDocumentsOperator(task_id="a", envelope_id="envelope_x", destination=where)
        DocsignExportEnvelopesOperator(task_id="e", destination=where)
        after = sorted(m for m in sys.modules if "openlineage" in m)
        print("ADDED", sorted(set(after) - set(before)))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert "ADDED []" in out.stdout, out.stdout + out.stderr
