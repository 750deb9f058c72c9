"""``make demo``: run the contract-signing example end to end against the local sandbox.

1. start the bundled sandbox (state under ``.demo/sandbox``) with signers that sign automatically a
   few seconds after the envelope is sent;
2. prepare an Airflow home under ``.demo/airflow-home`` (SQLite, no example DAGs, the DAGs folder
   ``dags_examples/``) and store, in its metadata database with ``airflow connections import`` as a
   team stores its own (no ``AIRFLOW_CONN_*`` variable), a ``docsign_default`` connection pointing at
   the sandbox, pinning the
   sandbox's sealing certificate (fetched from ``GET /_sandbox/certificate``) by its fingerprint and
   naming the sandbox's RFC 3161 timestamp authority (``tsa_sandbox``, its certificate pinned) in
   its ``tsa_conn_id`` extra, so the archive timestamps its manifest;
3. run ``airflow dags test docsign_contract_signing`` (a real DAG run, in one process);
4. print the run state, the archive folder, the archived files with their sha256, for each PDF
   its signer certificate's CN and what its digital signature proves, and the manifest's timestamp
   token (verified here again: TSA, genTime);
5. stop the sandbox, even on failure.

Every run gets its own run id (and so its own externalId and archive folder), so it can be run any
number of times. Exit status 0 only when the DAG run succeeded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / ".demo"
AIRFLOW_HOME = DEMO / "airflow-home"
ARCHIVE_DIR = DEMO / "archive"
WORK_DIR = DEMO / "work"
LOG_FILE = DEMO / "last-run.log"
DAG_ID = "docsign_contract_signing"
TSA_CONN_ID = "tsa_sandbox"
API_KEY = "api_demo_sandbox_key_0001"
AUTO_SIGN_AFTER = 4.0
POKE_INTERVAL = 2
AIRFLOW = [sys.executable, "-m", "airflow"]
# Bounds for every subprocess: nothing in the demo can hang forever.
MIGRATE_TIMEOUT = 600
RUN_TIMEOUT = 600
# Before anything imports airflow: on import Airflow creates $AIRFLOW_HOME/logs, by default under
# ~/airflow. This process imports it too, when it checks the archived PDFs' signatures
# (verify_pdf_signatures opens sources through ObjectStoragePath); the demo writes nothing outside .demo/.
os.environ["AIRFLOW_HOME"] = str(AIRFLOW_HOME)


def airflow_env() -> dict[str, str]:
    """The environment of every Airflow command of the demo: its own home, and no ``AIRFLOW_CONN_*``.

    The connections live in the demo's metadata database, where most teams keep theirs (see
    :func:`connections`); an ``AIRFLOW_CONN_*`` variable from the caller's shell is not passed on.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
    env.update(
        {
            "AIRFLOW_HOME": str(AIRFLOW_HOME),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags_examples"),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_HOME / 'airflow.db'}",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "DOCSIGN_EXAMPLE_ARCHIVE_DIR": str(ARCHIVE_DIR),
            "DOCSIGN_EXAMPLE_WORK_DIR": str(WORK_DIR),
            "DOCSIGN_EXAMPLE_POKE_INTERVAL": str(POKE_INTERVAL),
        }
    )
    return env


def connections(
    base_url: str, api_key: str, fingerprints: list[str], tsa: tuple[str, str]
) -> dict[str, dict[str, Any]]:
    """The demo's connections, in the form ``airflow connections import`` reads.

    :param fingerprints: SHA-256 fingerprints of the sealing certificate to pin in the connection.
    :param tsa: ``(url, certificate PEM)`` of the timestamp authority, named by the docsign connection.
    """
    url, pem = tsa
    extra = {
        "timeout": 10,
        "max_retries": 3,
        "backoff_factor": 0.2,
        "signing_certificate_fingerprints": fingerprints,
        "tsa_conn_id": TSA_CONN_ID,
    }
    return {
        "docsign_default": {
            "conn_type": "docsign",
            "host": base_url,
            "password": api_key,
            "extra": json.dumps(extra),
        },
        TSA_CONN_ID: {
            "conn_type": "http",
            "host": url,
            "extra": json.dumps({"trusted_certificates": pem, "timeout": 10}),
        },
    }


