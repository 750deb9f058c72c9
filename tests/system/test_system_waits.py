"""System tests: waits that end without a signature, on a real Documenso (opt-in).

A recipient rejects through the web app's own route (:func:`peer.reject_as`): the sensor fails at once,
in poke mode and through the trigger, naming the recipient and the reason. A signing link expires (its
``expiresAt`` set in the past in the instance's database, as the service's own clock would): the wait
fails naming the recipient, the remind operator renews the link (``POST /envelope/redistribute``), and
the envelope can then be signed and completes. A small campaign (four envelopes from a template, three
signed and one rejected) is waited on as a batch, and its three signed envelopes archived.
Signers use ``example.com`` addresses and ``distributionMethod: NONE``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from helpers import ctx, sig, signer
from peer import ActAfterFirstRead, patiently, raw_envelope, reject_as, sign_as, wait_status
from template_helpers import field as template_field

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignRecipientExpiredError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignBatchArchiveOperator,
    DocsignBulkSendOperator,
    DocsignRemindRecipientsOperator,
)
from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor
from airflow_provider_docsign.triggers import DocsignEnvelopeTrigger

NO_EMAIL = {"distributionMethod": "NONE"}


def sign(envelope_id: str, email: str | None = None) -> list[str]:
    """Sign as a recipient through the web app's route, patient with the instance's shared per-IP limit."""
    signed: list[str] = patiently(sign_as, envelope_id, email)
    return signed


def reject(envelope_id: str, email: str, reason: str) -> None:
    """Reject as a recipient through the web app's route, patient with the shared per-IP limit."""
    patiently(reject_as, envelope_id, email, reason)


def _parse(text: str | None) -> datetime:
    assert text, "no timestamp"
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def trigger_events(conn: str, envelope_ids: list[str], seconds: float = 60) -> list[dict[str, Any]]:
    """Run the sensor's trigger (as the triggerer would) to its event; bounded by its deadline."""
    trigger = DocsignEnvelopeTrigger(
        envelope_ids, docsign_conn_id=conn, poll_interval=1, deadline=time.time() + seconds
    )

    async def run() -> list[dict[str, Any]]:
        return [event.payload async for event in trigger.run()]

    return asyncio.run(asyncio.wait_for(run(), timeout=seconds + 30))


def recipient(envelope_id: str, email: str) -> dict[str, Any]:
    (found,) = [r for r in raw_envelope(envelope_id)["recipients"] if r["email"] == email]
    return found


