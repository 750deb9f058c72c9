"""docs/contract-data.md: every Python block compiles and its DAG sample parses (as the README's do)."""

from __future__ import annotations

from pathlib import Path

from readme_check import python_blocks, readme_problems

PAGE = Path(__file__).resolve().parents[2] / "docs" / "contract-data.md"


def test_contract_data_page_samples_are_real_code(tmp_path: Path, airflow_db: str) -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert any(block.is_dag for block in python_blocks(text))
    assert readme_problems(text, tmp_path) == []
