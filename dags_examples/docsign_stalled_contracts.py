"""When contracts stall: remind, renew an expired link once, cancel after too long, and report.

Runs daily. It lists the PENDING envelopes of one folder (param ``folder_id``), or of the root and
every document folder when ``folder_id`` is empty (the service lists only the root without a folder),
and decides for each one, oldest rule first:

- **cancel** when it is older than ``cancel_after_days``, with a reason in the audit log;
- **renew** when a signer's link has expired (the envelope stays PENDING on the service: nobody can
  sign until ``/envelope/redistribute`` renews the link); only once per envelope: an envelope whose
  link expires again is reported as ``expired_again`` and left to a person (or to the cancel rule);
- **remind** the unsigned signers when it is older than ``remind_after_days`` and was not reminded in
  the last ``remind_after_days`` days;
- otherwise nothing.

Which envelopes have an expired link is asked of the service (``find_envelopes(...,
has_expired_recipients=True)``, the real ``hasExpiredRecipients`` filter), so the service's clock
decides, not the worker's. Requests are bounded: two list calls per folder (100 envelopes per page:
all PENDING ones, and those with an expired link), then exactly one write per action
(one ``redistribute`` or one ``cancel``). What was renewed and reminded is remembered in a small state
file beside the reports, so a daily run never renews twice or reminds every day.

The report is JSON lines on object storage (``report_dir``: any ``ObjectStoragePath`` URL such as
``s3://bucket/docsign-reports``, or a local directory), one line per envelope: its id, title, age in
days, unsigned recipients (e-mails masked), the action and why; the same table goes to the task log.

It works on Airflow 2.11 and 3.x. Configuration: the ``docsign_default`` connection and the params
(``archive_dir`` and ``work_dir`` are unused, kept for symmetry with the other examples).
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timezone
from typing import Any

try:
    from airflow.sdk import DAG, Param, task
except ImportError:  # Airflow 2.11
    from airflow.decorators import task
    from airflow.models.dag import DAG
    from airflow.models.param import Param

AIRFLOW_HOME = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
REPORT_DIR = os.environ.get("DOCSIGN_EXAMPLE_REPORT_DIR") or os.path.join(AIRFLOW_HOME, "docsign-reports")
ARCHIVE_DIR = os.environ.get("DOCSIGN_EXAMPLE_ARCHIVE_DIR") or os.path.join(AIRFLOW_HOME, "docsign-archive")
WORK_DIR = os.environ.get("DOCSIGN_EXAMPLE_WORK_DIR") or os.path.join(
    tempfile.gettempdir(), "docsign-examples"
)


def decide(
    envelope: Any,
    state: dict[str, Any],
    now: datetime,
    remind_after: float,
    cancel_after: float,
    has_expired: bool = False,
) -> tuple[str, str, list[int]]:
    """``(action, why, recipient ids)`` for one PENDING envelope (pure: no requests).

    ``has_expired`` is the service's verdict (``find_envelopes(has_expired_recipients=True)`` listed the
    envelope): the service's clock decides whether a link has expired, not this machine's. The links
    to renew are the unsigned ones whose ``expiresAt`` has passed (every unsigned signer with a link,
    should the clocks disagree).
    """
    from airflow_provider_docsign.service.expiry import expired_recipients, parse_timestamp

    created = parse_timestamp(envelope.created_at) or now
    age = (now - created).total_seconds() / 86400
    unsigned = [
        r for r in envelope.recipients if (r.role or "") != "CC" and (r.signing_status or "") == "NOT_SIGNED"
    ]
    expired = []
    if has_expired:
        expired = expired_recipients(envelope.recipients, now) or [r for r in unsigned if r.expires_at]
    if age >= cancel_after:
        return "cancel", f"no signature after {age:.0f} days (limit {cancel_after:g})", []
    if expired:
        if state.get("renewed"):
            return "expired_again", "the link expired again after one renewal: a person should decide", []
        return "renew", f"{len(expired)} signing link(s) expired", [r.id for r in expired]
    last = parse_timestamp(state.get("reminded_at"))
    recent = last is not None and (now - last).total_seconds() / 86400 < remind_after
    if unsigned and age >= remind_after and not recent:
        return "remind", f"{len(unsigned)} unsigned after {age:.0f} days", [r.id for r in unsigned]
    return "none", "", []


with DAG(
    dag_id="docsign_stalled_contracts",
    schedule="@daily",
    start_date=datetime(2025, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["docsign", "example"],
    params={
        "remind_after_days": Param(3, type="number", minimum=0, description="Remind unsigned signers after."),
        "cancel_after_days": Param(30, type="number", minimum=0, description="Cancel with a reason after."),
        "folder_id": Param("", type="string", description="Only this folder; empty: root and all folders."),
        "report_dir": Param(REPORT_DIR, type="string", description="ObjectStoragePath URL or directory."),
        "max_actions": Param(500, type="integer", minimum=1, description="At most this many writes a run."),
        # Unused here; kept so every example takes the same params.
        "archive_dir": Param(ARCHIVE_DIR, type="string"),
        "work_dir": Param(WORK_DIR, type="string"),
    },
    doc_md=__doc__,
) as dag:

    @task
    def escalate(**context: Any) -> list[dict[str, Any]]:
        """List, decide, act (one write per action), report."""
        import json

        from airflow_provider_docsign._compat import ObjectStoragePath
        from airflow_provider_docsign.hooks import DocsignHook
        from airflow_provider_docsign.service.expiry import mask_email, parse_timestamp
        from airflow_provider_docsign.service.stalled import stalled

        params = context["params"]
        hook = DocsignHook()
        folder = str(params["folder_id"] or "").strip()
        folders: list[str | None] = [folder] if folder else [None]
        if not folder:
            folders += [f.id for f in hook.list_folders(folder_type="DOCUMENT")]
        storage = str(params["report_dir"])
        base = ObjectStoragePath(storage if "://" in storage else f"file://{os.path.abspath(storage)}")
        base.mkdir(parents=True, exist_ok=True)
        state_file = base / "state.json"
        state: dict[str, Any] = json.loads(state_file.read_text()) if state_file.exists() else {}

        now = datetime.now(timezone.utc)
        rows: list[dict[str, Any]] = []
        writes = 0
        for folder_id in folders:
            # The service says which envelopes have an expired signing link (its clock, its rule).
            flagged = {
                e.id
                for e in hook.find_envelopes(
                    status="PENDING", folder_id=folder_id, has_expired_recipients=True
                )
            }
            for envelope in hook.find_envelopes(status="PENDING", folder_id=folder_id):
                mine = state.setdefault(envelope.id, {})
                action, why, ids = decide(
                    envelope,
                    mine,
                    now,
                    float(params["remind_after_days"]),
                    float(params["cancel_after_days"]),
                    has_expired=envelope.id in flagged,
                )
                if action in ("cancel", "renew", "remind") and writes >= int(params["max_actions"]):
                    action, why = "deferred", f"max_actions ({params['max_actions']}) reached"
                if action == "cancel":
                    hook.cancel_envelope(envelope.id, reason=f"Cancelled by docsign_stalled_contracts: {why}")
                elif action in ("renew", "remind"):
                    hook.redistribute_envelope(envelope.id, ids)
                    mine["reminded_at"] = now.isoformat()
                    mine["renewed"] = mine.get("renewed") or action == "renew"
                writes += action in ("cancel", "renew", "remind")
                age = (now - (parse_timestamp(envelope.created_at) or now)).days
                rows.append(
                    {
                        "envelope_id": envelope.id,
                        "title": envelope.title,
                        "age_days": age,
                        "unsigned": [
                            mask_email(r.email)
                            for r in envelope.recipients
                            if r.role != "CC" and r.signing_status == "NOT_SIGNED"
                        ],
                        "action": action,
                        "reason": why,
                        # The provider's one definition (the Contracts page's "stalled" filter too):
                        # PENDING longer than remind_after_days, or a link the service says expired.
                        "stalled": stalled(
                            envelope,
                            now,
                            older_than_days=float(params["remind_after_days"]),
                            has_expired=envelope.id in flagged,
                        )
                        is not None,
                    }
                )

        day = str(context.get("ds") or now.date().isoformat())
        report = base / f"stalled-{day}.jsonl"
        report.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))
        state_file.write_text(json.dumps(state, sort_keys=True))
        print(f"{'envelope':<28} {'age':>4}  {'action':<13} unsigned / reason")
        for row in rows:
            print(
                f"{row['envelope_id']:<28} {row['age_days']:>4}  {row['action']:<13} "
                f"{', '.join(row['unsigned']) or '-'} / {row['reason'] or '-'}"
            )
        print(f"{len(rows)} PENDING envelope(s), {writes} write(s); report: {report}")
        return rows

    escalate()
