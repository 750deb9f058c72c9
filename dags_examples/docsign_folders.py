"""Folders: file each month's contracts in a folder of their own, then list what is in it.

What this DAG shows:

* ``month_folder`` creates the folder ``Contracts YYYY-MM`` for the run's month. The operator is
  idempotent: when a folder of that name already exists under the same parent it returns that one,
  so every run of the month (and every retry) shares one folder;
* ``create_nda`` and ``create_order_form`` create their envelopes directly in that folder
  (``folder_id`` from the folder task's XCom), each with a templated ``external_id``;
* the envelopes are sent, waited for with one deferrable sensor, and archived;
* ``list_folder`` uses :class:`~airflow_provider_docsign.hooks.docsign.DocsignHook` inside a task
  to list the folder's envelopes. Note that the service's search only sees envelopes at the root
  unless a ``folder_id`` is given, which is why the folder id is passed explicitly.

Configuration: the ``docsign_default`` connection, the params ``archive_dir`` and ``work_dir``
(defaults from ``$DOCSIGN_EXAMPLE_ARCHIVE_DIR`` / ``$DOCSIGN_EXAMPLE_WORK_DIR``), and
``$DOCSIGN_EXAMPLE_POKE_INTERVAL`` (seconds, default 60).
"""

from __future__ import annotations

import os
import re
import tempfile
from datetime import datetime, timedelta
from typing import Any

try:
    from airflow.sdk import DAG, Param, task
except ImportError:  # Airflow 2.11
    from airflow.decorators import task
    from airflow.models.dag import DAG
    from airflow.models.param import Param

from airflow_provider_docsign.operators import (
    DocsignArchiveSignedDocumentsOperator,
    DocsignCreateEnvelopeOperator,
    DocsignCreateFolderOperator,
    DocsignDistributeEnvelopeOperator,
)
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

AIRFLOW_HOME = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
ARCHIVE_DIR = os.environ.get("DOCSIGN_EXAMPLE_ARCHIVE_DIR") or os.path.join(AIRFLOW_HOME, "docsign-archive")
WORK_DIR = os.environ.get("DOCSIGN_EXAMPLE_WORK_DIR") or os.path.join(
    tempfile.gettempdir(), "docsign-examples"
)
POKE_INTERVAL = float(os.environ.get("DOCSIGN_EXAMPLE_POKE_INTERVAL", "60"))

SIGNER = {"email": "procurement@customer.example", "name": "Pat Procurement", "role": "SIGNER"}
SIGNATURE = {"identifier": 0, "type": "SIGNATURE", "page": 1, "positionX": 10.0, "positionY": 80.0}

with DAG(
    dag_id="docsign_folders",
    description="A folder per month (idempotent), envelopes created in it, and a listing.",
    schedule=None,
    start_date=datetime(2024, 1, 1),
    catchup=False,
    tags=["docsign", "example"],
    default_args={"retries": 2, "retry_delay": timedelta(seconds=10)},
    params={
        "archive_dir": Param(ARCHIVE_DIR, type="string"),
        "work_dir": Param(WORK_DIR, type="string"),
    },
    doc_md=__doc__,
) as dag:

    @task(multiple_outputs=True)
    def prepare(
        params: dict[str, Any] | None = None,
        run_id: str | None = None,
        logical_date: Any = None,
        dag_run: Any = None,
    ) -> dict[str, str]:
        """Name the month's folder and render the two PDFs of this run."""
        from airflow_provider_docsign.samples import storage_path, store_sample_pdf

        assert params is not None
        # Airflow 3 runs triggered manually may have no logical date: fall back to run_after.
        when = logical_date or getattr(dag_run, "run_after", None) or datetime.now()
        run_folder = re.sub(r"[^A-Za-z0-9._-]+", "_", str(run_id))
        nda = storage_path(params["work_dir"], run_folder, "nda.pdf")
        order_form = storage_path(params["work_dir"], run_folder, "order-form.pdf")
        return {
            "folder_name": f"Contracts {when:%Y-%m}",
            "nda": store_sample_pdf(nda, title="Mutual NDA"),
            "order_form": store_sample_pdf(order_form, title="Order form"),
        }

    prepared = prepare()

    month_folder = DocsignCreateFolderOperator(task_id="month_folder", name=prepared["folder_name"])
    folder_id = month_folder.output

    create_nda = DocsignCreateEnvelopeOperator(
        task_id="create_nda",
        title="Mutual NDA",
        files=[prepared["nda"]],
        recipients=[{**SIGNER, "fields": [{**SIGNATURE, "width": 30.0, "height": 8.0}]}],
        folder_id=folder_id,
        external_id="nda-{{ run_id }}",
    )
    create_order_form = DocsignCreateEnvelopeOperator(
        task_id="create_order_form",
        title="Order form",
        files=[prepared["order_form"]],
        recipients=[{**SIGNER, "fields": [{**SIGNATURE, "width": 30.0, "height": 8.0}]}],
        folder_id=folder_id,
        external_id="order-form-{{ run_id }}",
    )

    @task
    def collect_ids(*created: dict[str, Any]) -> list[str]:
        """The ids of the envelopes created in the folder."""
        return [result["envelope_id"] for result in created]

    envelope_ids = collect_ids(create_nda.output, create_order_form.output)

    distribute = DocsignDistributeEnvelopeOperator.partial(task_id="distribute").expand(
        envelope_id=envelope_ids
    )

    wait_for_signatures = DocsignEnvelopeSensor(
        task_id="wait_for_signatures",
        envelope_ids=envelope_ids,
        deferrable=True,
        poke_interval=POKE_INTERVAL,
        timeout=timedelta(days=30),
    )

    archive = DocsignArchiveSignedDocumentsOperator.partial(
        task_id="archive", destination="{{ params.archive_dir }}"
    ).expand(envelope_id=envelope_ids)

    @task
    def list_folder(folder_id: str) -> list[dict[str, Any]]:
        """List the envelopes filed in the month's folder (the hook is only built at run time)."""
        from airflow_provider_docsign.hooks.docsign import DocsignHook

        hook = DocsignHook(docsign_conn_id="docsign_default")
        listing = [
            {
                "id": env.id,
                "title": env.title,
                "status": getattr(env.status, "value", env.status),
                "external_id": env.external_id,
            }
            for env in hook.find_envelopes(folder_id=folder_id)
        ]
        for row in listing:
            print(f"{row['status']:<10} {row['id']}  {row['title']}  ({row['external_id']})")
        return listing

    distribute >> wait_for_signatures >> archive >> list_folder(folder_id)
