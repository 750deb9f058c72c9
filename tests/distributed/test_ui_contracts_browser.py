"""The Contracts pages in a real browser (Debian's Chromium, Playwright), on the distributed stack.

Nothing is rewritten between the browser and the api-server. The stack's api-server loads the plugin
through its entry point, as after ``pip install``. Two docsign connections are offered:

- ``docsign_contracts_ui``, added with ``airflow connections add``, reaches a sandbox this module starts and
  stops, which holds 50 seeded envelopes (tests/ui_helpers.py);
- ``docsign_default``, the stack's own sandbox, where the example DAGs run: a 500-row campaign of
  ``docsign_bulk_signing`` (10 invalid rows, 5 rows the service refuses, 5 rejections, 5 expired links)
  and a ``docsign_contract_signing`` run whose signer never signs, so its sensor waits (deferred).

Also checked there: oldest first (and newest first) is the exact creation order of the service's
``createdAt``; a rejected envelope of the campaign names its bulk send (*Sent by*) and batch archive
(*Handled by*) and no *Waiting*; the bulk-send task's own Contracts tab shows its campaign and opens the
campaign's view. The stack's api-server reads campaign files only under ``[docsign]
ui_result_locations`` (``scripts/stack_layout.py``): the campaign's counts prove its S3 table is read.

Screenshots go to ``test-artifacts/ui/`` and the ones the guide shows to ``docs/img/``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from stack import API_KEY, USERNAME, Stack, chromium
from ui_helpers import XSS_TITLE, Seeded, port_of, seed_contracts

from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.distributed

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "ui"
DOCS_IMG = ROOT / "docs" / "img"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
]
UI_KEY = "api_ui_browser_key_00001"
# Not "docsign_ui": test_ui_browser.py adds that one through the connection form in the same stack.
CONN = "docsign_contracts_ui"
CAMPAIGN_ROWS = 500
INVALID, REFUSED, REJECTING, EXPIRING = 10, 5, 5, 5
TIMEOUT_MS = 60_000


def _airflow(stack: Stack, *args: str, check: bool = True) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "airflow", *args],
        env=stack.airflow_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="module")
def ui_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("ui-browser-sandbox"), api_key=UI_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def seeded(stack: Stack, ui_sandbox: SandboxServer) -> Iterator[Seeded]:
    found = seed_contracts(ui_sandbox)
    url = ui_sandbox.base_url
    _airflow(stack, "connections", "delete", CONN, check=False)
    _airflow(stack, "connections", "add", CONN, "--conn-type", "docsign", "--conn-host", url,
             "--conn-password", UI_KEY, "--conn-port", str(port_of(url)))  # fmt: skip
    yield found
    _airflow(stack, "connections", "delete", CONN, check=False)


@pytest.fixture(scope="module")
def stack_hook(stack: Stack) -> Iterator[Any]:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    os.environ["AIRFLOW_CONN_DOCSIGN_UI_STACK"] = json.dumps(
        {"conn_type": "docsign", "host": stack.sandbox_url, "password": API_KEY}
    )
    try:
        with DocsignHook("docsign_ui_stack") as hook:
            yield hook
    finally:
        os.environ.pop("AIRFLOW_CONN_DOCSIGN_UI_STACK", None)


def _customers() -> list[dict[str, str]]:
    rows = []
    for n in range(CAMPAIGN_ROWS):
        email = f"customer{n}@campaign.example"
        # Invalid rows first, the sandbox's personas last: the 5 refused creations are normal rows.
        if n < INVALID:
            email = f"not-an-email-{n}"
        elif n >= CAMPAIGN_ROWS - EXPIRING:
            email = f"expire.customer{n}@campaign.example"  # lets the link expire
        elif n >= CAMPAIGN_ROWS - EXPIRING - REJECTING:
            email = f"reject.customer{n}@campaign.example"  # the sandbox's persona: rejects
        rows.append({"id": f"R-{n:04d}", "name": f"Customer {n}", "email": email, "company": f"Co {n}"})
    return rows


def _onboarding_uses_done(api: Any) -> None:
    """Wait (bounded) until no run of ``docsign_template_onboarding`` may still use a template."""
    finished = {"success", "failed", "skipped", "upstream_failed", "removed"}

    def done() -> bool:
        runs = api.get("/dags/docsign_template_onboarding/dagRuns", limit=20)["dag_runs"]
        if not runs:
            return False  # not scheduled yet: its first run comes as soon as it is parsed
        for run in runs:
            uses = [
                t
                for t in api.task_instances("docsign_template_onboarding", run["dag_run_id"])
                if t["task_id"] == "create_from_template"
            ]
            if run["state"] not in finished and (not uses or any(t["state"] not in finished for t in uses)):
                return False
        return True

    api.wait("the onboarding DAG's template uses to end", done)


@pytest.fixture(scope="module")
def campaign(api: Any, sandbox: Any) -> dict[str, Any]:
    """The 500-row campaign, run to its end; what its bulk-send task returned."""
    # The stack's nightly onboarding DAG (unpaused, @daily, no catch-up) runs once as soon as it is
    # parsed and also uses templates: on a fresh stack its uses could take some of the faults below.
    _onboarding_uses_done(api)
    # The service refuses the first 5 creations with a 400: those rows fail, with the service's reason.
    sandbox.inject_fault(method="POST", path="/envelope/use", status=400, count=REFUSED)
    run_id = api.trigger("docsign_bulk_signing", customers=_customers())
    assert api.finish("docsign_bulk_signing", run_id) == "success"
    task = f"/dags/docsign_bulk_signing/dagRuns/{quote(run_id)}/taskInstances/send_campaign"
    path = f"{task}/xcomEntries/return_value"
    result = api.get(path)["value"]
    result = json.loads(result) if isinstance(result, str) else result
    counts = result["counts"]
    assert (counts.get("invalid"), counts.get("failed")) == (INVALID, REFUSED), counts
    assert counts["sent"] == CAMPAIGN_ROWS - INVALID - REFUSED
    return {"run_id": run_id, **result}


@pytest.fixture(scope="module")
def waiting(api: Any, stack_hook: Any) -> Iterator[dict[str, Any]]:
    """A contract whose signer never signs (the sandbox's ``ignore`` persona): its sensor waits."""
    run_id = api.trigger(
        "docsign_contract_signing", customer_id="UI-WAIT", signer_email="ignore.ui@acme.example"
    )

    def deferred() -> bool:
        states = {t["task_id"]: t["state"] for t in api.task_instances("docsign_contract_signing", run_id)}
        return states.get("wait_for_signatures") == "deferred"

    api.wait("the contract's sensor to defer", deferred)
    (envelope,) = stack_hook.find_envelopes_by_external_id(f"contract-{run_id}-UI-WAIT")
    yield {"run_id": run_id, "envelope": envelope}
    stack_hook.cancel_envelope(envelope.id, reason="end of the UI test")
    assert api.finish("docsign_contract_signing", run_id) == "failed"  # the sensor saw CANCELLED


def _admin_token(stack: Stack) -> str:
    import requests

    resp = requests.post(
        f"{stack.api_url}/auth/token", json={"username": USERNAME, "password": stack.password}, timeout=30
    )
    resp.raise_for_status()
    return str(resp.json()["access_token"])


def test_a_500_row_campaign_costs_at_most_ceil_n_over_20_plus_2_per_refresh(
    stack: Stack, sandbox: Any, campaign: dict[str, Any]
) -> None:
    import requests

    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {_admin_token(stack)}"
    sandbox.clear_requests()
    base = f"{stack.api_url}/docsign/api"
    for page in (1, 2, 1):
        listed = http.get(f"{base}/campaigns", params={"conn_id": "docsign_default"}, timeout=120)
        assert listed.status_code == 200, listed.text
        opened = http.get(
            f"{base}/campaigns/{quote(campaign['campaign_id'], safe='')}",
            params={"conn_id": "docsign_default", "page": page, "page_size": 10},
            timeout=120,
        )
        assert opened.status_code == 200, opened.text
    data = opened.json()
    assert data["rows"] == CAMPAIGN_ROWS
    assert data["problems"]["total"] == INVALID + REFUSED
    assert len(data["problems"]["items"]) == 10  # page 1, 10 a page
    assert data["service"]["counts"]["rejected"] == REJECTING
    served = sandbox.requests()
    sent = campaign["counts"]["sent"]
    assert len(served) <= math.ceil(sent / 20) + 2, [r["path"] for r in served]
    assert {r["path"] for r in served} == {"/envelope/get-many"}


@pytest.fixture
def page(stack: Stack) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.set_default_timeout(TIMEOUT_MS)
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.dialogs = dialogs  # type: ignore[attr-defined]
            page.goto(stack.api_url + "/")
            page.locator("input[name=username]").fill(USERNAME)
            page.locator("input[name=password]").fill(stack.password)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(lambda url: "/auth/login" not in url)
            yield page
        finally:
            browser.close()


def _shot(page: Any, name: str, docs: bool = False) -> None:
    path = ARTIFACTS / name
    page.screenshot(path=str(path))
    if docs:
        shutil.copyfile(path, DOCS_IMG / name)


def _rows(frame: Any) -> set[str]:
    return set(
        frame.locator("#contracts tbody tr").evaluate_all("rows => rows.map(r => r.dataset.envelopeId)")
    )


def test_contracts_page_campaign_and_the_waiting_task(
    stack: Stack, page: Any, seeded: Seeded, campaign: dict[str, Any], waiting: dict[str, Any]
) -> None:
    # Browse > Contracts, from the navigation as a user finds it.
    page.get_by_role("button", name="Browse").click()
    page.get_by_role("menuitem", name="Contracts").click()
    page.wait_for_url(lambda url: "/plugin/docsign-contracts" in url)
    frame = page.frame_locator("iframe[src*='/docsign/ui/contracts']")
    frame.locator("#conn").select_option(CONN)
    frame.locator(f"#contracts tbody tr[data-envelope-id='{seeded.xss}']").wait_for()
    frame.locator("#count").filter(has_text="50 of 50 envelopes").wait_for()
    assert _rows(frame) == set(seeded.ids)
    # The title holding markup is text: the very string in the cell, no element made from it.
    cell = frame.locator(f"#contracts tbody tr[data-envelope-id='{seeded.xss}'] td").first
    assert cell.inner_text() == XSS_TITLE
    assert frame.locator("#contracts img").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]
    _shot(page, "ui-contracts.png", docs=True)

    frame.locator("#stalled").check()
    frame.locator("#count").filter(has_text=f"{len(seeded.stalled)} of 50 envelopes").wait_for()
    assert _rows(frame) == seeded.stalled
    _shot(page, "ui-contracts-stalled.png", docs=True)

    # The stack's own connection: the waiting contract links to the sensor that waits on it.
    frame.locator("#stalled").uncheck()
    frame.locator("#conn").select_option("docsign_default")
    envelope = waiting["envelope"]
    row = frame.locator(f"#contracts tbody tr[data-envelope-id='{envelope.id}']")
    row.wait_for()
    link = row.locator("a[data-relation='waiting']")
    assert link.inner_text() == "Waiting: docsign_contract_signing.wait_for_signatures"
    assert row.locator("a[data-relation='created']").inner_text().endswith(".create_envelope")
    _shot(page, "ui-contracts-waiting.png")
    link.click()
    run = quote(waiting["run_id"], safe="")
    page.wait_for_url(
        lambda url: f"/dags/docsign_contract_signing/runs/{run}/tasks/wait_for_signatures" in url
    )
    _shot(page, "ui-waiting-task.png")

    # The campaign: its counts from the task's XCom and from the service, and its failed rows.
    page.goto(stack.api_url + "/plugin/docsign-contracts")
    frame = page.frame_locator("iframe[src*='/docsign/ui/contracts']")
    frame.locator("#conn").select_option("docsign_default")
    frame.locator("#tab-campaigns").click()
    entry = frame.locator(f"#campaigns tbody tr[data-campaign-id='{campaign['campaign_id']}']")
    entry.wait_for()
    cells = entry.locator("td").all_inner_texts()
    sent = CAMPAIGN_ROWS - INVALID - REFUSED
    assert cells[1:5] == [str(CAMPAIGN_ROWS), str(sent), str(INVALID), str(REFUSED)], cells
    assert int(cells[7]) == REJECTING, cells
    entry.get_by_role("button").click()
    summary = frame.locator("#campaign-summary")
    summary.filter(
        has_text=f"{CAMPAIGN_ROWS} rows: {sent} sent, {INVALID} invalid, {REFUSED} failed"
    ).wait_for()
    assert f"{REJECTING} rejected" in summary.inner_text()
    problems = frame.locator("#campaign-rows tbody tr")
    assert problems.count() == INVALID + REFUSED
    texts = problems.all_inner_texts()
    assert sum("invalid" in t for t in texts) == INVALID
    assert sum("failed" in t for t in texts) == REFUSED
    _shot(page, "ui-campaign.png", docs=True)


