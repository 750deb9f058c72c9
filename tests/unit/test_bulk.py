"""The bulk campaign's pure parts: rows, what each row sends, keys, errors, the checkpoint and the log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_docsign.bulk.plan import (
    BulkConfigError,
    CampaignPlan,
    classify_error,
    default_max_failures,
    format_of,
    iter_keys,
    read_rows,
    sent_envelope_ids,
)
from airflow_provider_docsign.bulk.state import (
    CampaignState,
    CheckpointError,
    RowState,
    Throughput,
    first_problems,
    format_duration,
    progress_line,
    summary_table,
)
from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignAuthError,
    DocsignConnectionError,
    DocsignInvalidRequestError,
    DocsignNotFoundError,
    DocsignRateLimitError,
    DocsignServerError,
    DocsignValidationError,
)

# -- reading rows ---------------------------------------------------------------------------------


def test_csv_rows_are_strings_with_empty_cells_as_none_and_json_cells_kept_as_text(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(
        '\ufeffrow_key,email,recipients\nA,a@x.test,\nB,,"[{""email"": ""b@x.test""}]"\n', "utf-8"
    )
    rows = read_rows(path, "csv")
    assert rows == [
        {"row_key": "A", "email": "a@x.test", "recipients": None},
        {"row_key": "B", "email": None, "recipients": '[{"email": "b@x.test"}]'},
    ]


def test_jsonl_rows_name_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"row_key": 1}\n\n{"row_key": 2}\n')
    assert read_rows(path, "jsonl") == [{"row_key": 1}, {"row_key": 2}]
    path.write_text('{"row_key": 1}\n[1, 2]\n')
    with pytest.raises(
        BulkConfigError, match=r"line 2 of .*rows\.jsonl: the line is a JSON list, not an object"
    ):
        read_rows(path, "jsonl")
    path.write_text('{"row_key": 1}\n{oops\n')
    with pytest.raises(BulkConfigError, match=r"line 2 of .*rows\.jsonl: the line is not JSON"):
        read_rows(path, "jsonl")


def test_parquet_rows(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the parquet extra)")
    import pyarrow.parquet as pq

    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"row_key": ["a", "b"], "n": [1, 2]}), path)
    assert read_rows(path, "parquet") == [{"row_key": "a", "n": 1}, {"row_key": "b", "n": 2}]


def test_formats_come_from_the_extension_or_are_asked_for() -> None:
    assert format_of("s3://b/rows.CSV", None, ("csv", "jsonl", "parquet"), "input") == "csv"
    assert format_of(Path("r.ndjson"), None, ("csv", "jsonl", "parquet"), "input") == "jsonl"
    assert format_of("out.txt", None, ("jsonl", "parquet"), "output") == "jsonl"
    assert format_of("rows.txt", "csv", ("csv", "jsonl"), "input") == "csv"
    with pytest.raises(BulkConfigError, match="give input_format"):
        format_of("rows.txt", None, ("csv", "jsonl", "parquet"), "input")
    with pytest.raises(BulkConfigError, match="must be one of"):
        format_of("rows.csv", "xlsx", ("csv", "jsonl", "parquet"), "input")


def test_sent_envelope_ids_of_a_result_table(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    rows = [
        {"row_key": "1", "envelope_id": "envelope_a", "status": "sent"},
        {"row_key": "2", "envelope_id": None, "status": "invalid"},
        {"row_key": "3", "envelope_id": "envelope_c", "status": "created"},
        {"row_key": "4", "envelope_id": "envelope_d", "status": "sent"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert sent_envelope_ids(path, "jsonl") == ["envelope_a", "envelope_d"]
    assert sent_envelope_ids(path, "jsonl", ("sent", "created")) == ["envelope_a", "envelope_c", "envelope_d"]
    path.write_text('{"row_key": "1"}\n')
    with pytest.raises(BulkConfigError, match="not a bulk result table"):
        sent_envelope_ids(path, "jsonl")


# -- keys and external ids ----------------------------------------------------------------------


def test_keys_are_strings_or_integers_unique_in_the_campaign() -> None:
    plan = CampaignPlan(campaign_id="renewals-2027")
    rows = [
        {"row_key": "A"},
        {"row_key": 7},
        {"row_key": "A"},
        {"row_key": None},
        {"row_key": 1.5},
        {"row_key": " B"},
    ]
    keys = list(iter_keys(plan, rows))
    assert keys[0] == ("A", [])
    assert keys[1] == ("7", [])
    assert keys[2] == ("A", ["row_key 'A' repeats the key of item 0"])
    assert keys[3][1] == ["row_key is missing; it must be a string or an integer"]
    assert keys[4][1] == ["row_key is a float; it must be a string or an integer"]
    assert "surrounding spaces" in keys[5][1][0]
    assert plan.external_id("A") == "renewals-2027(A)"


def test_an_external_id_that_would_pass_255_characters_is_a_problem_of_the_row() -> None:
    plan = CampaignPlan(campaign_id="c" * 200)
    assert plan.key_of({"row_key": "k" * 53})[1] == []  # 200 + 53 + 2 = 255
    assert "would exceed 255" in plan.key_of({"row_key": "k" * 54})[1][0]
    with pytest.raises(BulkConfigError, match="at most 252"):
        CampaignPlan(campaign_id="c" * 253)
    with pytest.raises(BulkConfigError, match="campaign_id must be a non-empty string"):
        CampaignPlan(campaign_id=" padded")
    with pytest.raises(BulkConfigError, match="control character"):
        CampaignPlan(campaign_id="bell\x07")


# -- what a row sends -----------------------------------------------------------------------------


def test_operator_arguments_take_each_row_s_values_and_row_columns_win() -> None:
    plan = CampaignPlan(
        campaign_id="c",
        template_id="envelope_tpl",
        title="Renewal for {name} ({{literal}})",
        recipients=[{"placeholder": "Customer", "email": "{email}", "name": "{name}"}],
        prefill_fields={"company": "{company}", "fee": "{fee}"},
        meta={"subject": "Hello {name}"},
    )
    row = {"row_key": "K", "name": "Ada", "email": "ada@x.test", "company": "AE", "fee": 1250.5}
    kwargs, problems = plan.use_kwargs(row, "K")
    assert problems == []
    assert kwargs["recipients"] == [{"placeholder": "Customer", "email": "ada@x.test", "name": "Ada"}]
    assert kwargs["prefill_fields"] == {"company": "AE", "fee": "1250.5"}
    assert kwargs["override"] == {"subject": "Hello Ada", "title": "Renewal for Ada ({literal})"}
    assert kwargs["external_id"] == "c(K)"
    assert kwargs["distribute"] is True
    # A row's own column replaces the operator's argument (JSON text in a CSV cell).
    own = {**row, "recipients": '[{"placeholder": "Customer", "email": "own@x.test"}]'}
    assert plan.use_kwargs(own, "K")[0]["recipients"] == [{"placeholder": "Customer", "email": "own@x.test"}]


def test_a_missing_column_or_bad_json_is_a_problem_of_the_row() -> None:
    plan = CampaignPlan(
        campaign_id="c", template_id="t", recipients=[{"placeholder": "C", "email": "{mail}"}]
    )
    _, problems = plan.use_kwargs({"row_key": "K"}, "K")
    assert problems == ["recipients[0].email: '{mail}' names column 'mail', which the row does not have"]
    _, problems = plan.use_kwargs({"row_key": "K", "recipients": "[{broken"}, "K")
    assert problems == [
        "column 'recipients' is not valid JSON (Expecting property name enclosed in double quotes)"
    ]


def test_a_row_is_a_template_row_when_it_or_the_operator_names_a_template() -> None:
    assert CampaignPlan(campaign_id="c").template_id_of({"template_id": "envelope_x"}) == "envelope_x"
    assert CampaignPlan(campaign_id="c", template_id="envelope_y").template_id_of({}) == "envelope_y"
    assert CampaignPlan(campaign_id="c").template_id_of({"template_id": ""}) is None


def test_pdf_rows_are_checked_with_the_create_validator(tmp_path: Path) -> None:
    from airflow_provider_docsign.samples import write_sample_pdf

    pdf = write_sample_pdf(tmp_path / "a.pdf", title="a")
    signer = {"email": "{email}", "name": "S", "role": "SIGNER"}
    field = {
        "identifier": 0,
        "type": "SIGNATURE",
        "page": 1,
        "positionX": 10,
        "positionY": 10,
        "width": 20,
        "height": 5,
    }
    plan = CampaignPlan(
        campaign_id="c",
        title="T {row_key}",
        files=["{pdf}"],
        recipients=[{**signer, "fields": [field]}],
        files_root=tmp_path,
    )
    good = {"row_key": "1", "email": "s@x.test", "pdf": str(pdf)}
    assert plan.problems(good, "1", {}) == []
    off_page = CampaignPlan(
        campaign_id="c",
        title="T",
        files=["{pdf}"],
        recipients=[{**signer, "fields": [{**field, "page": 3}]}],
        files_root=tmp_path,
    )
    assert any("page 3" in p for p in off_page.problems(good, "1", {}))
    missing = {**good, "pdf": str(tmp_path / "nope.pdf")}
    assert any("does not exist" in p for p in plan.problems(missing, "1", {}))
    assert CampaignPlan(campaign_id="c").problems({"row_key": "1"}, "1", {}) == [
        "no PDFs: give a files column, the operator's files, or a template_id",
        "no title: give a title column or the operator's title",
    ]


def test_rows_the_outgoing_check_would_refuse_are_invalid_before_any_request(tmp_path: Path) -> None:
    """A row is judged by the same rules the hook applies when the request leaves (outgoing.py)."""
    from airflow_provider_docsign.samples import write_sample_pdf

    pdf = write_sample_pdf(tmp_path / "a.pdf", title="a")
    field = {"identifier": 0, "type": "SIGNATURE", "page": 1, "positionX": 10, "positionY": 10}
    signer = {"email": "{email}", "name": "{name}", "role": "SIGNER", "fields": [{**field, "width": 20}]}
    signer["fields"][0]["height"] = 5
    plan = CampaignPlan(campaign_id="c", title="T {row_key}", files=[str(pdf)], recipients=[signer])
    assert plan.problems({"row_key": "1", "email": "s@x.test", "name": "Sam"}, "1", {}) == []
    bidi = plan.problems({"row_key": "1", "email": "s@x.test", "name": "Sam\u202egnp.exe"}, "1", {})
    assert len(bidi) == 1
    assert "recipients[0].name" in bidi[0]
    assert "U+202E" in bidi[0]
    look_alike = plan.problems({"row_key": "1", "email": "adm\u0131n@x.test", "name": "Sam"}, "1", {})
    assert len(look_alike) == 1
    assert "recipients[0].email" in look_alike[0]
    _, key_problems = plan.key_of({"row_key": "a\u200bb"})
    assert any("U+200B" in p for p in key_problems)


def test_a_template_that_could_not_be_read_makes_its_rows_invalid() -> None:
    plan = CampaignPlan(campaign_id="c", template_id="envelope_gone")
    assert plan.problems({"row_key": "1"}, "1", {"envelope_gone": "cannot be used (404)"}) == [
        "template envelope_gone: cannot be used (404)"
    ]


# -- errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (DocsignAmbiguousWriteError("lost"), "ambiguous"),
        (DocsignServerError("boom", status_code=500, path="/envelope/use"), "ambiguous"),
        (DocsignServerError("boom", status_code=502, path="/envelope/create"), "ambiguous"),
        (DocsignServerError("boom", status_code=500, path="/envelope/distribute"), "transient"),
        (DocsignRateLimitError("slow", status_code=429), "transient"),
        (DocsignConnectionError("down"), "transient"),
        (DocsignAuthError("key", status_code=401), "auth"),
        (DocsignInvalidRequestError("no", status_code=400), "permanent"),
        (DocsignNotFoundError("gone", status_code=404), "permanent"),
        (DocsignValidationError(["x"]), "permanent"),
        (ConnectionResetError(), "transient"),
    ],
)
def test_each_error_means_one_thing_for_its_row(error: BaseException, kind: str) -> None:
    assert classify_error(error) == kind


def test_max_failures_is_one_percent_at_least_ten() -> None:
    assert default_max_failures(100) == 10
    assert default_max_failures(10_000) == 100
    assert default_max_failures(10_001) == 101


# -- the checkpoint --------------------------------------------------------------------------------


def _state(keys: list[str | None]) -> CampaignState:
    return CampaignState("camp", [RowState(k) for k in keys])


def test_the_checkpoint_records_rows_in_flight_and_done_and_restores_them() -> None:
    state = _state(["a", "b", "c", "d", None])
    state.rows[0].state, state.rows[0].envelope_id, state.rows[0].attempts = "sent", "envelope_a", 1
    state.rows[0].sent_at = "2027-01-01T00:00:00.000Z"
    state.rows[1].state = "in_flight"
    state.rows[2].state, state.rows[2].error = "invalid", "bad"  # found again on every try
    data = state.to_bytes(now=123.0)
    body = json.loads(data)
    assert [e[:2] for e in body["rows"]] == [["a", "sent"], ["b", "in_flight"]]
    again = _state(["a", "b", "c", "d", None])
    assert again.restore(data) == 2
    assert again.rows[0] == state.rows[0]
    assert again.rows[1].state == "in_flight"
    assert again.rows[2].state == "pending"
    assert again.resumed_from == 123.0


def test_a_checkpoint_of_another_campaign_is_refused_and_amended_rows_are_matched_by_key() -> None:
    before = _state(["a", "b"])
    before.rows[0].state, before.rows[0].envelope_id = "sent", "envelope_a"
    data = before.to_bytes()
    with pytest.raises(CheckpointError, match="belongs to campaign 'camp', not 'other'"):
        CampaignState("other", [RowState("a"), RowState("b")]).restore(data)
    amended = _state(["c", "b", "a"])  # reordered, one key added: an amended campaign resumes by key
    assert amended.restore(data) == 1
    assert [(r.key, r.state, r.envelope_id) for r in amended.rows] == [
        ("c", "pending", None),
        ("b", "pending", None),
        ("a", "sent", "envelope_a"),
    ]
    with pytest.raises(CheckpointError, match="not JSON"):
        _state(["a"]).restore(b"{not json")
    with pytest.raises(CheckpointError, match="unknown version"):
        _state(["a"]).restore(b'{"version": 99}')


def test_the_result_rows_keep_input_order_and_never_claim_a_row_was_sent() -> None:
    state = _state(["a", "b", "c"])
    state.rows[0].state = "sent"
    state.rows[1].state = "in_flight"  # left over by a stop: reported as failed, with why
    rows = list(state.result_rows(lambda key: f"camp({key})"))
    assert [r["row_key"] for r in rows] == ["a", "b", "c"]
    assert [r["status"] for r in rows] == ["sent", "failed", "failed"]
    assert rows[1]["error"] == "left in_flight when the campaign ended"
    assert rows[0]["external_id"] == "camp(a)"
    assert state.counts() == {
        "sent": 1,
        "created": 0,
        "invalid": 0,
        "failed": 0,
        "in_flight": 1,
        "pending": 1,
    }


# -- the log ----------------------------------------------------------------------------------------


def test_progress_says_rate_against_the_limit_and_eta() -> None:
    speed = Throughput(envelopes=900, requests=901, seconds=60.0, limit=1000)
    assert speed.per_minute == 900
    assert round(speed.limit_bound or 0) == 999
    line = progress_line("camp", 900, 10_000, {"sent": 900}, speed, 9_100)
    assert line.startswith("Campaign camp: 900/10,000 rows done (sent 900, created 0, invalid 0, failed 0); ")
    assert "900 envelopes/min (0.90x the limit-bound 999/min: 1,000 requests/min / 1.00 per envelope)" in line
    assert line.endswith("ETA 10m07s")
    assert "ETA" not in progress_line("camp", 10, 10, {"sent": 10}, speed, 0)
    assert format_duration(3725) == "1h02m"
    assert format_duration(12.4) == "12s"


def test_the_summary_table_names_the_first_bad_rows() -> None:
    state = _state([str(i) for i in range(8)])
    for row in state.rows[1:8]:
        row.state, row.error = "invalid", f"problem of {row.key}\nmore detail"
    text = summary_table(
        "camp",
        state,
        Throughput(0, 3, 2.0, None),
        throttled=1,
        paced_seconds=0.5,
        result_uri="file:///r.jsonl",
    )
    assert "  invalid            7" in text
    assert "1 answered 429" in text
    assert "invalid '1': problem of 1" in text
    assert "more detail" not in text
    assert "... and 2 more (see the result table)" in text
    assert first_problems([("line 5", "k", ["a", "b", "c", "d"])]) == "  - line 5 ('k'): a; b; c ..."
