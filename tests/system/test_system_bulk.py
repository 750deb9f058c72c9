"""System tests: a bulk campaign against a real Documenso, tried the ways a campaign lives.

A campaign of 20 template rows and 5 PDF rows (keys that are substrings of each other, and of other
scripts) in the run's folder; then the same campaign with another result table, a resume with every
row in flight, an amendment, two tries at once with result tables in two run folders, and a table
with a repeated key run three times and once more without its checkpoint. After each, every row's
envelope is counted at the service by its externalId: exactly one each. Signers use ``example.com``
addresses.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx, sig
from template_helpers import field

from airflow_provider_docsign.bulk.lease import LeaseHeldError
from airflow_provider_docsign.bulk.store import CHECKPOINT_SUFFIX
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.bulk import DocsignBulkSendOperator

KEYS = ["1", "11", "111", "A-1", "a-1", "x y", "Ω", "Renée", "1)", "x(1)"]


@pytest.fixture(scope="module")
def template_id(system_hook: DocsignHook, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A one-signer template with a ``company`` text field, deleted after the module."""
    from airflow_provider_docsign.samples import write_sample_pdf

    pdf = write_sample_pdf(tmp_path_factory.mktemp("tpl") / "template.pdf", title="template")
    template = system_hook.create_template(
        title="docsign system bulk template",
        files=[pdf],
        recipients=[
            {
                "email": "customer@example.com",
                "name": "Customer",
                "role": "SIGNER",
                "fields": [field("TEXT", 1, 10, "company"), field("SIGNATURE", 1, 80)],
            }
        ],
    )
    try:
        yield template
    finally:
        system_hook.delete_envelope(template)  # a template is an envelope: hard-deleted


def rows(keys: list[str]) -> list[dict[str, Any]]:
    return [
        {"row_key": key, "email": f"bulk{i}@example.com", "name": f"Customer {i}", "company": f"Co {i}"}
        for i, key in enumerate(keys)
    ]


def template_send(
    template_id: str, campaign: str, folder_id: str, data: Any, result: Path, **kwargs: Any
) -> DocsignBulkSendOperator:
    return DocsignBulkSendOperator(
        task_id="bulk",
        docsign_conn_id="docsign_system",
        rows=data,
        result_table=str(result),
        campaign_id=campaign,
        folder_id=folder_id,
        template_id=template_id,
        recipients=[{"placeholder": "Customer", "email": "{email}", "name": "{name}"}],
        prefill_fields={"company": "{company}"},
        title="Bulk {name}",
        meta={"distributionMethod": "NONE"},
        **kwargs,
    )


def counts(hook: DocsignHook, campaign: str, folder_id: str) -> Counter[str]:
    prefix = f"{campaign}("
    return Counter(
        e.external_id or ""
        for e in hook.find_envelopes(query=prefix, folder_id=folder_id)
        if (e.external_id or "").startswith(prefix)
    )


def test_a_campaign_then_another_table_a_resume_in_flight_and_an_amendment_make_each_row_once(
    system_hook: DocsignHook, system_run: Any, template_id: str, pdf: Callable[..., Path], tmp_path: Path
) -> None:
    campaign = f"{system_run.prefix}-bulk"
    folder = system_run.folder_id
    keys = KEYS + [f"T-{i}" for i in range(10)]  # 20 template rows
    first = template_send(template_id, campaign, folder, rows(keys), tmp_path / "a" / "r.jsonl").execute(
        ctx()
    )
    assert first["counts"]["sent"] == 20
    # 5 PDF rows in the same campaign, their files under files_root.
    root = pdf("p0.pdf").parent
    for i in range(1, 5):
        pdf(f"p{i}.pdf")
    pdf_rows = [{"row_key": f"P-{i}", "files": f"p{i}.pdf", "email": f"pdf{i}@example.com"} for i in range(5)]
    pdf_send = DocsignBulkSendOperator(
        task_id="bulk_pdf",
        docsign_conn_id="docsign_system",
        rows=pdf_rows,
        result_table=str(tmp_path / "p" / "r.jsonl"),
        campaign_id=f"{campaign}-pdf",
        folder_id=folder,
        title="Bulk PDF {row_key}",
        recipients=[{"email": "{email}", "name": "PDF signer", "role": "SIGNER", "fields": [sig()]}],
        meta={"distributionMethod": "NONE"},
        files_root=str(root),
    )
    assert pdf_send.execute(ctx())["counts"]["sent"] == 5
    expected = {f"{campaign}({k})" for k in keys}
    found = counts(system_hook, campaign, folder)
    assert set(found) == expected
    assert set(found.values()) == {1}
    assert set(counts(system_hook, f"{campaign}-pdf", folder).values()) == {1}

    # The same campaign with another result table: found at the service, nothing sent.
    again = template_send(template_id, campaign, folder, rows(keys), tmp_path / "b" / "r.jsonl").execute(
        ctx()
    )
    assert again["adopted"] == 20
    assert again["envelopes_per_minute"] == 0.0

    # A resume with every row in flight: each looked up, adopted, none sent twice.
    table = tmp_path / "c" / "r.jsonl"
    table.parent.mkdir()
    in_flight = [[k, "in_flight", None, None, 1, None, None] for k in keys]
    Path(f"{table}{CHECKPOINT_SUFFIX}").write_text(
        json.dumps(
            {"version": 2, "campaign_id": campaign, "rows_total": 20, "updated_at": 1.0, "rows": in_flight}
        )
    )
    resumed = template_send(template_id, campaign, folder, rows(keys), table).execute(ctx())
    assert resumed["counts"]["sent"] == 20

    # An amendment: two new keys, one an extension of an old one.
    amended = template_send(
        template_id, campaign, folder, rows([*keys, "1111", "T-10"]), tmp_path / "a" / "r.jsonl"
    ).execute(ctx())
    assert amended["counts"]["sent"] == 22
    found = counts(system_hook, campaign, folder)
    assert len(found) == 22
    assert set(found.values()) == {1}


