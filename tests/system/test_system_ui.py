"""The Contracts pages' reads against a real Documenso: the listing (folders, then the root and each
folder), the rows built from it, ``get-many`` for a campaign's counts, and the audit events of the task
view. What the browser would receive is searched for the plain e-mail and the signing token."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from helpers import sig, signer

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.ui.reader import (
    audit_rows,
    campaign_state,
    contract_row,
    envelope_detail,
    read_listing,
)

NO_EMAIL = {"distributionMethod": "NONE"}


def test_the_contracts_page_reads_what_the_real_service_lists(
    system_hook: DocsignHook, system_run: Any, new_envelope: Callable[..., str], pdf: Callable[..., Path]
) -> None:
    draft = new_envelope("ui-draft", [pdf("ui-a.pdf")], [signer(sig(), email="ui-draft-signer@example.com")])
    pending = new_envelope(
        "ui-pending", [pdf("ui-b.pdf")], [signer(sig(), email="ui-pending-signer@example.com")]
    )
    system_hook.distribute_envelope(pending, meta=NO_EMAIL)

    listing = read_listing(system_hook)
    assert listing.truncated is None
    assert system_run.folder_id in listing.folders  # the real service lists every level of folders
    listed = {e.id: e for e in listing.envelopes}
    assert {draft, pending} <= set(listed)  # found in the run's folder, not only at the root
    now = datetime.now(timezone.utc)
    rows = {
        i: contract_row(
            listed[i], folders=listing.folders, web_url=system_hook.web_url, now=now, stalled_days=7
        )
        for i in (draft, pending)
    }
    assert rows[pending]["status"] == "PENDING"
    assert rows[pending]["unsigned"] == [{"role": "SIGNER", "email": "u***@example.com"}]
    assert rows[pending]["stalled"] is False
    assert rows[draft]["status"] == "DRAFT"
    assert rows[pending]["folder_id"] == system_run.folder_id
    assert rows[pending]["folder"] == listing.folders[system_run.folder_id]
    # The listing carries the team's URL slug: the row links to the envelope in the web app.
    assert str(rows[pending]["url"]).endswith(f"/documents/{pending}")

    envelopes = system_hook.get_envelopes([draft, pending])
    counts = campaign_state(envelopes, now)
    assert (counts["pending"], counts["draft"], counts["completed"]) == (1, 1, 0)
    detail = envelope_detail(envelopes[1], system_hook.web_url, now)
    detail["audit"] = audit_rows(system_hook, pending)
    assert detail["audit"], "the real service logs the creation and the sending"
    assert all(set(e) == {"type", "created_at", "email"} for e in detail["audit"])

    # The numbers above the table, from what the listing holds: the real service marks the pending
    # signer NOT_SENT (no e-mail with distributionMethod NONE), who is still in the funnel as sent;
    # neither envelope has a time to sign.
    assert listed[pending].recipients[0].send_status == "NOT_SENT"
    assert turnaround.funnel([listed[draft], listed[pending]], now) == {
        "sent": 1,
        "opened": 0,
        "signed": 0,
        "rejected": 0,
        "expired": 0,
    }
    assert rows[pending]["seconds_to_sign"] is None
    assert turnaround.summarize((listed[i], None) for i in (draft, pending)).count == 0

    tokens = {r.raw.get("token") for e in envelopes for r in e.recipients if r.raw.get("token")}
    text = repr([rows, detail])
    for secret in ("ui-draft-signer@example.com", "ui-pending-signer@example.com", *tokens):
        assert secret not in text