def test_the_task_view_shows_the_envelope_it_waits_on(
    stack: Stack, page: Any, waiting: dict[str, Any]
) -> None:
    run = quote(waiting["run_id"], safe="")
    page.goto(f"{stack.api_url}/dags/docsign_contract_signing/runs/{run}/tasks/wait_for_signatures")
    page.get_by_role("link", name="Contracts", exact=True).click()  # the task instance's tab
    page.wait_for_url(lambda url: url.endswith("/plugin/docsign-task"))
    frame = page.frame_locator("iframe[src*='/docsign/ui/task']")
    envelope = waiting["envelope"]
    box = frame.locator(f".envelope[data-envelope-id='{envelope.id}']")
    box.wait_for()
    assert envelope.title in box.locator("h2").inner_text()
    assert "PENDING" in box.locator("h2").inner_text()
    recipients = box.locator("table").first.locator("tbody tr").all_inner_texts()
    assert any("i***@acme.example" in r and "NOT_SIGNED" in r for r in recipients), recipients
    assert "ignore.ui@acme.example" not in box.inner_text()
    events = box.locator("table").nth(1).locator("tbody tr")
    assert events.count() >= 1
    _shot(page, "ui-task-view.png", docs=True)


def _row_ids(frame: Any) -> list[str]:
    return list(
        frame.locator("#contracts tbody tr").evaluate_all("rows => rows.map(r => r.dataset.envelopeId)")
    )


