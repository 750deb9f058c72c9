"""A campaign: one envelope per row of a table, sent in one task at the service's rate limit.

Annual renewals, a new price list, onboarding a region: thousands of contracts in one night. This DAG
is the shape for that (see the "Sending in bulk" guide); ``docsign_bulk_signing_mapped`` is the shape
for a few envelopes that each deserve their own task.

What this DAG shows:

* ``setup_template`` makes sure the renewal template exists (created from code here so the example
  runs anywhere; normally someone designs it once in the web app). Its ``company`` field is prefilled
  for each customer;
* ``select_rows`` selects the campaign's rows (here: the ``customers`` param) and writes them as JSON
  Lines to ``work_dir`` (any ``ObjectStoragePath`` URL such as ``s3://bucket/campaigns``, or a local
  directory). A real campaign would query a warehouse here;
* ``send_campaign`` (:class:`DocsignBulkSendOperator`) checks every row first, then sends one envelope
  per row from the template, one request each, exactly once even if the task is retried, its worker
  killed or the DAG triggered again, and writes a result table beside the rows (``row_key``,
  ``external_id``, ``envelope_id``, ``status``, ``error``, ``attempts``, ``sent_at``). Its XCom holds
  counts and the table's URI;
* ``wait_for_signatures`` is one deferrable sensor on the result table: it waits until every sent
  envelope has ended (signed, rejected, cancelled, or its link expired) in the triggerer, 20 per
  request per poll, with no worker slot held while people sign, and succeeds unless more than
  ``max_unsigned`` ended unsigned (``$DOCSIGN_EXAMPLE_MAX_UNSIGNED``, default 10 %). It writes
  ``results.jsonl.outcome.jsonl`` beside the result table: each envelope's final status and reason;
* ``archive`` (:class:`DocsignBatchArchiveOperator`) archives every signed envelope in one task, one
  folder and one ``manifest.json`` each, skips the unsigned ones (``on_unsigned="skip"``, listed in its
  XCom) and those already archived if it runs again;
* ``report`` writes ``report.json`` beside the result table: the counts of the send and the archive.

**One campaign, however often it is triggered.** ``campaign`` (a param, default ``contract-renewals``)
is the campaign's id, the first part of every envelope's ``externalId``. Triggered twice at once (a
double click on *Trigger*, two REST calls) or once more after it finished, the DAG sends each customer
one envelope: the second run waits for the first's lease, then finds every envelope at the service and
adopts it (its result table says ``sent``, with the same envelope ids). Each run keeps its own folder
(``campaigns/<run id>/``); the lease is the campaign's, not the folder's. To send the same customers a
new contract, trigger it with a new word: ``{"campaign": "contract-renewals-2028"}``.

Configuration: the ``docsign_default`` connection, the params ``campaign``, ``customers``, ``work_dir`` and
``archive_dir`` (defaults from ``$DOCSIGN_EXAMPLE_WORK_DIR`` / ``$DOCSIGN_EXAMPLE_ARCHIVE_DIR``) and
``$DOCSIGN_EXAMPLE_POKE_INTERVAL`` (seconds, default 60).
"""

from __future__ import annotations

import json
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
    DocsignBatchArchiveOperator,
    DocsignBulkSendOperator,
    DocsignCreateTemplateOperator,
)
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

AIRFLOW_HOME = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
ARCHIVE_DIR = os.environ.get("DOCSIGN_EXAMPLE_ARCHIVE_DIR") or os.path.join(AIRFLOW_HOME, "docsign-archive")
WORK_DIR = os.environ.get("DOCSIGN_EXAMPLE_WORK_DIR") or os.path.join(
    tempfile.gettempdir(), "docsign-examples"
)
POKE_INTERVAL = float(os.environ.get("DOCSIGN_EXAMPLE_POKE_INTERVAL", "60"))
# How many envelopes of the campaign may end unsigned (rejected, cancelled, an expired link) before the
# wait fails: a count ("10") or a fraction of the campaign ("0.1"). In a campaign of thousands a few
# rejections are certain; the signed ones are archived all the same.
_MAX_UNSIGNED = os.environ.get("DOCSIGN_EXAMPLE_MAX_UNSIGNED", "0.1")
MAX_UNSIGNED: int | float = float(_MAX_UNSIGNED) if "." in _MAX_UNSIGNED else int(_MAX_UNSIGNED)
# How many rows may be invalid (a malformed e-mail, a missing column) before the campaign refuses to
# start: 0 by default, so a bad export is caught before anything is sent. The invalid rows are listed
# in the result table with their reasons (and on the Contracts page's Campaigns tab).
MAX_INVALID = int(os.environ.get("DOCSIGN_EXAMPLE_MAX_INVALID", "0"))
TEMPLATE_TITLE = "Contract renewal"

DEFAULT_CUSTOMERS = [
    {
        "id": "C-1001",
        "name": "Ada Lovelace",
        "email": "ada@analytical.example",
        "company": "Analytical Engines",
    },
    {"id": "C-1002", "name": "Grace Hopper", "email": "grace@cobol.example", "company": "COBOL Ltd"},
    {"id": "C-1003", "name": "Alan Turing", "email": "alan@bletchley.example", "company": "Bletchley Park"},
]

