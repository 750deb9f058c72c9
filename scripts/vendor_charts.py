"""Fetch the pinned uPlot release into ``airflow_provider_docsign/ui/static/vendor/`` (make vendor-charts).

The chart library is served from the plugin's own static files (no CDN: the pages' CSP is
``script-src 'self'``), so its files are committed. This script is how they got there and how a new
version is taken: it downloads the npm tarball named in ``vendor/uplot.json``, checks the tarball
against the pinned Subresource-Integrity hash (sha512) before reading it, and writes each listed file
only when its sha256 equals the pin. To upgrade, change ``version``, ``tarball`` and ``integrity``
(``npm view uplot@<v> dist``), run with ``--update-hashes``, read the upstream changelog, and commit.
``tests/unit/test_vendored_charts.py`` checks the committed files against the pins.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import sys
import tarfile
import urllib.request
from pathlib import Path

VENDOR = Path(__file__).resolve().parent.parent / "airflow_provider_docsign" / "ui" / "static" / "vendor"
PIN = VENDOR / "uplot.json"
MAX_BYTES = 5 * 1024 * 1024


def main(argv: list[str] | None = None) -> int:
    """Download, verify and write the pinned files; 1 with a message when anything does not match."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update-hashes", action="store_true", help="write the new files' sha256 pins")
    args = parser.parse_args(argv)
    pin = json.loads(PIN.read_text(encoding="utf-8"))
    if not str(pin["tarball"]).startswith("https://registry.npmjs.org/"):
        print(f"refusing {pin['tarball']!r}: only the npm registry over https", file=sys.stderr)
        return 1
    with urllib.request.urlopen(pin["tarball"], timeout=60) as resp:  # noqa: S310 (https, checked above)
        data = resp.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        print("the tarball is larger than 5 MB: not the package pinned", file=sys.stderr)
        return 1
    algo, _, expected = str(pin["integrity"]).partition("-")
    if algo != "sha512" or base64.b64encode(hashlib.sha512(data).digest()).decode() != expected:
        print("the tarball does not match the pinned integrity hash: nothing written", file=sys.stderr)
        return 1
    chosen: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member, (target, digest) in pin["files"].items():
            extracted = tar.extractfile(member)
            if extracted is None:
                print(f"{member} is not in the tarball: nothing written", file=sys.stderr)
                return 1
            content = extracted.read()
            found = hashlib.sha256(content).hexdigest()
            if args.update_hashes:
                pin["files"][member][1] = found
            elif found != digest:
                print(f"{member}: sha256 {found}, pinned {digest}: nothing written", file=sys.stderr)
                return 1
            chosen[target] = content
    for target, content in chosen.items():  # every file checked before the first is written
        (VENDOR / target).write_bytes(content)
        print(f"wrote {target} ({len(content)} bytes, sha256 {hashlib.sha256(content).hexdigest()})")
    if args.update_hashes:
        PIN.write_text(json.dumps(pin, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
