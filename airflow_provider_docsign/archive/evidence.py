"""Evidence that lasts, for the archiver: long-term validation copies, the manifest's timestamp, retention.

:class:`Evidence` is what :class:`~airflow_provider_docsign.archive.archiver.EnvelopeArchiver` does beyond
copying bytes, in its order:

1. before any download, :meth:`Evidence.check` refuses what cannot work (retention on a store or a
   bucket without Object Lock, a long-term validation copy or a timestamp without a TSA or manifest);
2. after the signatures are checked, :meth:`Evidence.stage_ltv` stages ``NAME.ltv.pdf`` beside each
   signed item (an existing valid copy of the same bytes is kept, so a re-run costs no TSA request);
3. :meth:`Evidence.published` tells whether the archive is already complete: the manifest there
   lists the same files with the same hashes and its token is valid. Then nothing is rewritten and
   the TSA is not asked again;
4. :meth:`Evidence.timestamp` asks the TSA for a token over the final manifest's bytes. Strict by
   default: a TSA that fails, times out or answers a token that fails a check raises
   :class:`~airflow_provider_docsign.exceptions.DocsignArchiveTimestampError` *before anything moves
   into place*, so nothing is published as complete and a retry completes it. ``best_effort``
   archives without the token and logs a warning;
5. at the commit, :meth:`Evidence.commit_ltv` keeps another try's valid copy of the same signed
   bytes that appeared meanwhile; after the manifest and its token are published,
   :meth:`Evidence.settle` reads them back (``manifest_pair``): another try archiving the same
   envelope at once may have crossed them, and the pair is published again;
6. after the commit, :meth:`Evidence.retain` sets Object Lock retention on every object written.

Pure: no Airflow. The TSA settings come from the operator (``hooks.tsa``); requests are bounded.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from airflow_provider_docsign.archive.manifest_pair import PAIR_ROUNDS, pair_in_place, settle, token_name
from airflow_provider_docsign.archive.naming import relative_to_manifest
from airflow_provider_docsign.evidence.ltv import LtvWriter, ltv_name, verify_ltv
from airflow_provider_docsign.evidence.object_lock import ObjectLock, Retention, RetentionError
from airflow_provider_docsign.evidence.signatures import TrustPolicy, UnreadablePdfError
from airflow_provider_docsign.evidence.timestamps import TimestampError
from airflow_provider_docsign.evidence.tsa_client import TsaSettings, request_timestamp
from airflow_provider_docsign.exceptions import (
    DocsignArchiveConflictError,
    DocsignArchiveError,
    DocsignArchiveEvidenceError,
    DocsignArchiveTimestampError,
)

__all__ = ["PAIR_ROUNDS", "TIMESTAMP_MODES", "Evidence", "LtvStaged", "archive_evidence", "token_name"]

#: ``require``: no token, no archive (the task fails and a retry completes it); ``best_effort``: a
#: failed timestamp is a warning and the archive is published without a token.
TIMESTAMP_MODES = ("require", "best_effort")
_CHUNK = 1024 * 1024


@dataclass
class LtvStaged:
    """A long-term validation copy staged for one item.

    :param item_name: The signed item's name (relative to the destination).
    :param name: The copy's name.
    :param temp: Its temporary path (``None`` when an existing copy is kept).
    :param entry: What the manifest records (the ``ltv`` object of the item's entry).
    """

    item_name: str
    name: str
    temp: Any
    entry: dict[str, Any]


@dataclass
class Evidence:
    """Timestamps, long-term validation copies and retention for one archive run.

    :param tsa: The TSA (``None``: no timestamp; ``ltv`` needs one).
    :param timestamp: ``require`` or ``best_effort`` (see :data:`TIMESTAMP_MODES`).
    :param ltv: Store ``NAME.ltv.pdf`` beside each signed item.
    :param retention: Object Lock retention for every object written (S3 only).
    :param trust: The seals' trust policy (to build their paths for the DSS).
    :param log: Where to log.
    """

    tsa: TsaSettings | None = None
    timestamp: str = "require"
    ltv: bool = False
    retention: Retention | None = None
    trust: TrustPolicy | None = None
    log: Any = field(default_factory=lambda: logging.getLogger(__name__))
    lock: ObjectLock | None = field(default=None, init=False)
    _writer: LtvWriter | None = field(default=None, init=False, repr=False)

    @property
    def active(self) -> bool:
        """Whether anything beyond the plain archive is asked for."""
        return self.tsa is not None or self.ltv or self.retention is not None

    def check(self, store: Any, manifest_name: str | None, version: str) -> None:
        """Refuse, before any download, what cannot work at this destination.

        :raises DocsignArchiveEvidenceError: Retention on a store or bucket without Object Lock.
        :raises DocsignArchiveError: A long-term validation copy without a TSA, or a timestamp
            without a manifest to put it on.
        """
        if self.timestamp not in TIMESTAMP_MODES:
            raise ValueError(f"timestamp must be one of {', '.join(TIMESTAMP_MODES)}, not {self.timestamp!r}")
        if self.ltv and self.tsa is None:
            raise DocsignArchiveEvidenceError(
                "ltv=True needs a TSA for the document timestamps: give tsa_conn_id (or the docsign "
                "connection's tsa_conn_id extra); nothing was archived"
            )
        if self.ltv and version != "signed":
            raise DocsignArchiveEvidenceError(
                f"ltv=True extends sealed PDFs: version must be 'signed', not {version!r}"
            )
        if self.tsa is not None and manifest_name is None:
            raise DocsignArchiveEvidenceError(
                "a timestamp covers manifest.json, but manifest_name=None writes no manifest; nothing was "
                "archived"
            )
        if self.retention is not None:
            try:
                self.lock = ObjectLock(store.root, store.uri)
                self.lock.check()
            except RetentionError as err:
                raise DocsignArchiveEvidenceError(str(err)) from None

    def names(self, item_names: Iterable[str], manifest_name: str | None) -> list[str]:
        """Every extra name this run may write (checked to stay inside the destination first)."""
        names = [ltv_name(n) for n in item_names] if self.ltv else []
        if self.tsa is not None and manifest_name:
            names.append(token_name(manifest_name))
        return names

    # -- long-term validation copies --------------------------------------------------------------

    def stage_ltv(
        self, store: Any, items: Iterable[tuple[Any, Any]], manifest_name: str | None, overwrite: bool
    ) -> list[LtvStaged]:
        """Stage a copy for each ``(record, temp)`` of a signed item; keep existing valid copies.

        :raises DocsignArchiveConflictError: A different, invalid file is where a copy goes.
        :raises DocsignArchiveTimestampError: The TSA failed (under ``require``).
        """
        if not self.ltv or self.tsa is None:
            return []
        staged: list[LtvStaged] = []
        try:
            for record, temp in items:
                copy = self._stage_one(store, record, temp, manifest_name, overwrite)
                if copy is not None:
                    staged.append(copy)
        except BaseException:
            for entry in staged:
                if entry.temp is not None:
                    store.remove(entry.temp)
            raise
        return staged

    def _stage_one(
        self, store: Any, record: Any, temp: Any, manifest_name: str | None, overwrite: bool
    ) -> LtvStaged | None:
        name = ltv_name(record.name)
        final = store.path(name)
        base = {
            "name": name,
            **({"path": relative_to_manifest(name, manifest_name)} if manifest_name else {}),
            "uri": store.uri_of(name),
            "derived_from": record.name,
        }
        outcome = "created"
        if store.exists(final):
            kept = self._existing_copy(store, final, record)
            if kept is not None:
                return LtvStaged(record.name, name, None, {**base, **kept, "outcome": "unchanged"})
            if not overwrite:
                raise DocsignArchiveConflictError(
                    f"{base['uri']} exists but is not a valid long-term validation copy of {record.uri}: it "
                    "was left untouched and nothing was archived (set overwrite=True to replace it)"
                )
            outcome = "overwritten"
        if self._writer is None:
            self._writer = LtvWriter(self.tsa, trust=self.trust)  # type: ignore[arg-type]
        out = store.temp_for(name)
        fh = store.open_new(out)
        try:
            with fh, temp.open("rb") as source:
                copy = self._writer.write(source, fh)
        except BaseException as err:
            store.remove(out)
            if isinstance(err, TimestampError) and self.timestamp == "best_effort":
                self.log.warning(
                    "No long-term validation copy of %s (timestamp='best_effort'): %s", record.uri, err
                )
                return None
            if isinstance(err, TimestampError):
                raise DocsignArchiveTimestampError(
                    f"the long-term validation copy of {record.uri}: {err}. Nothing was published; a "
                    "retry completes the archive"
                ) from None
            if isinstance(err, UnreadablePdfError):
                raise DocsignArchiveError(f"the long-term validation copy of {record.uri}: {err}") from None
            raise
        entry = {**base, "sha256": copy.sha256, "size": copy.size, "outcome": outcome, **copy.to_dict()}
        self.log.info(
            "Long-term validation copy %s: document timestamp %s by %s; missing: %s",
            entry["uri"],
            copy.document_timestamp,
            copy.tsa,
            "; ".join(copy.missing) or "nothing",
        )
        return LtvStaged(record.name, name, out, entry)

    def commit_ltv(self, store: Any, copies: list[LtvStaged], records: Iterable[Any]) -> bool:
        """Move each staged copy into place; ``True`` when another try's copy was kept instead of one.

        Two tries archiving one envelope at once (a DAG triggered twice) each stage a copy with a
        document timestamp of its own, so their bytes differ. A copy that appeared meanwhile and
        extends the same signed bytes with a valid timestamp is kept: its entry replaces this try's in
        ``copies``, and the manifest must be staged again. Anything else there fails the try untouched.

        :raises DocsignArchiveConflictError: A different file appeared where a copy goes.
        """
        by_name = {record.name: record for record in records}
        kept = False
        for n, copy in enumerate(copies):
            if copy.temp is None:
                continue
            final, entry = store.path(copy.name), copy.entry
            overwrite = entry["outcome"] == "overwritten"
            if store.commit(copy.temp, final, overwrite=overwrite, same_as=(entry["sha256"], entry["size"])):
                continue
            try:
                theirs = self._existing_copy(store, final, by_name[copy.item_name])
            except OSError:  # replaced again while read
                theirs = None
            if theirs is None:
                raise DocsignArchiveConflictError(f"a different file appeared at {entry['uri']}")
            store.remove(copy.temp)
            base: dict[str, Any] = {
                k: entry[k] for k in ("name", "path", "uri", "derived_from") if k in entry
            }
            copies[n] = LtvStaged(copy.item_name, copy.name, None, {**base, **theirs, "outcome": "unchanged"})
            self.log.info("%s was written meanwhile by another try: its valid copy is kept", entry["uri"])
            kept = True
        return kept

    def _existing_copy(self, store: Any, final: Any, record: Any) -> dict[str, Any] | None:
        """The manifest data of an existing copy that extends exactly these signed bytes, or None."""
        digest, prefix, size = hashlib.sha256(), hashlib.sha256(), 0
        with final.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                room = record.size - size
                if room > 0:
                    prefix.update(chunk[:room])
                digest.update(chunk)
                size += len(chunk)
            if size <= record.size or prefix.hexdigest() != record.sha256:
                return None
            fh.seek(0)
            report = verify_ltv(fh, trust=self.trust, tsa_trust=self.tsa.trust if self.tsa else None)
        if not report.passed or report.timestamp is None:
            return None
        return {
            "sha256": digest.hexdigest(),
            "size": size,
            "document_timestamp": report.timestamp.gen_time,
            "tsa": report.timestamp.tsa,
            "validation_material": {**report.material, "missing": []},
        }

    # -- the manifest ------------------------------------------------------------------------------

    def annotate(
        self,
        manifest: dict[str, Any],
        copies: Iterable[LtvStaged],
        manifest_name: str | None,
        archived_at: str,
    ) -> dict[str, Any]:
        """Add the evidence to the manifest: each item's ``ltv`` copy, ``timestamp`` and ``retention``.

        ``timestamp`` names the token that will lie beside the manifest (the token covers the
        manifest, so the manifest cannot hold the token's own time): a verifier then knows a token is
        expected, and a deleted token fails the audit.
        """
        by_item = {copy.item_name: copy.entry for copy in copies}
        for entry in manifest["files"]:
            if entry.get("name") in by_item:
                entry["ltv"] = by_item[entry["name"]]
        if self.tsa is not None and manifest_name:
            manifest["timestamp"] = {
                "token": token_name(manifest_name).rsplit("/", 1)[-1],
                "hash_algorithm": "sha256",
                "tsa_url": self.tsa.url,
            }
        retention = self.retention_entry(archived_at)
        if retention is not None:
            manifest["retention"] = retention
        return manifest

    def published(
        self, store: Any, manifest_name: str, manifest: Mapping[str, Any], records: Iterable[Any]
    ) -> dict[str, Any] | None:
        """The manifest already published for these very files, with a valid token; else ``None``.

        Every file must be unchanged (or a kept report) and listed there with the same hash, every
        copy too, and the token there must verify over the manifest's bytes.
        """
        if self.tsa is None or any(r.outcome not in {"unchanged", "kept"} for r in records):
            return None
        if any(
            entry.get("ltv", {}).get("outcome", "unchanged") != "unchanged" for entry in manifest["files"]
        ):
            return None
        pair = pair_in_place(store, manifest_name, manifest, self.tsa.trust)
        if pair is None:
            return None
        existing, report = pair
        self.log.info(
            "%s is complete and timestamped (genTime %s by %s): nothing to do",
            store.uri_of(manifest_name),
            report.gen_time,
            report.tsa,
        )
        return existing

    def settle(
        self, store: Any, manifest_name: str, manifest: Mapping[str, Any], publish_again: Callable[[], Any]
    ) -> None:
        """After this try published a manifest and its token: :func:`~.manifest_pair.settle` them."""
        if self.tsa is not None:
            settle(store, manifest_name, manifest, self.tsa.trust, self.log, publish_again)

    def timestamp_token(self, body: bytes, manifest_uri: str) -> bytes | None:
        """A verified token over ``body``; ``None`` under ``best_effort`` when the TSA failed.

        :raises DocsignArchiveTimestampError: Under ``require``, when the TSA failed.
        """
        if self.tsa is None:
            return None
        try:
            result = request_timestamp(self.tsa, data=body)
        except TimestampError as err:
            if self.timestamp == "best_effort":
                self.log.warning(
                    "Archiving %s without a timestamp (timestamp='best_effort'): %s", manifest_uri, err
                )
                return None
            raise DocsignArchiveTimestampError(
                f"timestamping {manifest_uri} failed: {err}. Nothing was published as complete; a retry "
                "completes the archive"
            ) from None
        report = result.report
        self.log.info(
            "Timestamp token over %s: TSA %s, genTime %s, serial %s",
            manifest_uri,
            report.tsa,
            report.gen_time,
            report.serial,
        )
        return result.response

    # -- retention --------------------------------------------------------------------------------

    def retention_entry(self, archived_at: str) -> dict[str, Any] | None:
        """The manifest's ``retention`` object: mode, days and the retain-until date."""
        if self.retention is None:
            return None
        until = self.retention.until(datetime.fromisoformat(archived_at.replace("Z", "+00:00")))
        return {**self.retention.to_dict(), "retain_until": until.isoformat().replace("+00:00", "Z")}

    @staticmethod
    def written(
        records: Iterable[Any], copies: Iterable[LtvStaged], manifest_name: str | None, *, token: bool
    ) -> list[str]:
        """Every name an archive run leaves in place: the objects retention applies to."""
        names = [r.name for r in records] + [c.name for c in copies]
        if manifest_name:
            names += [token_name(manifest_name)] if token else []
            names.append(manifest_name)
        return names

    def retain(self, store: Any, names: Iterable[str], archived_at: str) -> None:
        """Set retention on every object written (never shortening one already longer).

        :raises DocsignArchiveError: When S3 refuses (the next run sets it again).
        """
        if self.retention is None or self.lock is None:
            return
        until = self.retention.until(datetime.fromisoformat(archived_at.replace("Z", "+00:00")))
        for name in names:
            try:
                applied = self.lock.apply(store.path(name), self.retention, until)
            except RetentionError as err:
                raise DocsignArchiveError(
                    f"{err}. The files are in place; the next run sets it again"
                ) from None
            self.log.info(
                "Retention %s until %s on %s", applied["mode"], applied["retain_until"], store.uri_of(name)
            )


def archive_evidence(
    *,
    docsign_hook: Any,
    tsa_conn_id: str | None,
    timestamp: str,
    ltv: bool,
    retention: Retention | None,
    log: Any,
) -> Evidence:
    """The :class:`~airflow_provider_docsign.archive.evidence.Evidence` of an archive task.

    The TSA is ``tsa_conn_id``, else the docsign connection's ``tsa_conn_id`` extra, else none. Every
    archiving operator builds its evidence here, at run time (never while a DAG is parsed).

    :param docsign_hook: The task's ``DocsignHook`` (its connection may name the TSA).
    :param tsa_conn_id: The operator's ``tsa_conn_id``.
    :param timestamp: ``require`` or ``best_effort``.
    :param ltv: Store long-term validation copies.
    :param retention: Object Lock retention (S3 only).
    :param log: The task's logger.
    """
    conn_id = tsa_conn_id or docsign_hook.settings.tsa_conn_id
    from airflow_provider_docsign.hooks.tsa import DocsignTsaHook

    tsa = DocsignTsaHook(conn_id).settings if conn_id else None
    return Evidence(tsa=tsa, timestamp=timestamp, ltv=ltv, retention=retention, log=log)
