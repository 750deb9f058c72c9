"""Onboarding from a template: the standard contract for every new customer, with their data filled in.

What this DAG shows:

* ``render_template_pdf`` and ``setup_template`` make sure the template exists. A legal or sales person
  would normally design it once in the web app; here it is created from code so that the example runs
  on a fresh machine. ``DocsignCreateTemplateOperator`` finds it by title on later runs instead of
  creating another one. Its fields carry labels (``company``, ``amount``, ``start_date``) so that the
  pipeline can prefill them by label, whatever ids the service gave them;
* ``prepare`` reads the new customers from the ``customers`` param and renders a per-customer PDF to
  object storage (``work_dir``: any ``ObjectStoragePath`` URL such as ``s3://bucket/onboarding``, or a
  local directory on a laptop). It builds, for each customer, the recipients (mapped by the template's
  placeholder names), the prefill values and an ``external_id`` unique per run and customer, so that a
  retried task adopts the envelope it already created;
* ``create_from_template`` is mapped: one envelope per customer, created from the template with the
  customer's PDF in place of the template's, prefilled and sent at once. Every call is checked against
  the template before anything is sent (mapped signers, value types, enough pages in the replacement);
* one deferrable sensor waits for all envelopes, then ``archive`` stores each one's signed PDFs.

Configuration: the ``docsign_default`` connection, the params ``customers``, ``work_dir`` (default
``$DOCSIGN_EXAMPLE_WORK_DIR``), ``archive_dir`` (default ``$DOCSIGN_EXAMPLE_ARCHIVE_DIR``) and
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
    DocsignCreateEnvelopeFromTemplateOperator,
    DocsignCreateTemplateOperator,
)
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

AIRFLOW_HOME = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
ARCHIVE_DIR = os.environ.get("DOCSIGN_EXAMPLE_ARCHIVE_DIR") or os.path.join(AIRFLOW_HOME, "docsign-archive")
WORK_DIR = os.environ.get("DOCSIGN_EXAMPLE_WORK_DIR") or os.path.join(
    tempfile.gettempdir(), "docsign-examples"
)
POKE_INTERVAL = float(os.environ.get("DOCSIGN_EXAMPLE_POKE_INTERVAL", "60"))
TEMPLATE_TITLE = "Customer onboarding agreement"

DEFAULT_CUSTOMERS = [
    {
        "id": "C-2001",
        "company": "ACME Corp",
        "contact": "Jane Doe",
        "email": "jane.doe@acme.example",
        "amount": "1250.50",
        "start_date": "2027-01-01",
    },
    {
        "id": "C-2002",
        "company": "Globex",
        "contact": "Hank Scorpio",
        "email": "hank@globex.example",
        "amount": "980",
        "start_date": "2027-02-01",
    },
]


def _field(kind: str, page: int, y: float, label: str | None = None) -> dict[str, Any]:
    field: dict[str, Any] = {
        "identifier": 0,
        "type": kind,
        "page": page,
        "positionX": 10.0,
        "positionY": y,
        "width": 35.0,
        "height": 5.0,
    }
    if label:
        field["fieldMeta"] = {"type": kind.lower(), "label": label}
    return field


# The roles of the template, with placeholder e-mails that every use replaces.
TEMPLATE_RECIPIENTS = [
    {
        "email": "customer@placeholder.example",
        "name": "Customer",
        "role": "SIGNER",
        "fields": [
            _field("TEXT", 1, 20.0, "company"),
            _field("NUMBER", 1, 30.0, "amount"),
            _field("TEXT", 1, 40.0, "start_date"),
            _field("DATE", 2, 70.0),
            _field("SIGNATURE", 2, 80.0),
        ],
    },
    {
        "email": "provider@placeholder.example",
        "name": "Provider",
        "role": "SIGNER",
        "fields": [_field("SIGNATURE", 2, 90.0)],
    },
]


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


with DAG(
    dag_id="docsign_template_onboarding",
    description="Every night: one envelope per new customer from a template, prefilled, then archive.",
    schedule="@daily",
    start_date=datetime(2024, 1, 1),
    catchup=False,
    tags=["docsign", "example", "templates"],
    default_args={"retries": 2, "retry_delay": timedelta(seconds=10)},
    params={
        "customers": Param(
            DEFAULT_CUSTOMERS,
            type="array",
            description="New customers: objects with id, company, contact, email, amount and start_date.",
        ),
        "work_dir": Param(
            WORK_DIR,
            type="string",
            description="Where the per-customer PDFs go: an ObjectStoragePath URL or a local directory.",
        ),
        "archive_dir": Param(ARCHIVE_DIR, type="string"),
    },
    doc_md=__doc__,
) as dag:

    @task
    def render_template_pdf(params: dict[str, Any] | None = None, run_id: str | None = None) -> list[str]:
        """The template's own PDF (two pages: terms, then signatures), in ``work_dir`` like every PDF."""
        from airflow_provider_docsign.samples import storage_path, store_sample_pdf

        assert params is not None
        target = storage_path(params["work_dir"], "onboarding", _safe(str(run_id)), "template.pdf")
        return [store_sample_pdf(target, title=TEMPLATE_TITLE, pages=2)]

    setup_template = DocsignCreateTemplateOperator(
        task_id="setup_template",
        title=TEMPLATE_TITLE,
        files=render_template_pdf(),
        recipients=TEMPLATE_RECIPIENTS,
        external_id="example-onboarding-template",
    )

    @task
    def prepare(
        template: dict[str, Any], params: dict[str, Any] | None = None, run_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Render each customer's PDF to object storage and build the arguments of their envelope.

        Every PDF goes straight to ``work_dir`` (no local temporary file), so nothing is left behind
        on the worker, and a mapped task on another worker can read it from the store.
        """
        from airflow_provider_docsign.samples import storage_path, store_sample_pdf

        assert params is not None
        folder = ("onboarding", _safe(str(run_id)))
        kwargs = []
        for customer in params["customers"]:
            target = storage_path(params["work_dir"], *folder, f"agreement-{_safe(customer['id'])}.pdf")
            pdf = store_sample_pdf(target, title=f"Agreement with {customer['company']}", pages=2)
            kwargs.append(
                {
                    "template_id": template["template_id"],
                    "files": [pdf],
                    "recipients": [
                        {"placeholder": "Customer", "email": customer["email"], "name": customer["contact"]},
                        {"placeholder": "Provider", "email": "sales@ourcompany.example", "name": "Sales"},
                    ],
                    "prefill_fields": {
                        "company": customer["company"],
                        "amount": str(customer["amount"]),
                        "start_date": customer["start_date"],
                    },
                    "override": {"title": f"Onboarding agreement - {customer['company']}"},
                    # Mapped values are not rendered as templates, so the id is built here.
                    "external_id": f"onboarding-{run_id}-{customer['id']}",
                }
            )
        return kwargs

    create_from_template = DocsignCreateEnvelopeFromTemplateOperator.partial(
        task_id="create_from_template", distribute=True
    ).expand_kwargs(prepare(setup_template.output))

    @task
    def collect_ids(results: list[dict[str, Any]]) -> list[str]:
        """The envelope ids of all mapped uses, in customer order."""
        # One slice reads every mapped result at once. Iterating the lazy sequence instead reads one
        # past the end, which Airflow 3 logs as an "[error] XCom not found" line in a successful run.
        return [result["envelope_id"] for result in results[:]]

    envelope_ids = collect_ids(create_from_template.output)

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

    wait_for_signatures >> archive
