"""The whole signing pipeline for one contract: create, add, reorder, send, wait, archive.

What this DAG shows, step by step:

1. ``render_pdfs`` generates three PDFs for the run (a two-page service agreement, a data-processing
   annex and a price schedule) with :func:`airflow_provider_docsign.samples.write_sample_pdf`. No
   network is used; in real life this is where your own templating renders the contracts.
2. ``create_envelope`` creates a DRAFT envelope from the first two PDFs, with a signer and a
   countersigner who each have fields on both files. Everything is validated locally (files, pages,
   coordinates, roles) before the first byte is sent. The ``external_id`` is templated with the run
   id and the customer key: if the task is retried after an ambiguous failure, the operator finds the
   envelope it already made instead of creating a duplicate.
3. ``add_price_schedule`` adds the third PDF to the draft.
4. ``plan_items`` + ``rename_and_reorder`` give the items readable titles and put the price schedule
   second; the operator re-reads the envelope and fails if the service did not apply the change.
5. ``distribute`` sends the envelope to the signers (a no-op if it was already sent, so retries are
   safe).
6. ``wait_for_signatures`` defers to the triggerer while people sign (no worker slot is held), and
   fails at once, with the signer's reason, if anyone rejects.
7. ``archive`` downloads every signed PDF plus the audit log, verifies each one (content type,
   ``%PDF-``, sha256 and the PDF's digital signature: intact, valid, covering the whole document and
   made with the pinned sealing certificate), writes it atomically and records a ``manifest.json``
   with checksums and a ``signature`` object per file.

Configuration:

* the ``docsign_default`` connection (host = base URL ending in ``/api/v2``, password = API key, and
  the extra ``signing_certificate_fingerprints``: the SHA-256 fingerprint of the instance's sealing
  certificate, which pins it; ``make demo`` sets it from the sandbox's ``GET /_sandbox/certificate``);
* params ``archive_dir`` and ``work_dir`` (defaults: ``$DOCSIGN_EXAMPLE_ARCHIVE_DIR`` or
  ``$AIRFLOW_HOME/docsign-archive``, and ``$DOCSIGN_EXAMPLE_WORK_DIR`` or a temp directory);
* ``$DOCSIGN_EXAMPLE_POKE_INTERVAL``: seconds between status checks (default 60).
"""

from __future__ import annotations

import os
import re
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

try:
    from airflow.sdk import DAG, Param, task
except ImportError:  # Airflow 2.11
    from airflow.decorators import task
    from airflow.models.dag import DAG
    from airflow.models.param import Param

from airflow_provider_docsign.operators import (
    DocsignAddEnvelopeItemsOperator,
    DocsignArchiveSignedDocumentsOperator,
    DocsignCreateEnvelopeOperator,
    DocsignDistributeEnvelopeOperator,
    DocsignUpdateEnvelopeItemsOperator,
)
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

# Reading the environment is cheap and safe at parse time (no connection or database access).
AIRFLOW_HOME = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
ARCHIVE_DIR = os.environ.get("DOCSIGN_EXAMPLE_ARCHIVE_DIR") or os.path.join(AIRFLOW_HOME, "docsign-archive")
WORK_DIR = os.environ.get("DOCSIGN_EXAMPLE_WORK_DIR") or os.path.join(
    tempfile.gettempdir(), "docsign-examples"
)
POKE_INTERVAL = float(os.environ.get("DOCSIGN_EXAMPLE_POKE_INTERVAL", "60"))


def signature_box(file_index: int, page: int, x: float) -> dict[str, Any]:
    """A signature field in the service's own JSON shape (coordinates are % of the page)."""
    return {
        "identifier": file_index,  # zero-based index of the file in `files`
        "type": "SIGNATURE",
        "page": page,
        "positionX": x,
        "positionY": 80.0,
        "width": 30.0,
        "height": 8.0,
    }


