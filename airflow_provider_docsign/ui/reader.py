"""What the signing service says, shaped for the browser: masked, bounded, never a secret.

The listing is one ``GET /envelope`` per 100 envelopes at the root and in each folder (the real
service lists only the root without a ``folderId``), after one listing of the folders. Known ids (a
campaign's, a task's) are read with the coalesced ``get-many``, 20 per request. Nothing the service
sends is passed on as is: each row is built from named fields, e-mails masked, the signing token and
the raw JSON left behind.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from airflow_provider_docsign.service import turnaround
from airflow_provider_docsign.service.expiry import awaits_signature, mask_email, mask_text, parse_timestamp
from airflow_provider_docsign.service.links import build_envelope_url
from airflow_provider_docsign.service.stalled import age_days, earliest_expiry, stalled

#: At most this many folders are listed (each costs one request per refresh).
MAX_FOLDERS = 100
#: At most this many envelopes are read per refresh.
MAX_ENVELOPES = 5_000
#: Audit events shown per envelope in the task view (the first page, newest first).
AUDIT_EVENTS = 10
#: Envelopes whose audit events the task view reads (one request each).
AUDIT_ENVELOPES = 5
#: Envelopes the task view shows (a batch wait's first ones).
TASK_ENVELOPES = 100


@dataclass
class Listing:
    """Every envelope of a connection, as listed, with the folder names.

    :param truncated: Why the listing stopped early (a limit), else ``None``.
    """

    envelopes: list[Any]
    folders: dict[str, str]
    web_url: str
    truncated: str | None = None
    fetched_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat())


def read_listing(hook: Any) -> Listing:
    """List the connection's documents: the folders once, then the root and each folder, bounded.

    :param hook: A :class:`~airflow_provider_docsign.hooks.docsign.DocsignHook`.
    """
    folders = list(itertools.islice(hook.list_folders(folder_type="DOCUMENT"), MAX_FOLDERS + 1))
    truncated = None
    if len(folders) > MAX_FOLDERS:
        folders = folders[:MAX_FOLDERS]
        truncated = f"only the first {MAX_FOLDERS} folders are listed"
    envelopes: list[Any] = []
    for folder_id in [None, *(f.id for f in folders)]:
        room = MAX_ENVELOPES - len(envelopes)
        listed = list(
            itertools.islice(hook.find_envelopes(folder_id=folder_id, envelope_type="DOCUMENT"), room + 1)
        )
        envelopes += listed[:room]
        if len(listed) > room:
            truncated = f"only the first {MAX_ENVELOPES} envelopes are listed"
            break
    names = {f.id: str(f.name or f.id) for f in folders}
    return Listing(envelopes, names, str(hook.web_url or ""), truncated)


def _team_url(envelope: Any) -> str | None:
    team = (getattr(envelope, "raw", None) or {}).get("team")
    return str(team["url"]) if isinstance(team, Mapping) and team.get("url") else None


def _status(envelope: Any) -> str:
    return str(getattr(envelope.status, "value", envelope.status))


def is_open(envelope: Any) -> bool:
    """Whether an envelope is still open (not completed, rejected or cancelled): a task may wait on it."""
    return _status(envelope) in ("PENDING", "DRAFT")


def mask_people(text: Any, recipients: Iterable[Any]) -> str | None:
    """The service's text with every e-mail address and every recipient's name in it masked (bounded).

    :param text: A reason as the service gives it (``None``: none given).
    :param recipients: The envelope's recipients (their names are masked wherever the text holds them).
    """
    if not isinstance(text, str) or not text:
        return None
    masked = str(mask_text(text[:1000]))
    names = sorted({str(r.name).strip() for r in recipients if r.name and len(str(r.name).strip()) > 1})
    names.sort(key=len)
    for name in reversed(names):  # the longest first: "Ann Lee" before "Ann"
        masked = masked.replace(name, name[0] + "***")
    return masked


def recipient_rows(envelope: Any) -> list[dict[str, Any]]:
    """Each recipient: role, masked e-mail, signing state, link expiry (never the name's token).

    The service sets ``signedAt`` on a rejection too: it is given as ``rejected_at`` then, never as
    ``signed_at``, with the reason (masked where it names people).
    """
    rows = []
    for r in envelope.recipients:
        rejected = r.signing_status == "REJECTED"
        rows.append(
            {
                "role": r.role,
                "email": mask_email(r.email),
                "signing_status": r.signing_status,
                "signed_at": None if rejected else r.signed_at,
                "rejected_at": r.signed_at if rejected else None,
                "rejection_reason": (
                    mask_people(r.rejection_reason, envelope.recipients) if rejected else None
                ),
                "expires_at": r.expires_at,
                "awaiting": awaits_signature(r),
            }
        )
    return rows


#: The largest template id kept (a JSON number a browser reads exactly); anything else is no template.
MAX_TEMPLATE_ID = 2**53 - 1


def template_id(envelope: Any) -> int | None:
    """The template the envelope was made from (``templateId`` in its JSON), if it is a plain id."""
    value = (getattr(envelope, "raw", None) or {}).get("templateId")
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 16:
        value = int(value)
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TEMPLATE_ID
    return value if ok else None


def contract_row(
    envelope: Any,
    *,
    folders: Mapping[str, str],
    web_url: str,
    now: datetime,
    stalled_days: float,
    tasks: Iterable[dict[str, Any]] = (),
    sent: turnaround.Sent | None = None,
) -> dict[str, Any]:
    """One row of the Contracts page (JSON-safe; e-mails masked; no token, no raw JSON).

    :param envelope: The listed envelope.
    :param folders: Folder id -> name.
    :param web_url: The connection's web app URL (for the envelope link).
    :param now: The time ages and expiries are judged against.
    :param stalled_days: The stalled threshold in days.
    :param tasks: The task instances that created it or wait on it (``TaskRef.to_dict``).
    :param sent: When it was sent and how that is known (:mod:`~airflow_provider_docsign.ui.sent`);
        ``None``: unknown. ``sent_at`` is its time, ``seconds_to_sign`` is
        :func:`~airflow_provider_docsign.service.turnaround.seconds_to_sign`.
    """
    verdict = stalled(envelope, now, older_than_days=stalled_days)
    tasks = list(tasks)
    age = age_days(envelope, now)
    return {
        "id": envelope.id,
        "title": envelope.title,
        "external_id": envelope.external_id,
        "status": _status(envelope),
        "age_days": None if age is None else round(age, 2),
        "created_at": envelope.created_at,
        "sent_at": turnaround.iso(sent.at) if sent is not None else None,
        "sent": sent.to_dict() if sent is not None else None,
        "seconds_to_sign": turnaround.seconds_to_sign(envelope, sent),
        "template_id": template_id(envelope),
        # The service sets completedAt when an envelope is rejected or cancelled too: only a completed
        # one shows it as completed; the others' end is ended_at (the column says which).
        "completed_at": envelope.completed_at if _status(envelope) == "COMPLETED" else None,
        "ended_at": envelope.completed_at if _status(envelope) in ("REJECTED", "CANCELLED") else None,
        # Only a sent envelope waits for anyone: a draft's or a cancelled one's signers are not "unsigned".
        "unsigned": [
            {"role": r.role, "email": mask_email(r.email)}
            for r in envelope.recipients
            if awaits_signature(r) and _status(envelope) == "PENDING"
        ],
        "earliest_expiry": earliest_expiry(envelope),
        "folder_id": envelope.folder_id,
        "folder": folders.get(envelope.folder_id or "", None) if envelope.folder_id else None,
        "stalled": verdict is not None,
        "stalled_reason": verdict.reason() if verdict else None,
        "url": build_envelope_url(web_url, _team_url(envelope), envelope.id) or None,
        "tasks": tasks,
    }


def contracts_summary(
    shown: Iterable[tuple[Mapping[str, Any], Any, turnaround.Sent | None]],
) -> dict[str, Any]:
    """The numbers above the Contracts table, over the rows shown (after every filter).

    ``counts`` by status, ``stalled``, ``time_to_sign``
    (:func:`~airflow_provider_docsign.service.turnaround.summarize`), its ``histogram``
    (:func:`~airflow_provider_docsign.service.turnaround.histogram` of the rows' ``seconds_to_sign``) and
    ``without_sent``: envelopes that left DRAFT but have no known send time (counted, never guessed).

    :param shown: Each row shown (:func:`contract_row`) with its envelope and send time.
    """
    counts: dict[str, int] = {}
    stalled_count = without_sent = 0
    pairs: list[tuple[Any, turnaround.Sent | None]] = []
    seconds: list[float] = []
    for row, envelope, sent in shown:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
        stalled_count += bool(row["stalled"])
        without_sent += sent is None and row["status"] != "DRAFT"
        pairs.append((envelope, sent))
        if row["seconds_to_sign"] is not None:
            seconds.append(row["seconds_to_sign"])
    return {
        "shown": len(pairs),
        "counts": dict(sorted(counts.items())),
        "stalled": stalled_count,
        "time_to_sign": turnaround.summarize(pairs).to_dict(),
        "histogram": turnaround.histogram(seconds),
        "without_sent": without_sent,
    }


def campaign_state(envelopes: Iterable[Any], now: datetime) -> dict[str, int]:
    """Counts of a campaign's envelopes by what the service says (completed, pending, rejected...).

    :param envelopes: The envelopes read with ``get-many``.
    :param now: The time expiries are judged against.
    """
    counts = {"completed": 0, "pending": 0, "rejected": 0, "cancelled": 0, "draft": 0, "expired_link": 0}
    for envelope in envelopes:
        status = _status(envelope).lower()
        if status in counts:
            counts[status] += 1
        verdict = stalled(envelope, now, older_than_days=float("inf"))
        if verdict is not None and verdict.expired:
            counts["expired_link"] += 1
    return counts


def audit_rows(hook: Any, envelope_id: str) -> list[dict[str, Any]]:
    """The newest audit events of an envelope (one request: the first page), masked.

    :param hook: The hook.
    :param envelope_id: The envelope.
    """
    rows = []
    for entry in itertools.islice(hook.get_audit_log(envelope_id), AUDIT_EVENTS):
        rows.append(
            {
                "type": str(entry.get("type") or ""),
                "created_at": entry.get("createdAt") if isinstance(entry.get("createdAt"), str) else None,
                "email": mask_email(entry.get("email")) if entry.get("email") else None,
            }
        )
    return rows


def envelope_detail(envelope: Any, web_url: str, now: datetime) -> dict[str, Any]:
    """An envelope for the task view: status, when it settled, recipients with their state, expiry, link.

    The service's ``completedAt`` is set for rejected and cancelled envelopes too: it is given as
    ``completed_at`` only for a completed one, as ``rejected_at`` (with who rejected, when and why) or
    ``cancelled_at`` otherwise.
    """
    status = _status(envelope)
    recipients = recipient_rows(envelope)
    rejections = [
        {"role": r["role"], "email": r["email"], "at": r["rejected_at"], "reason": r["rejection_reason"]}
        for r in recipients
        if r["signing_status"] == "REJECTED"
    ]
    first_rejection = min((r["at"] for r in rejections if r["at"]), default=None)
    return {
        "id": envelope.id,
        "title": envelope.title,
        "external_id": envelope.external_id,
        "status": status,
        "created_at": envelope.created_at,
        "completed_at": envelope.completed_at if status == "COMPLETED" else None,
        "rejected_at": (envelope.completed_at or first_rejection) if status == "REJECTED" else None,
        "cancelled_at": envelope.completed_at if status == "CANCELLED" else None,
        "rejections": rejections,
        "earliest_expiry": earliest_expiry(envelope),
        "expired": bool(
            (verdict := stalled(envelope, now, older_than_days=float("inf"))) and verdict.expired
        ),
        "recipients": recipients,
        "url": build_envelope_url(web_url, _team_url(envelope), envelope.id) or None,
    }


def parse_time(value: Any) -> datetime | None:
    """An aware datetime from ISO text, else ``None`` (for sorting and filters)."""
    return parse_timestamp(value)
