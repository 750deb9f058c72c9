"""The hostile PDFs of ``bench/bench_verify.py`` (issue 22): generated here, each verified alone.

:func:`make_hostile` writes one (10^6 objects, 10^6 signature fields, 100,000-deep nesting);
:func:`hostile_child` verifies one in the fresh process ``bench_verify.py --hostile`` starts.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

from _common import peak_mb, reset_peak

HOSTILE = [
    # (case, generator, count, bounded)
    ("10^6 objects", "objects", 1_000_000, True),
    ("10^6 objects, unbounded (before issue 22)", "objects", 1_000_000, False),
    ("10^6 signature fields in /AcroForm", "fields", 1_000_000, True),
    ("100,000-deep nesting in /AcroForm", "nesting", 100_000, True),
]


def _write_pdf(path: Path, head: list[bytes], count: int, body: bytes) -> None:
    """A PDF of ``head`` objects then ``count`` objects ``body % number``, with a classic xref table."""
    offsets: list[int] = []
    with open(path, "wb") as out:
        out.write(b"%PDF-1.7\n")
        position = 9
        objects = [*head, *(body % (i + len(head) + 1) for i in range(count))] if count else head
        for number, obj in enumerate(objects, 1):
            chunk = b"%d 0 obj\n" % number + obj + b"\nendobj\n"
            offsets.append(position)
            out.write(chunk)
            position += len(chunk)
        out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(offsets) + 1))
        out.write(b"".join(b"%010d 00000 n \n" % o for o in offsets))
        out.write(
            b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(offsets) + 1, position)
        )


def make_hostile(path: Path, kind: str, count: int) -> Path:
    """Generate one hostile PDF (see the module docstring)."""
    pages = [
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ]
    if kind == "objects":
        _write_pdf(path, [b"<< /Type /Catalog /Pages 2 0 R >>", *pages], count, b"<< /K %d >>")
    elif kind == "fields":
        refs = b" ".join(b"%d 0 R" % (i + 4) for i in range(count))
        catalog = b"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [" + refs + b"] >> >>"
        _write_pdf(path, [catalog, *pages], count, b"<< /FT /Sig /T (f%d) >>")
    else:
        nested = b"[" * count + b"]" * count
        _write_pdf(
            path,
            [b"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields " + nested + b" >> >>", *pages],
            0,
            b"",
        )
    return path


def hostile_child(spec: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process: warm up on a small sealed PDF, then verify one hostile PDF."""
    from airflow_provider_docsign.evidence import signatures

    if not signatures.verify_pdf_signatures(spec["warmup"]).passed:
        raise RuntimeError("the warm-up PDF does not verify")
    gc.collect()
    base = reset_peak()
    start = time.perf_counter()
    limits = {} if spec["bounded"] else {"max_memory": None, "max_seconds": None}
    try:
        with open(spec["path"], "rb") as fh:
            report = signatures._verify_stream(fh, None, spec["path"], **limits)
        outcome = "passed" if report.passed else f"failed: {report.problems[0]}"
    except signatures.UnreadablePdfError as err:
        outcome = f"unreadable: {str(err).split(': ', 1)[-1]}"
    return {
        "wall_s": time.perf_counter() - start,
        "rss_growth_mb": peak_mb() - base,
        "peak_rss_mb": peak_mb(),
        "outcome": outcome,
    }
