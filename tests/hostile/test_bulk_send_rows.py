"""The bulk send's rows and tables from a careless or hostile author: keys, cells, files and names.

Every case is refused before the request it would spoil: counted at the sandbox (and, for URLs a row
names, at a server of the test's own that must see no request at all).
"""

from __future__ import annotations

import http.server
import threading
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bulk_helpers import campaign_counts, customers, make_template, operator, read_table, write_csv, writes
from helpers import ctx, signer

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators.bulk import DocsignBulkSendOperator
from airflow_provider_docsign.sandbox import SandboxServer


@pytest.mark.parametrize("campaign_id", ["acme(x", "acme)", "a[1]", "camp*", "what?"])
def test_a_campaign_id_that_could_collide_or_glob_is_refused_before_any_request(
    docsign_conn: str, sandbox: SandboxServer, tmp_path: Path, campaign_id: str
) -> None:
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="a campaign id may not hold"):
        operator("envelope_x", customers(2), tmp_path / "r.jsonl", campaign_id=campaign_id).execute(ctx())
    assert sandbox.requests() == []


def test_two_campaigns_can_no_longer_share_an_external_id(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    """``acme(x`` + ``1)`` and ``acme`` + ``x(1)`` both gave ``acme(x(1))``: the first is refused now."""
    template_id = make_template(hook, make_pdf("t.pdf"))
    row = {**customers(1)[0], "row_key": "x(1)"}
    assert operator(template_id, [row], tmp_path / "a.jsonl", campaign_id="acme").execute(ctx())["counts"][
        "sent"
    ]
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="may not hold"):
        operator(template_id, [{**row, "row_key": "1)"}], tmp_path / "b.jsonl", campaign_id="acme(x").execute(
            ctx()
        )
    assert sandbox.requests() == []
    assert campaign_counts(hook, "acme") == {"acme(x(1))": 1}


def test_nfc_and_nfd_spellings_of_one_key_and_glob_characters_are_invalid_before_any_request(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    rows = customers(5)
    rows[0]["row_key"] = unicodedata.normalize("NFC", "Renée")
    rows[1]["row_key"] = unicodedata.normalize("NFD", "Renée")
    rows[2]["row_key"] = "a[1]*?"
    rows[3]["row_key"] = "x_1"
    rows[4]["row_key"] = "x/1"  # the batch archive would store both in the folder "keys(x_1)"
    source = write_csv(tmp_path / "rows.csv", rows)
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException) as info:
        operator(template_id, str(source), tmp_path / "r.jsonl", campaign_id="keys").execute(ctx())
    message = str(info.value)
    assert "line 3 ('Renée'): row_key 'Renée' repeats the key of line 2" in message  # CSV lines, header 1
    assert "line 4 ('a[1]*?')" in message
    assert "patterns" in message
    assert "line 6 ('x/1')" in message
    assert [(r["method"], r["path"]) for r in sandbox.requests() if r["method"] != "GET"] == []
    # With room for them, the good rows go, and the key is sent NFC-normalised.
    operator(template_id, str(source), tmp_path / "r.jsonl", campaign_id="keys", max_invalid=3).execute(ctx())
    table = read_table(tmp_path / "r.jsonl")
    assert [r["status"] for r in table[:2]] == ["sent", "invalid"]
    assert table[1]["row_key"] == unicodedata.normalize("NFC", "Renée")  # keys are reported normalised
    assert campaign_counts(hook, "keys")[f"keys({unicodedata.normalize('NFC', 'Renée')})"] == 1
    assert table[2]["status"] == "invalid"
    assert table[3]["status"] == "sent"
    assert "would be archived in the same folder ('keys(x_1)') as the key of line 5" in table[4]["error"]


def test_an_oversized_cell_is_an_invalid_row_with_its_line_and_the_others_are_sent(
    docsign_conn: str,
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
) -> None:
    template_id = make_template(hook, make_pdf("t.pdf"))
    rows = [{**row, "notes": None} for row in customers(4)]
    rows[1]["notes"] = "Multi\nline"  # a quoted cell spanning two lines: later rows' lines shift
    rows[2]["company"] = "x" * 200_000
    source = write_csv(tmp_path / "rows.csv", rows)
    result = operator(
        template_id, str(source), tmp_path / "r.jsonl", campaign_id="cells", max_invalid=1
    ).execute(ctx())
    assert result["counts"] == {"sent": 3, "created": 0, "invalid": 1, "failed": 0}
    (bad,) = [r for r in read_table(tmp_path / "r.jsonl") if r["status"] == "invalid"]
    assert bad["row_key"] == "C-0002"
    assert "200,000 characters" in bad["error"]
    assert "line 5" not in bad["error"]  # the problem is the row's, its line is in the task's log
    assert len(campaign_counts(hook, "cells")) == 3


def test_malformed_json_lines_are_invalid_rows_named_by_their_line(
    docsign_conn: str, sandbox: SandboxServer, tmp_path: Path
) -> None:
    source = tmp_path / "rows.jsonl"
    source.write_text('{"row_key": "a"}\n\n[1, 2]\n{"row_key": \n' + "[" * 50_000 + "\n", encoding="utf-8")
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException) as info:
        operator("envelope_x", str(source), tmp_path / "r.jsonl", campaign_id="jsonl").execute(ctx())
    message = str(info.value)
    assert "line 3: the line is a JSON list, not an object" in message
    assert "line 4: the line is not JSON" in message
    assert "line 5: the line is not JSON" in message


