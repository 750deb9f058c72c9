"""The chart library is vendored, pinned and unchanged: the committed files are the ones pinned."""

from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import Path

import airflow_provider_docsign.ui as ui_package

VENDOR = Path(ui_package.__file__).parent / "static" / "vendor"
ROOT = Path(__file__).resolve().parents[2]


def test_every_vendored_file_matches_its_pin() -> None:
    pin = json.loads((VENDOR / "uplot.json").read_text(encoding="utf-8"))
    assert pin["package"] == "uplot"
    assert pin["license"] == "MIT"
    assert pin["tarball"] == f"https://registry.npmjs.org/uplot/-/uplot-{pin['version']}.tgz"
    assert pin["integrity"].startswith("sha512-")
    names = set()
    for target, digest in pin["files"].values():
        data = (VENDOR / target).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, target
        names.add(target)
    assert names | {"uplot.json"} == {p.name for p in VENDOR.iterdir()}, "an unpinned file in vendor/"


def test_the_served_library_is_the_pinned_version() -> None:
    pin = json.loads((VENDOR / "uplot.json").read_text(encoding="utf-8"))
    head = (VENDOR / "uPlot.iife.min.js").read_text(encoding="utf-8")[:200]
    assert re.match(r"/\*! https://github\.com/leeoniya/uPlot \(v([0-9.]+)\) \*/", head)
    assert f"(v{pin['version']})" in head
    assert "MIT" in (VENDOR / "uPlot.LICENSE.txt").read_text(encoding="utf-8")


def test_the_pages_load_the_library_from_the_plugin_only() -> None:
    # Read from the source: the app itself imports the Airflow 3.1+ api-server, the pins hold on 2.11 too.
    tree = ast.parse((VENDOR.parent.parent / "app.py").read_text(encoding="utf-8"))
    (assets,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "ASSETS" for t in node.targets)
    ]
    served = {key.value for key in assets.keys if isinstance(key, ast.Constant)}  # type: ignore[attr-defined]
    assert {"charts.js", "vendor/uPlot.iife.min.js", "vendor/uPlot.min.css"} <= served
    assert "vendor/uplot.json" not in served
    page = (VENDOR.parent / "contracts.html").read_text(encoding="utf-8")
    for src in re.findall(r'(?:src|href)="([^"]+)"', page):
        assert not re.match(r"^(https?:)?//", src), src


def test_the_fetch_script_reads_only_the_npm_registry() -> None:
    script = (ROOT / "scripts" / "vendor_charts.py").read_text(encoding="utf-8")
    assert "https://registry.npmjs.org/" in script
    assert "sha512" in script
