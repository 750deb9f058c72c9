"""The clean-up's pure rules: selection by age from an oldest-first listing, the re-check of every
condition before a delete, and the archive check that stands between a COMPLETED envelope and its
deletion."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from airflow_provider_docsign.archive.retention import (
    ArchiveRequirements,
    Selection,
    archive_problems,
    cutoff,
    older_than,
)
from airflow_provider_docsign.archive.store import Store
from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.service.models import Envelope, EnvelopeItem, EnvelopeSummary

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


def envelope(envelope_id: str, *items: str) -> Envelope:
    """A COMPLETED envelope with these item ids (one, ``<id>_item``, when none are given)."""
    ids = items or (f"{envelope_id}_item",)
    return Envelope(
        id=envelope_id,
        status="COMPLETED",
        items=tuple(EnvelopeItem(id=i, title=f"{i}.pdf", order=n + 1) for n, i in enumerate(ids)),
    )


def _manifest(root: Path, envelope_id: str, overrides: dict[str, object] | None = None) -> Path:
    folder = root / envelope_id
    pdf = write_sample_pdf(folder / "01-contract.pdf", title="contract")
    data = pdf.read_bytes()
    manifest = {
        "schema_version": 1,
        "envelope_id": envelope_id,
        "status": "COMPLETED",
        "version": "signed",
        "destination": root.as_uri(),
        "manifest_uri": (folder / "manifest.json").as_uri(),
        "files": [
            {
                "item_id": f"{envelope_id}_item",
                "version": "signed",
                "name": f"{envelope_id}/01-contract.pdf",
                "path": "01-contract.pdf",
                "sha256": hashlib.sha256(data).hexdigest(),
                "size": len(data),
            }
        ],
        "audit_log": None,
        "certificate": None,
    }
    manifest.update(overrides or {})
    path = folder / "manifest.json"
    path.write_text(json.dumps(manifest))
    return pdf


def test_archive_problems_name_what_is_missing_or_wrong(tmp_path: Path) -> None:
    store = Store(tmp_path, None)
    assert archive_problems(envelope("envelope_a"), store, "envelope_a/manifest.json") == [
        f"no archive manifest at {(tmp_path / 'envelope_a' / 'manifest.json').as_uri()}"
    ]
    assert "manifest_name=None" in archive_problems(envelope("envelope_a"), store, None)[0]
    _manifest(tmp_path, "envelope_b", {"envelope_id": "envelope_other"})
    assert (
        "is of envelope 'envelope_other'"
        in archive_problems(envelope("envelope_b"), store, "envelope_b/manifest.json")[0]
    )
    (tmp_path / "envelope_c").mkdir()
    (tmp_path / "envelope_c" / "manifest.json").write_text("{not json")
    assert "cannot be read" in archive_problems(envelope("envelope_c"), store, "envelope_c/manifest.json")[0]


def test_an_unsigned_or_changed_archive_is_not_enough(tmp_path: Path) -> None:
    store = Store(tmp_path, None)
    pdf = _manifest(tmp_path, "envelope_d")
    problems = archive_problems(envelope("envelope_d"), store, "envelope_d/manifest.json")
    assert any("signature" in p for p in problems), problems  # the sample PDF is not signed
    pdf.write_bytes(pdf.read_bytes() + b"\n% tampered\n")
    problems = archive_problems(envelope("envelope_d"), store, "envelope_d/manifest.json")
    assert any("changed: sha256" in p for p in problems), problems
    assert any("bytes, the manifest says" in p for p in problems), problems
    pdf.unlink()
    problems = archive_problems(envelope("envelope_d"), store, "envelope_d/manifest.json")
    assert any("missing" in p for p in problems), problems
    _manifest(tmp_path, "envelope_e", {"version": "original", "status": "PENDING"})
    problems = archive_problems(envelope("envelope_e"), store, "envelope_e/manifest.json")
    assert any("not the signed PDFs" in p for p in problems), problems


def test_the_manifest_must_list_every_item_the_envelope_has_and_the_reports_asked_for(tmp_path: Path) -> None:
    store = Store(tmp_path, None)
    _manifest(tmp_path, "envelope_f")
    two = envelope("envelope_f", "envelope_f_item", "envelope_f_second")
    problems = archive_problems(two, store, "envelope_f/manifest.json")
    assert any(
        "item envelope_f_second ('envelope_f_second.pdf') is not in the manifest" in p for p in problems
    )
    other = envelope("envelope_f", "envelope_f_other")
    problems = archive_problems(other, store, "envelope_f/manifest.json")
    assert any("which envelope envelope_f does not have" in p for p in problems), problems
    needs = ArchiveRequirements(include_audit_log=True, include_certificate=True)
    problems = archive_problems(envelope("envelope_f"), store, "envelope_f/manifest.json", requirements=needs)
    assert sum("is not in the manifest, and the archive was asked for it" in p for p in problems) == 2


def test_the_service_digest_is_asked_only_when_everything_else_holds(tmp_path: Path) -> None:
    store = Store(tmp_path, None)
    pdf = _manifest(tmp_path, "envelope_g")
    asked: list[str] = []

    def digest(item_id: str) -> tuple[str, int]:
        asked.append(item_id)
        return "0" * 64, 1

    needs = ArchiveRequirements(service_digest=digest)
    problems = archive_problems(envelope("envelope_g"), store, "envelope_g/manifest.json", requirements=needs)
    assert asked == []  # the unsigned sample fails the signature check first: nothing downloaded
    assert problems
    pdf.write_bytes(b"%PDF-1.7 not the manifest's bytes")
    archive_problems(envelope("envelope_g"), store, "envelope_g/manifest.json", requirements=needs)
    assert asked == []


def test_the_re_check_before_a_delete_names_what_changed() -> None:
    before = NOW - timedelta(days=30)
    query = Selection(by_query=True, status="DRAFT", folder_id=None, before=before)
    old = (NOW - timedelta(days=40)).isoformat()

    def now(**overrides: object) -> EnvelopeSummary:
        fields: dict[str, object] = {"id": "e", "status": "DRAFT", "folder_id": None, "created_at": old}
        fields.update(overrides)
        return EnvelopeSummary(**fields)  # type: ignore[arg-type]

    assert query.changed("DRAFT", now()) is None
    assert "out of the root" in str(query.changed("DRAFT", now(folder_id="legal_hold")))
    assert "no longer status=DRAFT" in str(query.changed("DRAFT", now(status="PENDING")))
    assert "became COMPLETED" in str(query.changed("PENDING", now(status="COMPLETED")))
    assert "no longer before the cut-off" in str(query.changed("DRAFT", now(created_at=NOW.isoformat())))
    assert "no longer before the cut-off" in str(query.changed("DRAFT", now(created_at="garbage")))
    in_folder = Selection(by_query=True, status=None, folder_id="f1", before=None)
    assert "moved to the root, out of folder f1" in str(in_folder.changed("DRAFT", now()))
    assert in_folder.changed("DRAFT", now(folder_id="f1", created_at=None)) is None
    by_ids = Selection(by_query=False)
    assert by_ids.changed("DRAFT", now(folder_id="elsewhere", status="PENDING")) is None
    assert "became COMPLETED" in str(by_ids.changed("DRAFT", now(status="COMPLETED")))
