"""A manifest and its timestamp token are one pair, even when two tries publish them at the same time.

Each try publishes its token, then its manifest. Two tries archiving one envelope into one folder at
once (a DAG triggered twice, with a TSA) can interleave: one try's token ends beside the other's
manifest, a pair the audit fails. Each try reads the pair back after publishing
(``Evidence.settle``): a token that verifies over the manifest in place, listing the same files, is
done, whichever try wrote it; otherwise the try publishes its own pair again, a bounded number of
times, then fails so that a retry completes the archive.

Every token here is a real one from the sandbox's TSA over HTTP, counted there; the crossed pair is
what a concurrent try leaves on disk. The concurrent tries themselves, with a TSA, are in
``test_archive_concurrent_tries.py``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import completed_envelope, tsa_conn_json

from airflow_provider_docsign.archive.evidence import PAIR_ROUNDS, Evidence, token_name
from airflow_provider_docsign.archive.store import Store
from airflow_provider_docsign.evidence.timestamps import verify_timestamp
from airflow_provider_docsign.evidence.tsa_client import request_timestamp
from airflow_provider_docsign.exceptions import DocsignArchiveError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.hooks.tsa import DocsignTsaHook
from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

MANIFEST = "PAIRS-1/manifest.json"


@pytest.fixture
def tsa_pairs(sandbox: SandboxServer, docsign_conn: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``tsa_pairs``: the sandbox's TSA as an Airflow connection, its certificate pinned."""
    sandbox.clear_tsa()
    monkeypatch.setenv("AIRFLOW_CONN_TSA_PAIRS", tsa_conn_json(sandbox, timeout=5))
    yield "tsa_pairs"
    sandbox.clear_tsa()


@pytest.fixture
def archived(
    tsa_pairs: str, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> tuple[Store, Evidence, dict[str, Any]]:
    """One envelope archived with a token by the operator; the store, the evidence and the manifest."""
    files = [make_pdf("pairs/Agreement.pdf", title="Agreement")]
    envelope_id = completed_envelope(DocsignHook(), sandbox, files, title="Pairs", external_id="PAIRS-1")
    destination = tmp_path / "archive"
    operator = DocsignArchiveSignedDocumentsOperator(
        task_id="archive", envelope_id=envelope_id, destination=destination, tsa_conn_id=tsa_pairs
    )
    operator.execute({})  # type: ignore[arg-type]
    evidence = Evidence(
        tsa=DocsignTsaHook(tsa_pairs).settings,
        timestamp="require",
        ltv=False,
        retention=None,
        log=logging.getLogger("test"),
    )
    manifest = json.loads((destination / MANIFEST).read_text())
    return Store(destination, None), evidence, manifest


def _token_over(evidence: Evidence, body: bytes) -> bytes:
    assert evidence.tsa is not None
    return request_timestamp(evidence.tsa, data=body).response


def _other_try(evidence: Evidence, manifest: dict[str, Any]) -> tuple[bytes, bytes]:
    """The pair another try of the same envelope would publish: the same files, its own time."""
    body = json.dumps({**manifest, "archived_at": "2026-11-28T00:00:00.000Z"}, indent=2).encode() + b"\n"
    return body, _token_over(evidence, body)


def _pair_holds(store: Store, evidence: Evidence) -> bool:
    body = store.path(MANIFEST).read_bytes()
    token = store.path(token_name(MANIFEST)).read_bytes()
    assert evidence.tsa is not None
    return verify_timestamp(token, body, trust=evidence.tsa.trust).passed


def test_the_operators_own_archive_reads_back_as_one_pair_with_one_token(
    archived: tuple[Store, Evidence, dict[str, Any]], sandbox: SandboxServer
) -> None:
    store, evidence, _ = archived
    assert _pair_holds(store, evidence)
    assert len(sandbox.tsa_requests()) == 1  # reading the pair back asks the TSA nothing


def test_a_token_of_the_other_try_beside_this_manifest_is_published_again(
    archived: tuple[Store, Evidence, dict[str, Any]], sandbox: SandboxServer
) -> None:
    store, evidence, manifest = archived
    mine = store.path(MANIFEST).read_bytes()
    _body, theirs = _other_try(evidence, manifest)
    store.path(token_name(MANIFEST)).write_bytes(theirs)  # crossed: their token, this manifest
    assert not _pair_holds(store, evidence)
    published: list[int] = []

    def publish_again() -> None:  # what the archiver does: this manifest, and a new token over it
        published.append(1)
        store.path(token_name(MANIFEST)).write_bytes(_token_over(evidence, mine))
        store.path(MANIFEST).write_bytes(mine)

    evidence.settle(store, MANIFEST, manifest, publish_again)

    assert published == [1]
    assert _pair_holds(store, evidence)
    assert store.path(MANIFEST).read_bytes() == mine


def test_the_other_tries_whole_pair_for_the_same_files_is_kept(
    archived: tuple[Store, Evidence, dict[str, Any]],
) -> None:
    store, evidence, manifest = archived
    body, token = _other_try(evidence, manifest)
    store.path(token_name(MANIFEST)).write_bytes(token)
    store.path(MANIFEST).write_bytes(body)

    evidence.settle(store, MANIFEST, manifest, lambda: pytest.fail("a valid pair was published again"))

    assert store.path(MANIFEST).read_bytes() == body


@pytest.mark.parametrize(
    "in_place",
    ["another envelope's files", "a token over nothing here", "no token", "a manifest that is not JSON"],
)
def test_a_pair_that_stays_crossed_fails_the_try_after_a_bounded_number_of_rounds(
    archived: tuple[Store, Evidence, dict[str, Any]], in_place: str
) -> None:
    store, evidence, manifest = archived
    token_path, manifest_path = store.path(token_name(MANIFEST)), store.path(MANIFEST)
    other = {**manifest, "files": [{**manifest["files"][0], "sha256": "0" * 64}]}

    def cross() -> None:  # another try (or a person) keeps writing in the same folder
        if in_place == "another envelope's files":
            body = json.dumps(other).encode()
            manifest_path.write_bytes(body)
            token_path.write_bytes(_token_over(evidence, body))
        elif in_place == "a token over nothing here":
            token_path.write_bytes(_token_over(evidence, b"not this manifest"))
        elif in_place == "no token":
            token_path.unlink(missing_ok=True)
        else:
            manifest_path.write_bytes(b"\xff{not json")

    cross()
    rounds: list[int] = []
    with pytest.raises(DocsignArchiveError) as failed:
        evidence.settle(store, MANIFEST, manifest, lambda: (rounds.append(1), cross()))

    assert len(rounds) == PAIR_ROUNDS
    message = str(failed.value)
    assert store.uri_of(MANIFEST) in message
    assert "A retry completes the archive" in message
