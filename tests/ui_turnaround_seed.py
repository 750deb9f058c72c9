"""Envelopes with known send and signing times, sent (as far as Airflow knows) by a campaign or by tasks.

:func:`seed_turnaround` stores ``count`` envelopes in a sandbox with ``sentAt`` (a ``DOCUMENT_SENT`` audit
entry) and recipients' ``signedAt``: completed ones signed after delays that fill every bin of the
time-to-sign distribution (one to three signers, some with a CC), pending ones (old: stalled; some with
an expired link), rejected, cancelled and drafts (never sent), spread over two templates and no template,
the root and a folder. :func:`plant_senders` then makes every sent one look sent from Airflow: most by a
campaign whose result table (in ``table_dir``) holds each row's ``sent_at``, the same instant as the
audit entry; a few by distribute tasks whose XCom time is set to that instant. So the page's send times
and the export's (the audit log) are the same to the millisecond.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

#: Delays (hours) from sending to a signature: at least two in every bin of turnaround.HISTOGRAM_HOURS.
DELAYS = (0.2, 0.9, 1.5, 5.5, 7, 23, 30, 70, 90, 160, 200, 330, 400, 700)
#: Stalled after this many days pending (the page's default).
STALLED_DAYS = 7


def iso(moment: datetime) -> str:
    """The service's format: UTC, milliseconds, ``Z``."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Turnaround:
    """What was seeded: ids in order, each id's spec (with ``sentAt``), how it was sent, the folder."""

    ids: list[str]
    specs: dict[str, dict[str, Any]]
    folder_id: str
    campaign: str
    by_task: list[str] = field(default_factory=list)
    by_campaign: list[str] = field(default_factory=list)
    run_id: str | None = None

    def sent_at(self, envelope_id: str) -> str | None:
        """The seeded send time (the audit entry's), ``None`` for a draft."""
        value = self.specs[envelope_id].get("sentAt")
        return str(value) if value else None


