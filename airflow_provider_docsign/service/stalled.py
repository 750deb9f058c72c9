"""When a contract is *stalled*: the one definition the UI, the escalation and the metrics examples share.

An envelope is stalled when it is still ``PENDING`` and either

- it is older than the threshold (``created_at`` before ``now - older_than``), or
- a signer's link has expired (unsigned, not CC, ``expiresAt`` before ``now``: the service's own rule,
  :func:`~airflow_provider_docsign.service.expiry.expired_recipients`).

A DRAFT was never sent, and COMPLETED, REJECTED and CANCELLED envelopes are settled: none is stalled.
Where the service was asked (``find_envelopes(has_expired_recipients=True)``), pass its verdict as
``has_expired``: the service's clock then decides, not this machine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_provider_docsign.service.expiry import awaits_signature, expired_recipients, parse_timestamp

#: The default threshold of the Contracts page and the examples: a week.
DEFAULT_STALLED_DAYS = 7.0


@dataclass(frozen=True)
class Stalled:
    """Why an envelope is stalled.

    :param older: It is PENDING and older than the threshold.
    :param expired: How many of its signers' links have expired.
    :param age_days: Its age in days (``None`` without a creation time).
    """

    older: bool
    expired: int
    age_days: float | None

    def reason(self) -> str:
        """One line: ``"pending 9 days (limit 7)"``, ``"2 signing link(s) expired"``, or both."""
        parts = []
        if self.older and self.age_days is not None:
            parts.append(f"pending {self.age_days:.0f} days")
        if self.expired:
            parts.append(f"{self.expired} signing link(s) expired")
        return "; ".join(parts)


def age_days(envelope: Any, now: datetime | None = None) -> float | None:
    """Days since the envelope was created (``None`` when the service sent no creation time).

    :param envelope: An envelope record (``created_at``).
    :param now: The time to compare with (default: now, UTC).
    """
    created = parse_timestamp(getattr(envelope, "created_at", None))
    if created is None:
        return None
    return max(0.0, ((now or datetime.now(timezone.utc)) - created).total_seconds() / 86400)


def stalled(
    envelope: Any,
    now: datetime | None = None,
    *,
    older_than_days: float = DEFAULT_STALLED_DAYS,
    has_expired: bool | None = None,
) -> Stalled | None:
    """Whether ``envelope`` is stalled, and why; ``None`` when it is not.

    :param envelope: An envelope record (``status``, ``created_at``, ``recipients``).
    :param now: The time to compare with (default: now, UTC).
    :param older_than_days: A PENDING envelope older than this many days is stalled.
    :param has_expired: The service's verdict on expired links, when it was asked; ``None``: judge
        each recipient's ``expiresAt`` against ``now``.
    :raises ValueError: when ``older_than_days`` is negative or not a number.
    """
    if (
        not isinstance(older_than_days, int | float)
        or older_than_days < 0
        or older_than_days != older_than_days
    ):
        raise ValueError(f"older_than_days must be a number >= 0, not {older_than_days!r}")
    status = getattr(getattr(envelope, "status", None), "value", getattr(envelope, "status", None))
    if str(status) != "PENDING":
        return None
    moment = now or datetime.now(timezone.utc)
    recipients = tuple(getattr(envelope, "recipients", ()) or ())
    expired = len(expired_recipients(recipients, moment))
    if has_expired is True and not expired:
        # The service says a link expired; this machine's clock may be behind.
        expired = max(1, sum(1 for r in recipients if awaits_signature(r) and r.expires_at))
    elif has_expired is False:
        expired = 0
    age = age_days(envelope, moment)
    older = age is not None and age > older_than_days
    return Stalled(older, expired, age) if older or expired else None


def earliest_expiry(envelope: Any) -> str | None:
    """The earliest ``expiresAt`` among the recipients who still have to sign (ISO text), else ``None``.

    :param envelope: An envelope record (``recipients``).
    """
    found: list[tuple[datetime, str]] = []
    for recipient in getattr(envelope, "recipients", ()) or ():
        moment = parse_timestamp(recipient.expires_at) if awaits_signature(recipient) else None
        if moment is not None:
            found.append((moment, str(recipient.expires_at)))
    return min(found)[1] if found else None


def stalled_cutoff(now: datetime, older_than_days: float) -> datetime:
    """The creation time before which a PENDING envelope is stalled.

    :param now: The time to compare with.
    :param older_than_days: The threshold in days.
    """
    return now - timedelta(days=older_than_days)
