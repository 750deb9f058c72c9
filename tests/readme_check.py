"""Checks that the README's and the guides' samples are real (imported by tests/unit/test_readme.py).

Every fenced ``python`` block must compile and its ``airflow_provider_docsign`` imports must resolve.
Every name a block uses must be a builtin or bound by that block or an earlier block of the same page,
so a sample pasted after the ones above it runs. A block that opens a DAG (``with DAG(`` or ``@dag``)
is a complete sample: it must parse in a DagBag with no import error and define at least one DAG.
``...`` may stand for an argument only in a block whose text says so (a comment containing
"stands for").

Every command in a ``bash``, ``sh`` or ``console`` block (in ``console``, the lines after ``$ ``) must
be real: ``make X`` a target of the Makefile, ``docsign ...`` accepted by the ``docsign`` parser,
``python -m M`` an importable module, ``python``/``bash FILE`` a file of the repository, anything else
one of the standard tools in :data:`KNOWN_TOOLS`.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import importlib.util
import io
import re
import shlex
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
SHELL_FENCE = re.compile(r"^```(bash|sh|shell|console)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
PLACEHOLDER_NOTE = "stands for"
ROOT = Path(__file__).resolve().parents[1]

#: Commands a page may show besides make, docsign, python and bash: standard tools and shell builtins.
KNOWN_TOOLS = frozenset(
    {
        "airflow", "apt-get", "cd", "curl", "export", "git", "mkdir", "openssl", "pip", "sudo",
        "twine", "unset", "uv",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Block:
    """One fenced Python block: the README line its code starts on, and the code."""

    line: int
    source: str
    page: str = "README"

    @property
    def is_dag(self) -> bool:
        """Whether the block is a complete DAG sample."""
        return "with DAG(" in self.source or "@dag" in self.source


def python_blocks(text: str, page: str = "README") -> list[Block]:
    """Every fenced ``python`` block of a Markdown text, in order."""
    return [Block(text.count("\n", 0, m.start(1)) + 1, m.group(1), page) for m in FENCE.finditer(text)]


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name a block binds anywhere (an over-approximation: scopes are ignored)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def undefined_names(blocks: list[Block], skip: Collection[int] = ()) -> list[str]:
    """Names a block uses that no builtin, the block itself or an earlier block of its page binds.

    Blocks starting on a line in ``skip`` (already reported as broken) bind names but are not reported.
    """
    problems = []
    known = set(dir(builtins))
    for block in blocks:
        try:
            tree = ast.parse(block.source)
        except SyntaxError:
            continue  # reported by code_problems
        known |= _bound_names(tree)
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if block.line in skip:
            continue
        problems += [
            f"{block.page} line {block.line}: {name} is used but not defined in this or an earlier sample"
            for name in sorted(used - known)
        ]
    return problems


def _ellipsis_arguments(tree: ast.AST) -> int:
    """How many ``...`` stand as call arguments or keyword values."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            values = [*node.args, *(k.value for k in node.keywords)]
            count += sum(isinstance(v, ast.Constant) and v.value is Ellipsis for v in values)
    return count


#: Provider modules that exist only on Airflow 3 (importing them on 2.11 raises an ImportError that
#: says so): a sample importing one at top level is an Airflow 3 sample.
AIRFLOW3_ONLY_MODULES = frozenset({"airflow_provider_docsign.triggers.webhook"})


def _airflow_has(tree: ast.Module) -> bool:
    """Whether the installed Airflow has every ``airflow.sdk`` name the block imports unguarded.

    A top-level ``from airflow.sdk import AssetWatcher`` marks a sample as Airflow 3 only; one inside
    ``try:`` (with a fallback for 2.11) does not. So does a top-level import of a provider module in
    :data:`AIRFLOW3_ONLY_MODULES`.
    """
    import airflow

    airflow3 = int(airflow.__version__.split(".")[0]) >= 3
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in AIRFLOW3_ONLY_MODULES and not airflow3:
            return False
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("airflow.sdk"):
            try:
                module = importlib.import_module(node.module or "")
            except ImportError:
                return False
            if not all(hasattr(module, alias.name) for alias in node.names):
                return False
    return True


def code_problems(block: Block) -> list[str]:
    """Syntax errors, unannounced ``...`` placeholders and provider imports that do not resolve."""
    where = f"{block.page} line {block.line}"
    try:
        tree = ast.parse(block.source)
        compile(tree, where, "exec")
    except SyntaxError as exc:
        return [f"{where} (+{(exc.lineno or 1) - 1}): does not compile: {exc.msg}"]
    problems = []
    if _ellipsis_arguments(tree) and PLACEHOLDER_NOTE not in block.source:
        problems.append(f"{where}: uses ... as an argument without a comment saying what it stands for")
    if not _airflow_has(tree):
        return problems  # an Airflow 3 sample (it imports airflow.sdk names 2.11 lacks) on 2.11
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
    path = folder / f"{Path(block.page).stem.lower()}_line_{block.line}.py"
    path.write_text(block.source)
    kwargs: dict[str, Any] = {"include_examples": False} if "models" in DagBag.__module__ else {}
    bag = DagBag(dag_folder=str(path), **kwargs)
    where = f"{block.page} line {block.line}"
    problems = [
        f"{where}: import error: {err.strip().splitlines()[-1]}" for err in bag.import_errors.values()
    ]
    if not problems and not bag.dags:
        problems.append(f"{where}: a DAG sample that defines no DAG")
    return problems


