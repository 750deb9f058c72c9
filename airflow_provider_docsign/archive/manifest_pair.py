"""A manifest and its RFC 3161 token beside it: one pair, even when two tries publish at the same time.

The archiver publishes the token (``manifest.json.tsr``), then the manifest. Two tries archiving one
envelope into one folder at once (a DAG triggered twice, whose sensors see the completion at the same
poll) each publish their own pair; interleaved, one try's token can end beside the other's manifest,
and the audit fails such an archive. :func:`settle` reads the pair back after a try published it and
publishes the try's own pair again while they do not match, a bounded number of times.
:func:`pair_in_place` is also how :meth:`~.evidence.Evidence.published` tells a complete archive.

Pure: no Airflow, no HTTP (the store reads, the token is checked in this process).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_docsign.evidence.signatures import TrustPolicy
from airflow_provider_docsign.evidence.timestamps import TOKEN_SUFFIX, TimestampError, verify_timestamp
from airflow_provider_docsign.exceptions import DocsignArchiveError

__all__ = ["PAIR_ROUNDS", "pair_in_place", "settle", "token_name"]

#: How many times a try publishes its manifest and token again when another try's writes crossed them.
PAIR_ROUNDS = 3
#: How long a try waits before reading a crossed pair again: another try between its token and its
#: manifest completes its own pair in that moment.
PAIR_PAUSE = 0.2
_MAX_MANIFEST_BYTES = 16 * 1024 * 1024
_MAX_TOKEN_BYTES = 1024 * 1024


def token_name(manifest_name: str) -> str:
    """The token's name beside the manifest: ``manifest.json`` -> ``manifest.json.tsr``."""
    return manifest_name + TOKEN_SUFFIX


def pair_in_place(
    store: Any, manifest_name: str, manifest: Mapping[str, Any], trust: TrustPolicy | None
) -> tuple[dict[str, Any], Any] | None:
    """The manifest in place and its token's report; ``None`` unless they are one pair for these files.

    The token must verify over the manifest's bytes (under ``trust``, the pinned TSA), and the
    manifest list the files of ``manifest`` with the same hashes. A file replaced or removed while it
    is read (s3fs's ``FileExpired``: another try is writing) is "not a pair yet".
    """
    try:
        body = _read_bounded(store, store.path(manifest_name), _MAX_MANIFEST_BYTES)
        token = _read_bounded(store, store.path(token_name(manifest_name)), _MAX_TOKEN_BYTES)
    except OSError:
        return None
    if body is None or token is None:
        return None
    try:
        existing = json.loads(body)
        report = verify_timestamp(token, body, trust=trust)
    except (ValueError, TimestampError):
        return None
    if not report.passed or not isinstance(existing, dict) or _hashes(existing) != _hashes(manifest):
        return None
    return existing, report


def settle(
    store: Any,
    manifest_name: str,
    manifest: Mapping[str, Any],
    trust: TrustPolicy | None,
    log: logging.Logger,
    publish_again: Callable[[], Any],
) -> None:
    """After a try published a manifest and its token: make sure the two in place are one pair.

    A token that verifies over the manifest in place, which lists these very files, is done,
    whichever try wrote it. A crossed pair is read again after :data:`PAIR_PAUSE`; still crossed,
    this try publishes its own pair again (``publish_again``: its manifest and a new token), at most
    :data:`PAIR_ROUNDS` times. The try that publishes last reads its own pair back.

    :param trust: The pinned TSA certificates, if any (as the token was checked when asked for).
    :param log: The task's logger.
    :raises DocsignArchiveError: When the pair still does not match (a retry completes it).
    """
    for round_ in range(PAIR_ROUNDS + 1):
        if _settled(store, manifest_name, manifest, trust):
            return
        if round_ == PAIR_ROUNDS:
            break
        log.warning(
            "The timestamp token beside %s does not cover the manifest there: another try published at "
            "the same time. Publishing this try's manifest and a new token again",
            store.uri_of(manifest_name),
        )
        publish_again()
    raise DocsignArchiveError(
        f"the timestamp token beside {store.uri_of(manifest_name)} still does not cover the manifest "
        f"there after {PAIR_ROUNDS} tries to publish them again: other tries (or something else) keep "
        "writing in the same folder. A retry completes the archive"
    )


def _settled(store: Any, manifest_name: str, manifest: Mapping[str, Any], trust: TrustPolicy | None) -> bool:
    if pair_in_place(store, manifest_name, manifest, trust) is not None:
        return True
    time.sleep(PAIR_PAUSE)
    return pair_in_place(store, manifest_name, manifest, trust) is not None


def _read_bounded(store: Any, target: Any, limit: int) -> bytes | None:
    if not store.exists(target) or store.size(target) > limit:
        return None
    with target.open("rb") as fh:
        return bytes(fh.read(limit + 1))


def _hashes(manifest: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """What must match for an existing manifest to stand for this run: every name and hash."""
    entries = [e for e in manifest.get("files") or () if isinstance(e, dict)]
    entries += [manifest[k] for k in ("audit_log", "certificate") if isinstance(manifest.get(k), dict)]
    out: list[tuple[Any, ...]] = []
    for entry in entries:
        ltv: dict[str, Any] = entry["ltv"] if isinstance(entry.get("ltv"), dict) else {}
        out.append((entry.get("name"), entry.get("sha256"), ltv.get("name"), ltv.get("sha256")))
    return sorted(out, key=repr)
