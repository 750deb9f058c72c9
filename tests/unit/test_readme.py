"""The README is tested like code: every Python sample compiles, and every DAG sample parses."""

from __future__ import annotations

from pathlib import Path

import pytest
from readme_check import demo_output_problems, python_blocks, readme_problems

README = Path(__file__).resolve().parents[2] / "README.md"

GOOD_DAG = """
```python
import pendulum
try:
    from airflow.sdk import DAG
except ImportError:
    from airflow import DAG
from airflow_provider_docsign.operators import DocsignCreateFolderOperator

with DAG("readme_ok", schedule=None, start_date=pendulum.datetime(2026, 1, 1)):
    DocsignCreateFolderOperator(task_id="folder", name="Contracts")
```
"""


def test_the_readme_samples_compile_and_parse(tmp_path: Path, airflow_db: str) -> None:
    text = README.read_text()
    blocks = python_blocks(text)
    assert len(blocks) >= 10, "the README's Python samples were not found"
    assert any(b.is_dag for b in blocks)
    assert readme_problems(text, tmp_path) == []


def test_a_positional_argument_after_keywords_is_caught(tmp_path: Path) -> None:
    broken = README.read_text() + (
        '\n```python\nDocsignCreateEnvelopeOperator(task_id="create", folder_id=folder.output, x)\n```\n'
    )
    problems = readme_problems(broken, tmp_path)
    assert len(problems) == 1
    assert "does not compile" in problems[0]


def test_an_unannounced_placeholder_is_caught(tmp_path: Path) -> None:
    problems = readme_problems('```python\nf(task_id="x", envelope_id=...)\n```\n', tmp_path)
    assert problems == ["README line 2: uses ... as an argument without a comment saying what it stands for"]
    announced = '```python\n# ... stands for the envelope id\nf(task_id="x", envelope_id=...)\n```\n'
    assert readme_problems(announced, tmp_path) == []


def test_a_name_the_package_does_not_export_is_caught(tmp_path: Path) -> None:
    problems = readme_problems(
        "```python\nfrom airflow_provider_docsign.hooks import NoSuchHook\n```\n", tmp_path
    )
    assert problems == ["README line 2: airflow_provider_docsign.hooks has no NoSuchHook"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("DocsignCreateFolderOperator(task_id", "import error"),  # unknown name -> NameError at parse
        ('name="Contracts")', "import error"),  # missing required argument
    ],
)
def test_a_broken_dag_sample_is_caught(tmp_path: Path, airflow_db: str, change: str, expected: str) -> None:
    assert readme_problems(GOOD_DAG, tmp_path / "good") == []
    if change.startswith("Docsign"):
        broken = GOOD_DAG.replace(change, "DocsignNoSuchOperator(task_id")
    else:
        broken = GOOD_DAG.replace(change, ")")
    problems = readme_problems(broken, tmp_path / "broken")
    assert len(problems) == 1
    assert expected in problems[0]


DEMO = Path(__file__).resolve().parents[2] / "scripts" / "demo.py"


def test_the_readme_demo_output_is_what_the_demo_prints() -> None:
    assert demo_output_problems(README.read_text(), DEMO.read_text()) == []


def test_a_stale_demo_output_line_is_caught() -> None:
    stale = README.read_text().replace("[demo] run state : success", "archive folder : .demo/archive/x")
    assert demo_output_problems(stale, DEMO.read_text()) == [
        "README demo output line 'archive folder : .demo/archive/x' matches nothing scripts/demo.py prints"
    ]