def test_two_tries_at_once_with_tables_in_two_run_folders_send_each_row_once(
    system_hook: DocsignHook,
    system_run: Any,
    template_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``results/<run>/r.jsonl``: the lease is the campaign's, not the folder's; one envelope per row."""
    monkeypatch.setenv("AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_DIR", str(tmp_path / "leases"))
    campaign = f"{system_run.prefix}-twice"
    folder = system_run.folder_id
    data = rows([f"K-{i}" for i in range(8)])
    outcomes: list[Any] = []

    def run(n: int) -> None:
        try:
            table = tmp_path / f"run-{n}" / "r.jsonl"
            op = template_send(template_id, campaign, folder, data, table, max_in_flight=2)
            outcomes.append(op.execute(ctx()))
        except Exception as err:
            outcomes.append(err)

    threads = [threading.Thread(target=run, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(outcomes) == 2
    # The second waited for the lease, then adopted; or, had the first outlived a stale period, failed
    # naming it. Never two senders.
    for outcome in outcomes:
        assert not isinstance(outcome, BaseException) or isinstance(outcome, LeaseHeldError), outcomes
    finished = [o for o in outcomes if not isinstance(o, BaseException)]
    assert finished
    assert all(o["counts"]["sent"] == 8 for o in finished)
    found = counts(system_hook, campaign, folder)
    assert len(found) == 8
    assert set(found.values()) == {1}


def test_a_repeated_key_is_invalid_on_every_try_and_with_the_checkpoint_deleted(
    system_hook: DocsignHook,
    system_run: Any,
    template_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIRFLOW__DOCSIGN__CAMPAIGN_LEASE_DIR", str(tmp_path / "leases"))
    campaign = f"{system_run.prefix}-repeat"
    folder = system_run.folder_id
    data = rows(["R-0", "R-1", "R-2", "R-3"])
    data.insert(3, {**data[2], "email": "someone.else@example.com", "name": "Someone Else"})
    table = tmp_path / "r.jsonl"
    firsts = []
    for _ in range(3):
        out = template_send(template_id, campaign, folder, data, table, max_invalid=1).execute(ctx())
        assert out["counts"] == {"sent": 4, "created": 0, "invalid": 1, "failed": 0}
        result = [json.loads(line) for line in table.read_text().splitlines()]
        assert result[3]["status"] == "invalid"
        assert result[3]["envelope_id"] is None
        assert result[3]["error"] == "row_key 'R-2' repeats the key of rows[2]"
        firsts.append(result[2])
    assert firsts[0] == firsts[1] == firsts[2]
    Path(f"{table}{CHECKPOINT_SUFFIX}").unlink()
    out = template_send(template_id, campaign, folder, data, table, max_invalid=1).execute(ctx())
    assert out["counts"] == {"sent": 4, "created": 0, "invalid": 1, "failed": 0}
    assert out["adopted"] == 4
    result = [json.loads(line) for line in table.read_text().splitlines()]
    assert result[3]["status"] == "invalid"
    assert result[2]["envelope_id"] == firsts[0]["envelope_id"]
    found = counts(system_hook, campaign, folder)
    assert found == Counter({f"{campaign}(R-{i})": 1 for i in range(4)})
