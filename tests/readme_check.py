"""Checks that the README's Python samples are real code (imported by tests/unit/test_readme.py).

Every fenced ``python`` block must compile and its ``airflow_provider_docsign`` imports must resolve.
A block that opens a DAG (``with DAG(`` or ``@dag``) is a complete sample: it must parse in a DagBag with
no import error and define at least one DAG. ``...`` may stand for an argument only in a block whose
text says so (a comment containing "stands for").
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
PLACEHOLDER_NOTE = "stands for"


@dataclass(frozen=True)
class Block:
    """One fenced Python block: the README line its code starts on, and the code."""

    line: int
    source: str

    @property
    def is_dag(self) -> bool:
        """Whether the block is a complete DAG sample."""
        return "with DAG(" in self.source or "@dag" in self.source


def python_blocks(text: str) -> list[Block]:
    """Every fenced ``python`` block of a Markdown text, in order."""
    return [Block(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in FENCE.finditer(text)]


def _ellipsis_arguments(tree: ast.AST) -> int:
    """How many ``...`` stand as call arguments or keyword values."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            values = [*node.args, *(k.value for k in node.keywords)]
            count += sum(isinstance(v, ast.Constant) and v.value is Ellipsis for v in values)
    return count


def code_problems(block: Block) -> list[str]:
    """Syntax errors, unannounced ``...`` placeholders and provider imports that do not resolve."""
    where = f"README line {block.line}"
    try:
        tree = ast.parse(block.source)
        compile(tree, where, "exec")
    except SyntaxError as exc:
        return [f"{where} (+{(exc.lineno or 1) - 1}): does not compile: {exc.msg}"]
    problems = []
    if _ellipsis_arguments(tree) and PLACEHOLDER_NOTE not in block.source:
        problems.append(f"{where}: uses ... as an argument without a comment saying what it stands for")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("airflow_provider_docsign"):
            try:
                module = importlib.import_module(node.module or "")
            except ImportError as exc:
                problems.append(f"{where}: cannot import {node.module}: {exc}")
                continue
            problems += [
                f"{where}: {node.module} has no {alias.name}"
                for alias in node.names
                if not hasattr(module, alias.name)
            ]
    return problems


def dag_problems(block: Block, folder: Path) -> list[str]:
    """Import errors of a complete DAG sample parsed by Airflow's DagBag, or a sample with no DAG."""
    try:
        from airflow.dag_processing.dagbag import DagBag  # Airflow 3
    except ImportError:  # Airflow 2.11
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"readme_line_{block.line}.py"
    path.write_text(block.source)
    kwargs: dict[str, Any] = {"include_examples": False} if "models" in DagBag.__module__ else {}
    bag = DagBag(dag_folder=str(path), **kwargs)
    where = f"README line {block.line}"
    problems = [
        f"{where}: import error: {err.strip().splitlines()[-1]}" for err in bag.import_errors.values()
    ]
    if not problems and not bag.dags:
        problems.append(f"{where}: a DAG sample that defines no DAG")
    return problems


def readme_problems(text: str, folder: Path) -> list[str]:
    """Every problem of every Python sample in a README text (DAG samples are parsed under ``folder``)."""
    problems: list[str] = []
    for block in python_blocks(text):
        found = code_problems(block)
        if not found and block.is_dag:
            found = dag_problems(block, folder)
        problems += found
    return problems


def printed_formats(script: str) -> list[re.Pattern[str]]:
    """A pattern per string and f-string in a script: literal parts exact, every ``{value}`` any text."""
    patterns = []
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.JoinedStr):
            parts = [re.escape(v.value) if isinstance(v, ast.Constant) else ".+?" for v in node.values]
            patterns.append(re.compile("".join(parts)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
            patterns.append(re.compile(re.escape(node.value)))
    return patterns


def demo_output_problems(readme: str, script: str) -> list[str]:
    """Lines of the README's sample demo output that the demo script cannot print."""
    start = readme.index("`make demo` starts the sandbox")
    begin = readme.index("```text\n", start) + len("```text\n")
    block = readme[begin : readme.index("\n```", begin)]
    patterns = printed_formats(script)
    return [
        f"README demo output line {line!r} matches nothing scripts/demo.py prints"
        for line in block.splitlines()
        if line.strip() and not any(p.fullmatch(line) for p in patterns)
    ]
