"""Sandbox state: SQLite (one JSON document per object) plus PDF files under the data directory.

All objects are loaded into memory at start and written through to SQLite on every change, so state
survives a restart. One re-entrant lock serialises every change; :meth:`Store.tx` groups writes into one
SQLite transaction so a failed request leaves nothing half-created.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

KINDS = ("envelope", "item", "recipient", "field", "folder", "audit", "attachment")
#: Kinds that belong to an envelope: indexed by ``envelopeId`` so that listing one envelope's children
#: does not scan every object (the export benchmark holds 10,000 envelopes).
CHILD_KINDS = ("item", "recipient", "field", "audit", "attachment")

Obj = dict[str, Any]


class Store:
    """In-memory objects written through to ``<data_dir>/sandbox.sqlite3``.

    :param data_dir: Directory for the database, stored PDFs (``files/``) and upload spool (``tmp/``).
    """

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.data_dir = Path(data_dir)
        self.files_dir = self.data_dir / "files"
        self.tmp_dir = self.data_dir / "tmp"
        self.files_dir.mkdir(parents=True, exist_ok=True)
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.tmp_dir.iterdir():
            with contextlib.suppress(OSError):
                stale.unlink()
        self.lock = threading.RLock()
        self._db = sqlite3.connect(
            self.data_dir / "sandbox.sqlite3", check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS objects (kind TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL,"
            " PRIMARY KEY (kind, id))"
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)"
        )
        self._in_tx = 0
        self.objects: dict[str, dict[Any, Obj]] = {k: {} for k in KINDS}
        for kind, oid, data in self._db.execute("SELECT kind, id, data FROM objects"):
            key: Any = int(oid) if kind in ("recipient", "field") else oid
            self.objects[kind][key] = json.loads(data)
        self._by_env: dict[str, dict[str, dict[Any, None]]] = {}
        self._reindex()

    def _reindex(self) -> None:
        self._by_env = {kind: {} for kind in CHILD_KINDS}
        for kind in CHILD_KINDS:
            for key, obj in self.objects[kind].items():
                self._index(kind, key, obj)

    def _index(self, kind: str, key: Any, obj: Obj) -> None:
        if kind in self._by_env:
            self._by_env[kind].setdefault(str(obj.get("envelopeId")), {})[key] = None

    def _unindex(self, kind: str, key: Any, obj: Obj) -> None:
        if kind in self._by_env:
            self._by_env[kind].get(str(obj.get("envelopeId")), {}).pop(key, None)

    def _children(self, kind: str, envelope_id: str) -> list[Obj]:
        objects = self.objects[kind]
        keys = list(self._by_env[kind].get(envelope_id, {}))
        return [objects[k] for k in keys if k in objects]

    # -- transactions ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def tx(self) -> Iterator[None]:
        """Hold the lock and group all writes into one SQLite transaction (rolled back on error).

        In-memory changes are only made through :meth:`put` / :meth:`remove`, which also record an undo
        entry, so a rollback restores memory as well.
        """
        with self.lock:
            outer = self._in_tx == 0
            if outer:
                self._db.execute("BEGIN")
                self._undo: list[tuple[str, Any, Obj | None]] = []
            self._in_tx += 1
            try:
                yield
            except BaseException:
                self._in_tx -= 1
                if outer:
                    self._db.execute("ROLLBACK")
                    for kind, key, old in reversed(self._undo):
                        if old is None:
                            self.objects[kind].pop(key, None)
                        else:
                            self.objects[kind][key] = old
                    self._reindex()
                raise
            else:
                self._in_tx -= 1
                if outer:
                    self._db.execute("COMMIT")

    # -- objects --------------------------------------------------------------------------------
    def get(self, kind: str, key: Any) -> Obj | None:
        """The stored object, or None."""
        return self.objects[kind].get(key)

    def edit(self, kind: str, key: Any) -> Obj | None:
        """A deep copy of the stored object to change and :meth:`put` back (keeps rollback exact)."""
        obj = self.objects[kind].get(key)
        return copy.deepcopy(obj) if obj is not None else None

    def all(self, kind: str) -> list[Obj]:
        """All objects of a kind (a snapshot list)."""
        return list(self.objects[kind].values())

    def put(self, kind: str, obj: Obj) -> Obj:
        """Insert or replace ``obj`` (keyed by ``obj["id"]``)."""
        with self.tx():
            key = obj["id"]
            old = self.objects[kind].get(key)
            self._undo.append((kind, key, old))
            if old is not None:
                self._unindex(kind, key, old)
            self.objects[kind][key] = obj
            self._index(kind, key, obj)
            self._db.execute(
                "INSERT OR REPLACE INTO objects (kind, id, data) VALUES (?, ?, ?)",
                (kind, str(key), json.dumps(obj)),
            )
        return obj

    def remove(self, kind: str, key: Any) -> None:
        """Delete an object if present."""
        with self.tx():
            old = self.objects[kind].pop(key, None)
            if old is not None:
                self._undo.append((kind, key, old))
                self._unindex(kind, key, old)
            self._db.execute("DELETE FROM objects WHERE kind = ? AND id = ?", (kind, str(key)))

    def next_value(self, name: str) -> int:
        """Next value of a global auto-increment counter (recipient and field ids, document numbers)."""
        with self.tx():
            row = self._db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
            value = (row[0] if row else 0) + 1
            self._db.execute("INSERT OR REPLACE INTO counters (name, value) VALUES (?, ?)", (name, value))
            return value

    # -- relations ------------------------------------------------------------------------------
    def items_of(self, envelope_id: str) -> list[Obj]:
        """Items of an envelope, ordered by ``order``."""
        items = self._children("item", envelope_id)
        return sorted(items, key=lambda i: (i["order"], i["_seq"]))

    def recipients_of(self, envelope_id: str) -> list[Obj]:
        """Recipients of an envelope, ordered by id."""
        recs = self._children("recipient", envelope_id)
        return sorted(recs, key=lambda r: r["id"])

    def fields_of(self, envelope_id: str) -> list[Obj]:
        """Fields of an envelope, ordered by id."""
        fields = self._children("field", envelope_id)
        return sorted(fields, key=lambda f: f["id"])

    def audit_of(self, envelope_id: str) -> list[Obj]:
        """Audit entries of an envelope, oldest first."""
        logs = self._children("audit", envelope_id)
        return sorted(logs, key=lambda a: a["_seq"])

    def attachments_of(self, envelope_id: str) -> list[Obj]:
        """Attachments (links) of an envelope, in no particular order."""
        return self._children("attachment", envelope_id)

    def file_path(self, name: str) -> Path:
        """Absolute path of a stored file by its name under ``files/``."""
        return self.files_dir / name

    def close(self) -> None:
        """Close the database."""
        with self.lock:
            self._db.close()