# -- files a row names --------------------------------------------------------------------------------


@pytest.fixture
def bystander() -> Iterator[list[str]]:
    """An HTTP server on 127.0.0.1 that records every request (a row must never reach it)."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"%PDF-1.4 not really")

        do_HEAD = do_GET

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    seen.append(f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def pdf_operator(rows: list[dict[str, Any]], result: Path, **kwargs: Any) -> DocsignBulkSendOperator:
    return DocsignBulkSendOperator(
        task_id="bulk",
        rows=rows,
        result_table=str(result),
        campaign_id=kwargs.pop("campaign_id", "files"),
        title="Contract {row_key}",
        recipients=[signer()],
        **kwargs,
    )


def test_files_a_row_names_outside_files_root_are_invalid_and_nothing_is_read_or_sent(
    docsign_conn: str,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    bystander: list[str],
) -> None:
    inside = make_pdf("contracts/ok.pdf")
    root = inside.parent
    secret = make_pdf("elsewhere/secret.pdf")  # a PDF elsewhere on the worker
    (root / "link.pdf").symlink_to(secret)
    base = bystander[0]
    rows = [
        {"row_key": "ok", "files": str(inside)},
        {"row_key": "relative-ok", "files": "ok.pdf"},
        {"row_key": "outside", "files": str(secret)},
        {"row_key": "dotdot", "files": "../elsewhere/secret.pdf"},
        {"row_key": "symlink", "files": "link.pdf"},
        {"row_key": "http", "files": f"{base}/contract.pdf"},
        {"row_key": "s3-conn", "files": "s3://any_conn@bucket/contracts/x.pdf"},
        {"row_key": "file-url", "files": f"file://{secret}"},
    ]
    sandbox.clear_requests()
    result = pdf_operator(rows, tmp_path / "r.jsonl", files_root=str(root), max_invalid=6).execute(ctx())
    assert result["counts"] == {"sent": 2, "created": 0, "invalid": 6, "failed": 0}
    table = {r["row_key"]: r for r in read_table(tmp_path / "r.jsonl")}
    for key in ("outside", "dotdot", "symlink"):
        assert "outside files_root" in table[key]["error"], key
    for key in ("http", "s3-conn", "file-url"):
        assert "names a URL" in table[key]["error"], key
    assert bystander[1:] == []  # the URL was never fetched
    assert [p for _, p in writes(sandbox)].count("/envelope/create") == 2


def test_without_files_root_a_row_cannot_name_a_file_and_the_error_names_the_option(
    docsign_conn: str, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    pdf = make_pdf("a.pdf")
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="give files_root"):
        pdf_operator([{"row_key": "a", "files": str(pdf)}], tmp_path / "r.jsonl").execute(ctx())
    # The operator's files with a {column} in them come from the row too.
    with pytest.raises(AirflowFailException, match="give files_root"):
        pdf_operator([{"row_key": "a", "name": str(pdf)}], tmp_path / "r.jsonl", files=["{name}"]).execute(
            ctx()
        )
    assert writes(sandbox) == []
    # A fixed list written in the DAG needs no files_root.
    fixed = pdf_operator([{"row_key": "a"}], tmp_path / "r.jsonl", files=[str(pdf)], campaign_id="fixed")
    assert fixed.execute(ctx())["counts"]["sent"] == 1


def test_a_row_cannot_leave_an_object_store_root_or_pick_its_connection(
    docsign_conn: str, sandbox: SandboxServer, tmp_path: Path
) -> None:
    rows = [
        {"row_key": "other-bucket", "files": "s3://other/contracts/a.pdf"},
        {"row_key": "conn", "files": "s3://evil_conn@docs/contracts/a.pdf"},
        {"row_key": "up", "files": "../private/a.pdf"},
        {"row_key": "abs", "files": "/contracts/a.pdf"},
    ]
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException) as info:
        pdf_operator(
            rows, tmp_path / "r.jsonl", files_root="s3://docs/contracts", files_conn_id="docs_s3"
        ).execute(ctx())
    message = str(info.value)
    assert "4 of 4 rows are invalid" in message
    assert "names another store, bucket or connection" in message
    assert "is not a key under files_root" in message
    assert writes(sandbox) == []


# -- the result table's name -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["results.csv", "results.json", "results"])
def test_a_result_table_name_the_send_would_not_write_is_refused_when_the_dag_is_parsed(
    tmp_path: Path, name: str
) -> None:
    with pytest.raises(Exception, match=r"name it \.jsonl or \.parquet"):
        operator("envelope_x", customers(1), tmp_path / name)


def test_a_templated_result_table_name_is_refused_before_any_request(
    docsign_conn: str, sandbox: SandboxServer, tmp_path: Path
) -> None:
    op = operator("envelope_x", customers(1), str(tmp_path / "{{ ds }}.csv"))
    op.result_table = str(tmp_path / "2026-11-26.csv")  # as rendered
    sandbox.clear_requests()
    with pytest.raises(AirflowFailException, match="named like a CSV file"):
        op.execute(ctx())
    assert sandbox.requests() == []
    assert not (tmp_path / "2026-11-26.csv").exists()


def test_output_format_and_a_name_that_disagree_are_refused(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="make them agree"):
        operator("envelope_x", customers(1), tmp_path / "r.parquet", output_format="jsonl")
    op = operator("envelope_x", customers(1), tmp_path / "results.out", output_format="jsonl")
    assert op.output_format == "jsonl"  # an unknown extension with the format given is fine
