"""The README and the guides are tested like code.

Every Python sample compiles, uses only names it or an earlier sample of its page defines, and every
DAG sample parses; every shell command shown is a Makefile target or a real command; the guides build
with MkDocs in strict mode, and ``make help`` names every target. The prose cannot drift either
(tests/docs_check.py): wheel names carry the current version, every operator, exception, parameter and
``make`` target a page names exists, and every guide is listed in the README, docs/index.md and
mkdocs.yml alike.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docs_check import docs_problems, guide_list_problems, name_problems, parameter_problems, wheel_problems
from readme_check import (
    demo_output_problems,
    makefile_targets,
    python_blocks,
    readme_problems,
    shell_commands,
    shell_problems,
)

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
GUIDES = sorted((ROOT / "docs").glob("*.md"))

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
    assert len(blocks) >= 2, "the README's Python samples were not found"
    assert any(b.is_dag for b in blocks)
    assert len(shell_commands(text)) >= 5, "the README's shell commands were not found"
    assert readme_problems(text, tmp_path) == []


@pytest.mark.parametrize("page", GUIDES, ids=lambda p: p.name)
def test_every_guide_s_samples_and_commands_are_real(page: Path, tmp_path: Path, airflow_db: str) -> None:
    assert readme_problems(page.read_text(), tmp_path, f"docs/{page.name}") == []


def test_the_guides_hold_the_samples_the_readme_used_to() -> None:
    blocks = [b for page in GUIDES for b in python_blocks(page.read_text(), page.name)]
    assert len(blocks) >= 12
    assert sum(len(shell_commands(page.read_text())) for page in GUIDES) >= 10


def test_the_readme_is_a_front_page() -> None:
    assert len(README.read_text().splitlines()) <= 300
    for page in GUIDES:
        if page.name != "index.md":
            assert f"docs/{page.name}" in README.read_text(), f"the README does not link docs/{page.name}"


def test_a_name_no_sample_defines_is_caught(tmp_path: Path) -> None:
    page = (
        "```python\nfrom airflow_provider_docsign.operators import DocsignCreateEnvelopeOperator\n"
        "RECIPIENTS = []\n```\n\n"
        '```python\nDocsignCreateEnvelopeOperator(task_id="a", recipients=RECIPIENTS)\n'
        'DocsignCreateEnvelopeFromTemplateOperator(task_id="b", recipients=RECIPIENTS)\n```\n'
    )
    assert readme_problems(page, tmp_path, "docs/x.md") == [
        "docs/x.md line 7: DocsignCreateEnvelopeFromTemplateOperator is used but not defined in this or an "
        "earlier sample"
    ]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("make docs", None),
        ("make demo PYTHON=python3.11", None),
        ("make no-such-target", "make no-such-target is not a target of the Makefile"),
        ("docsign templates show envelope_1 --conn-id x", None),
        (
            "docsign no-such-command",
            "docsign no-such-command: docsign: error: argument COMMAND: invalid choice",
        ),
        ("docsign sandbox --data-dir d --no-such-option 1", "unrecognized arguments: --no-such-option"),
        ("python -m airflow_provider_docsign.sandbox --help", None),
        (
            "python -m airflow_provider_docsign.nosuch x",
            "python -m airflow_provider_docsign.nosuch: no such module",
        ),
        ("python scripts/demo.py", None),
        ("python scripts/nosuch.py", "python scripts/nosuch.py: no such file in the repository"),
        ("bash .ci/pytest.sh .venv -m livestack", None),
        ("AIRFLOW_CONN_X='...' docsign templates show 1 && pip install .", None),
        ("frobnicate --all", "frobnicate is not a Makefile target, a docsign command or a known tool"),
    ],
)
def test_a_shell_command_that_is_not_real_is_caught(command: str, expected: str | None) -> None:
    problems = shell_problems(f"text\n\n```bash\n{command}  # a comment\n```\n", "docs/x.md")
    if expected is None:
        assert problems == []
    else:
        assert len(problems) == 1
        assert problems[0].startswith("docs/x.md line 4: ")
        assert expected in problems[0]


def test_console_output_lines_are_not_commands_and_quotes_may_span_lines() -> None:
    page = (
        "```console\n$ docsign preview p.json a.pdf -o out/\nout/00-a.preview.pdf\nwarning: x\n"
        "$ make nosuch\n```\n\n```bash\nexport X='{\n  \"a\": 1\n}'\nmake \\\n  test\n```\n"
    )
    assert shell_commands(page) == [
        (2, ["docsign", "preview", "p.json", "a.pdf", "-o", "out/"]),
        (5, ["make", "nosuch"]),
        (9, ["export", 'X={\n  "a": 1\n}']),
        (12, ["make", "test"]),
    ]
    assert shell_problems(page) == ["README line 5: make nosuch is not a target of the Makefile"]


def test_the_guides_build_with_mkdocs_in_strict_mode(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr
    assert (site / "index.html").is_file()
    assert (site / "cli.html").is_file()  # use_directory_urls: false (tests/unit/test_docs_site.py)


def test_every_guide_is_in_the_mkdocs_nav() -> None:
    nav = set(re.findall(r":\s*([\w-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE))
    assert {p.name for p in GUIDES} <= nav


def test_make_help_names_every_target() -> None:
    targets = {t for t in makefile_targets((ROOT / "Makefile").read_text()) if not t.startswith(("$", "."))}
    assert {"clean", "install", "lint", "typecheck", "docs", "demo", "test"} <= targets
    shown = subprocess.run(
        ["make", "--no-print-directory", "help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    listed = set(re.findall(r"^make ([\w-]+)", shown, re.MULTILINE))
    assert targets - {"help"} <= listed, f"make help leaves out {sorted(targets - {'help'} - listed)}"


def test_a_positional_argument_after_keywords_is_caught(tmp_path: Path) -> None:
    broken = README.read_text() + (
        '\n```python\nDocsignCreateEnvelopeOperator(task_id="create", folder_id=folder.output, x)\n```\n'
    )
    problems = readme_problems(broken, tmp_path)
    assert len(problems) == 1
    assert "does not compile" in problems[0]


def test_an_unannounced_placeholder_is_caught(tmp_path: Path) -> None:
    problems = readme_problems('```python\nprint(task_id="x", envelope_id=...)\n```\n', tmp_path)
    assert problems == ["README line 2: uses ... as an argument without a comment saying what it stands for"]
    announced = '```python\n# ... stands for the envelope id\nprint(task_id="x", envelope_id=...)\n```\n'
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


def test_the_docs_name_only_what_exists() -> None:
    assert docs_problems() == []


def test_an_old_wheel_name_is_caught() -> None:
    from airflow_provider_docsign import __version__

    page = "```bash\npip install dist/airflow_provider_docsign-0.2.0-py3-none-any.whl\n```\n"
    assert wheel_problems(page, "docs/x.md") == [
        "docs/x.md line 2: airflow_provider_docsign-0.2.0-py3-none-any.whl names version 0.2.0; "
        f"`make dist` builds {__version__}"
    ]
    current = f"dist/airflow_provider_docsign-{__version__}-py3-none-any.whl and .tar.gz"
    assert wheel_problems(current, "docs/x.md") == []
    assert wheel_problems("airflow_provider_docsign-0.1.0.tar.gz", "p") != []


def test_a_renamed_exception_or_operator_is_caught() -> None:
    text = (ROOT / "docs" / "waiting.md").read_text()
    assert name_problems(text, "docs/waiting.md") == []
    renamed = text.replace("RecipientExpiredFailure", "DocsignRecipientExpiredFailure", 1)
    [problem] = name_problems(renamed, "docs/waiting.md")
    assert problem.endswith(": DocsignRecipientExpiredFailure is not defined in the package")
    assert name_problems("use `DocsignPreviewFieldsOperator`", "p") == [
        "p line 1: DocsignPreviewFieldsOperator is not defined in the package"
    ]
    assert name_problems("raises `ValueError`, `DocsignValidationError`", "p") == []


def test_a_parameter_an_operator_does_not_take_is_caught() -> None:
    page = (
        "```python\nfrom airflow_provider_docsign.operators import DocsignCreateEnvelopeOperator\n\n"
        'DocsignCreateEnvelopeOperator(task_id="c", titel="NDA", files=[], retries=2)\n```\n'
    )
    assert parameter_problems(page, "docs/x.md") == [
        "docs/x.md line 4: DocsignCreateEnvelopeOperator takes no parameter 'titel'"
    ]


def test_a_guide_missing_from_a_list_is_caught() -> None:
    readme = (ROOT / "README.md").read_text()
    index = (ROOT / "docs" / "index.md").read_text()
    mkdocs = (ROOT / "mkdocs.yml").read_text()
    guides = sorted(p.name for p in GUIDES if p.name != "index.md")
    assert guide_list_problems(readme, index, mkdocs, guides) == []
    without_ui = "\n".join(line for line in index.splitlines() if "(ui.md)" not in line)
    assert guide_list_problems(readme, without_ui, mkdocs, guides) == [
        "docs/index.md does not list the guide docs/ui.md"
    ]
    assert guide_list_problems(readme, index, mkdocs, [*guides, "new.md"]) == [
        "README.md does not list the guide docs/new.md",
        "docs/index.md does not list the guide docs/new.md",
        "mkdocs.yml does not list the guide docs/new.md",
    ]