def readme_problems(text: str, folder: Path, page: str = "README") -> list[str]:
    """Every problem of every sample in a Markdown page (DAG samples are parsed under ``folder``)."""
    blocks = python_blocks(text, page)
    problems: list[str] = []
    failed = set()
    for block in blocks:
        found = code_problems(block)
        if not found and block.is_dag:
            found = dag_problems(block, folder)
        if found:
            failed.add(block.line)
        problems += found
    unbound = undefined_names(blocks, skip=failed)
    return problems + unbound + shell_problems(text, page)


def shell_commands(text: str) -> list[tuple[int, list[str]]]:
    """``(line, argv)`` of every command shown in a page's ``bash``/``sh``/``console`` blocks.

    Continued lines are joined, quotes may span lines, comments are dropped, and ``&&``, ``||``,
    ``;`` and ``|`` separate commands. In a ``console`` block only the lines after ``$ `` are commands.
    """
    commands: list[tuple[int, list[str]]] = []
    for match in SHELL_FENCE.finditer(text):
        first = text.count("\n", 0, match.start(2)) + 1
        console = match.group(1) == "console"
        pending, start, continued = "", 0, False
        for offset, raw in enumerate(match.group(2).splitlines()):
            if not pending and not continued:
                if console and not raw.startswith("$ "):
                    continue
                raw = raw[2:] if console else raw
                start = first + offset
            pending += raw + "\n"
            continued = raw.endswith("\\")
            if continued:
                continue
            try:
                tokens = _tokens(pending)
            except ValueError:  # a quote that closes on a later line
                continue
            commands += [(start, argv) for argv in tokens]
            pending = ""
    return commands


def _tokens(source: str) -> list[list[str]]:
    lexer = shlex.shlex(source.replace("\\\n", " "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in {"&&", "||", ";", "|", "&"}:
            commands.append([])
        else:
            commands[-1].append(token)
    return [argv for argv in commands if argv]


def makefile_targets(makefile: str) -> set[str]:
    """The targets a Makefile defines (rule heads, not variable assignments)."""
    targets = set()
    for match in re.finditer(r"^([A-Za-z0-9_.%/ -]+?)\s*:(?!=)", makefile, re.MULTILINE):
        targets.update(match.group(1).split())
    return targets


def command_problem(argv: list[str], targets: set[str]) -> str | None:
    """Why a shown command is not real, or ``None``."""
    while argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0], re.DOTALL):
        argv = argv[1:]  # leading VAR=value assignments
    if not argv:
        return None
    tool, args = Path(argv[0]).name if argv[0].startswith(".venv") else argv[0], argv[1:]
    if tool == "make":
        missing = [a for a in args if not a.startswith("-") and "=" not in a and a not in targets]
        return f"make {missing[0]} is not a target of the Makefile" if missing else None
    if tool == "docsign":
        return _docsign_problem(args)
    if tool in {"python", "python3"}:
        if args[:1] == ["-m"] and len(args) > 1:
            module = args[1]
            try:
                found = importlib.util.find_spec(module) is not None
            except ImportError:
                found = False
            return None if found else f"python -m {module}: no such module"
        script = next((a for a in args if not a.startswith("-")), None)
        if script is not None and not (ROOT / script).is_file():
            return f"python {script}: no such file in the repository"
        return None
    if tool == "bash":
        script = next((a for a in args if not a.startswith("-")), None)
        if script is None or (ROOT / script).is_file():
            return None
        return f"bash {script}: no such file in the repository"
    if tool in KNOWN_TOOLS:
        return None
    return f"{tool} is not a Makefile target, a docsign command or a known tool"


def _docsign_problem(args: list[str]) -> str | None:
    from airflow_provider_docsign.cli import build_parser

    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(args)
    except SystemExit as exc:
        if exc.code:
            lines = errors.getvalue().strip().splitlines() or ["rejected"]
            return f"docsign {shlex.join(args)}: {lines[-1]}"
    return None


def shell_problems(text: str, page: str = "README") -> list[str]:
    """Every shown shell command of a page that is not a Makefile target or a real command."""
    targets = makefile_targets((ROOT / "Makefile").read_text())
    problems = []
    for line, argv in shell_commands(text):
        problem = command_problem(argv, targets)
        if problem:
            problems.append(f"{page} line {line}: {problem}")
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
