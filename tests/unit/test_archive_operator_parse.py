"""Parse-time behaviour of DocsignArchiveSignedDocumentsOperator: validation, outlets, no I/O."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign._compat import Asset, ObjectStoragePath
from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator


def _op(**kwargs: Any) -> DocsignArchiveSignedDocumentsOperator:
    kwargs.setdefault("task_id", "archive")
    kwargs.setdefault("envelope_id", "envelope_abcdefghijklmnop")
    return DocsignArchiveSignedDocumentsOperator(**kwargs)


def _uris(op: DocsignArchiveSignedDocumentsOperator) -> list[str | None]:
    return [getattr(o, "uri", None) for o in op.outlets]


def test_a_static_local_destination_is_declared_as_an_outlet_asset(tmp_path: Path) -> None:
    op = _op(destination=str(tmp_path / "archive"))
    assert _uris(op) == [f"file://{tmp_path}/archive"]
    assert isinstance(op.outlets[0], Asset)
    # nothing is created at parse time
    assert not (tmp_path / "archive").exists()


@pytest.mark.parametrize(
    ("destination", "expected"),
    [
        ("s3://legal-archive/contracts/", "s3://legal-archive/contracts"),
        ("gs://bucket/a", "gs://bucket/a"),
        ("file:///srv/archive", "file:///srv/archive"),
    ],
)
def test_uri_destinations_become_assets_without_a_trailing_slash(destination: str, expected: str) -> None:
    assert _uris(_op(destination=destination, destination_conn_id="aws_legal")) == [expected]


def test_object_storage_path_destination_asset_has_no_connection_id() -> None:
    op = _op(destination=ObjectStoragePath("s3://legal-archive/contracts", conn_id="aws_legal"))
    assert _uris(op) == ["s3://legal-archive/contracts"]


def test_templated_destinations_and_opt_outs_declare_no_asset(tmp_path: Path) -> None:
    assert _op(destination="{{ params.archive_dir }}").outlets == []
    assert _op(destination=str(tmp_path), declare_asset=False).outlets == []
    mine = Asset("s3://elsewhere/contracts")
    assert _uris(_op(destination=str(tmp_path), outlets=[mine])) == ["s3://elsewhere/contracts"]


def test_templated_fields() -> None:
    assert set(DocsignArchiveSignedDocumentsOperator.template_fields) == {
        "envelope_id",
        "destination",
        "destination_conn_id",
        "tsa_conn_id",
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"version": "final"}, "version must be one of"),
        ({"filename_template": "/abs/{title}.pdf"}, "relative path"),
        ({"filename_template": "{title.__class__}.pdf"}, "not allowed"),
        ({"filename_template": "../{title}.pdf"}, "'..'"),
        ({"manifest_name": "{title}.json"}, "unknown placeholder"),
        ({"manifest_name": "manifest.pdf"}, "must not end in .pdf"),
        ({"verify_signatures": "strict"}, "verify_signatures must be one of"),
    ],
)
def test_bad_arguments_fail_at_parse_time(kwargs: dict[str, Any], message: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError) as info:
        _op(destination=str(tmp_path), **kwargs)
    assert message in str(info.value)


def test_the_hook_is_not_built_at_parse_time(tmp_path: Path) -> None:
    op = _op(destination=str(tmp_path))
    assert "hook" not in op.__dict__  # cached_property, created on first use inside execute


def test_an_asset_alias_is_declared_for_templated_destinations() -> None:
    from airflow_provider_docsign._compat import AssetAlias

    op = _op(destination="{{ params.archive_dir }}", asset_alias="contracts-archived")
    assert len(op.outlets) == 1
    assert isinstance(op.outlets[0], AssetAlias)
    assert op.outlets[0].name == "contracts-archived"
    mine = Asset("s3://elsewhere/contracts")
    both = _op(destination="{{ params.archive_dir }}", asset_alias="contracts-archived", outlets=[mine])
    assert both.outlets[0] == mine
    assert isinstance(both.outlets[1], AssetAlias)
    with pytest.raises(ValueError, match="asset_alias"):
        _op(destination="/tmp/x", asset_alias=" ")


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "require"),
        ({"version": "original"}, "off"),
        ({"version": "pending"}, "off"),
        ({"require_completed": False}, "record"),
        ({"version": "original", "verify_signatures": "record"}, "record"),
        ({"verify_signatures": "off"}, "off"),
    ],
)
def test_verify_signatures_defaults(kwargs: dict[str, Any], expected: str, tmp_path: Path) -> None:
    assert _op(destination=str(tmp_path), **kwargs).verify_signatures == expected


def test_one_trusted_certificate_may_be_given_alone(tmp_path: Path) -> None:
    op = _op(destination=str(tmp_path), trusted_certificates=tmp_path / "ca.pem")
    assert op.trusted_certificates == [tmp_path / "ca.pem"]
