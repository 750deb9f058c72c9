"""Reconcile: archive every envelope COMPLETED since the last successful run that has no manifest yet.

Webhooks are delivered at most a few times (Documenso tries 4 times, at once, and then gives up), so a
receiver that was down, a firewall change or a triggerer restart can lose one. This DAG runs hourly
and makes sure a lost webhook never means a lost contract:

1. ``find_unarchived`` lists the COMPLETED envelopes of the root and of every DOCUMENT folder (the
   service lists the root only without ``folderId``, so it lists the folders, then each one), newest
   created first, 100 per request. It keeps those completed since the window start and stops reading
   a folder at envelopes created ``lookback_days`` before it: nothing older can still be completing.
   Of those it keeps the ones whose ``<archive_dir>/<envelope_id>/manifest.json`` does not exist (an
   ``ObjectStoragePath``: a local folder or ``s3://conn@bucket/prefix``), at most ``max_per_run``.
2. ``archive`` (mapped, one task per envelope) downloads, verifies and archives each one with
   ``DocsignArchiveSignedDocumentsOperator``, under the same layout as ``docsign_archive_on_completion``
   (``FILENAME_TEMPLATE``), so an envelope archived by either DAG is found by the other.

The window starts at the earlier of this run's data interval start and the end of the last successful
run's data interval, minus ``overlap_minutes`` (an envelope completed while the last run was listing
is not missed); the first run looks back ``lookback_days``. Re-listing an envelope costs nothing: one
with a manifest is never archived again.

It works on Airflow 2.11 too, where it is also the way to archive without one sensor per contract.
Configuration: the ``docsign_default`` connection, params ``archive_dir``, ``work_dir`` (unused here,
kept for symmetry with the other examples), ``max_per_run``, ``overlap_minutes`` and ``lookback_days``.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timedelta, timezone
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
        "overlap_minutes": Param(
            60,
            type="integer",
            minimum=0,
            description="The window starts this long before the last successful run's data interval end.",
        ),
        "lookback_days": Param(
            30,
            type="integer",
            minimum=1,
            description="The longest an envelope takes from creation to completion (and the first "
            "run's window): envelopes created earlier are not listed.",
        ),
    },
    doc_md=__doc__,
) as dag:

    def _when(value: str | None) -> datetime | None:
        if not value:
            return None
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)

    @task
    def find_unarchived(**context: Any) -> list[str]:
        """COMPLETED envelopes, completed since the window start, without a manifest in the archive."""
        from airflow_provider_docsign.hooks import DocsignHook
        from airflow_provider_docsign.samples import storage_path

        params = context["params"]
        now = datetime.now(timezone.utc)
        lookback = timedelta(days=int(params["lookback_days"]))
        # Airflow 3 hands it over as a lazy proxy (never `is None`): test what it wraps.
        last_success = context.get("prev_data_interval_end_success")
        if not isinstance(last_success, datetime):
            since = now - lookback
        else:
            start = context.get("data_interval_start") or last_success
            since = min(start, last_success) - timedelta(minutes=int(params["overlap_minutes"]))
        created_after = since - lookback
        hook = DocsignHook()
        folders: list[str | None] = [None]  # the root, then every DOCUMENT folder at every level
        folders += [folder.id for folder in hook.list_folders(folder_type="DOCUMENT")]
        missing: list[str] = []
        listed = 0
        for folder_id in folders:
            # Newest created first (the service's order): stop at the first one created too early.
            for envelope in hook.find_envelopes(status="COMPLETED", folder_id=folder_id):
                created = _when(envelope.created_at)
                if created is not None and created < created_after:
                    break
                completed = _when(envelope.completed_at)
                if completed is not None and completed < since:
                    continue
                listed += 1
                if not storage_path(params["archive_dir"], envelope.id, "manifest.json").exists():
                    missing.append(envelope.id)
                    if len(missing) >= int(params["max_per_run"]):
                        break
            if len(missing) >= int(params["max_per_run"]):
                break
        print(
            f"{listed} envelope(s) completed since {since.isoformat()} in {len(folders)} folder(s) "
            f"(root included); {len(missing)} not archived yet"
        )
        return missing

    DocsignArchiveSignedDocumentsOperator.partial(
        task_id="archive",
        destination="{{ params.archive_dir }}",
        filename_template=FILENAME_TEMPLATE,
    ).expand(envelope_id=find_unarchived())
