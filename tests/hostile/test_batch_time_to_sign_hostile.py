"""A campaign batch wait times its envelopes from the result table's ``sent_at``: a table nobody vouches for.

The result table is a file in a bucket or on a disk: a person or another tool may have edited it. Its
``sent_at`` may be missing, text that is not a time, a template, tomorrow, after the signature, a
number or 100,000 characters long. The wait's verdict comes from the service alone, so it must pass as
before; a time to sign is sent only for a send time turnaround believes (never negative, never from the
future), and nothing of the typed text reaches a datagram. The metrics cost no request: the sandbox
counts one get-many.

The sensor pokes in a process started with ``[metrics]`` on (DogStatsD, tags carried), as a worker is;
a UDP socket on 127.0.0.1 reads what arrives.
"""

from __future__ import annotations

import json
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import conn_json
from statsd_helpers import StatsdSink, metrics_env, run_python

from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

SIGNED = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: Each row's ``sent_at`` as the table holds it, and the time to sign (seconds) that may be sent for it.
CASES: list[tuple[str, Any, float | None]] = [
    ("good", _iso(SIGNED - timedelta(hours=5)), 5 * 3600.0),
    ("no-offset", (SIGNED - timedelta(hours=2)).replace(tzinfo=None).isoformat(), 2 * 3600.0),
    ("after-the-signature", _iso(SIGNED + timedelta(hours=1)), 0.0),
    ("missing", None, None),
    ("empty", "", None),
    ("not-a-time", "yesterday-ish", None),
    ("template", "{{ macros.datetime.utcnow() }}", None),
    ("e-mail", "jane.doe@example.com", None),
    ("tomorrow", _iso(datetime.now(timezone.utc) + timedelta(days=1)), None),
    ("a-number", 1764000000, None),
    ("a-list", ["2026-11-20T07:00:00Z"], None),
    ("year-one", "0001-01-01T00:00:00+01:00", None),
    ("long-text", "2026-11-20T07:00:00Z" + "x" * 100_000, None),  # the reader takes 131,072 a cell
]

SCRIPT = """
import json, sys
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

table = sys.argv[0] + ".jsonl"
sensor = DocsignEnvelopeSensor(task_id="wait", result_table=table, mode="poke", max_unsigned=0)
result = sensor.poke({})
print("DONE", json.dumps({"done": result.is_done, "xcom": result.xcom_value}))
"""


def _seed(sandbox: SandboxServer) -> list[str]:
    """One COMPLETED envelope per case, its one signer signed at :data:`SIGNED`."""
    signer = {
        "email": "signer@example.test",
        "name": "Signer",
        "role": "SIGNER",
        "signingStatus": "SIGNED",
        "signedAt": _iso(SIGNED),
    }
    cc = dict(signer, email="cc@example.test", role="CC", signedAt=_iso(SIGNED + timedelta(days=3)))
    specs = [
        {
            "title": f"Renewal {name}",
            "status": "COMPLETED",
            "externalId": f"hostile-sent({name})",
            "createdAt": _iso(SIGNED - timedelta(days=1)),
            "completedAt": _iso(SIGNED),
            "recipients": [signer, cc],
        }
        for name, _sent, _expected in CASES
    ]
    return sandbox.seed(specs)


def test_a_result_table_with_hostile_send_times_never_breaks_the_wait_nor_sends_a_wrong_time(
    tmp_path: Path, sandbox: SandboxServer, airflow_db: str
) -> None:
    ids = _seed(sandbox)
    script = tmp_path / "wait.py"
    script.write_text(textwrap.dedent(SCRIPT))
    rows = [
        {"row_key": name, "external_id": f"hostile-sent({name})", "status": "sent", "envelope_id": eid}
        | ({} if name == "missing" else {"sent_at": sent_at})
        for (name, sent_at, _expected), eid in zip(CASES, ids, strict=True)
    ]
    Path(f"{script}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    sandbox.clear_requests()

    with StatsdSink() as sink:
        env = metrics_env(sink.port, datadog=True)
        env["AIRFLOW_CONN_DOCSIGN_DEFAULT"] = conn_json(sandbox)
        output = run_python(script, env)

    line = next(row for row in output.splitlines() if row.startswith("DONE "))
    result = json.loads(line.removeprefix("DONE "))
    assert result["done"] is True
    assert result["xcom"]["completed"] == len(CASES)  # the verdict is the service's, whatever the table says
    assert [r["path"] for r in sandbox.requests()] == ["/envelope/get-many"]  # ceil(13 / 20): one
    timers = [d for d in sink.datagrams() if d.name == "airflow.docsign.time_to_sign"]
    assert all(d.tags == {"conn_id": "docsign_default", "source": "campaign"} for d in timers)
    expected = sorted(seconds * 1000.0 for _n, _s, seconds in CASES if seconds is not None)
    assert sorted(float(d.value) for d in timers) == pytest.approx(expected, abs=0.01)
    completed = [d for d in sink.datagrams() if d.name == "airflow.docsign.envelopes.completed"]
    assert sum(int(d.value) for d in completed) == len(CASES)
    every = "\n".join(sink.lines())
    for typed in ("jane.doe", "yesterday", "macros", "{{", "xxxx"):
        assert typed not in every

    # The report beside the table says the same per row: the time to sign that was believed, the
    # service's signature time (the CC's later signedAt is not a signature anyone had to give).
    report = [json.loads(x) for x in Path(f"{script}.jsonl.outcome.jsonl").read_text().splitlines()]
    assert [x["row_key"] for x in report] == [name for name, _s, _e in CASES]
    for entry, (_name, _sent, seconds) in zip(report, CASES, strict=True):
        believed = None if seconds is None else pytest.approx(seconds, abs=0.001)
        assert entry["seconds_to_sign"] == believed
        assert datetime.fromisoformat(entry["signed_at"].replace("Z", "+00:00")) == SIGNED
    assert not any(typed in json.dumps(report) for typed in ("jane.doe", "yesterday", "macros", "{{"))
