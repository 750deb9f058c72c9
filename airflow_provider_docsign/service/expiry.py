"""Signing-link expiry and reminders (pure code: no Airflow, no network).

- :func:`expiration_period_meta` and :func:`reminder_settings_meta` turn what a user writes
  (``"14d"``, ``"2w"``, ``"1m"``, ``{"unit": "day", "amount": 14}``, ``None``) into the service's
  ``meta.envelopeExpirationPeriod`` and ``meta.reminderSettings``, refusing anything else locally with
  a message that names the parameter. Shapes follow the real service's schema (Documenso 2.17,
  ``ZEnvelopeExpirationPeriod`` and ``ZEnvelopeReminderSettings``): a ``{unit, amount}`` with
  ``amount`` an integer >= 1, or ``{disabled: true}``.
- :func:`awaits_signature` is the one rule for "this recipient still has to sign" (not CC,
  ``NOT_SIGNED``), used by the expiry check, the reminders operator and the webhook events.
- :func:`expired_recipients` says which recipients of an envelope can no longer sign because their
  link expired (unsigned, not CC, ``expiresAt`` in the past). On the real service the envelope
  **stays PENDING** when that happens, so a wait must look at the recipients, not only the status.
- :func:`reminded_recipients` reads the reminders the service sent from its own audit log, bounded by
  an audit entry or by a moment on the **service's** clock, never by Airflow's.
- :func:`mask_email` shortens an e-mail address for logs and error messages.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from airflow_provider_docsign._text import printable
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service.models import Recipient, parse_ts

__all__ = [
    "DEFAULT",
    "awaits_signature",
    "expiration_period_meta",
    "expired_recipients",
    "mask_email",
    "merge_meta",
    "parse_timestamp",
    "period_meta_fields",
    "period_to_timedelta",
    "reminded_recipients",
    "reminder_settings_meta",
]

#: The default of ``expiration_period`` and ``reminders``: send nothing, so the team's or the
#: organisation's settings apply (on the real service: links expire after 3 months).
DEFAULT = "default"

_LETTERS = {"d": "day", "w": "week", "m": "month", "y": "year"}
_EXPIRY_UNITS = ("day", "week", "month", "year")
_REMINDER_UNITS = ("day", "week", "month")  # the service's reminder schema has no "year"
_PERIOD = re.compile(r"^(\d+)([a-z])$")
#: How the real service turns a period into a duration (luxon ``Duration.toMillis``: a month is 30
#: days and a year 365, as the recordings show: 3 months after 2026-11-23 is 2027-02-21).
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}


def _examples(units: tuple[str, ...]) -> str:
    letters = ", ".join(f"'1{u[0]}'" for u in units)
    names = "|".join(units)
    return (
        f"write a whole number followed by one unit letter ({letters}; e.g. '14d' or '2w') "
        f"or a mapping {{'unit': {names!r}, 'amount': 14}}"
    )


def _period(value: Any, name: str, units: tuple[str, ...]) -> dict[str, Any]:
    """One ``{unit, amount}`` from ``"14d"`` or a mapping; ``None`` is ``{disabled: true}``."""
    if value is None:
        return {"disabled": True}
    if isinstance(value, Mapping):
        if set(value) == {"disabled"}:
            if value["disabled"] is not True:
                raise DocsignValidationError([f"{name}: 'disabled' must be true"], name)
            return {"disabled": True}
        extra = sorted(set(map(str, value)) - {"unit", "amount"})
        if extra or "unit" not in value or "amount" not in value:
            raise DocsignValidationError(
                [f"{name} must have exactly the keys 'unit' and 'amount', got {sorted(map(str, value))}"],
                name,
            )
        unit, amount = value["unit"], value["amount"]
        if not isinstance(unit, str) or unit.strip().lower() not in units:
            raise DocsignValidationError([f"{name}: unit {unit!r} is not one of {list(units)}"], name)
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise DocsignValidationError(
                [f"{name}: amount must be a whole number, got {type(amount).__name__} {amount!r}"], name
            )
        if amount < 1:
            raise DocsignValidationError([f"{name}: amount must be at least 1, got {amount}"], name)
        return {"unit": unit.strip().lower(), "amount": amount}
    if isinstance(value, bool | int | float):
        raise DocsignValidationError(
            [f"{name} {value!r} is a bare number without a unit; {_examples(units)}"], name
        )
    if not isinstance(value, str):
        raise DocsignValidationError(
            [f"{name} must be a period such as '14d', got {type(value).__name__}; {_examples(units)}"], name
        )
    text = value.strip().lower()
    match = _PERIOD.match(text)
    if match is None or match[2] not in _LETTERS or _LETTERS[match[2]] not in units:
        raise DocsignValidationError([f"{name} {value!r} is not a period; {_examples(units)}"], name)
    amount = int(match[1])
    if amount < 1:
        raise DocsignValidationError([f"{name} {value!r}: the amount must be at least 1"], name)
    return {"unit": _LETTERS[match[2]], "amount": amount}


def expiration_period_meta(value: Any, name: str = "expiration_period") -> dict[str, Any] | None:
    """``meta.envelopeExpirationPeriod`` for ``value``, or ``None`` to leave it out (``DEFAULT``).

    :param value: ``"14d"``, ``"2w"``, ``"1m"``, ``"1y"``, ``{"unit": "day", "amount": 14}``, ``None``
        (links never expire: ``{"disabled": true}``) or :data:`DEFAULT` (the team's setting).
    :param name: The parameter's name, for the error message.
    :raises DocsignValidationError: for anything else (``"14 days"``, ``0``, ``"-1d"``, ``14``).
    """
    if isinstance(value, str) and value == DEFAULT:
        return None
    return _period(value, name, _EXPIRY_UNITS)


def reminder_settings_meta(value: Any, name: str = "reminders") -> dict[str, Any] | None:
    """``meta.reminderSettings`` for ``value``, or ``None`` to leave it out (``DEFAULT``).

    :param value: ``{"send_after": "3d", "repeat_every": "2d"}`` (each a period as for
        :func:`expiration_period_meta` but without years, or ``None`` for "never"; a missing
        ``repeat_every`` means one reminder only), ``None`` (no automatic reminders) or :data:`DEFAULT`.
    :param name: The parameter's name, for the error message.
    :raises DocsignValidationError: for unknown keys or bad periods.
    """
    if isinstance(value, str) and value == DEFAULT:
        return None
    if value is None:
        return {"sendAfter": {"disabled": True}, "repeatEvery": {"disabled": True}}
    if not isinstance(value, Mapping):
        raise DocsignValidationError(
            [
                f"{name} must be a mapping such as {{'send_after': '3d', 'repeat_every': '2d'}} or None, "
                f"got {type(value).__name__}"
            ],
            name,
        )
    aliases = {
        "send_after": "sendAfter",
        "sendAfter": "sendAfter",
        "repeat_every": "repeatEvery",
        "repeatEvery": "repeatEvery",
    }
    unknown = sorted(str(k) for k in value if k not in aliases)
    if unknown:
        raise DocsignValidationError(
            [f"{name} has unknown key(s) {unknown}; use 'send_after' and 'repeat_every'"], name
        )
    given = {aliases[k]: v for k, v in value.items()}
    if "sendAfter" not in given:
        raise DocsignValidationError([f"{name} needs 'send_after' (for example '3d')"], name)
    return {
        "sendAfter": _period(given["sendAfter"], f"{name}['send_after']", _REMINDER_UNITS),
        "repeatEvery": _period(given.get("repeatEvery"), f"{name}['repeat_every']", _REMINDER_UNITS),
    }


def period_meta_fields(expiration_period: Any = DEFAULT, reminders: Any = DEFAULT) -> dict[str, Any]:
    """The ``meta`` keys for both settings (only those given), validated.

    :param expiration_period: See :func:`expiration_period_meta`.
    :param reminders: See :func:`reminder_settings_meta`.
    """
    fields: dict[str, Any] = {}
    expiry = expiration_period_meta(expiration_period)
    if expiry is not None:
        fields["envelopeExpirationPeriod"] = expiry
    settings = reminder_settings_meta(reminders)
    if settings is not None:
        fields["reminderSettings"] = settings
    return fields


def merge_meta(
    meta: Mapping[str, Any] | None, expiration_period: Any = DEFAULT, reminders: Any = DEFAULT
) -> dict[str, Any] | None:
    """``meta`` with ``envelopeExpirationPeriod``/``reminderSettings`` added from the two parameters.

    :param meta: The ``meta`` the caller gave (left unchanged), or ``None``.
    :param expiration_period: See :func:`expiration_period_meta`.
    :param reminders: See :func:`reminder_settings_meta`.
    :raises DocsignValidationError: for a bad period, or a key given both ways.
    """
    fields = period_meta_fields(expiration_period, reminders)
    if not fields:
        return None if meta is None else dict(meta)
    merged = dict(meta or {})
    twice = sorted(k for k in fields if k in merged)
    if twice:
        raise DocsignValidationError(
            [f"meta already has {twice}; give expiration_period/reminders or meta keys, not both"], "meta"
        )
    merged.update(fields)
    return merged


def period_to_timedelta(period: Mapping[str, Any]) -> timedelta | None:
    """The duration the real service adds for a ``{unit, amount}`` (``None`` for ``{disabled: true}``).

    :param period: A period as sent in ``meta``.
    """
    if period.get("disabled") is True:
        return None
    return timedelta(days=_UNIT_DAYS[str(period["unit"])] * int(period["amount"]))


# ------------------------------------------------------------------------------------------- reading
def parse_timestamp(value: Any) -> datetime | None:
    """An aware UTC datetime from the service's ISO text (``2026-11-23T12:02:49.855Z``), else ``None``.

    The lenient form of :func:`airflow_provider_docsign.service.models.parse_ts`: anything that is not a
    non-empty, well-formed string is ``None``.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_ts(value)
    except (ValueError, OverflowError):  # year 1 or 9999 with an offset leaves the calendar in UTC
        return None


def awaits_signature(recipient: Recipient | Mapping[str, Any]) -> bool:
    """Whether a recipient still has to act: its role is not CC and its ``signingStatus`` is NOT_SIGNED.

    The service's own rule for who a reminder goes to, whose link can expire and who keeps an
    envelope PENDING (CC recipients never sign; SIGNED and REJECTED ones are done). Case-insensitive.

    :param recipient: A :class:`~airflow_provider_docsign.service.models.Recipient`, or a recipient in the
        service's JSON (``role``, ``signingStatus``), as a webhook delivery carries it.
    """
    if isinstance(recipient, Mapping):
        role, status = recipient.get("role"), recipient.get("signingStatus")
    else:
        role, status = recipient.role, recipient.signing_status
    return str(role or "").upper() != "CC" and str(status or "").upper() == "NOT_SIGNED"


def expired_recipients(recipients: Iterable[Recipient], now: datetime | None = None) -> list[Recipient]:
    """The recipients whose signing link has expired: awaiting a signature, ``expiresAt`` before ``now``.

    This is the real service's own rule (``hasExpiredRecipients``, and the block on signing).

    :param recipients: The envelope's recipients.
    :param now: The time to compare with (default: now, UTC).
    """
    moment = now or datetime.now(timezone.utc)
    result = []
    for recipient in recipients:
        if not awaits_signature(recipient):
            continue
        expires = parse_timestamp(recipient.expires_at)
        if expires is not None and expires <= moment:
            result.append(recipient)
    return result


#: How many audit entries (newest first) :func:`reminded_recipients` reads at most: 5 pages of 50.
REMINDER_SCAN_LIMIT = 250


def reminded_recipients(
    entries: Iterable[Mapping[str, Any]],
    recipient_ids: Collection[int],
    *,
    since: datetime | None = None,
    stop_at: str | None = None,
    limit: int = REMINDER_SCAN_LIMIT,
) -> set[int]:
    """Which of ``recipient_ids`` the service sent a reminder to, by its own audit log.

    A reminder is an ``EMAIL_SENT`` entry with ``data.isResending`` (what ``POST /envelope/redistribute``
    records per recipient). Entries are read newest first, and reading stops at the first of:

    - the entry whose ``id`` is ``stop_at``: a marker taken before sending (no clock at all);
    - the first entry whose ``createdAt`` is before ``since``, a moment on the **service's** clock
      (from its ``Date`` header), never on Airflow's: the two may disagree by any amount;
    - ``limit`` entries.

    :param entries: The envelope's audit log, newest first (``DocsignHook.get_audit_log``).
    :param recipient_ids: The recipients asked about.
    :param since: Ignore entries older than this moment of the service's clock.
    :param stop_at: Ignore this entry and every older one.
    :param limit: Read at most this many entries.
    """
    wanted = set(recipient_ids)
    found: set[int] = set()
    for count, entry in enumerate(entries):
        if count >= limit or (stop_at is not None and entry.get("id") == stop_at):
            break
        when = parse_timestamp(entry.get("createdAt"))
        if since is not None and when is not None and when < since:
            break  # newest first: every later entry is older still
        data = entry.get("data")
        if entry.get("type") != "EMAIL_SENT" or not isinstance(data, Mapping) or not data.get("isResending"):
            continue
        rid = data.get("recipientId")
        if isinstance(rid, int) and not isinstance(rid, bool) and rid in wanted:
            found.add(rid)
    return found


def mask_email(email: Any) -> str:
    """``e***@peer.test`` for ``ezra@peer.test``: enough to recognise, not enough to copy."""
    if not isinstance(email, str) or not email:
        return "(no e-mail)"
    local, at, domain = email.partition("@")
    if not at:
        return printable(email[:1]) + "***"
    return printable(f"{local[:1]}***@{domain}", 300)


#: An e-mail address inside free text (a service error, a row key, a reason).
_EMAIL_IN_TEXT = re.compile(r"[^\s@'\"<>(),;:]+@[^\s@'\"<>(),;:]+\.[^\s@'\"<>(),;:]+")


def mask_text(value: Any) -> Any:
    """Every e-mail address inside a string masked (``a***@example.com``); other values as they are."""
    if not isinstance(value, str):
        return value
    return _EMAIL_IN_TEXT.sub(lambda m: mask_email(m.group(0)), value)
