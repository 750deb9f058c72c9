"""The Contracts tab's numbers in a real browser (Debian's Chromium, Playwright): counts, stalled, median
and 90th-percentile time to sign, and the time-to-sign distribution as a chart and a table (issue 48).

Airflow's own api-server (tests/ui_helpers.py, the plugin through its entry point) on the test session's
metadata database, not the distributed stack: 60 envelopes with known send and signing times
(tests/ui_turnaround_seed.py) in a sandbox this module starts and stops, sent as far as Airflow knows by a
campaign (its result table under ``[docsign] ui_result_locations``) and by distribute tasks (planted
XComs). Titles and the folder's name look like markup, a template and a bidi trick: they show as the
very text. The numbers shown are the JSON's, the chart has one bar per bin, the template filter gives
that template's numbers, and no request of the page leaves for another host. The screenshot docs/ui.md
shows is written to ``docs/img/``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from ui_helpers import ARTIFACTS, ApiServer, port_of, signed_in_page
from ui_turnaround_seed import Turnaround, plant_senders, seed_turnaround, write_table

from airflow_provider_docsign._compat import AIRFLOW_V_3_1_PLUS
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(not AIRFLOW_V_3_1_PLUS, reason="the Contracts pages are an Airflow 3.1+ UI plugin"),
]

ROOT = Path(__file__).resolve().parents[2]
DOCS_IMG = ROOT / "docs" / "img"
KEY = "api_ui_turnaround_browser1"
CONN = "docsign_turnaround_ui"
TITLES = [
    "<img src=x onerror=alert(1)>",
    "{{ ti.xcom_pull('x') }} renewal",
    "Lease \u202egnp.exe",
    "Supply agreement",
    "Service contract",
]
FOLDER = "<b>Legal</b> {{ conn.docsign_default.password }}"
TIMEOUT_MS = 60_000
UNITS = {"min": 60, "h": 3600, "d": 86400}


@pytest.fixture(scope="module")
def ui_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxServer]:
    with SandboxServer(tmp_path_factory.mktemp("ui-turnaround-sandbox"), api_key=KEY) as server:
        yield server


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ui-turnaround-results")


@pytest.fixture(scope="module")
def seeded(airflow_db: str, ui_sandbox: SandboxServer, results: Path) -> Turnaround:
    found = seed_turnaround(ui_sandbox, 60, campaign="renewals-2026", folder_name=FOLDER, titles=TITLES)
    plant_senders(found, write_table(found, results), CONN, "ui_turnaround_browser")
    return found


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, ui_sandbox: SandboxServer, seeded: Turnaround, results: Path
) -> Iterator[ApiServer]:
    env = {"AIRFLOW__DOCSIGN__UI_RESULT_LOCATIONS": str(results)}
    with ApiServer(tmp_path_factory.mktemp("ui-turnaround-api"), cache_seconds=600, extra_env=env) as api:
        api.add_connection(CONN, "docsign", ui_sandbox.base_url, KEY, port_of(ui_sandbox.base_url))
        yield api


@pytest.fixture
def page(server: ApiServer) -> Iterator[Any]:
    with signed_in_page(server, height=1200, timeout_ms=TIMEOUT_MS) as signed_in:
        yield signed_in


def _api(server: ApiServer, **params: Any) -> dict[str, Any]:
    resp = server.session("admin").get(
        f"{server.url}/docsign/api/contracts", params={"conn_id": CONN, **params}, timeout=60
    )
    assert resp.status_code == 200, resp.text[:500]
    return dict(resp.json())


def _seconds(text: str) -> float:
    """The seconds a shown duration stands for (``20.0 h``, ``35 min``, ``1.5 d``)."""
    number, unit = text.split()
    return float(number) * UNITS[unit]


def _check_summary(frame: Any, summary: dict[str, Any]) -> None:
    """Every number shown is the JSON's; durations within their rounding; the chart has a bar per bin."""
    shown = {
        key: (value, text)
        for key, value, text in frame.locator("#summary-numbers .number").evaluate_all(
            "items => items.map(i => [i.dataset.key, i.querySelector('dd').dataset.value,"
            " i.querySelector('dd').textContent])"
        )
    }
    tts = summary["time_to_sign"]
    counts = {
        "shown": summary["shown"],
        "stalled": summary["stalled"],
        "timed": tts["count"],
        "without_sent": summary["without_sent"],
        **{f"status-{k}": n for k, n in summary["counts"].items()},
    }
    for key, n in counts.items():
        assert shown[key] == (str(n), str(n)), key
    for key, field in (("median", "median_seconds"), ("p90", "p90_seconds")):
        value, text = shown[key]
        assert float(value) == tts[field], key
        unit = text.split()[1]
        assert abs(_seconds(text) - tts[field]) <= UNITS[unit] * (0.5 if unit == "min" else 0.05), (key, text)
    cells = frame.locator("#tts-table tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    assert cells == [[b["label"], str(b["count"])] for b in summary["histogram"]]
    chart = frame.locator("#tts-chart")
    assert chart.get_attribute("data-chart-points") == str(len(summary["histogram"]))
    assert frame.locator("#tts-chart canvas").count() >= 1


def test_the_contracts_numbers_render_as_text_and_a_chart_and_follow_the_filters(
    server: ApiServer, ui_sandbox: SandboxServer, seeded: Turnaround, page: Any
) -> None:
    asked: list[tuple[str, str]] = []
    page.on("request", lambda r: asked.append((r.url, r.frame.url if r.frame else "")))
    page.goto(server.url + "/plugin/docsign-contracts")
    frame = page.frame_locator("iframe[src*='/docsign/ui/contracts']")
    frame.locator("#conn").select_option(CONN)
    frame.locator("#count").filter(has_text="60 of 60 envelopes").wait_for()
    frame.locator("#tts-chart canvas").first.wait_for()
    everything = _api(server)
    assert everything["summary"]["time_to_sign"]["count"] > 20
    _check_summary(frame, everything["summary"])

    # The template filter: that template's numbers, the same as the JSON's for it.
    frame.locator("#template").select_option("2")
    frame.locator("#summary-scope").filter(has_text="template 2").wait_for()
    only = _api(server, template_id="2")
    assert 0 < only["summary"]["shown"] < 60
    frame.locator("#count").filter(has_text=f"{only['summary']['shown']} of 60 envelopes").wait_for()
    _check_summary(frame, only["summary"])
    frame.locator("#template").select_option("")
    frame.locator("#count").filter(has_text="60 of 60 envelopes").wait_for()

    # Titles and the folder name that look like markup, a template or a bidi trick are the very text.
    titles = set(frame.locator("#contracts tbody tr td:first-child").all_text_contents())
    assert set(TITLES) <= titles
    folders = set(frame.locator("#contracts tbody tr td:nth-child(9)").all_text_contents())
    assert FOLDER in folders
    assert FOLDER in frame.locator("#folder option").all_text_contents()
    assert frame.locator("#contracts img, #contracts b, #summary img").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]
    # The page's own requests stay on the api-server's host.
    ours = [u for u, f in asked if "/docsign/" in f]
    assert ours
    assert {urlsplit(u).netloc for u in ours} == {urlsplit(server.url).netloc}, ours

    frame.locator("#summary").scroll_into_view_if_needed()
    shot = ARTIFACTS / "ui-contracts-turnaround.png"
    page.screenshot(path=str(shot))
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, DOCS_IMG / shot.name)


