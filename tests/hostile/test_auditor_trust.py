"""``docsign verify`` says what it trusts: tokens from TSAs the test makes; manifests that are no manifest.

The archive is written by the real operator from a sandbox envelope, with the sandbox as its TSA (pinned in
the TSA connection, as a user would). Then a careless or hostile party changes it: a token dated 2045 from a
TSA the auditor pins, the token and the manifest's ``timestamp`` key both removed, a token from a TSA made on
the spot that nobody pins, a PDF changed under a valid token, a "manifest" that is a PDF, binary, 17 MB or
nested 100,000 deep, validation times in odd formats. Each run of ``docsign verify`` (a subprocess, as a user
runs it) must fail or warn as documented, in one line where it is an error, and fetch nothing: the sandbox
and its TSA count zero requests while the auditor runs.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import ssl
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import SPEC_DIR, completed_envelope, tsa_conn_json

from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator
from airflow_provider_docsign.sandbox import SandboxServer

DOCSIGN = str(Path(sys.executable).with_name("docsign"))
SEALED = SPEC_DIR / "recorded" / "sealed" / "29_sealed_signed.pdf"
UTC = datetime.timezone.utc
#: What no error line may hold: a Python exception's name or text.
RAW = ("Traceback", "Error:", "Exception", "Errno", "Invalid isoformat", "codec can't decode", "Expecting ")


@dataclass
class Archive:
    """One envelope archived by the operator with a sandbox token; the PEMs an auditor pins."""

    manifest: Path
    tsa_pem: Path
    seal_pem: Path

    @property
    def token(self) -> Path:
        return self.manifest.with_name("manifest.json.tsr")

    @property
    def data(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.manifest.read_text())
        return loaded


@pytest.fixture
def archive(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Archive:
    monkeypatch.setenv("AIRFLOW_CONN_TSA_SANDBOX", tsa_conn_json(sandbox))
    files = [make_pdf("Agreement.pdf", pages=2), make_pdf("Annex.pdf")]
    envelope_id = completed_envelope(hook, sandbox, files, title="Trust", external_id="TRUST-1")
    DocsignArchiveSignedDocumentsOperator(
        task_id="archive",
        envelope_id=envelope_id,
        destination=str(tmp_path / "archive"),
        tsa_conn_id="tsa_sandbox",
    ).execute({})  # type: ignore[arg-type]
    (tmp_path / "tsa.pem").write_bytes(sandbox.tsa_certificate_pem())
    (tmp_path / "seal.pem").write_bytes(sandbox.certificate_pem())
    sandbox.clear_requests()
    sandbox.clear_tsa()
    return Archive(
        tmp_path / "archive" / "TRUST-1" / "manifest.json", tmp_path / "tsa.pem", tmp_path / "seal.pem"
    )


class OwnTsa:
    """A TSA made by the test (pyHanko's test TSA with its own key): nobody pins it unless told.

    Its certificate is valid from 2020 to 2050, so a token it dates 2045 is judged by its date alone.
    """

    def __init__(self, common_name: str, folder: Path) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(datetime.datetime(2020, 1, 1, tzinfo=UTC))
            .not_valid_after(datetime.datetime(2050, 1, 1, tzinfo=UTC))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
            .sign(key, hashes.SHA256())
        )
        self.der = cert.public_bytes(serialization.Encoding.DER)
        self.key = key.private_bytes(
            serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        self.pem = folder / f"{common_name.replace(' ', '-')}.pem"
        self.pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        self.fingerprint = hashlib.sha256(self.der).hexdigest()

    def stamp(self, manifest: Path, at: datetime.datetime | None = None) -> None:
        """Replace the token beside ``manifest`` with this TSA's, over its exact bytes, dated ``at``."""
        from asn1crypto import keys, tsp
        from asn1crypto import x509 as ax509
        from pyhanko.sign.timestamps import DummyTimeStamper

        from airflow_provider_docsign.evidence.timestamps import build_request

        stamper = DummyTimeStamper(
            tsa_cert=ax509.Certificate.load(self.der), tsa_key=keys.PrivateKeyInfo.load(self.key), fixed_dt=at
        )
        body, _ = build_request(hashlib.sha256(manifest.read_bytes()).digest())
        answer = stamper.request_tsa_response(tsp.TimeStampReq.load(body))
        manifest.with_name("manifest.json.tsr").write_bytes(answer.dump())


def verify(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DOCSIGN, "verify", *map(str, args)], capture_output=True, text=True, timeout=300, check=False
    )


