"""Careless and hostile campaign and connection ids never reach a metric as they were typed.

A campaign id is text a person (or a template) wrote: an e-mail, a title, Unicode, ``{{ }}``, 500
characters, a newline, or the StatsD metacharacters ``|#:,`` that would forge a datagram or a tag. Each
goes through the provider's metrics into Airflow's real DogStatsD logger in a process started with
``[metrics]`` on, and a UDP socket on 127.0.0.1 reads what arrives: every tag is plain or a digest, no
line is split or forged, and none of the typed text arrives.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from statsd_helpers import StatsdSink, metrics_env, run_python

from airflow_provider_docsign import metrics

HOSTILE = [
    "jane.doe@example.com",
    "Renewal for Jane Doe (ACME) \u2013 Q3",
    "Überweisung 2026 ✓",
    "{{ params.secret }}",
    "{% for x in y %}",
    "x" * 500,
    "line\nairflow.docsign.forged:1|c",
    "a|c|#conn_id:evil",
    "tag:value,other:tag",
    "#hash",
    "",
    " ",
    "\u202eevil",
    "c-0123456789ab",  # looks like a digest: still plain, still one tag
]
CONNS = ["docsign_default", "ops@example.com", "conn|#x:y"]

SCRIPT = """
import json, sys
from airflow_provider_docsign import metrics

cases = json.load(open(sys.argv[0] + ".json"))
for conn_id in cases["conns"]:
    for campaign in cases["campaigns"]:
        metrics.campaign_rows("sent", conn_id, campaign)
        metrics.campaign_totals(conn_id, campaign, {"sent": 1})
    metrics.request(conn_id, "get envelope {{ x }} a@b", 429)
print("SENT", metrics.enabled())
"""


@pytest.fixture
def sent(tmp_path: Path) -> list[str]:
    """Every line the hostile ids produced at a real DogStatsD socket."""
    script = tmp_path / "emit.py"
    script.write_text(textwrap.dedent(SCRIPT))
    Path(f"{script}.json").write_text(json.dumps({"campaigns": HOSTILE, "conns": CONNS}))
    with StatsdSink() as sink:
        output = run_python(script, metrics_env(sink.port, datadog=True))
    assert "SENT True" in output
    return [line for line in sink.lines() if line.startswith("airflow.docsign.")]


def test_no_typed_text_reaches_a_datagram(sent: list[str]) -> None:
    every = "\n".join(sent)
    assert "@" not in every
    assert "{{" not in every
    assert "{%" not in every
    assert "forged" not in every
    assert "evil" not in every
    for text in HOSTILE + CONNS:
        if len(text) > 3 and not metrics.SAFE_TAG.fullmatch(text):
            assert text not in every


def test_every_tag_is_plain_or_a_digest_and_no_line_is_forged(sent: list[str]) -> None:
    # rows.sent and six gauges per campaign; two request lines (with tags carried, the by-name twins of
    # requests and rate_limited are not sent)
    per_conn = len(HOSTILE) * (1 + 6) + 2
    assert len(sent) == len(CONNS) * per_conn
    line = re.compile(r"airflow\.docsign\.[a-z0-9_.]+:[0-9.]+\|(c|g)\|#([a-z_]+:[A-Za-z0-9_.-]{1,64},?)+")
    for text in sent:
        assert line.fullmatch(text), text
    campaigns = {t.split("campaign:", 1)[1].split(",")[0] for t in sent if "campaign:" in t}
    assert campaigns == {metrics.safe_tag(c) for c in HOSTILE}
    assert len(campaigns) == len(HOSTILE)  # one tag per distinct id: digests do not collide here
    operations = {t.split("operation:", 1)[1].split(",")[0] for t in sent if "operation:" in t}
    assert operations == {"get_envelope_x_a_b"}  # a word, whatever the description held


def test_the_digest_is_stable_and_never_the_text() -> None:
    for text in HOSTILE:
        tag = metrics.safe_tag(text)
        assert metrics.SAFE_TAG.fullmatch(tag)
        assert tag == metrics.safe_tag(text)
        if not metrics.SAFE_TAG.fullmatch(text):
            assert tag.startswith("c-")
            assert len(tag) == 14