with DAG(
    dag_id="docsign_contract_signing",
    description="Create, send, wait for and archive a signed contract (Docsign / Documenso).",
    schedule=None,
    start_date=datetime(2024, 1, 1),
    catchup=False,
    tags=["docsign", "example"],
    default_args={"retries": 2, "retry_delay": timedelta(seconds=10)},
    params={
        "customer_id": Param("ACME-001", type="string", description="Business key of the contract."),
        "customer_name": Param("ACME Corporation", type="string"),
        "signer_email": Param("jane.doe@acme.example", type="string"),
        "signer_name": Param("Jane Doe", type="string"),
        "countersigner_email": Param("legal@ourcompany.example", type="string"),
        "countersigner_name": Param("Our Legal Team", type="string"),
        "archive_dir": Param(ARCHIVE_DIR, type="string", description="Where signed PDFs are archived."),
        "work_dir": Param(WORK_DIR, type="string", description="Where the run renders its PDFs."),
    },
    doc_md=__doc__,
) as dag:

    @task(multiple_outputs=True)
    def render_pdfs(params: dict[str, Any] | None = None, run_id: str | None = None) -> dict[str, str]:
        """Render this run's PDFs (stand-in for your own document generation)."""
        from airflow_provider_docsign.samples import write_sample_pdf

        assert params is not None
        folder = Path(params["work_dir"]) / re.sub(r"[^A-Za-z0-9._-]+", "_", str(run_id))
        customer = params["customer_name"]
        return {
            "agreement": str(
                write_sample_pdf(
                    folder / "service-agreement.pdf", title=f"Service agreement - {customer}", pages=2
                )
            ),
            "annex": str(
                write_sample_pdf(folder / "dpa-annex.pdf", title=f"Data processing annex - {customer}")
            ),
            "price_schedule": str(
                write_sample_pdf(folder / "price-schedule.pdf", title=f"Price schedule - {customer}")
            ),
        }

    pdfs = render_pdfs()

    create_envelope = DocsignCreateEnvelopeOperator(
        task_id="create_envelope",
        title="Service agreement - {{ params.customer_name }}",
        files=[pdfs["agreement"], pdfs["annex"]],
        recipients=[
            {
                "email": "{{ params.signer_email }}",
                "name": "{{ params.signer_name }}",
                "role": "SIGNER",
                # Fields on both files: the signature on the agreement's last page, and on the annex.
                "fields": [signature_box(0, 2, 10.0), signature_box(1, 1, 10.0)],
            },
            {
                "email": "{{ params.countersigner_email }}",
                "name": "{{ params.countersigner_name }}",
                "role": "SIGNER",
                "fields": [signature_box(0, 2, 55.0), signature_box(1, 1, 55.0)],
            },
        ],
        # Unique per logical envelope: a retried task finds this envelope instead of making a duplicate.
        external_id="contract-{{ run_id }}-{{ params.customer_id }}",
        meta={"subject": "Please sign: service agreement", "language": "en", "timezone": "Europe/Berlin"},
    )
    envelope_id = create_envelope.output["envelope_id"]

    add_price_schedule = DocsignAddEnvelopeItemsOperator(
        task_id="add_price_schedule",
        envelope_id=envelope_id,
        files=[pdfs["price_schedule"]],
    )

    @task
    def plan_items(created: dict[str, Any], added: list[str]) -> list[dict[str, Any]]:
        """Readable titles, and the price schedule moved between the agreement and the annex."""
        agreement_id, annex_id = created["item_ids"]
        (price_schedule_id,) = added
        return [
            {"envelopeItemId": agreement_id, "title": "Service agreement", "order": 1},
            {"envelopeItemId": price_schedule_id, "title": "Price schedule", "order": 2},
            {"envelopeItemId": annex_id, "title": "Data processing annex", "order": 3},
        ]

    rename_and_reorder = DocsignUpdateEnvelopeItemsOperator(
        task_id="rename_and_reorder",
        envelope_id=envelope_id,
        items=plan_items(create_envelope.output, add_price_schedule.output),
    )

    distribute = DocsignDistributeEnvelopeOperator(task_id="distribute", envelope_id=envelope_id)

    wait_for_signatures = DocsignEnvelopeSensor(
        task_id="wait_for_signatures",
        envelope_id=envelope_id,
        deferrable=True,
        poke_interval=POKE_INTERVAL,
        timeout=timedelta(days=14),
    )

    archive = DocsignArchiveSignedDocumentsOperator(
        task_id="archive",
        envelope_id=envelope_id,
        destination="{{ params.archive_dir }}",
        include_audit_log=True,
        # Fail unless every PDF carries an intact, valid seal over the whole document; the signer is
        # checked against the connection's pinned `signing_certificate_fingerprints`.
        verify_signatures="require",
    )

    rename_and_reorder >> distribute >> wait_for_signatures >> archive
