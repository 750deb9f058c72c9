"""Why the batch archive did not archive an envelope, said in the wait's words (issue 46).

A campaign of three envelopes at the sandbox: one signed, one rejected by its signer with a reason that
would forge a log line and reverse the text after it, one whose signing link the sandbox expired. The
campaign's wait (``DocsignEnvelopeSensor(result_table=...)``) settles all three and writes its outcome
file; the batch archive then names the two it leaves out with the very reasons of that file: who
rejected and what they wrote, whose link expired and when, each signer by id, role and masked e-mail.
Counted where it shows: the XCom, the log, the failure, the requests at the sandbox.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_envelope, ctx, signer

from airflow_provider_docsign.exceptions import DocsignArchiveError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.archive_batch import DocsignBatchArchiveOperator
from airflow_provider_docsign.sandbox import SandboxServer
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

COLUMNS = ("row_key", "external_id", "envelope_id", "status", "error", "attempts", "sent_at")
#: Would forge a log line and reverse what follows, if repeated raw.
REASON = "Not my contract\nINFO forged: all envelopes archived \u202etxt.exe"
EMAILS = {"rejected": "rita.reject@example.test", "expired": "eve.expire@example.test"}


class Recorder:
    """Stands for the task's logger: keeps each message."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def _keep(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.messages.append(msg % args if args else msg)

    debug = info = warning = error = exception = _keep


@pytest.fixture
def campaign(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> dict[str, Any]:
    """The three envelopes, their result table, and the wait's outcome file once all three settled."""
    ids = {
        "signed": completed_envelope(
            hook, sandbox, [make_pdf("signed.pdf")], title="signed", external_id="why(0)"
        )
    }
    for n, name in enumerate(("rejected", "expired"), start=1):
        envelope_id = hook.create_envelope(
            title=name,
            files=[make_pdf(f"{name}.pdf")],
            recipients=[signer(email=EMAILS[name])],
            external_id=f"why({n})",
        )
        hook.distribute_envelope(envelope_id)
        ids[name] = envelope_id
    (recipient,) = hook.get_envelope(ids["rejected"]).recipients
    sandbox.reject(ids["rejected"], recipient.id, REASON)
    sandbox.wait_status(ids["rejected"], "REJECTED", timeout=20)
    assert sandbox.expire(ids["expired"])  # the signer's link is in the past now
    table = tmp_path / "results.jsonl"
    rows = [
        {"row_key": str(n), "envelope_id": e, "status": "sent", "attempts": 1}
        for n, e in enumerate(ids.values())
    ]
    table.write_text("".join(json.dumps({c: row.get(c) for c in COLUMNS}) + "\n" for row in rows))

    wait = DocsignEnvelopeSensor(task_id="wait", result_table=str(table), max_unsigned=2, timeout=600)
    assert wait.poke(ctx())  # all three settled: one signed, two that never will be
    outcome = [json.loads(line) for line in Path(f"{table}.outcome.jsonl").read_text().splitlines()]
    return {"ids": ids, "table": table, "wait": {row["envelope_id"]: row for row in outcome}}


def _expected(sandbox: SandboxServer, ids: dict[str, str]) -> dict[str, str]:
    rejected = sandbox.get_envelope(ids["rejected"])["recipients"][0]
    expired = sandbox.get_envelope(ids["expired"])["recipients"][0]
    return {
        "rejected": f"rejected by recipient {rejected['id']} (SIGNER, r***@example.test): {REASON!r}",
        "expired": f"signing link of recipient {expired['id']} (SIGNER, e***@example.test) expired at "
        f"{expired['expiresAt']}",
    }


def test_skip_names_whose_link_expired_and_who_rejected_as_the_wait_does(
    campaign: dict[str, Any],
    sandbox: SandboxServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids, wait = campaign["ids"], campaign["wait"]
    expected = _expected(sandbox, ids)
    # The wait's words, first: its outcome file is what the archive must agree with.
    assert (wait[ids["rejected"]]["status"], wait[ids["rejected"]]["reason"]) == (
        "REJECTED",
        expected["rejected"],
    )
    assert (wait[ids["expired"]]["status"], wait[ids["expired"]]["reason"]) == (
        "EXPIRED",
        expected["expired"],
    )

    recorder = Recorder()
    monkeypatch.setattr(DocsignBatchArchiveOperator, "log", property(lambda self: recorder))
    op = DocsignBatchArchiveOperator(
        task_id="archive",
        result_table=str(campaign["table"]),
        destination=str(tmp_path / "a"),
        on_unsigned="skip",
    )
    sandbox.clear_requests()
    result = op.execute(ctx())

    assert (result["archived"], result["not_signed"], result["failed"]) == (1, 2, 0)
    assert {e["envelope_id"]: (e["status"], e["reason"]) for e in result["not_signed_envelopes"]} == {
        ids["rejected"]: ("REJECTED", wait[ids["rejected"]]["reason"]),
        ids["expired"]: ("PENDING", wait[ids["expired"]]["reason"]),
    }
    # The log: one line each, the same reason, nothing forged, no full address.
    logged = {
        key: [m for m in recorder.messages if m.startswith("Not archived") and ids[key] in m]
        for key in ("rejected", "expired")
    }
    said = "Not archived (on_unsigned='skip'): envelope"
    assert logged == {
        "rejected": [f"{said} {ids['rejected']} is REJECTED: {expected['rejected']}"],
        "expired": [f"{said} {ids['expired']} is PENDING: {expected['expired']}"],
    }
    text = json.dumps(result) + "\n".join(recorder.messages)
    assert "\u202e" not in text
    assert not [e for e in EMAILS.values() if e in text]
    # At the sandbox: one read of the three, and the signed envelope's item downloaded, nothing else.
    paths = Counter(r["path"] for r in sandbox.requests())
    assert paths["/envelope/get-many"] == 1
    assert sorted(p for p in paths if p.endswith("/download")) == [
        f"/envelope/item/{item.id}/download" for item in _items(sandbox, ids["signed"])
    ]


def test_fail_names_them_in_the_same_words_and_downloads_nothing_of_them(
    campaign: dict[str, Any], sandbox: SandboxServer, tmp_path: Path
) -> None:
    ids = campaign["ids"]
    expected = _expected(sandbox, ids)
    op = DocsignBatchArchiveOperator(
        task_id="archive", result_table=str(campaign["table"]), destination=str(tmp_path / "b")
    )
    sandbox.clear_requests()
    # The expired link may still be renewed and signed: a retry could archive it, so the task may retry.
    with pytest.raises(DocsignArchiveError) as failed:
        op.execute(ctx())
    message = str(failed.value)
    assert message.startswith("2 of 3 envelope(s) could not be archived (the others were)")
    assert f"envelope {ids['rejected']} is REJECTED: {expected['rejected']}; nothing was archived" in message
    assert f"envelope {ids['expired']} is PENDING: {expected['expired']}; nothing was archived" in message
    assert "\u202e" not in message
    assert not [e for e in EMAILS.values() if e in message]
    downloads = [r["path"] for r in sandbox.requests() if r["path"].endswith("/download")]
    assert len(downloads) == len(_items(sandbox, ids["signed"]))  # the signed one only


def _items(sandbox: SandboxServer, envelope_id: str) -> list[Any]:
    from types import SimpleNamespace

    return [SimpleNamespace(id=item["id"]) for item in sandbox.get_envelope(envelope_id)["envelopeItems"]]
