"""Every argument of every ``docsign`` subcommand, given wrong: one line that says what to give, exit 2.

What a newcomer typed (``--manifest file.pdf``, ``--manifest missing.json``, ``--validation-time
yesterday``, ``docsign sandbox --port 99999``) and what else breaks an argument: an empty string, a
directory where a file is expected, a file that cannot be read (``/proc/self/mem``: its first read
fails, even for root), bytes that are not UTF-8, huge and negative numbers, ``nan`` and ``inf``. Each
run is the console script in a subprocess, as a user runs it; each must end in exactly one stderr line
``docsign COMMAND: error: ...`` with no traceback and no Python exception name or text, and exit 2.
``--debug`` adds the traceback of a failure and changes nothing else (the exit status stays 2). The
templates cases point a connection at the sandbox: a refused argument reaches it zero times.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import SPEC_DIR

from airflow_provider_docsign.sandbox import SandboxServer

DOCSIGN = str(Path(sys.executable).with_name("docsign"))
SEALED = SPEC_DIR / "recorded" / "sealed" / "29_sealed_signed.pdf"
#: A Python exception's name or text, which no error line may hold.
RAW = re.compile(
    r"Traceback|\b[A-Z][A-Za-z]*(Error|Exception)\b|Errno|invalid literal|Invalid isoformat|"
    r"invalid (int|float) value|codec can't|Expecting (value|property)|object has no attribute"
)


def docsign(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    child = {k: v for k, v in os.environ.items() if k != "DOCSIGN_SANDBOX_API_KEY"}
    child.update(env or {})
    return subprocess.run(
        [DOCSIGN, *map(str, args)], capture_output=True, text=True, timeout=60, check=False, env=child
    )


def one_line(done: subprocess.CompletedProcess[str], prefix: str) -> str:
    """Exit 2, stdout empty, one stderr line starting with ``prefix``, nothing of Python's in it."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(prefix), lines[0]
    assert not RAW.search(lines[0]), lines[0]
    return lines[0]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """Things to give where a file is expected: a folder, a non-PDF, binary, deep JSON, a PDF as JSON."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.pdf").write_text("these are notes, not a PDF\n")
    (tmp_path / "damaged.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    (tmp_path / "binary.json").write_bytes(b"garbage\x81\xc3\x28" * 100)
    (tmp_path / "deep.json").write_bytes(b"[" * 100_000)
    (tmp_path / "pdf.json").write_bytes(SEALED.read_bytes())
    (tmp_path / "cert.pem").write_text("not a certificate\n")
    (tmp_path / "file").write_text("a file, not a folder\n")
    names = {p.name.replace(".", "_"): str(p) for p in tmp_path.iterdir()}
    return {
        **names,
        "missing": str(tmp_path / "missing.json"),
        "mem": "/proc/self/mem",
        "sealed": str(SEALED),
    }


# (arguments, the line's prefix, what it must say)
CASES: list[tuple[tuple[str, ...], str, str]] = [
    # -- the newcomer's -------------------------------------------------------------------------------
    (("verify", "--manifest", "{pdf_json}"), "docsign verify: error: manifest ", "is a PDF, not a manifest"),
    (
        ("verify", "--manifest", "{damaged_pdf}"),
        "docsign verify: error: ",
        "it is damaged, or it is not a PDF",
    ),
    (("verify", "--manifest", "{missing}"), "docsign verify: error: manifest ", "the file does not exist"),
    (
        ("verify", "--validation-time", "yesterday", "{sealed}"),
        "docsign verify: error: argument --validation-time: ",
        "is not an ISO 8601 date and time: write a date, a time and a zone, e.g. 2031-06-01T12:00:00Z",
    ),
    (
        ("sandbox", "--port", "99999", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox: error: argument --port: ",
        "'99999' is out of range: give a port from 0 to 65,535",
    ),
    # -- verify -------
    (("verify",), "docsign verify: error: ", "give at least one FILE_OR_URI or --manifest URI"),
    (("verify", ""), "docsign verify: error: argument FILE_OR_URI: ", "an empty path"),
    (("verify", "{folder}"), "docsign verify: error: ", "it is a directory, not a file"),
    (("verify", "{notes_pdf}"), "docsign verify: error: ", "is not a PDF (it does not start with %PDF-)"),
    (("verify", "{mem}"), "docsign verify: error: ", "it cannot be read (Input/output error)"),
    (
        ("verify", "--manifest"),
        "docsign verify: error: argument --manifest: ",
        "expected at least one argument",
    ),
    (("verify", "--manifest", ""), "docsign verify: error: argument --manifest: ", "an empty path"),
    (("verify", "--manifest", "{binary_json}"), "docsign verify: error: manifest ", "is not text"),
    (("verify", "--manifest", "{deep_json}"), "docsign verify: error: manifest ", "nested too deeply"),
    (("verify", "--manifest", "{mem}"), "docsign verify: error: manifest ", "it cannot be read"),
    (("verify", "--manifest", "{folder}"), "docsign verify: error: --manifest ", "no manifest.json in it"),
    (("verify", "--manifest", "s3://bucket/x/"), "docsign verify: error: ", "a folder on object storage"),
    (("verify", "--trust", "{missing}", "{sealed}"), "docsign verify: error: --trust ", "does not exist"),
    (("verify", "--trust", "{folder}", "{sealed}"), "docsign verify: error: --trust ", "it is a directory"),
    (("verify", "--trust", "{cert_pem}", "{sealed}"), "docsign verify: error: --trust ", "holds no PEM"),
    (("verify", "--trust", "{mem}", "{sealed}"), "docsign verify: error: --trust ", "it cannot be read"),
    (("verify", "--trust", "", "{sealed}"), "docsign verify: error: argument --trust: ", "an empty path"),
    (
        ("verify", "--tsa-cert", "{binary_json}", "{sealed}"),
        "docsign verify: error: --tsa-cert ",
        "holds no PEM",
    ),
    (
        ("verify", "--fingerprint", "zz", "{sealed}"),
        "docsign verify: error: argument --fingerprint: ",
        "64 hex",
    ),
    (
        ("verify", "--tsa-fingerprint", "", "{sealed}"),
        "docsign verify: error: argument --tsa-fingerprint",
        "64 hex",
    ),
    (
        ("verify", "--validation-time", "", "{sealed}"),
        "docsign verify: error: argument --validation-time",
        "empty",
    ),
    (
        ("verify", "--validation-time", "2031-06-01", "{sealed}"),
        "docsign verify: error: argument",
        "without a time",
    ),
    (
        ("verify", "--validation-time", "9" * 400, "{sealed}"),
        "docsign verify: error: argument",
        "not an ISO 8601",
    ),
    (("verify", "--conn-id", "", "{sealed}"), "docsign verify: error: argument --conn-id: ", "an empty id"),
    (("verify", "--by-uri", "{sealed}"), "docsign verify: error: ", "--by-uri applies to --manifest only"),
    (("verify", "--require-timestamp", "{sealed}"), "docsign verify: error: ", "applies to --manifest only"),
    (("verify", "--no-such-option", "{sealed}"), "docsign verify: error: ", "unrecognized arguments"),
    # -- templates (fails before any connection is read) -----------------------------------------------------
    (("templates",), "docsign templates: error: ", "the following arguments are required: ACTION"),
    (("templates", "show"), "docsign templates show: error: ", "the following arguments are required"),
    (("templates", "show", ""), "docsign templates show: error: argument template_id: ", "an empty id"),
    (
        ("templates", "show", "envelope 1"),
        "docsign templates show: error: argument template_id: ",
        "not an id",
    ),
    (
        ("templates", "show", "../envelope_1"),
        "docsign templates show: error: argument template_id",
        "not an id",
    ),
    (
        ("templates", "show", "envelope_1", "--conn-id", ""),
        "docsign templates show: error: argument --conn-id",
        "id",
    ),
    # -- preview -------
    (
        ("preview", "", "{sealed}", "-o", "{folder}"),
        "docsign preview: error: argument payload: ",
        "an empty path",
    ),
    (
        ("preview", "{missing}", "{sealed}", "-o", "{folder}"),
        "docsign preview: error: ",
        "the file does not exist",
    ),
    (("preview", "{folder}", "{sealed}", "-o", "{folder}"), "docsign preview: error: ", "it is a directory"),
    (("preview", "{binary_json}", "{sealed}", "-o", "{folder}"), "docsign preview: error: ", "is not text"),
    (
        ("preview", "{deep_json}", "{sealed}", "-o", "{folder}"),
        "docsign preview: error: ",
        "nested too deeply",
    ),
    (("preview", "{pdf_json}", "{sealed}", "-o", "{folder}"), "docsign preview: error: ", "is not text"),
    (("preview", "{mem}", "{sealed}", "-o", "{folder}"), "docsign preview: error: ", "it cannot be read"),
    (
        ("preview", "{missing}", "", "-o", "{folder}"),
        "docsign preview: error: argument files: ",
        "an empty path",
    ),
    (
        ("preview", "{missing}", "{sealed}", "-o", ""),
        "docsign preview: error: argument -o/--output: ",
        "empty",
    ),
    (
        ("preview", "{missing}", "{sealed}", "-o", "{folder}", "--dpi", "0"),
        "docsign preview: error: arg",
        "18 to 600",
    ),
    (
        ("preview", "{missing}", "{sealed}", "-o", "{folder}", "--dpi", "1e3"),
        "docsign preview: error:",
        "whole number",
    ),
    (
        ("preview", "{missing}", "{sealed}", "-o", "{folder}", "--dpi", "9" * 50),
        "docsign preview: error:",
        "range",
    ),
    # -- sandbox -------
    (
        ("sandbox", "--api-key", "k"),
        "docsign sandbox: error: ",
        "the following arguments are required: --data-dir",
    ),
    (
        ("sandbox", "--data-dir", "{folder}"),
        "docsign sandbox: error: ",
        "--api-key (or DOCSIGN_SANDBOX_API_KEY)",
    ),
    (("sandbox", "--data-dir", "{folder}", "--api-key", ""), "docsign sandbox: error: ", "--api-key"),
    (
        ("sandbox", "--data-dir", "", "--api-key", "k"),
        "docsign sandbox: error: argument --data-dir: ",
        "empty",
    ),
    (
        ("sandbox", "--data-dir", "{file}", "--api-key", "k"),
        "docsign sandbox: error: --data-dir ",
        "not a directory",
    ),
    (
        ("sandbox", "--data-dir", "/proc/no/such", "--api-key", "k"),
        "docsign sandbox: error: --data-dir",
        "created",
    ),
    (
        ("sandbox", "--port", "-1", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox: error: arg",
        "range",
    ),
    (
        ("sandbox", "--port", "x", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox: error:",
        "whole",
    ),
    (
        ("sandbox", "--port", "9" * 40, "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox: error:",
        "range",
    ),
    (
        ("sandbox", "--host", "", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox: error: arg",
        "empty",
    ),
    (
        ("sandbox", "--host", "203.0.113.1", "--data-dir", "{folder}", "--api-key", "k"),  # TEST-NET-3
        "docsign sandbox: error: cannot listen on 203.0.113.1:0: ",
        "give another --host (an address of this machine) or --port (0 picks a free one)",
    ),
    (
        ("sandbox", "--host", "\udcff", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox: error: argument --host: ",
        "'\\udcff' holds bytes that are not text (UTF-8): give an interface to bind, e.g. 127.0.0.1",
    ),
    (
        ("sandbox", "--max-file-mb", "0", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox: error:",
        "more",
    ),
    (
        ("sandbox", "--max-file-mb", "nan", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "finite",
    ),
    (
        ("sandbox", "--max-file-mb", "-5", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "range",
    ),
    (
        ("sandbox", "--rate-limit", "-1", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "range",
    ),
    (
        ("sandbox", "--rate-limit", "1.5", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "whole",
    ),
    (
        ("sandbox", "--rate-window", "0", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "range",
    ),
    (
        ("sandbox", "--rate-window", "inf", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "finite",
    ),
    (
        ("sandbox", "--seal-delay", "-1", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "range",
    ),
    (
        ("sandbox", "--seal-delay", "1e308", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "range",
    ),
    (
        ("sandbox", "--auto-sign-after=-inf", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "fin",
    ),
    (
        ("sandbox", "--seal-cert-lifetime", "0", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "more",
    ),
    (
        ("sandbox", "--seal-cert-lifetime", "1e300", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sand",
        "range",
    ),
    (
        ("sandbox", "--log-level", "loud", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "log level",
    ),
    (
        ("sandbox", "--webhook", "ftp://x", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "http(s)",
    ),
    (
        ("sandbox", "--webhook", "http://", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox:",
        "host",
    ),
    (
        ("sandbox", "--webhook-events", "NOPE", "--data-dir", "{folder}", "--api-key", "k"),
        "docsign sandbox: error: argument --webhook-events: ",
        "not an event the sandbox sends",
    ),
    # -- webhooks -------
    (("webhooks",), "docsign webhooks: error: ", "the following arguments are required: ACTION"),
    (("webhooks", "check"), "docsign webhooks check: error: ", "the following arguments are required: URL"),
    (("webhooks", "check", ""), "docsign webhooks check: error: argument URL: ", "an empty value"),
    (("webhooks", "check", "ftp://x.example/"), "docsign webhooks: error: ", "is not an http(s) URL"),
    (("webhooks", "check", "http://"), "docsign webhooks: error: ", "is not a URL"),
    (("webhooks", "check", "http://[::1/"), "docsign webhooks: error: ", "is not a URL"),
    # -- the command itself -------
    ((), "docsign: error: ", "the following arguments are required: COMMAND"),
    (("nosuch",), "docsign: error: argument COMMAND: invalid choice: 'nosuch'", "choose from"),
]


@pytest.mark.parametrize(
    ("args", "prefix", "says"),
    CASES,
    ids=[re.sub(r"[^ -~]", "?", " ".join(c[0]))[:60] or "none" for c in CASES],
)
def test_every_wrong_argument_is_one_line_and_exit_2(
    args: tuple[str, ...], prefix: str, says: str, files: dict[str, str]
) -> None:
    line = one_line(docsign(*(arg.format(**files) for arg in args)), prefix)
    assert says in line


def test_a_wrong_template_id_or_connection_id_never_reaches_the_service(
    docsign_conn: str, sandbox: SandboxServer
) -> None:
    sandbox.clear_requests()
    for args in (
        ("", "--conn-id", docsign_conn),
        ("a b",),
        ("\udcff",),
        ("x/y",),
        ("envelope_1", "--conn-id", " "),
    ):
        one_line(docsign("templates", "show", *args), "docsign templates show: error: argument ")
    assert sandbox.requests() == []


def test_a_path_that_is_not_utf8_is_one_line_naming_it_escaped(tmp_path: Path) -> None:
    missing = os.fsencode(tmp_path) + b"/\xff\xfe.pdf"
    done = subprocess.run(
        [os.fsencode(DOCSIGN), b"verify", missing], capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 2
    (line,) = done.stderr.decode("utf-8").splitlines()
    assert line == f"docsign verify: error: {tmp_path}/\\udcff\\udcfe.pdf: the file does not exist"
    manifest = subprocess.run(
        [os.fsencode(DOCSIGN), b"verify", b"--manifest", os.fsencode(tmp_path) + b"/\xff.json"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert manifest.returncode == 2
    assert manifest.stderr.decode("utf-8").startswith(
        f"docsign verify: error: manifest {tmp_path}/\\udcff.json: "
    )


@pytest.mark.parametrize(
    "args",
    [
        ("--debug", "verify", "--manifest", "{missing}"),
        ("verify", "--debug", "--manifest", "{pdf_json}"),
        ("--debug", "verify", "--trust", "{cert_pem}", "{sealed}"),
        ("--debug", "sandbox", "--data-dir", "{file}", "--api-key", "k"),
        ("--debug", "preview", "{deep_json}", "{sealed}", "-o", "{folder}"),
    ],
    ids=["missing-manifest", "pdf-manifest", "bad-trust", "data-dir-a-file", "deep-payload"],
)
def test_debug_adds_the_traceback_and_keeps_exit_2(args: tuple[str, ...], files: dict[str, str]) -> None:
    done = docsign(*(arg.format(**files) for arg in args))
    assert done.returncode == 2, done.stderr  # never 1 ("a check failed") nor an uncaught exception's
    assert done.stderr.startswith("Traceback (most recent call last):")
    last = done.stderr.splitlines()[-1]
    assert last.startswith(f"docsign {args[1] if args[0] == '--debug' else args[0]}: error: ")
    assert not RAW.search(last)


def test_debug_on_a_usage_error_keeps_it_one_line_and_exit_2(files: dict[str, str]) -> None:
    for args in (
        ("--debug", "sandbox", "--port", "99999", "--data-dir", files["folder"], "--api-key", "k"),
        ("verify", "--debug", "--validation-time", "yesterday", files["sealed"]),
    ):
        one_line(docsign(*args), f"docsign {args[1] if args[0] == '--debug' else args[0]}: error: argument ")
