"""What a rejection looks like: the sensor fails at once with the signer's reason; nothing is archived.

This DAG is a demonstration of the failure path of ``docsign_contract_signing``. It creates and sends
a two-signer envelope, then records an *external rejection* for the second signer with
``DocsignRejectRecipientOperator`` (use it when a signer declines outside the signing app, for
example by phone). A signer rejecting in the signing app has the same effect.

The envelope becomes REJECTED, so ``wait_for_signatures`` fails immediately with
``AirflowFailException``: the log names the envelope, the rejecting recipient and their reason, no
retries are spent (retrying cannot un-reject), and ``archive`` never runs, so no unsigned PDF is
ever archived as if it were signed.

Configuration: the ``docsign_default`` connection, params ``reason``, ``archive_dir`` and
``work_dir``, and ``$DOCSIGN_EXAMPLE_POKE_INTERVAL`` (seconds, default 60).
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
    DocsignRejectRecipientOperator,
)
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

AIRFLOW_HOME = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
ARCHIVE_DIR = os.environ.get("DOCSIGN_EXAMPLE_ARCHIVE_DIR") or os.path.join(AIRFLOW_HOME, "docsign-archive")
WORK_DIR = os.environ.get("DOCSIGN_EXAMPLE_WORK_DIR") or os.path.join(
    tempfile.gettempdir(), "docsign-examples"
)
POKE_INTERVAL = float(os.environ.get("DOCSIGN_EXAMPLE_POKE_INTERVAL", "60"))

DECLINING_SIGNER = "cfo@acme.example"

with DAG(
    dag_id="docsign_rejected_signer",
    description="Failure path: a signer rejects, the sensor fails fast with the reason, nothing is archived.",
    schedule=None,
    start_date=datetime(2024, 1, 1),
    catchup=False,
    tags=["docsign", "example"],
    params={
        "reason": Param("The payment terms are not what we agreed.", type="string"),
        "archive_dir": Param(ARCHIVE_DIR, type="string"),
        "work_dir": Param(WORK_DIR, type="string"),
    },
    doc_md=__doc__,
) as dag:

    @task
    def render_pdf(params: dict[str, Any] | None = None, run_id: str | None = None) -> str:
        """Render the contract PDF of this run."""
        from airflow_provider_docsign.samples import storage_path, store_sample_pdf

        assert params is not None
        run_folder = re.sub(r"[^A-Za-z0-9._-]+", "_", str(run_id))
        target = storage_path(params["work_dir"], run_folder, "purchase-agreement.pdf")
        return store_sample_pdf(target, title="Purchase agreement")

    def signer(email: str, name: str, x: float) -> dict[str, Any]:
        box = {"identifier": 0, "type": "SIGNATURE", "page": 1, "positionX": x, "positionY": 80.0}
        return {
            "email": email,
            "name": name,
            "role": "SIGNER",
            "fields": [{**box, "width": 30.0, "height": 8.0}],
        }

    create_envelope = DocsignCreateEnvelopeOperator(
        task_id="create_envelope",
        title="Purchase agreement",
        files=[render_pdf()],
        recipients=[
            signer("buyer@acme.example", "Bea Buyer", 10.0),
            signer(DECLINING_SIGNER, "Carl CFO", 55.0),
        ],
        external_id="purchase-{{ run_id }}",
    )
    envelope_id = create_envelope.output["envelope_id"]

    distribute = DocsignDistributeEnvelopeOperator(task_id="distribute", envelope_id=envelope_id)

    @task
    def declining_recipient(sent: dict[str, Any]) -> int:
        """The id of the signer who declined (the distribute task returns every recipient)."""
        recipients = sent["recipients"] if isinstance(sent, dict) else sent
        return next(r["id"] for r in recipients if r["email"] == DECLINING_SIGNER)

    record_rejection = DocsignRejectRecipientOperator(
        task_id="record_rejection",
        recipient_id=declining_recipient(distribute.output),
        envelope_id=envelope_id,
        reason="{{ params.reason }}",
    )

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
    )

    record_rejection >> wait_for_signatures >> archive
