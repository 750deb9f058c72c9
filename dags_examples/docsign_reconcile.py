"""Reconcile: archive every COMPLETED envelope that has no manifest in the archive yet (missed webhooks).

Webhooks are delivered at most a few times (Documenso tries 4 times, at once, and then gives up), so a
receiver that was down, a firewall change or a triggerer restart can lose one. This DAG runs hourly
and makes sure a lost webhook never means a lost contract:

1. ``find_unarchived`` lists the COMPLETED envelopes (``DocsignHook.find_envelopes``, 100 per request;
   root folder only, as the service lists without ``folder_id``) and keeps those whose
   ``<archive_dir>/<envelope_id>/manifest.json`` does not exist, at most ``max_per_run`` of them.
2. ``archive`` (mapped, one task per envelope) downloads, verifies and archives each one with
   ``DocsignArchiveSignedDocumentsOperator``, under the same layout as ``docsign_archive_on_completion``
   (``FILENAME_TEMPLATE``), so an envelope archived by either DAG is found by the other.

It works on Airflow 2.11 too, where it is also the way to archive without one sensor per contract.
Configuration: the ``docsign_default`` connection, params ``archive_dir``, ``work_dir`` (unused here,
kept for symmetry with the other examples) and ``max_per_run``.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

try:
    from airflow.sdk import DAG, Param, task
except ImportError:  # Airflow 2.11
    from airflow.decorators import task
    from airflow.models.dag import DAG
    from airflow.models.param import Param

from airflow_provider_docsign.operators import DocsignArchiveSignedDocumentsOperator

AIRFLOW_HOME = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
ARCHIVE_DIR = os.environ.get("DOCSIGN_EXAMPLE_ARCHIVE_DIR") or os.path.join(AIRFLOW_HOME, "docsign-archive")
WORK_DIR = os.environ.get("DOCSIGN_EXAMPLE_WORK_DIR") or os.path.join(
    tempfile.gettempdir(), "docsign-examples"
)
#: One directory per envelope id: its manifest is <archive_dir>/<envelope_id>/manifest.json.
FILENAME_TEMPLATE = "{envelope_id}/{order:02d}-{title}.pdf"

with DAG(
    dag_id="docsign_reconcile",
    schedule="@hourly",
    start_date=datetime(2025, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["docsign", "example"],
    params={
        "archive_dir": Param(ARCHIVE_DIR, type="string", description="Where signed PDFs are archived."),
        "work_dir": Param(WORK_DIR, type="string"),
        "max_per_run": Param(
            200, type="integer", minimum=1, description="Archive at most this many per run."
        ),
    },
    doc_md=__doc__,
) as dag:

    @task
    def find_unarchived(**context: Any) -> list[str]:
        """COMPLETED envelopes without a manifest in the archive."""
        from airflow_provider_docsign.hooks import DocsignHook

        params = context["params"]
        root = Path(params["archive_dir"])
        missing: list[str] = []
        for envelope in DocsignHook().find_envelopes(status="COMPLETED"):
            if not (root / envelope.id / "manifest.json").exists():
                missing.append(envelope.id)
                if len(missing) >= int(params["max_per_run"]):
                    break
        print(f"{len(missing)} COMPLETED envelope(s) are not archived yet")
        return missing

    DocsignArchiveSignedDocumentsOperator.partial(
        task_id="archive",
        destination="{{ params.archive_dir }}",
        filename_template=FILENAME_TEMPLATE,
    ).expand(envelope_id=find_unarchived())
