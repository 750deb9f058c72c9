"""``docsign verify`` on a whole campaign's archive, handed what a careless or hostile party could leave.

Most archives are written by hand (the sealed PDF recorded from the real service, and a manifest with
its SHA-256, as ``tests/unit/test_verify_folder.py`` does), so that 60 envelopes cost no sandbox time;
one is written by the batch archive from the sandbox. The command runs in a subprocess wherever a
regression could hang (a FIFO): the timeout turns a hang into a failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import SPEC_DIR, completed_envelope, ctx

from airflow_provider_docsign.cli import run
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive_batch import DocsignBatchArchiveOperator
from airflow_provider_docsign.sandbox import SandboxServer

SEALED = SPEC_DIR / "recorded" / "sealed" / "29_sealed_signed.pdf"
SHA256 = hashlib.sha256(SEALED.read_bytes()).hexdigest()
ENVELOPES = 60


def envelope(root: Path, key: str, *names: str) -> Path:
    """One envelope's folder as the batch archive writes it: the sealed PDF(s) and ``manifest.json``."""
    folder = root / key
    folder.mkdir(parents=True)
    files = []
    for name in names or ("01-contract.pdf",):
        shutil.copy(SEALED, folder / name)
        files.append(
            {"name": f"{key}/{name}", "path": name, "uri": f"file:///x/{key}/{name}", "sha256": SHA256}
        )
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({"envelope_id": f"envelope_{key}", "version": "signed", "files": files}))
    return manifest


def campaign(root: Path, count: int = ENVELOPES) -> list[Path]:
    return [envelope(root, f"acme({i:03d})") for i in range(count)]


