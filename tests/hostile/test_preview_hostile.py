"""DocsignFieldPreviewOperator fed what a careless or hostile user could give it.

Files that are no PDF (not one, cut short, empty, a directory, a symlink to a text file, missing), an
output directory that is a file, lies below a file or does not exist yet, symlinks planted where the
preview writes, re-runs, unknown or carelessly rendered envelope ids, recipients that are not JSON or
that look like a template. Counted: the files on disk (what was written, what was left untouched) and
the requests at the sandbox (a payload preview sends none).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, sig, signer
from odd_text import TEMPLATE_DATA, jinja_ids

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import DocsignFieldPreviewOperator
from airflow_provider_docsign.sandbox import SandboxServer

OUTPUTS = ["00-annex.page001.png", "00-annex.preview.pdf"]
RECIPIENTS = [signer(sig(), email="buyer@example.test", name="Buyer")]


@pytest.fixture
def annex(make_pdf: Callable[..., Path]) -> Path:
    return make_pdf("annex.pdf")


def preview(output_dir: Any, try_number: int = 1, **kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = DocsignFieldPreviewOperator(
        task_id="preview", output_dir=output_dir, **kwargs
    ).execute(ctx(try_number))
    return result


def listing(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def refused(run: Callable[[], Any]) -> str:
    """The task's error: the operator raises input errors as they are (ValueError, the hook's)."""
    with pytest.raises((AirflowFailException, ValueError, DocsignError)) as info:
        run()
    return str(info.value)


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("not a PDF", "not a PDF (it does not start with %PDF-)"),
        ("truncated", "the PDF cannot be parsed"),
        ("empty", "not a PDF"),
        ("directory", "it is a directory, not a regular file"),
        ("symlink to a text file", "not a PDF"),
        ("missing", "no such file"),
    ],
)
def test_a_file_that_is_no_readable_pdf_is_refused_and_nothing_is_written(
    sandbox: SandboxServer, tmp_path: Path, annex: Path, kind: str, words: str
) -> None:
    bad = tmp_path / "in" / f"{kind.replace(' ', '-')}.pdf"
    bad.parent.mkdir()
    if kind == "not a PDF":
        bad.write_text("Dear customer, please sign.")
    elif kind == "truncated":
        bad.write_bytes(annex.read_bytes()[:300])
    elif kind == "empty":
        bad.write_bytes(b"")
    elif kind == "directory":
        bad.mkdir()
    elif kind == "symlink to a text file":
        (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
        bad.symlink_to(tmp_path / "passwd")
    out = tmp_path / "out"
    message = refused(lambda: preview(out, files=[str(annex), str(bad)], recipients=RECIPIENTS))
    assert words in message, message
    assert bad.name in message
    assert not out.exists()
    assert sandbox.requests() == []


def test_an_output_dir_that_is_a_file_or_lies_below_one_is_refused_before_any_request(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, tmp_path: Path, annex: Path
) -> None:
    envelope_id = hook.create_envelope(title="Preview", files=[annex], recipients=RECIPIENTS)
    report = tmp_path / "report.txt"
    report.write_text("quarterly numbers, keep me")
    sandbox.clear_requests()
    for output_dir in (report, report / "previews", str(report)):
        with pytest.raises(AirflowFailException, match="is a file, not a directory") as info:
            preview(output_dir, envelope_id=envelope_id)
        assert "report.txt" in str(info.value)
    assert report.read_text() == "quarterly numbers, keep me"
    assert sandbox.requests() == []  # nothing was read from the service either


def test_a_missing_output_dir_is_made_and_a_rerun_replaces_the_files_whole(
    sandbox: SandboxServer, tmp_path: Path, annex: Path
) -> None:
    out = tmp_path / "a" / "b" / "previews"
    first = preview(str(out), files=[str(annex)], recipients=RECIPIENTS)
    assert listing(out) == OUTPUTS
    before = {name: (out / name).read_bytes() for name in OUTPUTS}
    second = preview(str(out), 2, files=[str(annex)], recipients=RECIPIENTS)
    assert (first["pdfs"], first["pngs"]) == (second["pdfs"], second["pngs"])
    assert listing(out) == OUTPUTS  # no partial file left beside them
    assert {name: (out / name).read_bytes() for name in OUTPUTS} == before
    assert sandbox.requests() == []


def test_symlinks_planted_where_the_preview_writes_are_replaced_never_followed(
    sandbox: SandboxServer, tmp_path: Path, annex: Path
) -> None:
    out = tmp_path / "shared"
    out.mkdir()
    victims = {name: tmp_path / f"victim-{n}.txt" for n, name in enumerate(OUTPUTS)}
    for name, victim in victims.items():
        victim.write_text(f"do not touch {name}")
        (out / name).symlink_to(victim)  # at the output's own name
        (out / f".{name}.partial").symlink_to(victim)  # at the name an older version wrote through
    preview(str(out), files=[str(annex)], recipients=RECIPIENTS)
    for name, victim in victims.items():
        assert victim.read_text() == f"do not touch {name}"
        assert not (out / name).is_symlink()
    assert (out / OUTPUTS[1]).read_bytes().startswith(b"%PDF-")
    assert sorted(p.name for p in out.iterdir() if not p.is_symlink()) == OUTPUTS


def test_unknown_and_careless_envelope_ids_are_refused_and_nothing_is_written(
    docsign_conn: str, hook: DocsignHook, sandbox: SandboxServer, tmp_path: Path, annex: Path
) -> None:
    envelope_id = hook.create_envelope(title="Preview", files=[annex], recipients=RECIPIENTS)
    sandbox.clear_requests()
    out = tmp_path / "out"
    for wrong in ["envelope_doesnotexist", *jinja_ids(envelope_id).values()]:
        message = refused(lambda wrong=wrong: preview(out, envelope_id=wrong))
        assert any(words in message for words in ("NOT_FOUND", "invalid", "Invalid")), message
    assert not out.exists()
    assert {r["method"] for r in sandbox.requests()} <= {"GET"}
    message = refused(lambda: preview(out, envelope_id=envelope_id, files=[str(annex)]))
    assert "give either envelope_id, or files and recipients, not both" in message


@pytest.mark.parametrize(
    ("recipients", "words"),
    [
        ("not json", "recipients: a string must be JSON"),
        ('[{"email": "a@example.test"', "recipients: a string must be JSON"),
        ('"text"', "recipients must be a list of recipient objects, got str"),
        (
            [{"email": "a@example.test", "fields": "SIGNATURE"}],
            "recipients[0] (a@example.test): fields must be a list",
        ),
    ],
    ids=["text", "cut JSON", "a JSON string", "fields not a list"],
)
def test_recipients_that_are_not_json_or_not_fields_are_refused_saying_where(
    sandbox: SandboxServer, tmp_path: Path, annex: Path, recipients: Any, words: str
) -> None:
    message = refused(lambda: preview(tmp_path / "out", files=[str(annex)], recipients=recipients))
    assert words in message, message
    assert not (tmp_path / "out").exists()


def test_recipients_that_look_like_a_template_stay_data(
    sandbox: SandboxServer, tmp_path: Path, annex: Path, api_key: str, render: Callable[..., Any]
) -> None:
    op = DocsignFieldPreviewOperator(
        task_id="preview", output_dir=str(tmp_path / "out"), files=[str(annex)], recipients="{{ params.r }}"
    )
    hostile = [signer(sig(), email="buyer@example.test", name=TEMPLATE_DATA)]
    result = op.execute(render(op, r=json.dumps(hostile)))
    assert listing(tmp_path / "out") == OUTPUTS
    assert api_key not in json.dumps(result)
    assert all(api_key.encode() not in (tmp_path / "out" / name).read_bytes() for name in OUTPUTS)
    assert sandbox.requests() == []
