"""OpenLineage facets of the Docsign operators (a soft dependency).

``apache-airflow-providers-openlineage`` is imported only inside the functions here, which Airflow's
OpenLineage listener calls through each operator's ``get_openlineage_facets_on_complete``; without
the provider the listener does not exist, nothing here is imported and nothing changes.

Datasets:

- an **envelope** is a dataset in the namespace ``docsign://<host of the connection>`` (for example
  ``docsign://app.documenso.com``), named by its envelope id; a template by ``template/<id>``. These
  are the ``docsign://`` URIs of :mod:`airflow_provider_docsign.assets`, the scheme Airflow's assets
  use too (``docsign://app.documenso.com/envelope_abc`` as an asset is this dataset);
- a **file** (a PDF sent, an archived file, the manifest, an export partition) is named the way
  OpenLineage names files: namespace ``file`` (local) or ``<scheme>://<bucket>`` (object storage) and
  the path as the name.

Facets carry ids, URIs and the export's column names only: no API key, e-mail, name or signing token.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from airflow_provider_docsign.assets import namespace

__all__ = [
    "archive_facets",
    "batch_archive_facets",
    "bulk_send_facets",
    "create_facets",
    "envelope_namespace",
    "export_facets",
    "file_dataset_parts",
    "template_use_facets",
]


def envelope_namespace(base_url: str) -> str:
    """``docsign://<host[:port]>`` of the service's base URL (no credentials, path or scheme)."""
    return namespace(base_url)


def file_dataset_parts(uri: Any) -> tuple[str, str]:
    """``(namespace, name)`` of a local path or an object-storage URI, as OpenLineage names files."""
    if hasattr(uri, "protocol"):  # an ObjectStoragePath: its str() embeds the connection id
        from airflow_provider_docsign.export.store import uri_of

        uri = uri_of(uri)
    text = str(uri)
    if "://" not in text:
        return "file", os.path.abspath(text)
    parts = urlsplit(text)
    if parts.scheme in ("file", "local"):
        return "file", parts.path
    return f"{parts.scheme}://{parts.netloc}", parts.path.lstrip("/")


def _return_value(task_instance: Any) -> Any:
    try:
        return task_instance.xcom_pull(task_ids=task_instance.task_id, key="return_value")
    except Exception:
        return None


def _namespace(operator: Any) -> str:
    return envelope_namespace(operator.hook.settings.base_url)


def _files(files: Any) -> list[Any]:
    if files is None:
        return []
    if isinstance(files, str | os.PathLike) or hasattr(files, "protocol"):
        return [files]
    if isinstance(files, Iterable):
        return [f for f in files if isinstance(f, str | os.PathLike) or hasattr(f, "protocol")]
    return []


def _lineage(inputs: Sequence[tuple[str, str]], outputs: Sequence[Any]) -> Any:
    from airflow.providers.common.compat.openlineage.facet import Dataset
    from airflow.providers.openlineage.extractors import OperatorLineage

    out = [o if not isinstance(o, tuple) else Dataset(namespace=o[0], name=o[1]) for o in outputs]
    return OperatorLineage(inputs=[Dataset(namespace=ns, name=name) for ns, name in inputs], outputs=out)


def create_facets(operator: Any, task_instance: Any) -> Any:
    """Create: the PDFs sent are the inputs, the envelope is the output."""
    result = _return_value(task_instance)
    inputs = [file_dataset_parts(f) for f in _files(getattr(operator, "files", None))]
    outputs = []
    if isinstance(result, Mapping) and result.get("envelope_id"):
        outputs.append((_namespace(operator), str(result["envelope_id"])))
    return _lineage(inputs, outputs)


def template_use_facets(operator: Any, task_instance: Any) -> Any:
    """Template use: the template (and any PDFs given) are the inputs, the new envelope the output."""
    result = _return_value(task_instance)
    namespace = _namespace(operator)
    inputs = [file_dataset_parts(f) for f in _files(getattr(operator, "files", None))]
    template_id = getattr(operator, "template_id", None)
    if template_id is not None and str(template_id):
        inputs.append((namespace, f"template/{template_id}"))
    outputs = []
    if isinstance(result, Mapping) and result.get("envelope_id"):
        outputs.append((namespace, str(result["envelope_id"])))
    return _lineage(inputs, outputs)


def archive_facets(operator: Any, task_instance: Any) -> Any:
    """Archive: the envelope is the input; the archived files and the manifest are the outputs."""
    manifest = _return_value(task_instance)
    if not isinstance(manifest, Mapping):
        return _lineage([], [])
    inputs = [(_namespace(operator), str(manifest.get("envelope_id")))] if manifest.get("envelope_id") else []
    uris = [f.get("uri") for f in manifest.get("files") or [] if isinstance(f, Mapping)]
    for key in ("audit_log", "certificate"):
        entry = manifest.get(key)
        if isinstance(entry, Mapping):
            uris.append(entry.get("uri"))
    uris.append(manifest.get("manifest_uri"))
    return _lineage(inputs, [file_dataset_parts(u) for u in uris if u])


def bulk_send_facets(operator: Any, task_instance: Any) -> Any:
    """Bulk send: the rows file (when a file) is the input; the result table is the output.

    The campaign's envelopes are not listed one by one: the result table names them.
    """
    result = _return_value(task_instance)
    inputs = [file_dataset_parts(f) for f in _files(getattr(operator, "rows", None))]
    outputs = []
    if isinstance(result, Mapping) and result.get("result_table"):
        outputs.append(file_dataset_parts(result["result_table"]))
    return _lineage(inputs, outputs)


def batch_archive_facets(operator: Any, task_instance: Any) -> Any:
    """Batch archive: the destination folder is the output (one manifest per envelope inside it)."""
    result = _return_value(task_instance)
    inputs = []
    if getattr(operator, "result_table", None) is not None:
        inputs = [file_dataset_parts(f) for f in _files(operator.result_table)]
    outputs = []
    if isinstance(result, Mapping) and result.get("destination"):
        outputs.append(file_dataset_parts(result["destination"]))
    return _lineage(inputs, outputs)


def export_facets(partitions: Mapping[str, str], columns: Mapping[str, Sequence[tuple[str, str]]]) -> Any:
    """Export: one output per table partition, each with a schema facet of the documented columns."""
    from airflow.providers.common.compat.openlineage.facet import (
        Dataset,
        SchemaDatasetFacet,
        SchemaDatasetFacetFields,
    )

    outputs = []
    for table, uri in sorted(partitions.items()):
        namespace, name = file_dataset_parts(uri)
        fields = [SchemaDatasetFacetFields(name=n, type=t) for n, t in columns.get(table, ())]
        outputs.append(
            Dataset(namespace=namespace, name=name, facets={"schema": SchemaDatasetFacet(fields=fields)})
        )
    return _lineage([], outputs)