def token_lines(stdout: str) -> list[str]:
    """The token's line and the indented lines under it."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line[:6] in {"PASS  ", "FAIL  "} and ".tsr  " in line)
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("      ")), len(lines))
    return lines[start:end]


def nothing_fetched(sandbox: SandboxServer) -> None:
    """The auditor asked neither the service nor the TSA anything."""
    assert sandbox.requests() == []
    assert sandbox.tsa_requests() == []


def one_error(done: subprocess.CompletedProcess[str], prefix: str) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(prefix), line
    assert not [raw for raw in RAW if raw in line], line
    return line


# -- genTime in the future ---------------------------------------------------------------------------


def test_a_token_dated_2045_by_a_pinned_tsa_fails_naming_its_time(
    archive: Archive, sandbox: SandboxServer, tmp_path: Path
) -> None:
    own = OwnTsa("Future TSA", tmp_path)
    own.stamp(archive.manifest, datetime.datetime(2045, 1, 1, tzinfo=UTC))
    pins = ["--tsa-cert", own.pem, "--trust", archive.seal_pem]

    done = verify("--manifest", archive.manifest, *pins)
    assert done.returncode == 1, done.stdout + done.stderr
    head, *under = token_lines(done.stdout)
    assert head.startswith("FAIL  ")
    assert "genTime 2045-01-01T00:00:00Z" in head
    assert any(
        "genTime 2045-01-01T00:00:00Z is in the future" in line and "more than the 5 minutes" in line
        for line in under
    ), under
    assert not any("existed, unchanged" in line for line in under)  # a failing token proves nothing

    as_json = verify("--manifest", archive.manifest, *pins, "--json")
    (token,) = [o for o in json.loads(as_json.stdout) if o.get("kind") == "timestamp"]
    assert token["passed"] is False
    assert token["proves"] is None
    assert token["timestamp"]["trusted"] is True  # the pinned TSA signed it: only the date gives it away
    nothing_fetched(sandbox)


def test_the_clock_tolerance_is_five_minutes_and_a_validation_time_before_the_token_fails(
    archive: Archive, sandbox: SandboxServer, tmp_path: Path
) -> None:
    own = OwnTsa("Skewed TSA", tmp_path)
    now = datetime.datetime.now(UTC)
    pins = ["--tsa-cert", own.pem, "--trust", archive.seal_pem]

    own.stamp(archive.manifest, now + datetime.timedelta(minutes=3))  # a TSA clock 3 minutes ahead
    assert verify("--manifest", archive.manifest, *pins).returncode == 0

    own.stamp(archive.manifest, now + datetime.timedelta(minutes=10))
    ahead = verify("--manifest", archive.manifest, *pins)
    assert ahead.returncode == 1
    assert "is in the future: later than now" in ahead.stdout

    own.stamp(archive.manifest, now - datetime.timedelta(minutes=1))
    before = (now - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    earlier = verify("--manifest", archive.manifest, *pins, "--validation-time", before)
    assert earlier.returncode == 1
    joined = "\n".join(token_lines(earlier.stdout))
    assert f"is later than the moment it is checked as of ({before})" in joined
    assert "as of then this token did not exist" in joined
    nothing_fetched(sandbox)


# -- a pin requires the token --------------------------------------------------------------------------


def test_a_pinned_tsa_fails_a_manifest_whose_token_and_timestamp_key_were_removed(
    archive: Archive, sandbox: SandboxServer
) -> None:
    archive.token.unlink()
    data = archive.data
    del data["timestamp"]
    archive.manifest.write_text(json.dumps(data))
    fingerprint = hashlib.sha256(ssl.PEM_cert_to_DER_cert(archive.tsa_pem.read_text())).hexdigest()
    missing = "missing: no timestamp token beside the manifest, and a TSA is pinned (--tsa-cert or "

    for pin in (["--tsa-cert", archive.tsa_pem], ["--tsa-fingerprint", fingerprint]):
        done = verify("--manifest", archive.manifest, "--trust", archive.seal_pem, *pin)
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"FAIL  {archive.token}  {missing}--tsa-fingerprint), which requires a token" in done.stdout

    # A campaign's folder holding this envelope: the envelope fails, named.
    campaign = verify("--manifest", archive.manifest.parent.parent, "--tsa-cert", archive.tsa_pem)
    assert campaign.returncode == 1
    assert f"FAIL  {archive.manifest}  manifest.json.tsr missing" in campaign.stdout

    # Nothing pinned and nothing declared: nothing asks for a token (as documented).
    assert verify("--manifest", archive.manifest, "--trust", archive.seal_pem).returncode == 0
    nothing_fetched(sandbox)


# -- a TSA nobody pinned ------------------------------------------------------------------------------


def test_a_self_made_tsa_nobody_pinned_is_said_not_trusted_and_strict_fails_it(
    archive: Archive, sandbox: SandboxServer, tmp_path: Path
) -> None:
    own = OwnTsa("Self Made TSA", tmp_path)
    own.stamp(archive.manifest)

    done = verify("--manifest", archive.manifest, "--trust", archive.seal_pem)
    assert done.returncode == 0, done.stdout + done.stderr
    head, alone, proof = token_lines(done.stdout)
    assert head.startswith("PASS  ")
    assert head.endswith("trusted=-")
    assert alone.startswith(
        "      not trusted: no TSA pinned: anyone can make such a token with their own key"
    )
    assert proof.startswith("      by the word of a TSA nobody pinned: every file in this manifest existed")

    as_json = verify("--manifest", archive.manifest, "--trust", archive.seal_pem, "--json")
    (token,) = [o for o in json.loads(as_json.stdout) if o.get("kind") == "timestamp"]
    assert token["trust"] == "not trusted: no TSA pinned"
    assert token["timestamp"]["trusted"] is None

    strict = verify("--manifest", archive.manifest, "--trust", archive.seal_pem, "--strict")
    assert strict.returncode == 1
    head, *under = token_lines(strict.stdout)
    assert head.startswith("FAIL  ")
    assert (
        "      not trusted: no TSA pinned, and --strict was given: pin the TSA with --tsa-cert PEM"
        in "\n".join(under)
    )
    # Strict with both pins given passes: it fails what is unpinned, not everything.
    pinned = verify(
        "--manifest", archive.manifest, "--trust", archive.seal_pem, "--tsa-cert", own.pem, "--strict"
    )
    assert pinned.returncode == 0, pinned.stdout
    # Strict without --trust fails the seals too, saying so.
    seals = verify("--manifest", archive.manifest, "--tsa-cert", own.pem, "--strict")
    assert seals.returncode == 1
    assert "not trusted: no signer certificate pinned, and --strict was given" in seals.stdout
    # Pinned to another TSA (the sandbox's): the self-made token fails by name.
    other = verify("--manifest", archive.manifest, "--trust", archive.seal_pem, "--tsa-cert", archive.tsa_pem)
    assert other.returncode == 1
    assert "is not trusted by the pinned TSA certificates" in other.stdout

    # A campaign says so on a line of its own, and --strict fails the envelope.
    folder = archive.manifest.parent.parent
    campaign = verify("--manifest", folder, "--trust", archive.seal_pem)
    assert campaign.returncode == 0
    assert "note: not trusted: no TSA pinned for the timestamps of 1 envelope" in campaign.stdout
    assert verify("--manifest", folder, "--trust", archive.seal_pem, "--strict").returncode == 1
    nothing_fetched(sandbox)


# -- a changed file under a valid token ----------------------------------------------------------------


def test_after_a_tampered_pdf_the_token_vouches_only_for_the_files_that_still_match(
    archive: Archive, sandbox: SandboxServer
) -> None:
    listed = [archive.manifest.parent / entry["path"] for entry in archive.data["files"]]
    first, second = listed[0], listed[1]
    data = bytearray(first.read_bytes())
    data[len(data) // 2] ^= 0x01
    first.write_bytes(bytes(data))
    pins = ["--tsa-cert", archive.tsa_pem, "--trust", archive.seal_pem]

    done = verify("--manifest", archive.manifest, *pins)
    assert done.returncode == 1
    assert f"FAIL  {first}" in done.stdout
    head, proof = token_lines(done.stdout)
    assert head.startswith("PASS  ")
    assert head.endswith("trusted=yes")  # the token itself is intact
    assert "only the 1 file(s) of this manifest that still match their SHA-256 existed, unchanged" in proof
    assert f"it proves nothing about the 1 that do not ({first.name})" in proof
    assert "every file in this manifest existed" not in done.stdout

    as_json = verify("--manifest", archive.manifest, *pins, "--json")
    (token,) = [o for o in json.loads(as_json.stdout) if o.get("kind") == "timestamp"]
    assert token["unproven"] == [str(first)]
    assert token["proves"].startswith("only the")

    second.unlink()
    both = verify("--manifest", archive.manifest, *pins)
    assert both.returncode == 1
    assert len(listed) == 2
    assert (
        "no file of this manifest still matches its SHA-256: the token proves only that the manifest existed "
        "no later than genTime"
    ) in both.stdout
    assert f"nothing about the files here ({first.name}, {second.name})" in both.stdout
    nothing_fetched(sandbox)


# -- manifests that are no manifest ------------------------------------------------------------------------

NOT_MANIFESTS: dict[str, tuple[Callable[[], bytes], str]] = {
    "a-pdf": (SEALED.read_bytes, "is a PDF, not a manifest"),
    "binary": (lambda: b"garbage\x81\xc3\x28" * 200, "is not text (its bytes are not UTF-8)"),
    "nul-bytes": (lambda: b"\x00" * 64, "is not valid JSON (line 1, column 1)"),
    "empty": (lambda: b"", "is not valid JSON (line 1, column 1)"),
    "huge": (lambda: b" " * (17 * 1024 * 1024) + b"{}", "is larger than 16777216 bytes"),
    "nested-lists": (lambda: b"[" * 100_000, "is nested too deeply to be read"),
    "nested-objects": (lambda: b'{"files": ' * 60_000, "is nested too deeply to be read"),
    "a-list": (lambda: b"[]", "is not an archive manifest (no 'files' list)"),
    "files-not-a-list": (lambda: b'{"files": "all of them"}', "is not an archive manifest (no 'files' list)"),
}


def _envelope(root: Path, key: str) -> Path:
    folder = root / key
    folder.mkdir(parents=True)
    shutil.copy(SEALED, folder / "01-contract.pdf")
    sha = hashlib.sha256(SEALED.read_bytes()).hexdigest()
    manifest = folder / "manifest.json"
    entry = {"name": f"{key}/01-contract.pdf", "path": "01-contract.pdf", "sha256": sha}
    manifest.write_text(json.dumps({"envelope_id": f"envelope_{key}", "version": "signed", "files": [entry]}))
    return manifest


@pytest.mark.parametrize("kind", list(NOT_MANIFESTS))
def test_a_manifest_that_is_no_manifest_is_one_line_and_the_campaign_goes_on(
    kind: str, sandbox: SandboxServer, tmp_path: Path
) -> None:
    content, reason = NOT_MANIFESTS[kind]
    good = _envelope(tmp_path / "campaign", "good")
    bad = _envelope(tmp_path / "campaign", "bad")
    bad.write_bytes(content())

    line = one_error(verify("--manifest", bad), "docsign verify: error: manifest ")
    assert reason in line
    assert (
        line.endswith("give the manifest.json an archive wrote (or an archive's folder)") or kind == "a-pdf"
    )

    campaign = verify("--manifest", tmp_path / "campaign")
    assert campaign.returncode == 1, campaign.stdout + campaign.stderr
    assert f"PASS  {good}  1 file checked" in campaign.stdout
    assert f"FAIL  {bad}  manifest" in campaign.stdout
    assert not [raw for raw in RAW if raw in campaign.stdout + campaign.stderr]
    assert sandbox.requests() == []


def test_a_manifest_that_cannot_be_read_or_is_missing_is_one_line(
    sandbox: SandboxServer, tmp_path: Path
) -> None:
    missing = one_error(verify("--manifest", tmp_path / "missing.json"), "docsign verify: error: manifest ")
    assert "the file does not exist" in missing
    # /proc/self/mem is a regular file whose first read fails (EIO), even for root.
    unreadable = one_error(verify("--manifest", "/proc/self/mem"), "docsign verify: error: manifest ")
    assert "it cannot be read (Input/output error)" in unreadable
    assert sandbox.requests() == []


# -- validation times -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("yesterday", "is not an ISO 8601 date and time"),
        ("now", "is not an ISO 8601 date and time"),
        ("", "an empty time"),
        ("   ", "an empty time"),
        ("1717200000", "is not an ISO 8601 date and time"),
        ("1e9", "is not an ISO 8601 date and time"),
        ("2031-06-01", "is a date without a time"),
        ("2031-06-01T00:00:00", "has no time zone"),
        ("2031-13-01T00:00:00Z", "is not an ISO 8601 date and time"),
        ("2031-06-31T00:00:00Z", "is not an ISO 8601 date and time"),
        ("2031-06-01T24:30:00Z", "is not an ISO 8601 date and time"),
        ("2031-06-01T00:00:00+25:00", "is not an ISO 8601 date and time"),
        ("\u0662\u0660\u0663\u0661-06-01T00:00:00Z", "is not an ISO 8601 date and time"),  # Arabic-Indic
        ("0001-01-01T00:00:00+01:00", "is out of range: give a moment between 1970 and 9998"),
        ("9999-12-31T23:59:59Z", "is out of range: give a moment between 1970 and 9998"),
        ("1969-12-31T23:59:59Z", "is out of range"),
        ("2" * 5000, "is not an ISO 8601 date and time"),
    ],
)
def test_a_validation_time_in_an_odd_format_is_one_line_saying_what_to_write(
    given: str, reason: str, sandbox: SandboxServer
) -> None:
    line = one_error(
        verify("--validation-time", given, SEALED), "docsign verify: error: argument --validation-time: "
    )
    assert reason in line
    assert "e.g. 2031-06-01T12:00:00Z" in line or "out of range" in line
    assert len(line) < 400  # a 5,000-character value is quoted cut short
    assert sandbox.requests() == []


@pytest.mark.parametrize(
    "given",
    [
        "{day}T{time}Z",
        "{day}T{time}z",
        "{day} {time}+00:00",
        "{compact}Z",
        "{day}t{time}Z",
        "{day}T{time}+02:00",
    ],
)
def test_odd_but_valid_validation_times_are_taken(given: str) -> None:
    moment = datetime.datetime.now(UTC) - datetime.timedelta(minutes=1)
    text = given.format(
        day=moment.strftime("%Y-%m-%d"),
        time=moment.strftime("%H:%M:%S"),
        compact=moment.strftime("%Y%m%dT%H%M%S"),
    )
    done = verify("--validation-time", text, SEALED, "--json")
    assert done.returncode in (0, 1), done.stderr  # judged (the recorded seal's verdict), not refused
    (result,) = json.loads(done.stdout)
    assert result["file"] == str(SEALED)
    assert "error" not in done.stderr


def test_a_valid_file_with_a_name_that_is_not_utf8_is_verified(tmp_path: Path) -> None:
    name = os.fsencode(tmp_path) + b"/\xff\xfe-contract.pdf"
    with open(name, "wb") as fh:
        fh.write(SEALED.read_bytes())
    done = subprocess.run(
        [os.fsencode(DOCSIGN), b"verify", name], capture_output=True, timeout=300, check=False
    )
    assert done.returncode in (0, 1), done.stderr  # verified like any file (the seal's own verdict)
    assert done.stderr == b""
    assert b"\\udcff\\udcfe-contract.pdf" in done.stdout  # the bytes shown escaped, never raw
