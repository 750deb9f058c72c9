"""Test-only: specs of envelopes with known times, for ``SandboxServer.seed`` (tests and benchmarks).

:func:`synthetic_envelopes` spreads ``count`` envelopes over ``days`` consecutive UTC days. Everything an
envelope does (created, updated, completed) happens on the day it was created, so a day's export holds
exactly that day's envelopes. People repeat across envelopes (``person{n}``), so one person appears on
several days.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = ["FREE_TEXT_PREFIX", "day_of", "synthetic_envelopes"]

#: Free-text field values start with this (tests search the output for them).
FREE_TEXT_PREFIX = "Company No "
_STATUSES = ("COMPLETED", "COMPLETED", "COMPLETED", "PENDING", "REJECTED", "COMPLETED", "DRAFT", "CANCELLED")
PEOPLE = 97


def _iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def day_of(spec: dict[str, Any]) -> str:
    """The ``YYYY-MM-DD`` day of a spec's ``createdAt``."""
    return str(spec["createdAt"])[:10]


def synthetic_envelopes(
    count: int,
    *,
    days: int = 3,
    first_day: datetime = datetime(2026, 11, 1, tzinfo=timezone.utc),
    folder_ids: tuple[str | None, ...] = (None,),
    templates: tuple[int | None, ...] = (101, 102, 103),
) -> list[dict[str, Any]]:
    """``count`` envelope specs, round-robin over ``days``, ``folder_ids`` and ``templates``."""
    specs = []
    for i in range(count):
        day = first_day + timedelta(days=i % days)
        created = day + timedelta(minutes=(i * 37) % 1200)  # within the first 20 hours
        status = _STATUSES[i % len(_STATUSES)]
        ended = created + timedelta(minutes=30 * (1 + i % 4))  # within 2 hours: same day
        done = status in ("COMPLETED", "REJECTED", "CANCELLED")
        recipients = []
        for j in range(2):
            person = (i + j * 31) % PEOPLE
            signed = status == "COMPLETED" or (status == "REJECTED" and j == 1)
            recipients.append(
                {
                    "email": f"person{person}@example.test",
                    "name": f"Person Number {person}",
                    "role": "SIGNER",
                    "signingOrder": j + 1,
                    "sendStatus": "NOT_SENT" if status == "DRAFT" else "SENT",
                    "readStatus": "OPENED" if signed else "NOT_OPENED",
                    "signingStatus": ("REJECTED" if status == "REJECTED" and j == 1 else "SIGNED")
                    if signed
                    else "NOT_SIGNED",
                    "rejectionReason": f"Reason of person {person}"
                    if status == "REJECTED" and j == 1
                    else None,
                    "signedAt": _iso(ended) if signed else None,
                    "fields": [
                        {"type": "SIGNATURE", "page": 1, "customText": f"Person Number {person}"}
                        if signed
                        else {"type": "SIGNATURE", "page": 1},
                        {
                            "type": "TEXT",
                            "page": 1,
                            "fieldMeta": {"type": "text", "label": "Company number"},
                            "customText": f"{FREE_TEXT_PREFIX}{i:05d}-{j}",
                        },
                        {
                            "type": "CHECKBOX",
                            "page": 1,
                            "fieldMeta": {"type": "checkbox", "label": "Plan"},
                            "customText": "Premium" if i % 2 else "Basic",
                        },
                    ],
                }
            )
        specs.append(
            {
                "title": f"Contract {i:05d}",
                "externalId": f"ext-{i:05d}",
                "status": status,
                "createdAt": _iso(created),
                "updatedAt": _iso(ended if status != "DRAFT" else created),
                "completedAt": _iso(ended) if done else None,
                "sentAt": _iso(created + timedelta(minutes=5)) if status != "DRAFT" else None,
                "folderId": folder_ids[i % len(folder_ids)],
                "templateId": templates[i % len(templates)],
                "recipients": recipients,
            }
        )
    return specs
