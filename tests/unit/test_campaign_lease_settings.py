"""The campaign lease's ``[docsign]`` settings: what the code reads is what docs/bulk.md's table says.

The provider declares no ``config`` section in ``get_provider_info()`` (for none of its ``[docsign]``
settings), so docs/bulk.md's settings table is the one reference of ``campaign_lease_dir``,
``campaign_lease_conn_id`` and ``campaign_lease_heartbeat``: these tests hold the table, the reason
given under it and the code's names and defaults together, read through Airflow's own configuration
(``AIRFLOW__DOCSIGN__...`` variables).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from airflow.configuration import conf

from airflow_provider_docsign import get_provider_info
from airflow_provider_docsign.bulk.lease import BEAT_SECONDS
from airflow_provider_docsign.bulk.store import (
    LEASE_BEAT_SETTING,
    LEASE_CONN_SETTING,
    LEASE_DIR_SETTING,
    lease_beat,
    lease_folder,
)

BULK_DOC = Path(__file__).resolve().parents[2] / "docs" / "bulk.md"
SETTINGS = (LEASE_DIR_SETTING, LEASE_CONN_SETTING, LEASE_BEAT_SETTING)


def _table() -> dict[str, list[str]]:
    """docs/bulk.md's settings table: ``{setting: [default, meaning]}``."""
    rows: dict[str, list[str]] = {}
    for line in BULK_DOC.read_text().splitlines():
        match = re.match(r"\| `\[docsign\] (\w+)`[^|]*\|(.*)\|(.*)\|$", line)
        if match:
            rows[match[1]] = [match[2].strip(), match[3].strip()]
    return rows


@pytest.fixture
def unset(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in SETTINGS:
        monkeypatch.delenv(f"AIRFLOW__DOCSIGN__{name.upper()}", raising=False)
    return monkeypatch


def test_the_settings_are_documented_in_one_table_and_not_declared_with_the_reason() -> None:
    assert "config" not in get_provider_info()  # none of the provider's [docsign] settings is declared
    assert list(_table()) == list(SETTINGS)
    text = " ".join(BULK_DOC.read_text().split())
    assert "are **not declared** in the `config` section of `get_provider_info()`" in text
    assert "when the provider declares a `config` section, it declares them all" in text


def test_the_documented_defaults_are_the_codes(unset: pytest.MonkeyPatch, tmp_path: Path) -> None:
    table = _table()
    unset.setenv("AIRFLOW_HOME", str(tmp_path))
    assert table[LEASE_DIR_SETTING][0] == "`$AIRFLOW_HOME/docsign/campaign-leases`"
    assert lease_folder(conf) == tmp_path / "docsign" / "campaign-leases"
    assert table[LEASE_CONN_SETTING][0] == "none"
    assert table[LEASE_BEAT_SETTING][0] == f"`{BEAT_SECONDS:g}`"
    assert lease_beat(conf, BEAT_SECONDS) == BEAT_SECONDS
    assert "(0.05-600)" in table[LEASE_BEAT_SETTING][1]


def test_the_environment_variables_the_docs_name_are_read(unset: pytest.MonkeyPatch, tmp_path: Path) -> None:
    unset.setenv("AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_DIR", str(tmp_path / "shared"))
    unset.setenv("AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_HEARTBEAT", "2.5")
    assert lease_folder(conf) == tmp_path / "shared"
    assert lease_beat(conf, BEAT_SECONDS) == 2.5
    unset.setenv("AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_DIR", f"file://{tmp_path}/by-url")
    assert lease_folder(conf) == tmp_path / "by-url"


def test_an_object_store_prefix_is_read_with_the_lease_connection(unset: pytest.MonkeyPatch) -> None:
    """``s3://ops-bucket/docsign-leases`` with ``campaign_lease_conn_id``: nothing is looked up yet."""
    unset.setenv("AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_DIR", "s3://ops-bucket/docsign-leases")
    unset.setenv("AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_CONN_ID", "ops_s3")
    folder = lease_folder(conf)
    # Airflow 3 keeps the connection id as an attribute, 2.11 in the storage options.
    conn_id = getattr(folder, "conn_id", None) or folder.storage_options.get("conn_id")
    assert (folder.protocol, conn_id) == ("s3", "ops_s3")
    assert str(folder).endswith("ops-bucket/docsign-leases")


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("CAMPAIGN_LEASE_DIR", "relative/leases", "must be an absolute path or a URL"),
        ("CAMPAIGN_LEASE_HEARTBEAT", "0.01", "must be 0.05-600 seconds"),
        ("CAMPAIGN_LEASE_HEARTBEAT", "601", "must be 0.05-600 seconds"),
    ],
)
def test_a_setting_out_of_its_documented_range_is_refused_naming_it(
    unset: pytest.MonkeyPatch, name: str, value: str, error: str
) -> None:
    unset.setenv(f"AIRFLOW__DOCSIGN__{name}", value)
    with pytest.raises(ValueError, match=rf"\[docsign\] {name.lower()} {error}"):
        lease_folder(conf)
        lease_beat(conf, BEAT_SECONDS)