def store_connections(conns: dict[str, dict[str, Any]], env: dict[str, str]) -> None:
    """Store ``conns`` in the demo's metadata database with ``airflow connections import``.

    The file holding the API key is readable by its owner only and removed at once, also on failure.
    """
    path = DEMO / "connections.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(conns, out)
        subprocess.run(
            [*AIRFLOW, "connections", "import", "--overwrite", str(path)],
            env=env,
            check=True,
            capture_output=True,
            timeout=MIGRATE_TIMEOUT,
        )
    finally:
        path.unlink(missing_ok=True)


def find_manifest(run_id: str | None, started: float) -> tuple[Path, dict[str, Any]] | None:
    """The manifest written by this run (matched by run id in the externalId, else by time)."""
    candidates: list[tuple[float, Path, dict[str, Any]]] = []
    for path in ARCHIVE_DIR.rglob("manifest.json"):
        if path.stat().st_mtime < started:
            continue
        manifest = json.loads(path.read_text())
        if run_id and run_id not in str(manifest.get("external_id") or manifest.get("externalId") or ""):
            continue
        candidates.append((path.stat().st_mtime, path, manifest))
    if not candidates:
        return None
    _, path, manifest = max(candidates, key=lambda c: c[0])
    return path, manifest


def latest_run() -> dict[str, Any] | None:
    """The newest run of the DAG, read from the demo's SQLite metadata database."""
    with contextlib.closing(sqlite3.connect(AIRFLOW_HOME / "airflow.db")) as db:
        row = db.execute(
            "SELECT run_id, state FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", (DAG_ID,)
        ).fetchone()
    return {"run_id": row[0], "state": row[1]} if row else None


def print_manifest(path: Path, manifest: dict[str, Any], signed_sha256: dict[str, str]) -> bool:
    """Print the archived files and their checksums; return whether each matches the service's bytes.

    :param signed_sha256: ``{item_id: sha256}`` of the signed PDFs as the sandbox serves them.
    """
    print(f"[demo] archive   : {path.parent}")
    print(f"[demo] manifest  : {path}")
    ok = True
    entries = list(manifest.get("files") or [])
    for extra in ("audit_log", "certificate"):
        if isinstance(manifest.get(extra), dict):
            entries.append(manifest[extra])
    for entry in entries:
        local = Path(str(entry.get("uri") or "").removeprefix("file://"))
        on_disk = hashlib.sha256(local.read_bytes()).hexdigest() if local.is_file() else None
        verdict = "file ok" if on_disk == entry.get("sha256") else "FILE MISMATCH"
        if "item_id" in entry:
            same = signed_sha256.get(entry["item_id"]) == entry.get("sha256")
            verdict += ", = signed bytes" if same else ", != SIGNED BYTES"
            ok = ok and same
        ok = ok and on_disk == entry.get("sha256")
        print(f"  {entry.get('sha256')}  {int(entry.get('size') or 0):>7} B  {local.name}  ({verdict})")
        if "item_id" in entry:
            line, proven = signature_line(local)
            ok = ok and proven
            print(f"      {line}")
    return ok


def timestamp_line(path: Path, tsa_pem: bytes) -> tuple[str, bool]:
    """The manifest's RFC 3161 token, verified again here against the manifest and the TSA's certificate."""
    from airflow_provider_docsign.evidence.signatures import TrustPolicy
    from airflow_provider_docsign.evidence.timestamps import TimestampError, verify_timestamp

    token = path.with_name(path.name + ".tsr")
    if not token.is_file():
        return f"NO TOKEN beside {path.name}", False
    try:
        report = verify_timestamp(
            token.read_bytes(), path.read_bytes(), trust=TrustPolicy.build(pem=[tsa_pem])
        )
    except TimestampError as err:
        return f"{token.name}: UNREADABLE TOKEN ({err})", False
    if not report.passed:
        return f"{token.name}: TOKEN FAILED ({'; '.join(report.problems)})", False
    cn = str(report.tsa).rsplit("Common Name: ", 1)[-1]
    return f"{token.name} by {cn!r}, genTime {report.gen_time} (verified over {path.name})", True


