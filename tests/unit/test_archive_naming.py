"""Unit tests of the archive operator's pure helpers: file names, collisions and the manifest."""

from __future__ import annotations

import posixpath
import unicodedata

import pytest

from airflow_provider_docsign.archive.naming import (
    DEFAULT_FILENAME_TEMPLATE,
    MANIFEST_FIELDS,
    MAX_SEGMENT_BYTES,
    ArchivedFile,
    build_manifest,
    common_directory,
    disambiguate,
    render_filename,
    render_manifest_name,
    sanitize_value,
    validate_filename_template,
)


def _name(title: str | None, *, template: str = DEFAULT_FILENAME_TEMPLATE, **kw: object) -> str:
    values: dict[str, object] = {
        "envelope_id": "envelope_abcdefghijklmnop",
        "external_id": None,
        "item_id": "envelope_item_qrstuvwxyzabcdef",
        "order": 1,
        "title": title,
        "version": "signed",
    }
    values.update(kw)
    return render_filename(template, **values)  # type: ignore[arg-type]


def _assert_safe(name: str) -> None:
    assert not name.startswith("/")
    assert "\\" not in name
    segments = name.split("/")
    for segment in segments:
        assert segment not in {"", ".", ".."}
        assert ".." not in segment
        assert len(segment.encode("utf-8")) <= MAX_SEGMENT_BYTES
        assert all(unicodedata.category(ch)[0] != "C" for ch in segment), segment
    assert posixpath.normpath(name) == name
    assert name.lower().endswith(".pdf")
    assert not name.lower()[:-4].endswith(".pdf")


def test_default_template_uses_external_id_order_and_title_without_pdf_suffix() -> None:
    assert _name("contract.pdf", external_id="ACME-42") == "ACME-42/01-contract.pdf"


def test_envelope_key_falls_back_to_the_envelope_id() -> None:
    assert _name("annex.pdf", external_id="   ", order=2) == "envelope_abcdefghijklmnop/02-annex.pdf"


@pytest.mark.parametrize(
    "title",
    [
        "../../etc/passwd",
        "a/b",
        "a\\b\\..\\..\\c",
        "evil\x00name\x07\x1b[31m\n\r\t",
        "x" * 300,
        "é" * 300,
        "..",
        ".",
        "",
        None,
        "report.PDF.pdf .pdf",
        "/absolute/path.pdf",
        "CON",
        "\u202eright-to-left override\u200b",
    ],
)
def test_hostile_titles_give_a_safe_name_inside_the_envelope_directory(title: str | None) -> None:
    name = _name(title, external_id="ACME-42")
    _assert_safe(name)
    assert name.startswith("ACME-42/01-")
    assert name.count("/") == 1


def test_hostile_external_id_cannot_escape_either() -> None:
    name = _name("contract", external_id="../../../root/.ssh/x")
    _assert_safe(name)
    assert name.count("/") == 1


def test_separators_in_titles_are_replaced_not_kept() -> None:
    assert _name("a/b", external_id="K") == "K/01-a_b.pdf"
    assert _name("../../etc/passwd", external_id="K") == "K/01-_._etc_passwd.pdf"


def test_long_titles_are_cut_and_keep_exactly_one_pdf_suffix() -> None:
    name = _name("t" * 300, template="{title}.pdf")
    assert name.endswith("t.pdf")
    assert len(name.encode()) <= MAX_SEGMENT_BYTES


def test_pdf_suffix_appears_exactly_once_even_if_the_template_has_none_or_two() -> None:
    assert _name("contract.pdf", template="{title}") == "contract.pdf"
    assert _name("contract.pdf", template="{title}.pdf.pdf") == "contract.pdf"


def test_all_placeholders_render() -> None:
    name = _name(
        "Deal",
        template="{envelope_key}/{envelope_id}/{version}-{order:03d}-{item_id}-{title}.pdf",
        external_id="ext",
        order=7,
        version="original",
    )
    assert name == "ext/envelope_abcdefghijklmnop/original-007-envelope_item_qrstuvwxyzabcdef-Deal.pdf"


def test_a_missing_order_renders_as_zero() -> None:
    assert _name("x", order=None).endswith("/00-x.pdf")


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ("", "non-empty"),
        ("/abs/{title}.pdf", "relative"),
        ("C:/x/{title}.pdf", "relative"),
        ("{title.__class__}.pdf", "not allowed"),
        ("{title[0]}.pdf", "not allowed"),
        ("{0}.pdf", "not allowed"),
        ("{}.pdf", "not allowed"),
        ("{secret}.pdf", "unknown placeholder"),
        ("{title!r}.pdf", "conversions"),
        ("{title:02d}.pdf", "cannot be rendered"),
        ("../{title}.pdf", "'..'"),
        ("a//{title}.pdf", "empty"),
        ("{title", "not a valid format string"),
    ],
)
def test_bad_templates_are_rejected_with_a_clear_message(template: str, fragment: str) -> None:
    with pytest.raises(ValueError, match="template") as info:
        validate_filename_template(template)
    assert fragment in str(info.value)