def _spec(i: int, now: datetime, rng: random.Random, campaign: str, titles: list[str]) -> dict[str, Any]:
    kind = ("COMPLETED",) * 11 + ("PENDING",) * 4 + ("REJECTED",) * 2 + ("DRAFT", "CANCELLED", "COMPLETED")
    status = kind[i % len(kind)]
    signers = 1 + i % 3
    last = DELAYS[(i // 2) % len(DELAYS)] * rng.uniform(0.95, 1.05)  # the last signature's delay
    delays = [last * (k + 1) / signers for k in range(signers)]
    sent = now - timedelta(hours=delays[-1] + rng.uniform(2, 48))
    if status == "PENDING":
        sent = now - timedelta(days=12 if i % 3 == 0 else 2, hours=rng.uniform(0, 5))
    sent = sent.replace(microsecond=(sent.microsecond // 1000) * 1000)
    recipients: list[dict[str, Any]] = []
    for k in range(signers):
        person: dict[str, Any] = {
            "email": f"signer{i}.{k}@turnaround-{i}.example",
            "name": f"Signer {i}.{k}",
            "role": "SIGNER",
            "sendStatus": "SENT",
            "signingStatus": "NOT_SIGNED",
        }
        if status == "COMPLETED" or (status == "PENDING" and k < signers - 1):
            person.update(signingStatus="SIGNED", readStatus="OPENED")
            person["signedAt"] = iso(sent + timedelta(hours=delays[k]))
        elif status == "REJECTED" and k == 0:
            person.update(signingStatus="REJECTED", readStatus="OPENED", rejectionReason="no")
            person["signedAt"] = iso(sent + timedelta(hours=3))
        elif status == "PENDING" and i % 7 == 0:
            person["expiresAt"] = iso(now - timedelta(days=1))  # an expired link: stalled however young
        recipients.append(person)
    if i % 4 == 0:
        recipients.append({"email": f"cc{i}@turnaround.example", "name": "CC", "role": "CC"})
    spec: dict[str, Any] = {
        "title": titles[i % len(titles)] if titles else f"Turnaround {i}",
        "status": status,
        "externalId": f"{campaign}(R-{i})",
        "recipients": recipients,
        "updatedAt": iso(now - timedelta(minutes=30)),
        "templateId": (1, 2, None)[i % 3],
    }
    if status == "DRAFT":
        spec["createdAt"] = iso(now - timedelta(days=3))
        spec["externalId"] = f"draft-{i}"
        for person in recipients:
            person.pop("sendStatus", None)
        return spec
    spec["createdAt"] = iso(sent - timedelta(minutes=5))
    spec["sentAt"] = iso(sent)
    if status == "COMPLETED":
        spec["completedAt"] = iso(sent + timedelta(hours=delays[-1], seconds=2))
    elif status in ("REJECTED", "CANCELLED"):
        spec["completedAt"] = iso(sent + timedelta(hours=3, seconds=1))
    return spec


def seed_turnaround(
    sandbox: Any,
    count: int,
    *,
    campaign: str,
    folder_name: str = "Turnaround",
    titles: list[str] | None = None,
) -> Turnaround:
    """Store ``count`` envelopes (one in twelve in a folder named ``folder_name``); see the module doc."""
    import requests

    now = datetime.now(timezone.utc)
    rng = random.Random(48)
    made = requests.post(
        f"{sandbox.base_url}/folder/create",
        json={"name": folder_name},
        headers={"Authorization": sandbox.api_key},
        timeout=30,
    )
    made.raise_for_status()
    folder_id = str(made.json()["id"])
    specs = [_spec(i, now, rng, campaign, titles or []) for i in range(count)]
    by_task = {i for i, spec in enumerate(specs) if spec.get("sentAt") and i % 25 == 3}
    for i, spec in enumerate(specs):
        if i % 12 == 5:
            spec["folderId"] = folder_id
        if i in by_task:  # sent by a distribute task: its external id names no campaign
            spec["externalId"] = f"by-task-{i}"
    ids = sandbox.seed(specs)
    seeded = Turnaround(ids, dict(zip(ids, specs, strict=True)), folder_id, campaign)
    for i, envelope_id in enumerate(ids):
        if specs[i].get("sentAt"):
            (seeded.by_task if i in by_task else seeded.by_campaign).append(envelope_id)
    return seeded


def write_table(seeded: Turnaround, table_dir: Path) -> Path:
    """The campaign's result table (JSON Lines) with each sent row's ``sent_at`` = its audit time."""
    table_dir.mkdir(parents=True, exist_ok=True)
    path = table_dir / f"{seeded.campaign}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for n, envelope_id in enumerate(seeded.by_campaign):
            row = {"row_key": f"R-{n}", "status": "sent", "envelope_id": envelope_id, "attempts": 1}
            row["sent_at"] = seeded.sent_at(envelope_id)
            out.write(json.dumps(row) + "\n")
    return path


def plant_senders(seeded: Turnaround, table: Path, conn_id: str, dag_id: str) -> str:
    """The campaign's bulk send and one distribute task per task-sent envelope, in Airflow's database.

    Each distribute task's XCom time is set to its envelope's send time (as the worker would have written
    it just after the service answered); the bulk send's XCom time stays now (its end, never a row's).
    """
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import update
    from ui_plant import bulk_task, dag_of, plant

    from airflow_provider_docsign.operators.envelope import DocsignDistributeEnvelopeOperator

    with dag_of(dag_id) as dag:
        bulk_task("send")
        for n in range(len(seeded.by_task)):
            DocsignDistributeEnvelopeOperator(task_id=f"distribute_{n}", envelope_id="envelope_x")
    result = {
        "campaign_id": seeded.campaign,
        "docsign_conn_id": conn_id,
        "rows": len(seeded.by_campaign),
        "result_table": str(table),
        "format": "jsonl",
        "counts": {"sent": len(seeded.by_campaign), "invalid": 0, "failed": 0},
    }
    xcoms: dict[str, dict[str, Any]] = {"send": {"return_value": result}}
    for n, envelope_id in enumerate(seeded.by_task):
        xcoms[f"distribute_{n}"] = {"return_value": {"envelope_id": envelope_id, "status": "PENDING"}}
    run_id = plant(dag, xcoms)
    with create_session() as session:
        for n, envelope_id in enumerate(seeded.by_task):
            at = datetime.fromisoformat(str(seeded.sent_at(envelope_id)).replace("Z", "+00:00"))
            session.execute(
                update(XComModel)
                .where(
                    XComModel.dag_id == dag_id,
                    XComModel.run_id == run_id,
                    XComModel.task_id == f"distribute_{n}",
                )
                .values(timestamp=at)
            )
    seeded.run_id = run_id
    return run_id
