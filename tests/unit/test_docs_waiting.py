"""The waiting guide is tested like the README: its Python samples compile and its DAG samples parse."""

from __future__ import annotations

from pathlib import Path

from readme_check import python_blocks, readme_problems

PAGE = Path(__file__).resolve().parents[2] / "docs" / "waiting.md"


def test_the_stalled_contracts_section_samples_compile_and_parse(tmp_path: Path, airflow_db: str) -> None:
    text = PAGE.read_text()
    assert "## When contracts stall" in text
    blocks = python_blocks(text)
    assert sum(1 for b in blocks if b.is_dag) >= 2
    assert readme_problems(text, tmp_path) == []
