"""One owner at a time: a campaign's lease, one per campaign and service, wherever its tables are.

Before a try sends anything it takes its campaign's lease: a small JSON file named after the service
(the connection's base URL) and the campaign id (``.docsign-campaign-<digest>.lease.json``), kept in
one place for every campaign, whatever result table a try names: ``[docsign] campaign_lease_dir``
(see :func:`~airflow_provider_docsign.bulk.store.lease_folder`), a local folder by default, an object
store or a shared path for workers on many machines. The record holds the owner (an id unique to the
try, with its host, process and task) and its heartbeat, renewed every ``beat`` seconds by a
background thread while the try runs. A second try that finds a fresh heartbeat of another owner
waits, at most one stale period and saying why, and takes the lease when it is given back or goes
stale; an owner still beating after that is named in the error. A heartbeat older than
``stale_after`` belongs to a dead try, and one more than ``stale_after`` in the future to a clock
that cannot be believed: either is taken over, and that is logged.

On a local disk the lease is opened only as a regular file with one link (checked on the open
descriptor, not followed if it is a symbolic link): a hard link at its path cannot turn the lease's
writes against another file.

Every change is a read, a decision and a conditional write:

* **local disk**: the record is read and rewritten under an exclusive ``flock`` on the lease file
  (created with ``O_EXCL`` the first time), so two processes on one machine never both win. Shared
  file systems whose ``flock`` is local to each machine (some NFS set-ups) do not give that guarantee;
  use an object store or one machine's disk for a campaign run from many workers;
* **S3**: ``If-None-Match: *`` when there is no lease yet, ``If-Match: <ETag>`` to replace one; a
  write that loses the race is refused by the store and read again;
* **other object stores**: written, then read back to check that the record is ours (best effort: two
  tries starting within the same second may both win). A warning says so once.

A released lease is not deleted (a deleted file would let a process holding the old file's lock and a
process creating a new one both win): its record says ``owner: null``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import secrets
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_docsign.archive.store import is_local, quiet_upath, uri_of
from airflow_provider_docsign.exceptions import DocsignError

__all__ = [
    "BEAT_SECONDS",
    "CampaignLease",
    "LeaseHeldError",
    "LeaseLostError",
    "LeaseRefusedError",
    "lease_name",
]

#: How often the owner renews its heartbeat (seconds).
BEAT_SECONDS = 10.0
#: Attempts of one conditional write before giving up (another writer won each time).
_RACES = 5
_VERSION = 1


class LeaseHeldError(DocsignError):
    """Another try owns the campaign and its heartbeat is fresh: this try sends nothing."""


class LeaseLostError(DocsignError):
    """The lease was taken over while this try ran (its heartbeat went stale): it must stop sending."""


class LeaseRefusedError(DocsignError):
    """The lease file is not one a try may write (a symbolic link, a hard link, not a regular file)."""


def lease_name(campaign_id: str, service: str = "") -> str:
    """The lease file's name for ``campaign_id`` at ``service`` (a digest: ids may hold any character).

    :param campaign_id: The campaign.
    :param service: The service's identity (its base URL, without credentials); ``""`` for none.
    """
    text = f"{service}\n{campaign_id}" if service else campaign_id
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
    return f".docsign-campaign-{digest}.lease.json"


@dataclass(frozen=True)
class _Record:
    owner: str | None
    describe: str
    beat: float


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a lease can hold")


def _parse(data: bytes | None) -> _Record | None:
    """The lease record, or ``None`` when there is none or it cannot be read (then it is free)."""
    if not data:
        return None
    try:
        body = json.loads(data, parse_constant=_refuse_constant)
        owner, describe, beat = body["owner"], body.get("describe", ""), float(body["beat"])
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    if owner is not None and not isinstance(owner, str):
        return None
    if not math.isfinite(beat):
        return None
    return _Record(owner, str(describe)[:300], beat)


class CampaignLease:
    """The lease of one campaign in the folder of its result table.

    :param folder: The folder of leases: a local ``Path`` or an ``ObjectStoragePath``.
    :param campaign_id: The campaign.
    :param describe: Who this try is, for the other tries' errors (task, try number, host, pid).
    :param stale_after: Seconds after its last beat when a lease counts as abandoned.
    :param log: Where takeovers, waits and warnings go.
    :param clock: Wall-clock seconds (the heartbeat is compared across machines).
    :param service: The service's identity (the connection's base URL): a campaign's lease is one per
        service.
    :param beat: Seconds between two heartbeats (default :data:`BEAT_SECONDS`).
    :param wait: Seconds a try waits for a fresh lease of another owner before it fails (default:
        ``stale_after``, long enough for a dead owner's lease to go stale).
    """

    def __init__(
        self,
        folder: Any,
        campaign_id: str,
        *,
        describe: str,
        stale_after: float,
        log: Any,
        clock: Callable[[], float] = time.time,
        service: str = "",
        beat: float = BEAT_SECONDS,
        wait: float | None = None,
    ) -> None:
        self.campaign_id = campaign_id
        self.service = service
        self.beat = beat
        self.wait = stale_after if wait is None else wait
        with quiet_upath():
            self.path = folder / lease_name(campaign_id, service)
        self.owner = f"{secrets.token_hex(8)}"
        self.describe = f"{describe} on {socket.gethostname()} pid {os.getpid()}"
        self.stale_after = stale_after
        self.log = log
        self._clock = clock
        self._local = is_local(self.path)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost: LeaseLostError | None = None

    @property
    def uri(self) -> str:
        """The lease file's URI (no connection id)."""
        with quiet_upath():
            return uri_of(self.path)

    # -- taking, renewing, giving back -------------------------------------------------------------

    def acquire(self) -> None:
        """Take the lease, waiting for a fresh one of another owner at most :attr:`wait` seconds.

        :raises LeaseHeldError: naming the owner, when its heartbeat stayed fresh all that time.
        """
        deadline = time.monotonic() + self.wait
        pause = min(max(self.beat / 2, 0.05), 5.0)
        waiting = False
        while True:
            try:
                self._update(self._take)
                break
            except LeaseHeldError as err:
                if time.monotonic() >= deadline:
                    raise
                if not waiting:
                    waiting = True
                    self.log.info(
                        "Waiting up to %.0fs for the lease of campaign %r: %s",
                        self.wait,
                        self.campaign_id,
                        getattr(err, "holder", err),
                    )
                time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
        self._thread = threading.Thread(target=self._beat_loop, name="docsign-campaign-lease", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Stop the heartbeat and give the lease back (when it is still ours)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.beat + 5)
        with contextlib.suppress(LeaseLostError, OSError):
            self._update(self._give_back)

    def check(self) -> None:
        """Raise :class:`LeaseLostError` if a heartbeat found the lease taken over."""
        if self.lost is not None:
            raise self.lost

    def __enter__(self) -> CampaignLease:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # -- decisions: current record -> the record to write (or None: leave it) --------------------

    def _mine(self) -> bytes:
        body = {
            "version": _VERSION,
            "campaign_id": self.campaign_id,
            "service": self.service,
            "owner": self.owner,
            "describe": self.describe,
            "beat": self._clock(),
            "stale_after": self.stale_after,
        }
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def _take(self, current: _Record | None) -> bytes:
        now = self._clock()
        if current is not None and current.owner not in (None, self.owner):
            age = now - current.beat
            if -age > self.stale_after:
                self.log.warning(
                    "The lease of campaign %r names %s with a heartbeat %.0fs in the future (more than the "
                    "%.0fs stale period): a clock problem (a skewed clock on that worker, or a forged "
                    "record), so it is not believed fresh; taking it over. Check the clocks (NTP) of the "
                    "workers",
                    self.campaign_id,
                    current.describe,
                    -age,
                    self.stale_after,
                )
                return self._mine()
            if age < self.stale_after:
                when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(current.beat))
                holder = (
                    f"campaign {self.campaign_id!r} is being sent by another try ({current.describe}; "
                    f"last heartbeat {when}, {max(age, 0.0):.0f}s ago, stale after {self.stale_after:.0f}s)"
                )
                error = LeaseHeldError(
                    f"{holder}: this try waited {self.wait:.0f}s and sent nothing. Wait for it to end, or, "
                    f"if it is dead, retry after its lease goes stale ({self.uri})"
                )
                error.holder = holder  # type: ignore[attr-defined]
                raise error
            self.log.warning(
                "Taking over the lease of campaign %r from %s: its last heartbeat is %.0fs old (stale after "
                "%.0fs), so it is not running any more",
                self.campaign_id,
                current.describe,
                age,
                self.stale_after,
            )
        return self._mine()

    def _renew(self, current: _Record | None) -> bytes:
        if current is None or current.owner != self.owner:
            who = current.describe if current is not None and current.owner else "nobody"
            raise LeaseLostError(
                f"the lease of campaign {self.campaign_id!r} was taken over by {who} while this try ran "
                "(its heartbeat was late): this try stops sending; the checkpoint lets a later try resume"
            )
        return self._mine()

    def _give_back(self, current: _Record | None) -> bytes | None:
        if current is None or current.owner != self.owner:
            return None
        body = {
            "version": _VERSION,
            "campaign_id": self.campaign_id,
            "service": self.service,
            "owner": None,
            "beat": self._clock(),
        }
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def _beat_loop(self) -> None:
        while not self._stop.wait(self.beat):
            try:
                self._update(self._renew)
            except LeaseLostError as err:
                self.lost = err
                self.log.error("%s", err)
                return
            except OSError as err:  # a store that is down for a moment: the next beat tries again
                self.log.warning("Could not renew the lease of campaign %r: %s", self.campaign_id, err)

    # -- the stores ---------------------------------------------------------------------------------

    def _update(self, decide: Callable[[_Record | None], bytes | None]) -> None:
        if self._local:
            self._update_local(decide)
        else:
            with quiet_upath():
                self._update_object(decide)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[int]:
        import fcntl

        path: Path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        flags |= getattr(os, "O_NONBLOCK", 0)  # a FIFO at the path is refused below, never waited on
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            fd = os.open(path, flags)
        try:
            info = os.fstat(fd)  # on the descriptor: what was opened, not what the path names now
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                what = (
                    f"has {info.st_nlink} links (a hard link to another file)"
                    if stat.S_ISREG(info.st_mode)
                    else "is not a regular file"
                )
                raise LeaseRefusedError(
                    f"the lease of campaign {self.campaign_id!r} ({path}) {what}: it was not written, and "
                    "this try sent nothing. Remove that path (an administrator's job: the lease folder "
                    "is [docsign] campaign_lease_dir) and run the task again"
                )
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _update_local(self, decide: Callable[[_Record | None], bytes | None]) -> None:
        try:
            with self._locked() as fd:
                with os.fdopen(os.dup(fd), "rb") as fh:
                    data = fh.read(64 * 1024)
                new = decide(_parse(data))
                if new is None:
                    return
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, new)
                os.fsync(fd)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise LeaseRefusedError(
                    f"the campaign's lease {self.path} is a symbolic link: it was not followed, and this "
                    "try sent nothing. Remove that link and run the task again"
                ) from None
            raise

    def _update_object(self, decide: Callable[[_Record | None], bytes | None]) -> None:
        fs, key = self.path.fs, self.path.path
        conditional = type(fs).__module__.startswith("s3fs")
        for _ in range(_RACES):
            with contextlib.suppress(Exception):
                fs.invalidate_cache(key)
            try:
                info = fs.info(key)
                etag, data = info.get("ETag"), bytes(fs.cat_file(key))
            except FileNotFoundError:
                etag, data = None, None
            new = decide(_parse(data))
            if new is None:
                return
            if not conditional:
                self._warn_best_effort()
                fs.pipe_file(key, new)
                with contextlib.suppress(Exception):
                    fs.invalidate_cache(key)
                if _parse(bytes(fs.cat_file(key))) == _parse(new):
                    return
                continue
            try:
                if etag is None:
                    fs.pipe_file(key, new, mode="create")
                else:
                    fs.pipe_file(key, new, IfMatch=etag)
                return
            except (FileExistsError, OSError) as err:
                if (
                    "PreconditionFailed" not in repr(err)
                    and "412" not in str(err)
                    and not isinstance(err, FileExistsError)
                ):
                    raise
                continue  # another try wrote first: read again and decide again
        raise LeaseHeldError(
            f"campaign {self.campaign_id!r}: the lease {self.uri} kept changing under this try ({_RACES} "
            "conditional writes lost): another try is starting; this try sent nothing"
        )

    _warned = False

    def _warn_best_effort(self) -> None:
        if not CampaignLease._warned:
            CampaignLease._warned = True
            self.log.warning(
                "The result table's store (%s) has no conditional write here: the campaign lease is best "
                "effort (two tries starting within a second may both send); keep result tables on a local "
                "disk or S3 for a strict lease",
                self.uri,
            )
