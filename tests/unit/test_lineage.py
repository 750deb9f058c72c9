"""OpenLineage facets of create, template-use, archive and export, with the provider installed.

The provider is one of the test tools (pyproject), so these always run in the project's venvs; where it
is not installed the module is skipped, and ``test_lineage_soft.py`` covers that case.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("airflow.providers.openlineage", reason="the OpenLineage provider is not installed")

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
    from airflow_provider_docsign.export.rows import TABLES
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
