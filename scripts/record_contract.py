"""Record the real service's answers to every operation the hook calls, for the contract tests.

Usage (from the repository root, with the project's virtualenv)::

    export DOCSIGN_SYSTEM_URL=http://localhost:3000/api/v2 DOCSIGN_SYSTEM_API_KEY=api_...
    export DOCSIGN_SYSTEM_DATABASE_URL=postgresql://documenso@127.0.0.1:54320/documenso  # optional
    python scripts/record_contract.py [--out DIR]

For each of the hook's operations (the builders of ``airflow_provider_docsign/hooks/_endpoints.py``) the
script sends the request the hook sends, built by the same builder, with the same headers and the same
multipart encoder, to a real Documenso instance, and writes one recording per outcome to
``tests/contract/data/documenso-2.17/recorded/ops/<operation>.<family>.<status>.json``: ``success``; an
id the instance does not have (``unknown-id``); a request it refuses (``bad-payload``, ``bad-state``); a
wrong or missing key (``wrong-key``, ``no-key``, at least once per kind of request: JSON read, JSON write,
multipart upload, download); and, with ``DOCSIGN_SYSTEM_DATABASE_URL``, ``rate-limited``: the
organisation's ``"OrganisationClaim"."apiRateLimits"`` is set to one request per 10 s for four requests
and **always** restored. Documenso v2.17 answers no route the hook calls with 403 (its only ``FORBIDDEN``
is a licence check of CSC signing), so there is no 403 recording.

Each file holds the method, the OpenAPI path template, the path sent, ``refs`` (which recorded ids are
which object of which state, e.g. ``"draft.envelope"``, so the replay can use its own), the request
(query, JSON body, or multipart parts by name, file name, size and page count; the key only as
``api-key``/``wrong-key``/``no-key``), the status, the headers the hook reads and the body (a PDF only
by its size). Recipient tokens, signing URLs, the API key, the API user's e-mail and name, IP addresses
and user agents are replaced by stable stand-ins; addresses the script made up (``signerN@example.com``)
stay; ids stay.

Everything is made in two folders of the run's own (documents, and one template, which a document
folder may not hold) and deleted at the end, also when a step fails (only the copy ``duplicate`` makes
lands at the root, as the service puts it there, and is deleted at once); the run is bounded in requests
(400) and in time (every wait has a limit). Recordings are written only after a complete run, replacing
the folder's ``*.json``, so a failed run leaves the committed ones as they were. Run it again at will.
Requests go to the URL given only; nothing else on the instance is touched.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from record_contract_cases import (  # noqa: E402
    Scenario,
    record_envelopes,
    record_folders,
    record_parts,
)
from record_contract_flows import (  # noqa: E402
    clean_up,
    record_lifecycle,
    record_malformed,
    record_rate_limit,
    record_templates,
)
from record_contract_io import Recorder  # noqa: E402

ROOT = Path(HERE).parent
OUT_DIR = ROOT / "tests" / "contract" / "data" / "documenso-2.17" / "recorded" / "ops"


def main(argv: list[str] | None = None) -> int:
    """Record, clean up, write; exit status 0 only when every step worked and nothing was left behind."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help=f"where to write (default: {OUT_DIR})")
    args = parser.parse_args(argv)
    url, key = os.environ.get("DOCSIGN_SYSTEM_URL"), os.environ.get("DOCSIGN_SYSTEM_API_KEY")
    if not url or not key:
        print("set DOCSIGN_SYSTEM_URL (…/api/v2) and DOCSIGN_SYSTEM_API_KEY", file=sys.stderr)
        return 2
    database_url = os.environ.get("DOCSIGN_SYSTEM_DATABASE_URL")
    started = time.monotonic()
    prefix = f"contract-rec-{uuid.uuid4().hex[:10]}"
    rec = Recorder(url, key, prefix)
    failures: list[str] = []
    limited: list[str] = []
    print(f"recording {url} (run {prefix})", flush=True)
    with tempfile.TemporaryDirectory(prefix="docsign-record-") as work:
        s = Scenario(rec, Path(work), prefix)
        try:
            record_folders(s)
            draft = s.new_state("draft", record=True)
            spare = s.new_state("draft", name="spare")
            record_envelopes(s, draft)
            record_parts(s, draft, spare)
            record_lifecycle(s, draft)
            record_templates(s)
            record_malformed(s, draft)
            if database_url:
                limited = record_rate_limit(s, draft, database_url)
            else:
                print("  (no DOCSIGN_SYSTEM_DATABASE_URL: no 429 recorded)", flush=True)
        except BaseException as exc:
            failures.append(f"recording stopped: {type(exc).__name__}: {exc}")
        finally:
            failures += clean_up(s)
            rec.close()
    if failures:
        print("FAILED, nothing written:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    written = rec.write(args.out, keep=() if limited else ("rate-limited",))
    operations = sorted({r.operation for r in rec.recordings.values()})
    print(
        f"wrote {len(written)} recordings of {len(operations)} operations to {args.out} "
        f"({rec.sent} requests, {time.monotonic() - started:.0f} s; 429 on: {', '.join(limited) or 'none'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
