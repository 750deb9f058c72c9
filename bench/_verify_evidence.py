"""Evidence that lasts (issue 31): ``bench_verify.py --evidence``, the timestamp's cost against the seal's.

Its own table (``verify_timestamp`` in ``bench/run_all.py``): a timestamped, LTV archive's pieces,
each verified against one seal alone, interleaved in one process.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Any

from _common import MB, docsign_conn_json, make_pdfs, sandbox, setup_airflow_env, temp_dir, write_result

EVIDENCE_SIZES = [1, 1, 1]  # MB: a typical contract envelope
EVIDENCE_REPS = 40


def _interleaved(fns: dict[str, Any], reps: int) -> dict[str, list[float]]:
    """Wall times (ms) of each of ``fns``, called in turn ``reps`` times after one warm-up call each.

    Interleaving puts every function under the same moments of the machine's load (it is shared), so
    the per-round ratios compare like with like.
    """
    for fn in fns.values():
        fn()
    walls: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            walls[name].append((time.perf_counter() - start) * 1000)
    return walls


def measure_evidence() -> None:
    """Verify a timestamped archive's pieces, each against verifying one seal alone, in one process.

    An envelope of 3 x 1 MB PDFs is archived by the operator with the sandbox as TSA and ``ltv=True``;
    then, in this process and after a warm-up each: ``verify_pdf_signatures`` of one sealed PDF (the
    baseline), ``verify_timestamp`` of the manifest's token over ``manifest.json`` (pinned TSA),
    ``verify_ltv`` of the same PDF's long-term validation copy, and the seal check of all 3 PDFs plus
    the token (what ``docsign verify --manifest`` adds the token to).
    """
    from airflow_provider_docsign.evidence.ltv import verify_ltv
    from airflow_provider_docsign.evidence.signatures import TrustPolicy, verify_pdf_signatures
    from airflow_provider_docsign.evidence.timestamps import verify_timestamp
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator

    setup_airflow_env()
    with temp_dir("docsign-bench-evidence-", tmpfs=True) as tmp, sandbox(max_file_mb=50) as sb:
        os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(sb.base_url)
        tsa_pem = sb.tsa_certificate_pem()
        os.environ["AIRFLOW_CONN_TSA_BENCH"] = json.dumps(
            {"conn_type": "http", "host": sb.tsa_url, "extra": {"trusted_certificates": tsa_pem.decode()}}
        )
        hook = DocsignHook()
        field = {"identifier": 0, "type": "SIGNATURE", "page": 1, "positionX": 10, "positionY": 80}
        field.update({"width": 30, "height": 8})
        recipient = {"email": "bench@example.test", "name": "Bench", "role": "SIGNER", "fields": [field]}
        files = make_pdfs(tmp, EVIDENCE_SIZES, prefix="evidence")
        envelope_id = hook.create_envelope(title="bench evidence", files=files, recipients=[recipient])
        hook.distribute_envelope(envelope_id)
        sb.complete(envelope_id)
        sb.wait_status(envelope_id, "COMPLETED", timeout=120)
        archive = tmp / "archive"
        manifest = DocsignArchiveSignedDocumentsOperator(
            task_id="archive",
            envelope_id=envelope_id,
            destination=str(archive),
            tsa_conn_id="tsa_bench",
            ltv=True,
        ).execute({})  # type: ignore[arg-type]
        folder = archive / envelope_id
        body = (folder / "manifest.json").read_bytes()
        token = (folder / "manifest.json.tsr").read_bytes()
        first = manifest["files"][0]
        pdf, ltv_pdf = folder / first["path"], folder / first["ltv"]["path"]
        seal_trust = TrustPolicy.build(pem=[sb.certificate_pem()])
        tsa_trust = TrustPolicy.build(pem=[tsa_pem])
        pdfs = [folder / f["path"] for f in manifest["files"]]

        def seal() -> None:
            assert verify_pdf_signatures(pdf, trust=seal_trust).passed

        def stamp() -> None:
            assert verify_timestamp(token, body, trust=tsa_trust).passed

        def ltv() -> None:
            assert verify_ltv(ltv_pdf, trust=seal_trust, tsa_trust=tsa_trust).passed

        def envelope_seals() -> None:
            for path in pdfs:
                assert verify_pdf_signatures(path, trust=seal_trust).passed

        def envelope_seals_and_token() -> None:
            envelope_seals()
            stamp()

        walls = _interleaved(
            {
                "seal": seal,
                "token": stamp,
                "ltv": ltv,
                "envelope": envelope_seals,
                "envelope_token": envelope_seals_and_token,
            },
            EVIDENCE_REPS,
        )
        sizes = {
            "pdf": pdf.stat().st_size,
            "ltv": ltv_pdf.stat().st_size,
            "manifest": len(body),
            "token": len(token),
        }

    def ratio(name: str, base: str = "seal") -> float:
        """The median over rounds of this round's time over the baseline's in the same round."""
        return statistics.median(a / b for a, b in zip(walls[name], walls[base], strict=True))

    def row(label: str, name: str) -> list[Any]:
        return [label, EVIDENCE_REPS, statistics.median(walls[name]), min(walls[name]), ratio(name)]

    rows = [
        row(f"verify_pdf_signatures, one sealed PDF ({sizes['pdf'] / MB:.1f} MB, baseline)", "seal"),
        row(
            f"verify_timestamp, the manifest's token ({sizes['token']} B over {sizes['manifest']} B)", "token"
        ),
        row(f"verify_ltv, the same PDF's .ltv.pdf ({sizes['ltv'] / MB:.1f} MB)", "ltv"),
        row("the envelope's 3 seals", "envelope"),
        row("the envelope's 3 seals + the manifest's token", "envelope_token"),
    ]
    token_ratio = ratio("token")
    added = ratio("envelope_token", "envelope") - 1
    write_result(
        "verify_timestamp",
        title="Evidence that lasts: the manifest's timestamp and an LTV copy vs one seal (same process)",
        columns=["operation", "runs", "median wall ms", "min wall ms", "ratio to one seal"],
        rows=rows,
        targets=[
            {
                "what": "verifying the manifest's token vs verifying one seal",
                "target": "reported",
                "measured": f"{token_ratio:.2f}x",
                "met": True,
            },
            {
                "what": "what the token adds to auditing the envelope's seals",
                "target": "reported",
                "measured": f"+{added * 100:.0f}%",
                "met": True,
            },
        ],
        notes=[
            "The archive was made by the operator with the sandbox as TSA and ltv=True; both the seal "
            "and the TSA certificate are pinned, so every check includes pyHanko's certificate-path "
            "validation. The calls are interleaved (each operation once per round, 40 rounds, after a "
            "warm-up call each) in one process; a ratio is the median over rounds of the operation's "
            "time over the baseline's in the same round.",
            "The token check hashes the manifest (a few KB) and validates one CMS signature and one "
            "certificate path; the seal check parses the PDF's structure and hashes its /ByteRange, "
            "so the ratio falls as PDFs grow. verify_ltv checks the document timestamp, the diff after "
            "the seal, then the seal as of the timestamp's time.",
        ],
        extra={"walls_ms": walls, "sizes": sizes},
    )
