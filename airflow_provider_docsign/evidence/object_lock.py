"""Retention of archived objects: S3 Object Lock, set on every object an archive writes (``retention=``).

``retention={"mode": "COMPLIANCE" | "GOVERNANCE", "days": N}`` asks that no archived object (PDFs,
copies, manifest, timestamp token) can be deleted or overwritten for ``N`` days from the archive
run. S3 enforces it, per object version:

* **COMPLIANCE**: nobody, the account's root user included, can delete the version or shorten its
  retention before the date;
* **GOVERNANCE**: users with ``s3:BypassGovernanceRetention`` can.

Object Lock can only be used on a bucket created with it (which also turns versioning on), so the
bucket is checked before anything is downloaded (:meth:`ObjectLock.check`); a destination that is not
on S3 has no such feature and is refused the same way. Retention is only ever extended, never
shortened: an object that already carries a longer one (from an earlier run) keeps it.

Works through the destination's own ``s3fs`` file system (the same credentials and endpoint as the
archive's writes); no Airflow here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = ["MODES", "ObjectLock", "Retention", "RetentionError", "parse_retention"]

MODES = ("COMPLIANCE", "GOVERNANCE")
MAX_DAYS = 100 * 366
_S3_PROTOCOLS = frozenset({"s3", "s3a"})


class RetentionError(Exception):
    """Retention cannot be set at this destination (no Object Lock, not S3, or no permission)."""


@dataclass(frozen=True)
class Retention:
    """A requested retention.

    :param mode: ``COMPLIANCE`` or ``GOVERNANCE``.
    :param days: Days from the archive run.
    """

    mode: str
    days: int

    def until(self, start: datetime) -> datetime:
        """The retain-until date for a run at ``start`` (whole seconds, UTC)."""
        return (start.astimezone(timezone.utc) + timedelta(days=self.days)).replace(microsecond=0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {"mode": self.mode, "days": self.days}


def parse_retention(value: Any) -> Retention | None:
    """Check an operator's ``retention`` argument: ``None``, or ``{"mode": ..., "days": N}``.

    :raises ValueError: Naming what is wrong.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError('retention must be a dict such as {"mode": "COMPLIANCE", "days": 3650}, or None')
    unknown = set(value) - {"mode", "days"}
    if unknown:
        raise ValueError(f"retention has unknown key(s) {sorted(unknown)}; it takes 'mode' and 'days'")
    mode = str(value.get("mode", "")).upper()
    if mode not in MODES:
        raise ValueError(f"retention mode must be one of {', '.join(MODES)}, not {value.get('mode')!r}")
    days = value.get("days")
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise ValueError(f"retention days must be a whole number from 1 to {MAX_DAYS}, not {days!r}")
    return Retention(mode=mode, days=days)


def _protocol(root: Any) -> str:
    protocol = getattr(root, "protocol", None) or "file"
    if isinstance(protocol, tuple | list):
        protocol = protocol[0] if protocol else "file"
    return str(protocol)


class ObjectLock:
    """S3 Object Lock of the bucket behind an archive destination.

    :param root: The destination (an ``ObjectStoragePath`` on ``s3://``; anything else is refused).
    :param uri: The destination as shown in messages (no connection id).
    :raises RetentionError: When the destination is not on S3.
    """

    def __init__(self, root: Any, uri: str) -> None:
        protocol = _protocol(root)
        if protocol not in _S3_PROTOCOLS or not hasattr(root, "fs"):
            raise RetentionError(
                f"retention was asked for, but the destination {uri} is not on S3 and has no object "
                "lock to set: nothing was archived. Use an s3:// bucket with Object Lock enabled, or "
                "set the store's own retention (a GCS bucket retention policy, an Azure immutability "
                "policy) and drop retention=..."
            )
        self.fs = root.fs
        self.uri = uri
        self.bucket = str(root.path).split("/", 1)[0]

    def _call(self, method: str, **kwargs: Any) -> Any:
        return self.fs.call_s3(method, **kwargs)

    def check(self) -> None:
        """Refuse a bucket without Object Lock enabled (before anything is downloaded).

        :raises RetentionError: Naming the bucket and why.
        """
        try:
            answer = self._call("get_object_lock_configuration", Bucket=self.bucket)
        except Exception as err:  # S3 answers an error when the bucket has no lock configuration
            raise RetentionError(
                f"retention was asked for, but the bucket {self.bucket!r} of {self.uri} has no Object "
                f"Lock enabled (or its configuration cannot be read: {type(err).__name__}: {err}): "
                "nothing was archived. Object Lock can only be turned on for a bucket created with it"
            ) from None
        enabled = (answer.get("ObjectLockConfiguration") or {}).get("ObjectLockEnabled")
        if enabled != "Enabled":
            raise RetentionError(
                f"retention was asked for, but the bucket {self.bucket!r} of {self.uri} has no Object "
                "Lock enabled: nothing was archived"
            )

    def _key(self, target: Any) -> str:
        path = str(target.path)
        bucket, _, key = path.partition("/")
        if bucket != self.bucket or not key:
            raise RetentionError(f"{path!r} is not an object of the bucket {self.bucket!r}")
        return key

    def current(self, target: Any) -> tuple[str | None, datetime | None]:
        """The object's retention now: ``(mode, retain_until)``, ``(None, None)`` when it has none.

        Read with HEAD, which carries it (``x-amz-object-lock-*``) wherever retention can be read.
        """
        head = self._call("head_object", Bucket=self.bucket, Key=self._key(target))
        return head.get("ObjectLockMode"), head.get("ObjectLockRetainUntilDate")

    def apply(self, target: Any, retention: Retention, until: datetime) -> dict[str, Any]:
        """Give the object's current version at least ``retention`` until ``until``; never shortens.

        :return: ``{"mode", "retain_until"}`` as the object now carries them.
        :raises RetentionError: When S3 refuses (no permission, say).
        """
        key = self._key(target)
        mode, current_until = self.current(target)
        wanted_mode = "COMPLIANCE" if "COMPLIANCE" in {mode, retention.mode} else retention.mode
        wanted_until = max(until, current_until) if current_until is not None else until
        if mode != wanted_mode or current_until is None or current_until < wanted_until:
            try:
                self._call(
                    "put_object_retention",
                    Bucket=self.bucket,
                    Key=key,
                    Retention={"Mode": wanted_mode, "RetainUntilDate": wanted_until},
                )
            except Exception as err:
                raise RetentionError(
                    f"setting {wanted_mode} retention until {wanted_until.isoformat()} on "
                    f"s3://{self.bucket}/{key} failed: {type(err).__name__}: {err}"
                ) from err
        return {"mode": wanted_mode, "retain_until": wanted_until.isoformat().replace("+00:00", "Z")}