def _theme(frame: Any) -> tuple[str, str, str]:
    """The page's theme, its background colour and the chart's bar colour as the page reads them."""
    found = frame.locator("html").evaluate(
        "root => [root.dataset.theme || '', getComputedStyle(document.body).backgroundColor,"
        " getComputedStyle(root).getPropertyValue('--chart-bar').trim()]"
    )
    return (str(found[0]), str(found[1]), str(found[2]))


def test_the_numbers_follow_airflows_dark_and_light_theme(
    server: ApiServer, seeded: Turnaround, page: Any
) -> None:
    # Airflow's UI follows the system's colour scheme unless the user picked one: dark here.
    page.emulate_media(color_scheme="dark")
    page.goto(server.url + "/plugin/docsign-contracts")
    page.wait_for_function("document.documentElement.classList.contains('dark')")
    frame = page.frame_locator("iframe[src*='/docsign/ui/contracts']")
    frame.locator("#conn").select_option(CONN)
    frame.locator("#count").filter(has_text="60 of 60 envelopes").wait_for()
    frame.locator("#tts-chart canvas").first.wait_for()
    theme, background, bar = _theme(frame)
    assert (theme, background) == ("dark", "rgb(26, 32, 44)")
    assert bar == "#63b3ed"
    # Text stays legible: the numbers are light on the dark page, and the chart is drawn.
    colour = frame.locator("#summary-numbers .number dd").first.evaluate("n => getComputedStyle(n).color")
    assert colour == "rgb(226, 232, 240)"
    assert frame.locator("#tts-chart").get_attribute("data-chart-points") == str(
        len(_api(server)["summary"]["histogram"])
    )
    frame.locator("#summary").scroll_into_view_if_needed()
    shot = ARTIFACTS / "ui-contracts-turnaround-dark.png"
    page.screenshot(path=str(shot))
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, DOCS_IMG / shot.name)

    # The user switches Airflow to light: the page and its chart follow without a reload.
    page.emulate_media(color_scheme="light")
    page.wait_for_function("!document.documentElement.classList.contains('dark')")
    frame.locator("html[data-theme='light']").wait_for(state="attached")
    theme, background, bar = _theme(frame)
    assert (theme, background, bar) == ("light", "rgb(255, 255, 255)", "#3182ce")
    assert frame.locator("#tts-chart canvas").count() >= 1