def docsign(*args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_provider_docsign.cli", "verify", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def verdicts(stdout: str) -> dict[str, str]:
    """``{where: "PASS" | "FAIL"}`` of the envelope lines (not the indented file lines)."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith(("PASS  ", "FAIL  ")):
            status, where = line.split("  ")[:2]
            out[where] = status
    return out


def test_a_clean_campaign_passes_with_one_line_per_envelope_and_one_summary(tmp_path: Path) -> None:
    manifests = campaign(tmp_path / "archive")
    done = docsign("--manifest", tmp_path / "archive")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    assert verdicts(done.stdout) == {str(m): "PASS" for m in manifests}
    out = done.stdout.splitlines()
    assert out[0].startswith(
        f"campaign {tmp_path / 'archive'}: {ENVELOPES} manifest.json files in 61 folders"
    )
    assert out[-1] == f"docsign verify: {ENVELOPES} envelopes, {ENVELOPES} ok, 0 failed"
    assert len(out) == ENVELOPES + 2
    assert sum(line.startswith("docsign verify: ") for line in out) == 1


def test_a_hostile_campaign_gets_one_verdict_per_envelope_and_finishes(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    manifests = campaign(root)
    outside = tmp_path / "outside"
    outside_manifest = envelope(outside, "elsewhere")
    # 1. a PDF changed after archiving
    with open(manifests[3].parent / "01-contract.pdf", "r+b") as fh:
        fh.seek(4000)
        fh.write(b"X")
    # 2. a manifest gone (its PDF stays)
    manifests[7].unlink()
    # 3. a folder that holds a link out of the tree (unlisted) and one whose listed PDF is such a link
    (manifests[11].parent / "02-annex.pdf").symlink_to(outside / "elsewhere" / "01-contract.pdf")
    (manifests[12].parent / "01-contract.pdf").unlink()
    (manifests[12].parent / "01-contract.pdf").symlink_to(outside / "elsewhere" / "01-contract.pdf")
    # 4. a FIFO named manifest.json (never opened: opening it would block)
    manifests[20].unlink()
    os.mkfifo(manifests[20])
    # 5. an empty folder, a link to a whole archive elsewhere, a stray PDF at the top
    (root / "acme(empty)").mkdir()
    (root / "acme(link)").symlink_to(outside / "elsewhere")
    shutil.copy(SEALED, root / "stray.pdf")

    done = docsign("--manifest", root)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stderr == ""
    found = verdicts(done.stdout)
    failing = {
        str(manifests[3]),
        str(manifests[7].parent),
        str(manifests[11]),
        str(manifests[12]),
        str(manifests[20]),
        str(root / "acme(empty)"),
        str(root / "acme(link)"),
        str(root),
    }
    assert {where for where, status in found.items() if status == "FAIL"} == failing
    ok = {str(m) for i, m in enumerate(manifests) if i not in (3, 7, 11, 12, 20)}
    assert {where for where, status in found.items() if status == "PASS"} == ok
    lines = {line.split("  ")[1]: line for line in done.stdout.splitlines() if line.startswith("FAIL  ")}
    assert lines[str(manifests[3])].endswith("01-contract.pdf changed")
    assert "no manifest.json here: 1 PDF(s)" in lines[str(manifests[7].parent)]
    assert "02-annex.pdf unlisted" in lines[str(manifests[11])]
    assert "01-contract.pdf refused" in lines[str(manifests[12])]
    assert "is a FIFO (named pipe), not a regular file" in lines[str(manifests[20])]
    assert "an empty folder" in lines[str(root / "acme(empty)")]
    assert "a symbolic link to a folder" in lines[str(root / "acme(link)")]
    assert "1 PDF(s) that no manifest lists" in lines[str(root)]
    summary = done.stdout.splitlines()[-1]
    assert summary.startswith(f"docsign verify: {len(failing) + len(ok)} envelopes, {len(ok)} ok, 8 failed (")
    assert summary.endswith("; and 5 more)")
    assert sum(line.startswith("docsign verify: ") for line in done.stdout.splitlines()) == 1
    # Nothing outside the tree was audited as this campaign's: the linked archive is not in the output.
    assert str(outside_manifest) not in done.stdout


def test_odd_unicode_folder_names_are_each_audited_and_printed_escaped(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    nfc = unicodedata.normalize("NFC", "Café(1)")
    nfd = unicodedata.normalize("NFD", "Café(1)")
    assert nfc != nfd
    names = [nfc, nfd, "\u202eacme(2)fdp.exe", "acme\u200f(3)", "line\nbreak(4)", "tab\tand space (5)"]
    manifests = [envelope(root, name) for name in names]
    # The NFD twin's PDF is tampered: the verdict must land on that one, not on its NFC look-alike.
    with open(manifests[1].parent / "01-contract.pdf", "r+b") as fh:
        fh.seek(4000)
        fh.write(b"X")

    done = docsign("--manifest", root)

    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout.splitlines()
    assert (
        len(out) == 1 + len(names) + 3 + 1
    )  # header, one per envelope, the failing one's file lines, summary
    for forbidden in ("\u202e", "\u200f", "\t"):
        assert forbidden not in done.stdout
    found = verdicts(done.stdout)
    assert found[str(manifests[0])] == "PASS"
    assert found[str(manifests[1])] == "FAIL"
    assert found[str(root / "\\u202eacme(2)fdp.exe" / "manifest.json")] == "PASS"
    assert found[str(root / "acme\\u200f(3)" / "manifest.json")] == "PASS"
    # Whitespace is folded to one space: a line break in a name cannot start a line of its own.
    assert found[str(root / "line break(4)" / "manifest.json")] == "PASS"
    assert found[str(root / "tab and space (5)" / "manifest.json")] == "PASS"
    assert out[-1] == f"docsign verify: 6 envelopes, 5 ok, 1 failed ({manifests[1]}: 01-contract.pdf changed)"


def test_many_manifests_from_a_shell_glob_are_each_audited(tmp_path: Path) -> None:
    """``--manifest archive/*/manifest.json``: the shell gives many paths; none is called "not a PDF"."""
    manifests = campaign(tmp_path / "archive", 55)
    manifests[9].write_text("{not json")
    done = docsign("--manifest", *manifests)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not a PDF" not in done.stdout + done.stderr
    found = verdicts(done.stdout)
    assert found == {str(m): "FAIL" if i == 9 else "PASS" for i, m in enumerate(manifests)}
    assert done.stdout.splitlines()[-1].startswith(
        f"docsign verify: 55 envelopes, 54 ok, 1 failed ({manifests[9]}: manifest: it is not valid JSON "
        "(line 1, column 2)"
    )

    # A PDF among the paths is checked as a file; --manifest repeated works as well.
    done = docsign("--manifest", manifests[0], SEALED, "--manifest", manifests[1])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"PASS  {SEALED}  signer=" in done.stdout
    assert (
        done.stdout.splitlines()[-1] == "docsign verify: 2 envelopes, 2 ok, 0 failed; 1 file, 1 ok, 0 failed"
    )


def test_json_output_is_json_only_with_the_summary_on_stderr(tmp_path: Path) -> None:
    manifests = campaign(tmp_path / "archive", 52)
    (tmp_path / "archive" / "acme(empty)").mkdir()
    done = docsign("--json", "--manifest", tmp_path / "archive")
    assert done.returncode == 1
    document = json.loads(done.stdout)
    by_manifest: dict[str, list[bool]] = {}
    for one in document:
        by_manifest.setdefault(one["manifest"], []).append(one["passed"])
    assert len(by_manifest) == 53
    assert all(all(by_manifest[str(m)]) for m in manifests)
    assert by_manifest[str(tmp_path / "archive" / "acme(empty)")] == [False]
    assert done.stderr.splitlines() == [
        f"docsign verify: 53 envelopes, 52 ok, 1 failed ({tmp_path / 'archive' / 'acme(empty)'}: "
        "no manifest.json here (an empty folder): no envelope to audit)"
    ]


def test_a_manifest_link_leading_out_of_the_tree_is_refused_not_read(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    manifests = campaign(root, 51)
    outside = envelope(tmp_path / "outside", "elsewhere")
    manifests[5].unlink()
    manifests[5].symlink_to(outside)
    done = docsign("--manifest", root)
    assert done.returncode == 1
    assert verdicts(done.stdout)[str(manifests[5])] == "FAIL"
    (line,) = [x for x in done.stdout.splitlines() if x.startswith(f"FAIL  {manifests[5]}")]
    assert "refused: manifest.json is a symbolic link, not a regular file" in line
    assert "elsewhere" not in done.stdout.replace(str(outside), "")  # its files were never audited


def test_folders_deeper_than_the_search_are_reported_not_searched(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    campaign(root, 50)
    deep = root.joinpath(*[f"level{i}" for i in range(9)])
    envelope(deep, "too-deep")
    done = docsign("--manifest", root)
    assert done.returncode == 1
    failing = [where for where, status in verdicts(done.stdout).items() if status == "FAIL"]
    # level0 ... level7 are the 8 levels searched below the campaign's folder; level8 is not.
    assert failing == [str(root.joinpath(*[f"level{i}" for i in range(9)]))]
    assert "not searched: more than 8 levels deep" in done.stdout


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ["--manifest", "{empty}"],
            "--manifest {empty}: no manifest.json in it or below (1 folder(s) searched",
        ),
        (["--manifest", "s3://bucket/campaign/"], "a folder on object storage is not searched"),
        (["{archive}"], "it is a directory, not a file (an archive's folder? give it with --manifest)"),
        (["{manifest}"], "(a manifest? give it with --manifest)"),
    ],
    ids=["no-manifest-at-all", "remote-folder", "folder-as-file", "manifest-as-file"],
)
def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path, argv: list[str], error: str) -> None:
    (tmp_path / "empty").mkdir()
    (manifest,) = campaign(tmp_path / "archive", 1)
    names = {"empty": tmp_path / "empty", "archive": tmp_path / "archive", "manifest": manifest}
    done = docsign(*(arg.format(**names) for arg in argv))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("docsign verify: error: ")
    assert error.format(**names) in line


def test_one_manifest_alone_is_audited_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The single-envelope output has no per-envelope line and no summary; a FIFO manifest is still exit 2."""
    (manifest,) = campaign(tmp_path / "archive", 1)
    assert run(["verify", "--manifest", str(manifest)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"manifest {manifest}: checking the files beside it, by the relative paths it records"
    assert out[1].startswith(f"PASS  {manifest.parent / '01-contract.pdf'}  signer=")
    assert len(out) == 2
    manifest.unlink()
    os.mkfifo(manifest)
    done = docsign("--manifest", manifest)
    assert done.returncode == 2
    assert "it is a FIFO (named pipe)" in done.stderr


def test_the_batch_archive_s_folder_verifies_as_a_campaign(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The operator's own output: every envelope passes; one PDF changed afterwards fails that one alone."""
    ids = [
        completed_envelope(
            hook,
            sandbox,
            [make_pdf(f"c{i}.pdf"), make_pdf(f"a{i}.pdf")],
            title=f"C {i}",
            external_id=f"camp({i})",
        )
        for i in range(3)
    ]
    pending = hook.create_envelope(
        title="open",
        files=[make_pdf("open.pdf")],
        recipients=[
            {
                "email": "o@example.test",
                "name": "O",
                "role": "SIGNER",
                "fields": [
                    {
                        "identifier": 0,
                        "type": "SIGNATURE",
                        "page": 1,
                        "positionX": 10,
                        "positionY": 10,
                        "width": 20,
                        "height": 5,
                    }
                ],
            }
        ],
    )
    hook.distribute_envelope(pending)
    destination = tmp_path / "archive"
    DocsignBatchArchiveOperator(
        task_id="archive",
        envelope_ids=[*ids, pending],
        destination=str(destination),
        include_audit_log=True,
        on_unsigned="skip",
    ).execute(ctx())
    sandbox.clear_requests()
    assert run(["verify", "--manifest", str(destination)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "docsign verify: 3 envelopes, 3 ok, 0 failed"
    assert sandbox.requests() == []  # the audit reads the disk only

    manifest = json.loads((destination / "camp(1)" / "manifest.json").read_text())
    changed = destination / "camp(1)" / manifest["files"][1]["path"]
    changed.write_bytes(changed.read_bytes() + b"%% appended\n")
    assert run(["verify", "--manifest", str(destination)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == (
        f"docsign verify: 3 envelopes, 2 ok, 1 failed ({destination / 'camp(1)' / 'manifest.json'}: "
        f"{changed.name} changed)"
    )
