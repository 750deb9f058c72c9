"""The clean-up's pure rules: selection by age from an oldest-first listing, and the archive check that
stands between a COMPLETED envelope and its deletion."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from airflow_provider_docsign.archive.retention import archive_problems, cutoff, older_than
from airflow_provider_docsign.archive.store import Store
from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.service.models import EnvelopeSummary

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc)


def summary(envelope_id: str, days_old: float | None) -> EnvelopeSummary:
    created = (
        None if days_old is None else (NOW - timedelta(days=days_old)).isoformat().replace("+00:00", "Z")
    )
    return EnvelopeSummary(id=envelope_id, status="DRAFT", created_at=created)


def test_cutoff() -> None:
    assert cutoff(NOW, None) is None
    assert cutoff(NOW, 30) == NOW - timedelta(days=30)
    assert cutoff(NOW, 0.5) == NOW - timedelta(hours=12)
    for bad in (-1, float("nan")):
        with pytest.raises(ValueError, match="older_than_days"):
            cutoff(NOW, bad)


def test_older_than_stops_at_the_first_newer_envelope() -> None:
    read: list[str] = []

    def listing() -> Iterator[EnvelopeSummary]:
        for envelope in [
            summary("a", 90),
            summary("b", 40),
            summary("x", None),
            summary("c", 10),
            summary("d", 50),
        ]:
            read.append(envelope.id)
            yield envelope

    picked = [e.id for e in older_than(listing(), cutoff(NOW, 30))]
    assert picked == ["a", "b"]  # no createdAt: never deleted by age
    assert read == ["a", "b", "x", "c"]  # "d" (a later page) is never read
    assert [e.id for e in older_than([summary("a", 1), summary("b", 2)], None)] == ["a", "b"]


def _manifest(root: Path, envelope_id: str, overrides: dict[str, object] | None = None) -> Path:
    folder = root / envelope_id
    pdf = write_sample_pdf(folder / "01-contract.pdf", title="contract")
    digest = hashlib.sha256(pdf.read_bytes()).hexdigest()
    manifest = {
        "schema_version": 1,
        "envelope_id": envelope_id,
        "status": "COMPLETED",
        "version": "signed",
        "destination": root.as_uri(),
        "manifest_uri": (folder / "manifest.json").as_uri(),
        "files": [{"name": f"{envelope_id}/01-contract.pdf", "path": "01-contract.pdf", "sha256": digest}],
        "audit_log": None,
        "certificate": None,
    }
    manifest.update(overrides or {})
    path = folder / "manifest.json"
    path.write_text(json.dumps(manifest))
    return pdf


def test_archive_problems_name_what_is_missing_or_wrong(tmp_path: Path) -> None:
    store = Store(tmp_path, None)
    assert archive_problems("envelope_a", store, "envelope_a/manifest.json") == [
        f"no archive manifest at {(tmp_path / 'envelope_a' / 'manifest.json').as_uri()}"
    ]
    assert "manifest_name=None" in archive_problems("envelope_a", store, None)[0]
    _manifest(tmp_path, "envelope_b", {"envelope_id": "envelope_other"})
    assert (
        "is of envelope 'envelope_other'"
        in archive_problems("envelope_b", store, "envelope_b/manifest.json")[0]
    )
    (tmp_path / "envelope_c").mkdir()
    (tmp_path / "envelope_c" / "manifest.json").write_text("{not json")
    assert "cannot be read" in archive_problems("envelope_c", store, "envelope_c/manifest.json")[0]


def test_an_unsigned_or_changed_archive_is_not_enough(tmp_path: Path) -> None:
    store = Store(tmp_path, None)
    pdf = _manifest(tmp_path, "envelope_d")
    problems = archive_problems("envelope_d", store, "envelope_d/manifest.json")
    assert any("signature" in p for p in problems), problems  # the sample PDF is not signed
    pdf.write_bytes(pdf.read_bytes() + b"\n% tampered\n")
    problems = archive_problems("envelope_d", store, "envelope_d/manifest.json")
    assert any("changed: sha256" in p for p in problems), problems
    pdf.unlink()
    problems = archive_problems("envelope_d", store, "envelope_d/manifest.json")
    assert any("missing" in p for p in problems), problems
    _manifest(tmp_path, "envelope_e", {"version": "original", "status": "PENDING"})
    problems = archive_problems("envelope_e", store, "envelope_e/manifest.json")
    assert any("not the signed PDFs" in p for p in problems), problems