def test_oldest_first_is_the_exact_creation_order_and_a_campaign_row_names_its_tasks(
    stack: Stack, page: Any, campaign: dict[str, Any], stack_hook: Any
) -> None:
    from airflow_provider_docsign.service.expiry import parse_timestamp

    # A rejected envelope of the campaign: settled, so no task waits on it any more.
    (rejected,) = stack_hook.find_envelopes_by_external_id(f"{campaign['campaign_id']}(R-0490)")
    page.goto(stack.api_url + "/plugin/docsign-contracts")
    frame = page.frame_locator("iframe[src*='/docsign/ui/contracts']")
    frame.locator("#conn").select_option("docsign_default")
    row = frame.locator(f"#contracts tbody tr[data-envelope-id='{rejected.id}']")
    row.wait_for()
    assert row.get_attribute("data-status") == "REJECTED"
    sent_by = row.locator("a[data-relation='sent']")
    assert sent_by.inner_text() == "Sent by: docsign_bulk_signing.send_campaign"
    assert (
        row.locator("a[data-relation='handled']").inner_text() == "Handled by: docsign_bulk_signing.archive"
    )
    assert row.locator("a[data-relation='waiting']").count() == 0
    assert "Waiting" not in row.inner_text()
    for sort in ("-age", "age"):  # oldest first, then newest first
        frame.locator("#sort").select_option(sort)
        frame.locator(f"#contracts[data-sort='{sort}']").wait_for()  # the rows of this sort
        ids = _row_ids(frame)
        created = {e.id: parse_timestamp(e.created_at) for e in stack_hook.get_envelopes(ids)}
        times = [created[i] for i in ids if created.get(i) is not None]
        ours = [i for i in ids if i in created]
        assert len(ours) == len(ids) >= CAMPAIGN_ROWS - INVALID - REFUSED
        expected = sorted(times, reverse=sort == "age")
        assert times == expected, f"{sort}: not in creation order"
    _shot(page, "ui-contracts-newest-first.png")