def signature_line(path: Path) -> tuple[str, bool]:
    """What the PDF's digital signature proves, verified again here (independently of the DAG run)."""
    from airflow_provider_docsign.evidence.signatures import verify_pdf_signatures

    report = verify_pdf_signatures(path)
    if not report.signed:
        return "NO DIGITAL SIGNATURE", False
    parts = []
    for check in report.signatures:
        cn = check.signer.common_name if check.signer else "?"
        whole = check.coverage == "entire_file"
        if check.intact and check.valid and whole:
            parts.append(f"signer CN={cn!r}: signature intact, covers the whole document")
        else:
            why = "; ".join(check.problems) or f"coverage {check.coverage}"
            parts.append(f"signer CN={cn!r}: SIGNATURE FAILED ({why})")
    return "; ".join(parts), report.passed and all(c.coverage == "entire_file" for c in report.signatures)


def main() -> int:
    """Run the demo and return the process exit status."""
    from airflow_provider_docsign.sandbox import SandboxServer

    for folder in (AIRFLOW_HOME, ARCHIVE_DIR, WORK_DIR, DEMO / "sandbox"):
        folder.mkdir(parents=True, exist_ok=True)
    started = time.time()
    print(f"[demo] starting the sandbox (signers sign {AUTO_SIGN_AFTER:.0f}s after sending)")
    with SandboxServer(DEMO / "sandbox", api_key=API_KEY, auto_sign_after=AUTO_SIGN_AFTER) as sandbox:
        print(f"[demo] sandbox at {sandbox.base_url} (pid {sandbox.pid})")
        from airflow_provider_docsign.evidence.signatures import certificate_fingerprints

        pinned = certificate_fingerprints(sandbox.certificate_pem())
        print(f"[demo] pinning the sandbox's sealing certificate, sha256 {pinned[0]}")
        tsa_pem = sandbox.tsa_certificate_pem()
        print(f"[demo] timestamp authority {sandbox.tsa_url} (its certificate pinned in {TSA_CONN_ID})")
        env = airflow_env()
        print(f"[demo] preparing AIRFLOW_HOME={AIRFLOW_HOME} (SQLite)")
        subprocess.run(
            [*AIRFLOW, "db", "migrate"], env=env, check=True, capture_output=True, timeout=MIGRATE_TIMEOUT
        )
        print(f"[demo] storing docsign_default and {TSA_CONN_ID} with `airflow connections import`")
        tsa = (sandbox.tsa_url, tsa_pem.decode("ascii"))
        store_connections(connections(sandbox.base_url, sandbox.api_key, pinned, tsa), env)
        print(f"[demo] running `airflow dags test {DAG_ID}` (log: {LOG_FILE})")
        with open(LOG_FILE, "wb") as log:
            proc = subprocess.run(
                [*AIRFLOW, "dags", "test", DAG_ID],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=RUN_TIMEOUT,
                check=False,
            )
        run = latest_run()
        run_id = str(run["run_id"]) if run else None
        found = find_manifest(run_id, started)
        # What the service serves as the signed PDFs, to check the archive against.
        signed = {
            entry["item_id"]: hashlib.sha256(sandbox.item_bytes(entry["item_id"], "signed")).hexdigest()
            for entry in (found[1].get("files") or [] if found else [])
        }
    # The sandbox is stopped here (also when anything above raised).
    state = str(run["state"]) if run else "unknown"
    print(f"[demo] run id    : {run_id}")
    print(f"[demo] run state : {state}")
    verified = print_manifest(*found, signed) if found else False
    if found:
        line, stamped = timestamp_line(found[0], tsa_pem)
        print(f"[demo] timestamp : {line}")
        verified = verified and stamped
    if not found:
        print(f"[demo] no manifest from this run under {ARCHIVE_DIR}")
    if state != "success" or proc.returncode != 0 or not verified:
        tail = LOG_FILE.read_text(errors="replace").splitlines()[-40:]
        print("[demo] the run did not succeed; the end of its log:\n" + "\n".join(tail))
        return 1
    print(
        "[demo] success: every archived PDF matches the signed bytes the service serves and carries an "
        "intact, valid seal over the whole document; the manifest's timestamp proves they existed by genTime"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
