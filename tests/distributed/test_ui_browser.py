"""The provider in the Airflow UI, in a real browser: Debian's Chromium driven by Playwright.

Against the stack's api-server: log in; add a "Docsign (Documenso)" connection through the form (our
labels, placeholders, extra fields, hidden fields); click its *Test* button exactly as a user does,
with no request rewritten (our success message, and our message for a wrong key); open a finished
create task instance and follow its "Docsign envelope" extra link to the sandbox's envelope page.

The DAG run uses ``docsign_default``, which the stack added to the metadata database with ``airflow
connections add`` (no component has an ``AIRFLOW_CONN_*`` variable); the form's connection is read by
the api-server from the database too when its *Test* button is clicked. Screenshots are written to
``test-artifacts/ui/``; the form's is kept in ``docs/ui-connection-form.png``.

The browser is the one ``make test``'s pre-flight found (``$DOCSIGN_CHROMIUM``), else Debian's
``chromium`` on PATH, located by the same pre-flight code (``scripts/stack.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from stack import API_KEY, USERNAME, Stack, chromium

from airflow_provider_docsign import PORT_LABEL, PORT_PLACEHOLDER

pytestmark = pytest.mark.distributed

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "ui"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CONN_ID = "docsign_ui"
TIMEOUT_MS = 60_000


@pytest.fixture
def page(stack: Stack) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        # Debian's package (no browser can be downloaded here), where the pre-flight found it.
        browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(TIMEOUT_MS)
            yield page
        finally:
            browser.close()


def _test_connection(page: Any) -> str:
    row = page.get_by_role("row").filter(has_text=CONN_ID)
    with page.expect_response(lambda r: r.url.endswith("/api/v2/connections/test")) as response:
        row.get_by_role("button", name="Test Connection").click()
    assert response.value.status == 200, response.value.text()
    toast = page.get_by_role("status").filter(has_text="Test Connection")
    toast.first.wait_for()
    return str(toast.first.inner_text())


def test_connection_form_test_button_and_envelope_link(
    stack: Stack, api: Any, page: Any, docsign_hook: Any
) -> None:
    run_id = api.trigger("docsign_contract_signing", customer_id="UI-1")  # runs while the form is checked

    page.goto(stack.api_url + "/")
    page.locator("input[name=username]").fill(USERNAME)
    page.locator("input[name=password]").fill(stack.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/auth/login" not in url)

    page.goto(stack.api_url + "/connections")
    page.get_by_role("button", name="Add Connection").click()
    form = page.get_by_role("dialog")
    form.locator("input[name=connection_id]").fill(CONN_ID)
    form.get_by_role("combobox").click()
    page.keyboard.type("Docsign")
    page.get_by_role("option", name="Docsign (Documenso)").click()

    # Our relabelled standard fields, with our placeholders; login and schema are hidden. The port is
    # shown, saying when it is needed and what goes there: Airflow 3.3.2's Test button sends the stored
    # port, and refuses a connection without one.
    host, key = form.locator("input[name=host]"), form.locator("input[name=password]")
    port = form.locator("input[name=port]")
    assert host.get_attribute("placeholder") == "https://app.documenso.com/api/v2"
    assert key.get_attribute("placeholder") == "api_xxxxxxxxxxxxxxxx"
    assert port.get_attribute("placeholder") == PORT_PLACEHOLDER
    for label in ("Base URL", "API key", PORT_LABEL):
        assert form.get_by_text(label, exact=True).is_visible()
    for hidden in ("login", "schema"):
        assert form.locator(f"input[name={hidden}]").count() == 0
    host.fill(stack.sandbox_url)
    port.fill(str(stack.ports["sandbox"]))
    key.fill(API_KEY)
    page.screenshot(path=str(ARTIFACTS / "connection-form.png"))
    form.get_by_role("button", name="Extra Fields", exact=True).click()
    for label in ("Timeout (seconds)", "Verify TLS", "Web app URL"):
        form.get_by_text(label, exact=True).wait_for()
    page.screenshot(path=str(ARTIFACTS / "connection-form-extra-fields.png"))
    form.get_by_role("button", name="Save").click()
    page.get_by_role("row").filter(has_text=CONN_ID).wait_for()

    ok = _test_connection(page)
    page.screenshot(path=str(ARTIFACTS / "connection-test-ok.png"))
    assert f"Connected to {stack.sandbox_url}; the API key is valid." in ok, ok

    page.get_by_role("row").filter(has_text=CONN_ID).get_by_role("button", name="Edit Connection").click()
    page.get_by_role("dialog").locator("input[name=password]").fill("api_wrong_key_0000000")
    page.get_by_role("dialog").get_by_role("button", name="Save").click()
    page.get_by_role("dialog").wait_for(state="hidden")
    refused = _test_connection(page)
    page.screenshot(path=str(ARTIFACTS / "connection-test-wrong-key.png"))
    assert "refused the API key" in refused, refused
    assert "check the connection's password" in refused, refused
    assert "api_wrong_key_0000000" not in refused

    # The finished create task instance links to its envelope in the web app.
    assert api.finish("docsign_contract_signing", run_id) == "success"
    path = f"/dags/docsign_contract_signing/dagRuns/{quote(run_id)}/taskInstances/create_envelope"
    (envelope,) = docsign_hook.find_envelopes_by_external_id(f"contract-{run_id}-UI-1")
    page.goto(f"{stack.api_url}/dags/docsign_contract_signing/runs/{quote(run_id)}/tasks/create_envelope")
    page.get_by_role("tab", name="Details").or_(page.get_by_text("Details", exact=True)).first.click()
    link = page.locator("a", has_text="Docsign envelope")
    link.wait_for()
    link.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "task-instance-envelope-link.png"))
    href = link.get_attribute("href")
    root = stack.sandbox_url.removesuffix("/api/v2")
    assert href is not None
    assert href.startswith(f"{root}/t/"), href
    assert href.endswith(f"/documents/{envelope.id}"), href
    assert api.get(f"{path}/links")["extra_links"]["Docsign envelope"] == href
    # Followed, the link opens the sandbox's page of that envelope (the sandbox has no web app).
    page.goto(href)
    assert page.locator("h1").inner_text() == envelope.title
    assert envelope.id in page.content()
    page.screenshot(path=str(ARTIFACTS / "sandbox-envelope-page.png"))