# ------------------------------------------------------------------------------------------ rejection
def test_a_rejection_fails_the_wait_at_once_naming_the_recipient_and_the_reason(
    system_conn: str, system_hook: DocsignHook, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    keeper, rejecter, reason = (
        "system-keeper@example.com",
        "system-rejecter@example.com",
        "Wrong amount: 9,000",
    )
    envelope_id = new_envelope(
        "rejected",
        [pdf("rejected.pdf")],
        [
            signer(email=keeper, name="Kim Keeper"),
            signer(sig(positionY=40), email=rejecter, name="Rita Rejecter"),
        ],
    )
    system_hook.distribute_envelope(envelope_id, meta=NO_EMAIL)
    rejecter_id = recipient(envelope_id, rejecter)["id"]

    sensor = DocsignEnvelopeSensor(
        task_id="wait", envelope_id=envelope_id, docsign_conn_id=system_conn, poke_interval=1, timeout=600
    )
    started = time.monotonic()
    with (
        ActAfterFirstRead(sensor.hook, lambda: reject(envelope_id, rejecter, reason)) as rejection,
        pytest.raises(AirflowFailException) as failed,
    ):
        sensor.execute(ctx())
    # The service marks the envelope REJECTED a few seconds after the rejection (a background job);
    # the sensor fails at the first poll that sees it, long before its 600 s timeout.
    assert time.monotonic() - started < 60
    assert rejection.reads >= 2
    text = str(failed.value)
    assert f"envelope {envelope_id} is REJECTED: rejected by recipient {rejecter_id} 'Rita Rejecter'" in text
    assert f"with reason: {reason!r}" in text
    assert keeper not in text  # only the one who rejected is named

    envelope = system_hook.get_envelope(envelope_id)
    assert envelope.status == "REJECTED"
    by_email = {r.email: r for r in envelope.recipients}
    assert (by_email[rejecter].signing_status, by_email[rejecter].rejection_reason) == ("REJECTED", reason)

    # Deferred: the trigger's event, handed to execute_complete, fails the task with the same words.
    (event,) = trigger_events(system_conn, [envelope_id])
    assert event["status"] == "failure"
    deferred = DocsignEnvelopeSensor(
        task_id="wait", envelope_id=envelope_id, docsign_conn_id=system_conn, deferrable=True, timeout=600
    )
    with pytest.raises(AirflowFailException) as deferred_failure:
        deferred.execute_complete(ctx(), event)
    assert f"rejected by recipient {rejecter_id} 'Rita Rejecter'" in str(deferred_failure.value)
    assert f"with reason: {reason!r}" in str(deferred_failure.value)


# --------------------------------------------------------------------------------------------- expiry
def test_an_expired_link_fails_the_wait_then_a_reminder_renews_it_and_the_envelope_completes(
    system_conn: str,
    system_hook: DocsignHook,
    system_db: Callable[..., list[tuple[Any, ...]]],
    new_envelope: Callable[..., str],
    pdf: Callable[..., Path],
) -> None:
    late, early = "system-late@example.com", "system-early@example.com"
    envelope_id = new_envelope(
        "expired",
        [pdf("expired.pdf")],
        [signer(email=late, name="Lee Late"), signer(sig(positionY=40), email=early, name="Eve Early")],
    )
    system_hook.distribute_envelope(envelope_id, meta=NO_EMAIL)
    assert sign(envelope_id, early) == [early]
    before = recipient(envelope_id, early)["expiresAt"]

    # The link of the one still to sign expired an hour ago (the column is UTC without a zone).
    rows = system_db(
        "UPDATE \"Recipient\" SET \"expiresAt\" = (now() AT TIME ZONE 'UTC') - interval '1 hour' "
        'WHERE "envelopeId" = %s AND email = %s RETURNING id',
        envelope_id,
        late,
    )
    assert len(rows) == 1
    late_id = rows[0][0]
    expired_at = recipient(envelope_id, late)["expiresAt"]
    assert _parse(expired_at) < datetime.now(timezone.utc)
    assert raw_envelope(envelope_id)["status"] == "PENDING"  # expiry never changes the status

    sensor = DocsignEnvelopeSensor(
        task_id="wait", envelope_id=envelope_id, docsign_conn_id=system_conn, poke_interval=1, timeout=600
    )
    with pytest.raises(DocsignRecipientExpiredError) as failed:
        sensor.execute(ctx())
    error = failed.value
    assert isinstance(error, AirflowFailException)  # no retries: a retry would find the same link
    text = str(error)
    assert f"envelope {envelope_id} is PENDING but a signing link has expired" in text
    assert f"recipient {late_id} (SIGNER, s***@example.com)" in text
    assert late not in text
    assert early not in text
    assert "DocsignRemindRecipientsOperator" in text
    assert error.envelope_ids == [envelope_id]
    assert [(e["recipient_id"], e["expires_at"]) for e in error.expired] == [(late_id, expired_at)]

    # on_expired="wait" keeps waiting instead; the trigger fails the same way as poke mode.
    patient = DocsignEnvelopeSensor(
        task_id="wait", envelope_id=envelope_id, docsign_conn_id=system_conn, on_expired="wait"
    )
    assert patient.poke(ctx()) is False
    (event,) = trigger_events(system_conn, [envelope_id])
    assert event["status"] == "failure"
    with pytest.raises(
        DocsignRecipientExpiredError, match=f"recipient {late_id} \\(SIGNER, s\\*\\*\\*@example.com\\)"
    ):
        sensor.execute_complete(ctx(), event)

    # The service refuses the expired link itself.
    with pytest.raises(AssertionError, match="RECIPIENT_EXPIRED"):
        sign(envelope_id, late)

    reminded = DocsignRemindRecipientsOperator(
        task_id="remind", envelope_id=envelope_id, docsign_conn_id=system_conn, only_expired=True
    ).execute(ctx())
    assert reminded == {"envelope_id": envelope_id, "reminded": [late_id], "renewed": [late_id]}
    renewed = recipient(envelope_id, late)
    assert _parse(renewed["expiresAt"]) > datetime.now(timezone.utc) + timedelta(days=1)
    assert renewed["expirationNotifiedAt"] is None
    assert recipient(envelope_id, early)["expiresAt"] == before  # only the expired link was touched

    # Now the late signer can sign, and the same wait completes.
    waiting = DocsignEnvelopeSensor(
        task_id="wait", envelope_id=envelope_id, docsign_conn_id=system_conn, poke_interval=1, timeout=120
    )
    with ActAfterFirstRead(waiting.hook, lambda: sign(envelope_id, late)) as signing:
        result = waiting.execute(ctx())
    assert signing.result == [late]
    assert [(r["envelope_id"], r["status"]) for r in result] == [(envelope_id, "COMPLETED")]
    assert system_hook.get_envelope(envelope_id).status == "COMPLETED"


# ---------------------------------------------------------------------------------------- batch wait
SIGNED_ROWS = ["signs-1", "signs-2", "signs-3"]
REJECTED_ROW = "declines"
DECLINED = "Not this year"


@dataclass
class Campaign:
    """Four envelopes of one campaign: three to be signed, one to be rejected (each once)."""

    table: Path
    envelopes: dict[str, str]
    emails: dict[str, str]
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _settled: bool = False

    def settle(self) -> None:
        """Sign three and reject one, once (a second call only waits for the final statuses)."""
        with self._lock:
            if not self._settled:
                for key in SIGNED_ROWS:
                    assert sign(self.envelopes[key], self.emails[key]) == [self.emails[key]]
                reject(self.envelopes[REJECTED_ROW], self.emails[REJECTED_ROW], DECLINED)
                self._settled = True
        for key in SIGNED_ROWS:
            wait_status(self.envelopes[key], "COMPLETED")
        wait_status(self.envelopes[REJECTED_ROW], "REJECTED")


@pytest.fixture(scope="module")
def campaign(
    system_conn: str, system_hook: DocsignHook, system_run: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Campaign]:
    """A one-signer template (deleted after the module) and four envelopes from it in the run's folder."""
    folder = tmp_path_factory.mktemp("campaign")
    template_id = system_hook.create_template(
        title=f"{system_run.prefix} batch-wait template",
        files=[write_sample_pdf(folder / "renewal.pdf", title="renewal")],
        recipients=[
            {
                "email": "customer@example.com",
                "name": "Customer",
                "role": "SIGNER",
                "fields": [template_field("TEXT", 1, 10, "company"), template_field("SIGNATURE", 1, 80)],
            }
        ],
    )
    system_run.template_ids.append(template_id)
    try:
        keys = [*SIGNED_ROWS, REJECTED_ROW]
        emails = {key: f"system-{key}@example.com" for key in keys}
        table = folder / "results.jsonl"
        sent = DocsignBulkSendOperator(
            task_id="bulk",
            docsign_conn_id=system_conn,
            rows=[{"row_key": k, "email": emails[k], "company": f"Company {k}"} for k in keys],
            result_table=str(table),
            campaign_id=f"{system_run.prefix}-batchwait",
            folder_id=system_run.folder_id,
            template_id=template_id,
            recipients=[{"placeholder": "Customer", "email": "{email}", "name": "Customer {row_key}"}],
            prefill_fields={"company": "{company}"},
            title="Renewal {row_key}",
            meta=NO_EMAIL,
        ).execute(ctx())
        rows = [json.loads(line) for line in table.read_text().splitlines()]
        envelopes = {r["row_key"]: r["envelope_id"] for r in rows if r["status"] == "sent"}
        system_run.envelope_ids.extend(envelopes.values())
        assert sent["counts"]["sent"] == 4
        assert sorted(envelopes) == sorted(keys)
        yield Campaign(table=table, envelopes=envelopes, emails=emails)
    finally:
        system_hook.delete_envelope(template_id)


def test_a_batch_wait_allowing_one_unsigned_passes_and_reports_the_rejection(
    campaign: Campaign, system_conn: str
) -> None:
    sensor = DocsignEnvelopeSensor(
        task_id="wait",
        result_table=str(campaign.table),
        max_unsigned=1,
        docsign_conn_id=system_conn,
        poke_interval=1,
        timeout=300,
    )
    with ActAfterFirstRead(sensor.hook, campaign.settle) as settling:
        value = sensor.execute(ctx())
    assert settling.reads >= 2  # it waited while they signed and rejected

    declined = campaign.envelopes[REJECTED_ROW]
    rejecter_id = recipient(declined, campaign.emails[REJECTED_ROW])["id"]
    reason = f"rejected by recipient {rejecter_id} (SIGNER, s***@example.com): {DECLINED!r}"
    report = Path(f"{campaign.table}.outcome.jsonl")
    assert value == {
        "result_table": str(campaign.table),
        "envelopes": 4,
        "status": "COMPLETED",
        "completed": 3,
        "unsigned": 1,
        "max_unsigned": 1,
        "by_status": {"COMPLETED": 3, "REJECTED": 1},
        "not_completed": [
            {"envelope_id": declined, "row_key": REJECTED_ROW, "status": "REJECTED", "reason": reason}
        ],
        "report": report.as_uri(),
    }
    lines = {x["row_key"]: x for x in map(json.loads, report.read_text().splitlines())}
    assert {k: x["status"] for k, x in lines.items()} == {
        **dict.fromkeys(SIGNED_ROWS, "COMPLETED"),
        REJECTED_ROW: "REJECTED",
    }
    assert lines[REJECTED_ROW]["reason"] == reason
    assert lines[REJECTED_ROW]["envelope_id"] == declined
    assert all(lines[k]["completed_at"] for k in SIGNED_ROWS)
    assert campaign.emails[REJECTED_ROW] not in report.read_text()  # e-mails are masked in the report


def test_a_batch_wait_allowing_none_fails_naming_the_rejection(campaign: Campaign, system_conn: str) -> None:
    campaign.settle()
    report = Path(f"{campaign.table}.outcome.jsonl")
    report.unlink(missing_ok=True)
    sensor = DocsignEnvelopeSensor(
        task_id="wait",
        result_table=str(campaign.table),
        max_unsigned=0,
        docsign_conn_id=system_conn,
        poke_interval=1,
        timeout=120,
    )
    with pytest.raises(AirflowFailException) as failed:
        sensor.execute(ctx())
    text = str(failed.value)
    assert campaign.envelopes[REJECTED_ROW] in text
    assert DECLINED in text
    assert all(campaign.envelopes[k] not in text for k in SIGNED_ROWS)
    # The report is written all the same, before the verdict.
    statuses = [json.loads(line)["status"] for line in report.read_text().splitlines()]
    assert sorted(statuses) == ["COMPLETED", "COMPLETED", "COMPLETED", "REJECTED"]


def test_the_batch_archive_skips_the_rejected_and_archives_the_three_signed(
    campaign: Campaign, system_conn: str, tmp_path: Path
) -> None:
    campaign.settle()
    destination = tmp_path / "archive"
    operator = DocsignBatchArchiveOperator(
        task_id="archive",
        docsign_conn_id=system_conn,
        result_table=str(campaign.table),
        destination=str(destination),
        on_unsigned="skip",
    )
    result = operator.execute(ctx())
    declined = campaign.envelopes[REJECTED_ROW]
    assert (result["envelopes"], result["archived"], result["skipped"]) == (4, 3, 0)
    assert (result["not_signed"], result["failed"], result["failures"]) == (1, 0, [])
    (left_out,) = result["not_signed_envelopes"]
    assert (left_out["envelope_id"], left_out["status"]) == (declined, "REJECTED")
    assert DECLINED in (left_out["reason"] or "")

    manifests = {
        json.loads(p.read_text())["envelope_id"]: json.loads(p.read_text())
        for p in destination.glob("*/manifest.json")
    }
    assert sorted(manifests) == sorted(campaign.envelopes[k] for k in SIGNED_ROWS)
    for envelope_id, manifest in manifests.items():
        (entry,) = manifest["files"]
        pdf = Path(urlparse(entry["uri"]).path)
        assert pdf.read_bytes().startswith(b"%PDF-")
        assert entry["signature"]["signed"] is True, envelope_id
        assert entry["signature"]["passed"] is True, envelope_id

    # Again: every signed envelope is already archived; the rejected one is left out again.
    again = operator.execute(ctx(try_number=2))
    assert (again["archived"], again["skipped"], again["not_signed"]) == (0, 3, 1)
