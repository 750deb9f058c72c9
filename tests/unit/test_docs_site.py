"""The docs site built by ``make docs`` works opened from disk and served over HTTP.

With MkDocs' default ``use_directory_urls: true`` every page link points at a folder (``cli/``): a
browser opening ``site/index.html`` from disk then shows a directory listing instead of the page. The
site is built with ``use_directory_urls: false``; these tests follow every link of every built page:

- from disk: each local ``href``/``src`` resolves to a file (never a folder), and each ``#anchor`` to an
  element of the page it points at;
- over HTTP: each page, served by a static server on 127.0.0.1, links to pages the server answers with
  200 and HTML (not a directory listing).
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]


class _Links(HTMLParser):
    """The ``href``/``src`` values and the element ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("href", "src"):
                self.links.append(value)
            elif name == "id":
                self.ids.add(value)


def _parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def _local(link: str) -> bool:
    parts = urlsplit(link)
    return not parts.scheme and not parts.netloc and not link.startswith(("mailto:", "data:"))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "site"
    built = subprocess.run(
        [str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    return out


def test_every_link_of_the_built_site_resolves_to_a_file(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    parsed = {page: _parse(page) for page in pages}
    assert {"index.html", "cli.html", "webhooks.html"} <= {p.name for p in pages}
    checked, problems = 0, []
    for page, links in parsed.items():
        for link in links.links:
            if not _local(link):
                continue
            parts = urlsplit(link)
            # 404.html (served by a web server for any missing path) links from the site's root.
            base = site if parts.path.startswith("/") else page.parent
            target = (base / unquote(parts.path).lstrip("/")).resolve() if parts.path else page
            checked += 1
            if not target.is_file():
                what = "a folder" if target.is_dir() else "missing"
                problems.append(f"{page.relative_to(site)}: {link} -> {what}")
            elif parts.fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    problems.append(f"{page.relative_to(site)}: {link} -> no element with that id")
    assert checked > 100, checked  # the nav alone links every page from every page
    assert not problems, "\n".join(problems)


@pytest.fixture
def served(site: Path) -> Iterator[str]:
    """The site on a static HTTP server on 127.0.0.1, stopped by its handle."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_every_page_link_works_over_http(served: str, site: Path) -> None:
    http = requests.Session()
    todo, seen = [served + "index.html"], set()
    while todo and len(seen) < 200:  # bounded: the site has a few dozen pages
        url = todo.pop()
        if url in seen:
            continue
        seen.add(url)
        response = http.get(url, timeout=10)
        assert response.status_code == 200, url
        assert response.headers["Content-Type"].startswith("text/html"), url
        assert "Directory listing for" not in response.text, url
        parser = _Links()
        parser.feed(response.text)
        for link in parser.links:
            path = urlsplit(link).path
            if _local(link) and path and (path.endswith(".html") or path.endswith("/")):
                todo.append(urljoin(url, path))
    pages = {urlsplit(u).path.lstrip("/") for u in seen}
    assert {p.name for p in site.glob("*.html")} - {"404.html"} <= pages
