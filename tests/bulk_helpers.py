"""Bulk campaigns in tests: a template, rows, a CSV, the result table, and counts at the sandbox."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx
from template_helpers import field

from airflow_provider_docsign.bulk.state import STOPPED_XCOM_KEY
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators._bulk import BulkStopped
from airflow_provider_docsign.operators.bulk import DocsignBulkSendOperator
from airflow_provider_docsign.sandbox import SandboxServer


def make_template(hook: DocsignHook, pdf: Path) -> str:
    """A one-signer template: a ``company`` text field to prefill and a signature."""
    return hook.create_template(
        title="Renewal template",
        files=[pdf],
        recipients=[
            {
                "email": "customer@placeholder.test",
                "name": "Customer",
                "role": "SIGNER",
                "fields": [field("TEXT", 1, 10, "company"), field("SIGNATURE", 1, 80)],
            }
        ],
    )


def customers(count: int, prefix: str = "C") -> list[dict[str, Any]]:
    """``count`` valid rows with keys ``<prefix>-0000``..."""
    return [
        {
            "row_key": f"{prefix}-{i:04d}",
            "email": f"c{i}@example.test",
            "name": f"Customer {i}",
            "company": f"Co {i}",
        }
        for i in range(count)
    ]


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    """The rows as a CSV file (header from the first row)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def read_table(path: Path) -> list[dict[str, Any]]:
    """A JSON Lines result table."""
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def operator(template_id: str, rows: Any, result: Path | str, **kwargs: Any) -> DocsignBulkSendOperator:
    """The guide's template campaign."""
    kwargs.setdefault("campaign_id", "hostile")
    kwargs.setdefault("task_id", "bulk")
    return DocsignBulkSendOperator(
        rows=rows,
        result_table=str(result),
        template_id=template_id,
        recipients=[{"placeholder": "Customer", "email": "{email}", "name": "{name}"}],
        prefill_fields={"company": "{company}"},
        title="Renewal for {name}",
        **kwargs,
    )


def campaign_counts(hook: DocsignHook, campaign_id: str, folder_id: str | None = None) -> Counter[str]:
    """Envelopes per externalId of the campaign, counted at the sandbox (exact prefix match)."""
    prefix = f"{campaign_id}("
    return Counter(
        e.external_id or ""
        for e in hook.find_envelopes(query=prefix, folder_id=folder_id)
        if (e.external_id or "").startswith(prefix)
    )


def writes(sandbox: SandboxServer) -> list[tuple[str, str]]:
    """Every write request the sandbox received since it was last cleared."""
    return [
        (r["method"], r["path"])
        for r in sandbox.requests()
        if r["method"] in ("POST", "PATCH", "PUT", "DELETE")
    ]


def stopped_campaign(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], result: Path
) -> dict[str, Any]:
    """A 30-row campaign stopped for real past ``max_failures=2`` (three creations refused with a 400).

    Its first 10 rows were sent by an earlier run (another result table, finished); this try adopts
    them from the service, then the next three creations are refused and it stops: 10 sent, 3 failed.
    Returns what the stopped try pushed (``STOPPED_XCOM_KEY``). The 11th row's key is an e-mail.
    """
    template_id = make_template(hook, make_pdf("template.pdf"))
    rows = customers(30)
    rows[10]["row_key"] = "careless.owner@customer.example"  # a key that is an e-mail: masked on the page

    def operator(some: list[dict[str, Any]], table: Path) -> DocsignBulkSendOperator:
        return DocsignBulkSendOperator(
            task_id="bulk",
            rows=some,
            result_table=str(table),
            template_id=template_id,
            recipients=[{"placeholder": "Customer", "email": "{email}", "name": "{name}"}],
            title="Renewal for {name}",
            campaign_id="renewals-stopped",
            max_failures=2,
            max_in_flight=1,
        )

    assert operator(rows[:10], result.parent / "first" / result.name).execute(ctx())["counts"]["sent"] == 10
    sandbox.inject_fault("POST", "/envelope/use", "status", status=400, count=3)
    context = ctx()
    with pytest.raises(BulkStopped, match="max_failures=2"):
        operator(rows, result).execute(context)
    assert not result.exists()  # a stopped try writes no result table
    pushed: dict[str, Any] = context["ti"].pushed[STOPPED_XCOM_KEY]
    return pushed


def use_lease_dir(monkeypatch: pytest.MonkeyPatch, folder: Path, sandbox: SandboxServer) -> Path:
    """Leases in ``folder``, a 0.2 s heartbeat and a 1 s read timeout: a stale period of 3.4 s."""
    from helpers import conn_json

    monkeypatch.setenv("AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_DIR", str(folder))
    monkeypatch.setenv("AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_HEARTBEAT", "0.2")
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_DEFAULT", conn_json(sandbox, timeout=[5, 1]))
    return folder


def lease_path(folder: Path, sandbox: SandboxServer, campaign: str) -> Path:
    """The lease file of ``campaign`` at ``sandbox`` in the lease folder."""
    from airflow_provider_docsign.bulk.lease import lease_name
    from airflow_provider_docsign.bulk.store import service_identity

    return folder / lease_name(campaign, service_identity(sandbox.base_url))


class QuietLog:
    """A logger that keeps what it was told (a lease's warnings), for tests to read."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def warning(self, msg: str, *args: object) -> None:
        self.lines.append(msg % args)

    error = info = warning


@contextlib.contextmanager
def live_lease(folder: Path, sandbox: SandboxServer, campaign: str) -> Iterator[Any]:
    """Hold ``campaign``'s lease as a live try on another machine would (beating every 0.2 s)."""
    from airflow_provider_docsign.bulk.lease import CampaignLease
    from airflow_provider_docsign.bulk.store import service_identity

    other = CampaignLease(
        folder,
        campaign,
        describe="dag.send run r1 try 1",
        stale_after=3600,
        log=QuietLog(),
        service=service_identity(sandbox.base_url),
        beat=0.2,
    )
    other.acquire()
    try:
        yield other
    finally:
        other.release()


#: One try of a campaign in a process of its own (``run_tries_together``).
_TRY = """
import sys
sys.path[:0] = [{tests!r}, {hostile!r}]
from helpers import ctx
from bulk_helpers import operator
op = operator({template_id!r}, {rows!r}, {result!r}, campaign_id={campaign!r}, max_in_flight=4)
print("RESULT", op.execute(ctx()))
"""


def run_tries_together(
    tmp_path: Path, template_id: str, rows: Path, results: list[str], campaign: str
) -> list[tuple[int, str]]:
    """Start one try of ``campaign`` per result table at once, each in its own process (as two workers
    would); their exit codes and output. Every process is waited for, or killed, before returning."""
    tests = Path(__file__).resolve().parent
    procs = []
    try:
        for n, result in enumerate(results):
            script = tmp_path / f"try-{n}.py"
            values = {"tests": str(tests), "hostile": str(tests / "hostile"), "template_id": template_id}
            values.update(rows=str(rows), result=result, campaign=campaign)
            script.write_text(textwrap.dedent(_TRY).format(**values))
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(script)],
                    env=dict(os.environ),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                )
            )
        outputs = []
        for proc in procs:
            out, _ = proc.communicate(timeout=300)
            outputs.append((proc.returncode, out.decode(errors="replace")))
        return outputs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
