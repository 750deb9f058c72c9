"""Archive each envelope the moment it is completed, from Documenso's webhook: no sensor anywhere.

Airflow 3 only. The DAG is scheduled on an Asset watched by an ``AssetWatcher`` whose trigger is
``DocsignWebhookEventTrigger``: the triggerer listens on ``$DOCSIGN_WEBHOOK_PORT`` (default 8790, on
``$DOCSIGN_WEBHOOK_HOST``, default 127.0.0.1), checks ``X-Documenso-Secret`` against the password of
the ``docsign_webhook`` connection, answers the service at once, and each ``DOCUMENT_COMPLETED``
delivery becomes an asset event carrying the envelope id (never the body: it holds signing tokens).
Each run archives the envelopes of the events that triggered it, under the same layout as
``docsign_reconcile`` (``<archive_dir>/<envelope_id>/``), which catches any webhook that was lost.

In Documenso, add a webhook for the "Document completed" event pointing at
``http://<triggerer host>:8790/`` with the same secret (the sandbox: ``--webhook URL --webhook-secret S``).
Documenso refuses to deliver to a private or loopback host unless the instance lists it in
``NEXT_PRIVATE_WEBHOOK_SSRF_BYPASS_HOSTS`` (the sandbox too: ``--webhook-ssrf-bypass-hosts 127.0.0.1``);
``docsign webhooks check URL`` tells you before a webhook goes missing (docs/webhooks.md).

On Airflow 2.11 there is no AssetWatcher: this file defines no DAG there (so it raises no import
error); wait with the deferrable ``DocsignEnvelopeSensor`` (its polls are coalesced, 20 envelopes per
request) or run ``docsign_reconcile``.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from typing import Any

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS

AIRFLOW_HOME = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
ARCHIVE_DIR = os.environ.get("DOCSIGN_EXAMPLE_ARCHIVE_DIR") or os.path.join(AIRFLOW_HOME, "docsign-archive")
WORK_DIR = os.environ.get("DOCSIGN_EXAMPLE_WORK_DIR") or os.path.join(
    tempfile.gettempdir(), "docsign-examples"
)
WEBHOOK_HOST = os.environ.get("DOCSIGN_WEBHOOK_HOST", "127.0.0.1")
WEBHOOK_PORT = int(os.environ.get("DOCSIGN_WEBHOOK_PORT", "8790"))
#: The same layout as docsign_reconcile: <archive_dir>/<envelope_id>/manifest.json.
FILENAME_TEMPLATE = "{envelope_id}/{order:02d}-{title}.pdf"

if AIRFLOW_V_3_0_PLUS:
    from airflow.sdk import DAG, Asset, AssetWatcher, Param, task

    from airflow_provider_docsign.operators import DocsignArchiveSignedDocumentsOperator
    from airflow_provider_docsign.triggers.webhook import DocsignWebhookEventTrigger

    # docsign://<host of the instance>/webhooks/<event>: the same scheme names envelopes in lineage.
    envelope_completed = Asset(
        "docsign://app.documenso.com/webhooks/document-completed",
        watchers=[
            AssetWatcher(
                name="docsign_document_completed",
                trigger=DocsignWebhookEventTrigger(
                    host=WEBHOOK_HOST, port=WEBHOOK_PORT, events=["DOCUMENT_COMPLETED"]
                ),
            )
        ],
    )

    with DAG(
        dag_id="docsign_archive_on_completion",
        schedule=[envelope_completed],
        start_date=datetime(2025, 1, 1),
        catchup=False,
        tags=["docsign", "example"],
        params={
            "archive_dir": Param(ARCHIVE_DIR, type="string", description="Where signed PDFs are archived."),
            "work_dir": Param(WORK_DIR, type="string"),
        },
        doc_md=__doc__,
    ) as dag:

        @task
        def completed_envelopes(**context: Any) -> list[str]:
            """The envelope ids of the webhook events that triggered this run."""
            ids: list[str] = []
            for events in context["triggering_asset_events"].values():
                for event in events:
                    payload = (event.extra or {}).get("payload") or {}
                    if payload.get("event") == "DOCUMENT_COMPLETED" and payload.get("envelope_id"):
                        ids.append(str(payload["envelope_id"]))
            return sorted(set(ids))

        DocsignArchiveSignedDocumentsOperator.partial(
            task_id="archive",
            destination="{{ params.archive_dir }}",
            filename_template=FILENAME_TEMPLATE,
        ).expand(envelope_id=completed_envelopes())
