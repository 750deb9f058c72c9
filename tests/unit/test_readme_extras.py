"""The README's connection table names every extra the hook reads and the form offers, and its guide
table every capability a newcomer looks for (issue 38: ``tsa_conn_id`` was missing, and the guide table
named none of attachments, duplicates, corrections, clean-up, timestamps or the notifier)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from airflow_provider_docsign import get_provider_info
from airflow_provider_docsign.hooks._http import _EXTRA_NAMES

README = Path(__file__).resolve().parents[2] / "README.md"


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _connection_extras() -> set[str]:
    """Every name in an ``Extra `a`, `b``` row of the README's connection table."""
    rows = [line for line in _section("The connection").splitlines() if line.startswith("| Extra ")]
    return {name for row in rows for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])}


def test_the_connection_table_has_rows() -> None:
    assert len(_connection_extras()) >= 5


@pytest.mark.parametrize("name", sorted(_EXTRA_NAMES))
def test_every_extra_the_hook_reads_is_in_the_readme_s_connection_table(name: str) -> None:
    assert name in _connection_extras(), f"add a row `Extra `{name}`` to the README's connection table"


def test_every_field_of_the_connection_form_is_in_the_readme_s_connection_table() -> None:
    [conn_type] = get_provider_info()["connection-types"]
    assert set(conn_type["conn-fields"]) <= _connection_extras()


@pytest.mark.parametrize(
    "capability",
    [
        "attachments",
        "duplicates",
        "corrections",
        "clean-up",
        "timestamps",
        "notifier",
        "reminders",
        "search",
        "webhook",
        "bulk",
        "templates",
        "export",
        "preview",
        "verify",
        "sandbox",
    ],
)
def test_the_guide_table_names_every_capability(capability: str) -> None:
    rows = [line for line in _section("Guides").splitlines() if line.startswith("| [")]
    assert any(capability in row.lower() for row in rows), f"no guide in the README names {capability}"