def test_manifest_name_placeholders_are_limited_to_the_envelope() -> None:
    validate_filename_template("{envelope_key}.json", allowed=MANIFEST_FIELDS)
    with pytest.raises(ValueError, match="unknown placeholder"):
        validate_filename_template("{title}.json", allowed=MANIFEST_FIELDS)
    assert (
        render_manifest_name(
            "{envelope_key}-manifest.json", envelope_id="e", external_id="a/b", version="signed"
        )
        == "a_b-manifest.json"
    )
    with pytest.raises(ValueError, match=r"\.pdf"):
        render_manifest_name("manifest.pdf", envelope_id="e", external_id=None, version="signed")


def test_sanitize_value_collapses_dots_and_strips_edges() -> None:
    assert sanitize_value(" ..a...b.. ") == "a.b"
    assert sanitize_value("...") == "untitled"
    assert sanitize_value("\x00\x01") == "untitled"


def test_colliding_names_are_told_apart_deterministically_and_case_insensitively() -> None:
    names = ["K/01-a.pdf", "K/01-A.pdf", "K/01-a.pdf", "K/01-a-2.pdf"]
    out = disambiguate(names)
    assert out == ["K/01-a.pdf", "K/01-A-2.pdf", "K/01-a-3.pdf", "K/01-a-2-2.pdf"]
    assert len({n.casefold() for n in out}) == len(out)
    assert disambiguate(names) == out


def test_disambiguation_respects_reserved_names_and_the_length_limit() -> None:
    long = "K/" + "x" * (MAX_SEGMENT_BYTES - 4) + ".pdf"
    out = disambiguate([long, long], reserved=["K/manifest.json"])
    assert out[0] == long
    assert out[1].endswith("-2.pdf")
    assert len(out[1].split("/")[1].encode()) <= MAX_SEGMENT_BYTES
    assert disambiguate(["audit-log.pdf"], reserved=["AUDIT-LOG.pdf"]) == ["audit-log-2.pdf"]


def test_identical_titles_through_the_template_are_told_apart() -> None:
    raw = [_name("same.pdf", order=1, template="{title}.pdf"), _name("same", order=1, template="{title}.pdf")]
    assert raw[0] == raw[1]
    assert disambiguate(raw) == ["same.pdf", "same-2.pdf"]


def test_common_directory() -> None:
    assert common_directory(["K/a.pdf", "K/b.pdf"]) == "K"
    assert common_directory(["K/x/a.pdf", "K/y/b.pdf"]) == "K"
    assert common_directory(["a.pdf", "K/b.pdf"]) == ""
    assert common_directory([]) == ""


def test_manifest_shape() -> None:
    item = ArchivedFile(
        kind="item",
        name="K/01-a.pdf",
        uri="file:///arch/K/01-a.pdf",
        sha256="ab" * 32,
        size=10,
        outcome="created",
        downloaded_at="2026-01-01T00:00:00.000Z",
        content_type="application/pdf",
        item_id="envelope_item_1",
        title="a.pdf",
        order=1,
        version="signed",
    )
    audit = ArchivedFile(
        kind="audit_log",
        name="K/audit-log.pdf",
        uri="file:///arch/K/audit-log.pdf",
        sha256="cd" * 32,
        size=5,
        outcome="unchanged",
        downloaded_at="2026-01-01T00:00:01.000Z",
    )
    manifest = build_manifest(
        envelope={
            "id": "envelope_1",
            "external_id": "K",
            "title": "T",
            "status": "COMPLETED",
            "completed_at": "2026-01-01T00:00:00Z",
        },
        destination="file:///arch",
        manifest_uri="file:///arch/K/manifest.json",
        version="signed",
        archived_at="2026-01-01T00:00:02.000Z",
        files=[item, audit],
    )
    assert manifest["envelope_id"] == "envelope_1"
    assert manifest["status"] == "COMPLETED"
    assert manifest["completed_at"] == "2026-01-01T00:00:00Z"
    assert manifest["files"] == [
        {
            "item_id": "envelope_item_1",
            "title": "a.pdf",
            "order": 1,
            "version": "signed",
            "name": "K/01-a.pdf",
            "uri": "file:///arch/K/01-a.pdf",
            "sha256": "ab" * 32,
            "size": 10,
            "content_type": "application/pdf",
            "downloaded_at": "2026-01-01T00:00:00.000Z",
            "outcome": "created",
        }
    ]
    assert manifest["audit_log"]["kind"] == "audit_log"
    assert manifest["audit_log"]["outcome"] == "unchanged"
    assert manifest["certificate"] is None