def test_the_bulk_send_tasks_tab_shows_its_campaign_and_opens_its_view(
    stack: Stack, page: Any, campaign: dict[str, Any]
) -> None:
    run = quote(campaign["run_id"], safe="")
    page.goto(f"{stack.api_url}/dags/docsign_bulk_signing/runs/{run}/tasks/send_campaign")
    page.get_by_role("link", name="Contracts", exact=True).click()  # the task instance's tab
    page.wait_for_url(lambda url: url.endswith("/plugin/docsign-task"))
    frame = page.frame_locator("iframe[src*='/docsign/ui/task']")
    sent = CAMPAIGN_ROWS - INVALID - REFUSED
    counts = frame.locator("#campaign .campaign-counts")
    counts.wait_for()
    assert counts.inner_text() == (
        f"This task sent the campaign {campaign['campaign_id']}: {CAMPAIGN_ROWS} rows, {sent} sent, "
        f"{INVALID} invalid, {REFUSED} failed."
    )
    assert "handles no envelope" not in frame.locator("#summary").inner_text()
    _shot(page, "ui-task-campaign.png")
    frame.locator("#campaign-link").click()  # the campaign's view, in the same tab
    summary = frame.locator("#campaign-summary")
    summary.filter(
        has_text=f"{CAMPAIGN_ROWS} rows: {sent} sent, {INVALID} invalid, {REFUSED} failed"
    ).wait_for()
    assert f"{REJECTING} rejected" in summary.inner_text()
    assert frame.locator("#campaign-rows tbody tr").count() == INVALID + REFUSED
    assert frame.locator("#tab-campaigns").get_attribute("aria-selected") == "true"
    _shot(page, "ui-task-campaign-view.png")
