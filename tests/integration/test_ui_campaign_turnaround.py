"""A campaign's funnel, signed share and time to sign in its view equal what the sandbox's own data says.

Issue 48's acceptance: a campaign of 60 rows sent through the real ``DocsignBulkSendOperator`` against
the sandbox over HTTP; signers then sign at set delays after their row's ``sent_at`` (the sandbox's
``sign`` and ``set_times``), some reject, some links expire, some stay unanswered. The view's numbers
are compared with numbers this test computes from the sandbox's own records (read through its control
API, which the request log does not count) with every definition written out here, not imported, and
the view costs what it cost before the numbers came: ``ceil(60 / 20)`` ``get-many`` requests.

The view is judged eight days after the send, with a clock the test controls (``campaign_page``'s
``now``): real time need not pass for a signature to be "72 hours after sending".
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from bulk_helpers import customers, make_template, operator, read_table
from helpers import ctx

from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.skipif(
    not AIRFLOW_V_3_1_PLUS, reason="the Contracts pages are an Airflow 3.1+ UI plugin"
)

#: Hours after sending at which the signers of rows 0..39 sign (cycled).
DELAYS = (0.5, 2.0, 5.0, 12.0, 20.0, 30.0, 50.0, 80.0, 100.0, 150.0)
SIGNERS, REJECTERS, EXPIRED = range(0, 40), range(40, 48), range(48, 54)  # 54..59 never answer
SHARE_HOURS = (1.0, 6.0, 24.0, 72.0, 168.0)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _nearest_rank(values: list[float], q: float) -> float | None:
    """The nearest-rank quantile: the value at 1-based rank ceil(q * n) of the sorted values."""
    ordered = sorted(values)
    return ordered[math.ceil(q * len(ordered)) - 1] if ordered else None


def _expected(envelopes: list[dict[str, Any]], sent: dict[str, datetime], now: datetime) -> dict[str, Any]:
    """The numbers, from the sandbox's records, by the definitions written out.

    - Funnel, per recipient who has to act (not CC): signed if ``signingStatus`` is SIGNED, rejected if
      REJECTED, expired if unsigned with ``expiresAt`` passed, opened if ``readStatus`` is OPENED, else
      sent; cumulative: ``sent`` counts all, ``opened`` those who opened, signed or rejected.
    - Time to sign of a COMPLETED envelope: its latest signer's ``signedAt`` minus its row's ``sent_at``.
    - Signed share at h hours: of the envelopes sent at least h hours before ``now``, the share whose
      time to sign is at most h hours.
    """
    stages = dict.fromkeys(("sent", "opened", "signed", "rejected", "expired"), 0)
    seconds: dict[str, float] = {}
    for env in envelopes:
        for rec in env["recipients"]:
            if rec["role"] == "CC":
                continue
            stages["sent"] += 1
            if rec["signingStatus"] == "SIGNED":
                stages["signed"] += 1
                stages["opened"] += 1
            elif rec["signingStatus"] == "REJECTED":
                stages["rejected"] += 1
                stages["opened"] += 1
            elif rec.get("expiresAt") and _time(rec["expiresAt"]) <= now:
                stages["expired"] += 1
                stages["opened"] += rec["readStatus"] == "OPENED"
            elif rec["readStatus"] == "OPENED":
                stages["opened"] += 1
        if env["status"] == "COMPLETED":
            last = max(_time(r["signedAt"]) for r in env["recipients"] if r["role"] != "CC")
            seconds[env["id"]] = round((last - sent[env["id"]]).total_seconds(), 3)
    share = []
    for h in SHARE_HOURS:
        eligible = [i for i in sent if (now - sent[i]).total_seconds() >= h * 3600]
        done = [i for i in eligible if i in seconds and seconds[i] <= h * 3600]
        share.append((h, len(eligible), len(done)))
    times = list(seconds.values())
    return {
        "stages": stages,
        "share": share,
        "median": _nearest_rank(times, 0.5),
        "p90": _nearest_rank(times, 0.9),
        "count": len(times),
    }


def test_a_60_row_campaign_s_funnel_and_signed_share_equal_the_sandbox_s_own_numbers(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    from airflow_provider_docsign.ui.app import State
    from airflow_provider_docsign.ui.campaigns import campaign_page
    from airflow_provider_docsign.ui.lookup import CampaignRun
    from airflow_provider_docsign.ui.settings import UiSettings

    template_id = make_template(hook, make_pdf("template.pdf"))
    campaign = f"turnaround-{uuid.uuid4().hex[:8]}"
    result = tmp_path / "campaign" / "results.jsonl"
    pushed = operator(template_id, customers(60, "T"), result, campaign_id=campaign).execute(ctx())
    assert pushed["counts"]["sent"] == 60
    table = {row["envelope_id"]: row for row in read_table(result)}
    assert len(table) == 60
    assert all(row["sent_at"] for row in table.values())
    sent = {i: _time(row["sent_at"]) for i, row in table.items()}
    by_row = [row["envelope_id"] for row in sorted(table.values(), key=lambda r: r["row_key"])]

    # The signers answer: sign (then the signature is put at its delay), reject, or let the link expire.
    recipient = {i: sandbox.get_envelope(i)["recipients"][0]["id"] for i in by_row}
    for n in SIGNERS:
        sandbox.sign(by_row[n])
    for n in REJECTERS:
        sandbox.reject(by_row[n], recipient[by_row[n]], "not now")
    for n in EXPIRED:
        sandbox.expire(by_row[n])
    for n in SIGNERS:
        envelope_id = by_row[n]
        sandbox.wait_status(envelope_id, "COMPLETED")
        at = sent[envelope_id] + timedelta(hours=DELAYS[n % len(DELAYS)])
        sandbox.set_times(envelope_id, recipients=[{"id": recipient[envelope_id], "signedAt": _iso(at)}])
    for n in REJECTERS:
        sandbox.wait_status(by_row[n], "REJECTED")

    now = max(sent.values()) + timedelta(days=8)
    expected = _expected([sandbox.get_envelope(i) for i in by_row], sent, now)
    assert expected["stages"] == {"sent": 60, "opened": 48, "signed": 40, "rejected": 8, "expired": 6}

    run = CampaignRun("docsign_bulk", "manual__1", "bulk", -1, "2026-11-26T12:00:00+00:00", pushed)
    state = State(UiSettings(result_locations=(str(tmp_path),)))
    sandbox.clear_requests()
    view = campaign_page(state, docsign_conn, run, "/", DocsignHook, now=now)["service"]
    served = sandbox.requests()
    assert [r["path"] for r in served] == ["/envelope/get-many"] * math.ceil(60 / 20)

    assert view["funnel"]["stages"] == expected["stages"]
    assert view["funnel"]["shares"]["signed"] == round(40 / 60, 4)
    got = [(p["hours"], p["eligible"], p["signed"]) for p in view["share"]["table"]]
    assert got == expected["share"]
    # 40 signed at the delays, 4 per delay: 0.5 h -> 4, within 6 h -> 12, 24 h -> 20, 72 h -> 28, 168 h -> 40.
    assert [p["signed"] for p in view["share"]["table"]] == [4, 12, 20, 28, 40]
    assert all(p["share"] == round(p["signed"] / 60, 4) for p in view["share"]["table"])
    ttl = view["time_to_sign"]
    assert (ttl["count"], ttl["median_seconds"], ttl["p90_seconds"]) == (
        expected["count"],
        expected["median"],
        expected["p90"],
    )
    assert ttl["median_seconds"] == 20 * 3600
    assert ttl["p90_seconds"] == 100 * 3600
    assert view["sent_times"] == {"source": "campaign", "known": 60, "unknown": 0}
    # The chart's points: evenly spread up to the oldest send, each computed like the table's.
    points = view["share"]["points"]
    assert 1 <= len(points) <= 48
    for p in points:
        eligible = [i for i in sent if (now - sent[i]).total_seconds() >= p["hours"] * 3600]
        assert p["eligible"] == len(eligible)
    assert points[-1]["signed"] == 40
    assert all(p["eligible"] >= 30 for p in points)  # up to the median send's age: half the campaign
    # The counts the view had before are still there, from the same read.
    assert view["counts"]["completed"] == 40
    assert view["counts"]["rejected"] == 8
    assert view["counts"]["expired_link"] == 6
    assert view["requests"] == 3

    # Opened again within the cache time: the same numbers, no request.
    sandbox.clear_requests()
    again = campaign_page(state, docsign_conn, run, "/", DocsignHook, now=now)["service"]
    assert again["funnel"] == view["funnel"]
    assert sandbox.requests() == []
