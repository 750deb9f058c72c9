"""Reconcile (issue 21): what one ``docsign_reconcile`` run asks of the service, counted at the sandbox.

The DAG's own ``find_unarchived`` task (the callable in ``dags_examples/docsign_reconcile.py``) runs
against a sandbox on 127.0.0.1 holding COMPLETED envelopes at the root and in folders:

1. **First run** (no successful run before: the window is ``lookback_days``): every COMPLETED envelope
   of every folder is listed, newest created first, 100 per request, plus one request for the folders.
2. **Hourly run** (a successful run before): the listing of each folder stops at the first envelope
   created before ``window start - lookback_days``. Here the window is moved so that only the envelopes
   created after a mark count; the older ones cost at most the page that reaches them.

Requests are counted at the sandbox (``SandboxServer.requests()``) and compared with the model that
``docs/benchmarks.md``'s requests-per-month table uses:
``ceil(folders / 100) + sum over the root and each folder of max(1, ceil(listed / 100))``, where an
hourly run's ``listed`` counts the envelopes created within ``lookback_days`` of its window.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import docsign_conn_json, sandbox, setup_airflow_env, temp_dir, write_result
from _limits import Deadline

setup_airflow_env()

ROOT = Path(__file__).resolve().parents[1]
ROOT_ENVELOPES = 230  # three pages at the root
FOLDERS = {"Contracts A": 40, "Contracts B": 0}  # one page each (an empty folder still costs one)
NEW_AT_ROOT = 50  # created after the mark: what an hourly run's window holds
CREATE_BUDGET = 300.0


def load_find_unarchived() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_reconcile_dag", ROOT / "dags_examples" / "docsign_reconcile.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag.get_task("find_unarchived").python_callable


def complete(sb: Any, hook: Any, pdf: Path, count: int, folder_id: str | None) -> list[str]:
    """``count`` envelopes with one signer, sent; the sandbox's signers complete them."""
    from airflow_provider_docsign.hooks.docsign import DocsignHook

    assert isinstance(hook, DocsignHook)
    ids = []
    deadline = Deadline(CREATE_BUDGET)
    signer = {
        "email": "signer@example.test",
        "name": "Signer",
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
    for i in range(count):
        assert not deadline.expired(), f"creating the envelopes took over {deadline.describe()}"
        envelope_id = hook.create_envelope(
            title=f"Bench {i}", files=[pdf], recipients=[signer], folder_id=folder_id
        )
        hook.distribute_envelope(envelope_id)
        ids.append(envelope_id)
    for envelope_id in ids:
        sb.wait_status(envelope_id, "COMPLETED", timeout=120)
    return ids


def counted(sb: Any, find: Any, archive: Path, **context: Any) -> tuple[int, int]:
    """Run ``find_unarchived`` once; return (requests at the sandbox, envelopes it returned)."""
    params = {
        "archive_dir": str(archive),
        "work_dir": str(archive),
        "max_per_run": 10_000,
        "overlap_minutes": 60,
        "lookback_days": 30,
    }
    sb.clear_requests()
    found = find(params=params, **context)
    return len(sb.requests()), len(found)


def model(folders: int, listed: list[int]) -> int:
    return math.ceil(max(folders, 1) / 100) + sum(max(1, math.ceil(n / 100)) for n in listed)


def main() -> None:
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.samples import write_sample_pdf

    with temp_dir("docsign-bench-reconcile-") as tmp, sandbox(auto_sign_after=0.2) as sb:
        os.environ["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = docsign_conn_json(sb.base_url)
        pdf = tmp / "one-page.pdf"
        write_sample_pdf(pdf, title="Bench", pages=1)
        find = load_find_unarchived()
        hook = DocsignHook()
        complete(sb, hook, pdf, ROOT_ENVELOPES, None)
        for name, count in FOLDERS.items():
            complete(sb, hook, pdf, count, hook.create_folder(name).id)
        time.sleep(1.1)  # the sandbox's timestamps have second resolution at worst
        mark = datetime.now(timezone.utc)
        time.sleep(1.1)
        complete(sb, hook, pdf, NEW_AT_ROOT, None)

        first_requests, first_found = counted(sb, find, tmp / "archive")
        first_listed = [ROOT_ENVELOPES + NEW_AT_ROOT, *FOLDERS.values()]
        # An hourly run whose window (minus lookback_days) starts at the mark: as if the older
        # envelopes had been created more than lookback_days before the window.
        last_success = mark + timedelta(days=30, minutes=60)
        hourly_requests, hourly_found = counted(
            sb,
            find,
            tmp / "archive",
            prev_data_interval_end_success=last_success,
            data_interval_start=last_success,
        )
        hourly_listed = [NEW_AT_ROOT, 0, 0]

    folders = len(FOLDERS)
    rows = [
        [
            "first run (lookback)",
            folders + 1,
            sum(first_listed),
            first_requests,
            model(folders, first_listed),
            first_found,
        ],
        [
            "hourly run (window)",
            folders + 1,
            NEW_AT_ROOT,
            hourly_requests,
            model(folders, hourly_listed),
            hourly_found,
        ],
    ]
    write_result(
        "reconcile",
        title="docsign_reconcile: requests per run, counted at the sandbox",
        columns=[
            "run",
            "folders (root included)",
            "envelopes in window",
            "requests (measured)",
            "requests (model)",
            "returned to archive",
        ],
        rows=rows,
        notes=[
            "model = ceil(folders/100) + sum over root and folders of max(1, ceil(listed/100)); "
            "in the hourly run the envelopes created before the window's lookback cost at most the "
            "page that reaches them (here the root's only page also holds them).",
            "The hourly run's window lies in the future of the envelopes' completion, so it returns "
            "none: only its requests matter here.",
        ],
        extra={
            "first_run": {"requests": first_requests, "listed": first_listed},
            "hourly_run": {"requests": hourly_requests, "listed": hourly_listed},
        },
    )
    assert first_requests == model(folders, first_listed), rows
    assert hourly_requests == model(folders, hourly_listed), rows


if __name__ == "__main__":
    main()