# The template's one role, with a placeholder e-mail that every row replaces.
TEMPLATE_RECIPIENTS = [
    {
        "email": "customer@placeholder.example",
        "name": "Customer",
        "role": "SIGNER",
        "fields": [
            {
                "identifier": 0,
                "type": "TEXT",
                "page": 1,
                "positionX": 10.0,
                "positionY": 20.0,
                "width": 40.0,
                "height": 5.0,
                "fieldMeta": {"type": "text", "label": "company"},
            },
            {
                "identifier": 0,
                "type": "SIGNATURE",
                "page": 1,
                "positionX": 10.0,
                "positionY": 80.0,
                "width": 30.0,
                "height": 8.0,
            },
        ],
    }
]


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


with DAG(
    dag_id="docsign_bulk_signing",
    description="A campaign: bulk send from a table, one wait, batch archive, a report.",
    schedule=None,
    start_date=datetime(2024, 1, 1),
    catchup=False,
    tags=["docsign", "example", "bulk"],
    default_args={"retries": 2, "retry_delay": timedelta(seconds=10)},
    params={
        "campaign": Param(
            "contract-renewals",
            type="string",
            pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
            description="The campaign's id: the same word never contacts a customer twice; a new word "
            "sends a new campaign over the same customers.",
        ),
        "customers": Param(
            DEFAULT_CUSTOMERS,
            type="array",
            description="The campaign's customers: objects with id, name, email and company.",
        ),
        "work_dir": Param(
            WORK_DIR,
            type="string",
            description="Where the rows, the result table and the report go: a URL or a local directory.",
        ),
        "archive_dir": Param(ARCHIVE_DIR, type="string"),
    },
    doc_md=__doc__,
) as dag:

    @task
    def render_template_pdf() -> list[str]:
        """The template's own PDF."""
        from airflow_provider_docsign.samples import write_sample_pdf

        folder = Path(tempfile.mkdtemp(prefix="docsign-template-"))
        return [str(write_sample_pdf(folder / "renewal.pdf", title=TEMPLATE_TITLE))]

    setup_template = DocsignCreateTemplateOperator(
        task_id="setup_template",
        title=TEMPLATE_TITLE,
        files=render_template_pdf(),
        recipients=TEMPLATE_RECIPIENTS,
        external_id="example-renewal-template",
    )

    @task
    def select_rows(params: dict[str, Any] | None = None, run_id: str | None = None) -> dict[str, str]:
        """Write the campaign's rows (JSON Lines) and name where its result table goes."""
        from airflow_provider_docsign.samples import storage_path

        assert params is not None
        rows = [
            {"row_key": c["id"], "email": c["email"], "name": c["name"], "company": c["company"]}
            for c in params["customers"]
        ]
        target = storage_path(params["work_dir"], "campaigns", _safe(str(run_id)), "rows.jsonl")
        if target.protocol in ("file", "local", ""):
            target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(json.dumps(row) + "\n" for row in rows))
        # As strings that keep an object store's connection id (s3://conn@bucket/...) for later tasks.
        return {"rows": str(target), "result_table": str(target.parent / "results.jsonl")}

    selection = select_rows()

    send_campaign = DocsignBulkSendOperator(
        task_id="send_campaign",
        rows=selection["rows"],
        result_table=selection["result_table"],
        campaign_id="{{ params.campaign }}",  # one campaign for every run: a new word for a new one
        template_id="{{ ti.xcom_pull(task_ids='setup_template')['template_id'] }}",
        recipients=[{"placeholder": "Customer", "email": "{email}", "name": "{name}"}],
        prefill_fields={"company": "{company}"},
        title="Contract renewal - {name}",
        meta={"subject": "Please sign your renewal"},
        max_invalid=MAX_INVALID,
    )

    wait_for_signatures = DocsignEnvelopeSensor(
        task_id="wait_for_signatures",
        result_table=selection["result_table"],
        deferrable=True,
        poke_interval=POKE_INTERVAL,
        timeout=timedelta(days=30),
        max_unsigned=MAX_UNSIGNED,  # every envelope ends (signed, rejected, expired); then the verdict
    )

    archive = DocsignBatchArchiveOperator(
        task_id="archive",
        result_table=selection["result_table"],
        destination="{{ params.archive_dir }}",
        on_unsigned="skip",  # the rejected and expired ones are listed in the XCom, not archived
    )

    @task
    def report(where: dict[str, str], sent: dict[str, Any], archived: dict[str, Any]) -> str:
        """Write the campaign's report beside its result table; return its URI."""
        from airflow_provider_docsign.samples import storage_path

        table = storage_path(where["result_table"])
        body = {
            "campaign_id": sent["campaign_id"],
            "result_table": sent["result_table"],
            "rows": sent["rows"],
            "send": sent["counts"],
            "archive": {k: archived[k] for k in ("archived", "skipped", "not_signed", "failed")},
            "archive_destination": archived["destination"],
        }
        target = table.parent / "report.json"
        target.write_text(json.dumps(body, indent=2) + "\n")
        return str(target)

    setup_template >> send_campaign >> wait_for_signatures >> archive
    report(selection, send_campaign.output, archive.output)
