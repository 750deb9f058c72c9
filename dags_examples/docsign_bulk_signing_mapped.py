"""A few envelopes, one task each: dynamic task mapping, one sensor for all of them.

Use this shape for **tens** of envelopes that each deserve their own task instance: one create, one
distribute and one archive task per customer, each with its own log, retries and "clear" button, and
room for per-envelope steps in between. For campaigns (hundreds to tens of thousands of rows) use
``docsign_bulk_signing`` instead: one bulk task sends the whole table at the service's rate limit,
resumes exactly where it stopped, and writes a result table. Airflow's per-task overhead holds this
mapped shape to 30-50 envelopes a minute on LocalExecutor, against about 900 for the bulk task
(``bench/bench_bulk.py``).

What this DAG shows:

* ``prepare`` renders one PDF per customer in the ``customers`` param and builds the create
  arguments for each, including an ``external_id`` made of the run id and the customer key, so that
  a retried mapped task adopts the envelope it already created instead of making a duplicate;
* ``create_envelope`` and ``distribute`` are mapped: one task instance per customer;
* ``wait_for_signatures`` is a *single* deferrable sensor on the whole list of envelope ids. It reads
  them in batches of 20 per request, so waiting on 500 envelopes costs 25 requests per poll, and it
  holds no worker slot while people sign;
* ``archive`` is mapped again: each envelope's signed PDFs go to their own folder with their own
  ``manifest.json``.

Configuration: the ``docsign_default`` connection, the params ``customers``, ``archive_dir`` and
``work_dir`` (defaults from ``$DOCSIGN_EXAMPLE_ARCHIVE_DIR`` / ``$DOCSIGN_EXAMPLE_WORK_DIR``, see
``docsign_contract_signing``), and ``$DOCSIGN_EXAMPLE_POKE_INTERVAL`` (seconds, default 60).
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
    DocsignDistributeEnvelopeOperator,
)
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

AIRFLOW_HOME = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
ARCHIVE_DIR = os.environ.get("DOCSIGN_EXAMPLE_ARCHIVE_DIR") or os.path.join(AIRFLOW_HOME, "docsign-archive")
WORK_DIR = os.environ.get("DOCSIGN_EXAMPLE_WORK_DIR") or os.path.join(
    tempfile.gettempdir(), "docsign-examples"
)
POKE_INTERVAL = float(os.environ.get("DOCSIGN_EXAMPLE_POKE_INTERVAL", "60"))

DEFAULT_CUSTOMERS = [
    {"id": "C-1001", "name": "Ada Lovelace", "email": "ada@analytical.example"},
    {"id": "C-1002", "name": "Grace Hopper", "email": "grace@cobol.example"},
    {"id": "C-1003", "name": "Alan Turing", "email": "alan@bletchley.example"},
]


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


with DAG(
    dag_id="docsign_bulk_signing_mapped",
    description="A few envelopes, one task each (dynamic task mapping), one sensor for all, mapped archive.",
    schedule=None,
    start_date=datetime(2024, 1, 1),
    catchup=False,
    tags=["docsign", "example"],
    default_args={"retries": 2, "retry_delay": timedelta(seconds=10)},
    params={
        "customers": Param(
            DEFAULT_CUSTOMERS,
            type="array",
            description="Customers to send a renewal to: objects with id, name and email.",
        ),
        "archive_dir": Param(ARCHIVE_DIR, type="string"),
        "work_dir": Param(WORK_DIR, type="string"),
    },
    doc_md=__doc__,
) as dag:

    @task
    def prepare(params: dict[str, Any] | None = None, run_id: str | None = None) -> list[dict[str, Any]]:
        """Render each customer's PDF and return the keyword arguments of their envelope."""
        from airflow_provider_docsign.samples import storage_path, store_sample_pdf

        assert params is not None
        kwargs = []
        for customer in params["customers"]:
            # A URI on the work_dir's store, not a worker's local file: each mapped create may run
            # on another worker.
            target = storage_path(
                params["work_dir"], _safe(str(run_id)), f"renewal-{_safe(customer['id'])}.pdf"
            )
            pdf = store_sample_pdf(target, title=f"Renewal for {customer['name']}")
            kwargs.append(
                {
                    "title": f"Contract renewal - {customer['name']}",
                    "files": [pdf],
                    "recipients": [
                        {
                            "email": customer["email"],
                            "name": customer["name"],
                            "role": "SIGNER",
                            "fields": [
                                {
                                    "identifier": 0,
                                    "type": "SIGNATURE",
                                    "page": 1,
                                    "positionX": 10.0,
                                    "positionY": 80.0,
                                    "width": 30.0,
                                    "height": 8.0,
                                }
                            ],
                        }
                    ],
                    # Mapped values coming from XCom are not rendered as templates, so the id is built
                    # here: unique per run and customer, which makes a retried create safe.
                    "external_id": f"renewal-{run_id}-{customer['id']}",
                }
            )
        return kwargs

    create_envelope = DocsignCreateEnvelopeOperator.partial(
        task_id="create_envelope", meta={"subject": "Please sign your renewal"}
    ).expand_kwargs(prepare())

    @task
    def collect_ids(results: list[dict[str, Any]]) -> list[str]:
        """The envelope ids of all mapped creates, in customer order."""
        # One slice reads every mapped result at once. Iterating the lazy sequence instead reads one
        # past the end, which Airflow 3 logs as an "[error] XCom not found" line in a successful run.
        return [result["envelope_id"] for result in results[:]]

    envelope_ids = collect_ids(create_envelope.output)

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

    distribute >> wait_for_signatures >> archive
