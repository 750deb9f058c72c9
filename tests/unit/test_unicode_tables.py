"""The package's Unicode tables are what scripts/extract_unicode.py makes of the Unicode database."""

from __future__ import annotations

from pathlib import Path

from helpers import load_script

from airflow_provider_docsign.service import _unicode


def test_the_tables_are_generated_from_the_unicode_character_database(tmp_path: Path) -> None:
    script = load_script("extract_unicode")
    out = tmp_path / "_unicode.py"
    assert script.main([str(out)]) == 0
    assert out.read_text(encoding="utf-8") == Path(_unicode.__file__).read_text(encoding="utf-8"), (
        "airflow_provider_docsign/service/_unicode.py is not what scripts/extract_unicode.py makes with the "
        "installed regex and fontTools (a new Unicode version?): regenerate it with "
        "python scripts/extract_unicode.py, and review the diff"
    )


def test_the_script_writes_ranges_and_wraps_long_tables() -> None:
    script = load_script("extract_unicode")
    assert script.ranges([5, 1, 2, 3, 9, 10]) == [(1, 3), (5, 5), (9, 10)]
    block = script._block("T", "a table", ["ABCD-ABCE:" + "+".join(["Latn"] * 40)])
    assert all(len(line) <= 110 for line in block)
    text = "".join(line.strip().strip('"') for line in block[2:-1])
    assert text == "ABCD-ABCE:" + "+".join(["Latn"] * 40)
