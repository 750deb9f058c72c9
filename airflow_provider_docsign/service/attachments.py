"""Envelope attachments: labelled links that travel with an envelope (pure: no network, no Airflow).

An attachment on the service (``/envelope/attachment``, Documenso v2.17) is a link: a ``label`` and a
URL (its ``data``), shown to the signers beside the documents, for example the terms and conditions or
a price list. The service asks for a label of at least one character and an ``http`` or ``https`` URL.
This provider is stricter on purpose: it accepts only ``https`` links (a link handed to every signer of
a contract should not travel in clear text) and checks them before anything is sent.

The service refuses every change to the attachments of a COMPLETED or REJECTED envelope (400
``INVALID_REQUEST``, :data:`FROZEN_MESSAGE`); a CANCELLED or PENDING envelope's attachments may still
change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "FROZEN_MESSAGE",
    "FROZEN_STATUSES",
    "Attachment",
    "attachment_problems",
    "normalize_attachments",
]

#: Statuses whose attachments the service will not change (``create-attachment.ts`` and friends).
FROZEN_STATUSES = ("COMPLETED", "REJECTED")
#: The service's message for a change to a frozen envelope's attachments (400 ``INVALID_REQUEST``).
FROZEN_MESSAGE = "Attachments can not be modified after the document has been completed or rejected"


@dataclass(frozen=True)
class Attachment:
    """One attachment of an envelope, as ``GET /envelope/attachment`` lists it.

    :param id: The attachment id (a cuid).
    :param label: The text shown to signers.
    :param url: The link (the service calls it ``data``).
    :param type: Always ``link`` on Documenso v2.17.
    :param raw: The JSON the record was parsed from.
    """

    id: str
    label: str
    url: str
    type: str = "link"
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Attachment:
        """Parse one entry of the service's ``data`` list."""
        return cls(
            id=str(data["id"]),
            label=str(data.get("label") or ""),
            url=str(data.get("data") or ""),
            type=str(data.get("type") or "link"),
            raw=dict(data),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (for XCom)."""
        return {"id": self.id, "label": self.label, "url": self.url, "type": self.type}


def attachment_problems(label: Any, url: Any, where: str = "attachment") -> list[str]:
    """Problems of one attachment's ``label`` and ``url`` (empty: it may be sent).

    :param label: The label: a string with at least one character that is not a space.
    :param url: The link: an absolute ``https://`` URL with a host and no spaces.
    :param where: How the attachment is named in messages, e.g. ``"attachments[1]"``.
    """
    problems: list[str] = []
    if not isinstance(label, str) or not label.strip():
        problems.append(f"{where}: label must be a non-empty string, not {label!r}")
    if not isinstance(url, str) or not url:
        problems.append(f"{where}: url must be an https:// URL, not {url!r}")
        return problems
    if url != url.strip() or " " in url:
        # (other white space and control characters: the outgoing check names them by class and path)
        problems.append(f"{where}: url must not contain spaces")
        return problems
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        problems.append(f"{where}: url {url!r} is not a valid URL")
        return problems
    if parts.scheme.lower() != "https":
        problems.append(
            f"{where}: url must use https (got {parts.scheme or 'no scheme'!r}); the service would accept "
            "http, but a link handed to signers should not travel in clear text"
        )
    elif not host:
        problems.append(f"{where}: url {url!r} has no host")
    return problems


def normalize_attachments(
    attachments: Any, where: str = "attachments"
) -> tuple[list[dict[str, str]], list[str]]:
    """Check a list of attachments given as ``{"label", "url"}`` (or the service's ``{"label", "data"}``).

    Returns ``([{"label", "url"}, ...], problems)``: the labels keep their text as given, and nothing
    may be sent while ``problems`` is not empty.

    :param attachments: The list.
    :param where: How the list is named in messages.
    """
    if (
        isinstance(attachments, Mapping)
        or not isinstance(attachments, Sequence)
        or isinstance(attachments, str)
    ):
        return [], [f"{where}: must be a list of {{'label', 'url'}} objects"]
    if not attachments:
        return [], [f"{where}: must not be empty"]
    out: list[dict[str, str]] = []
    problems: list[str] = []
    for index, entry in enumerate(attachments):
        label_where = f"{where}[{index}]"
        if not isinstance(entry, Mapping):
            problems.append(
                f"{label_where}: must be an object with 'label' and 'url', not {type(entry).__name__}"
            )
            continue
        entry_problems: list[str] = []
        unknown = sorted(set(entry) - {"label", "url", "data", "type"})
        if unknown:
            entry_problems.append(f"{label_where}: unknown key(s) {unknown}")
        if "url" in entry and "data" in entry and entry["url"] != entry["data"]:
            entry_problems.append(f"{label_where}: give the link once, as 'url'")
        if entry.get("type", "link") != "link":
            entry_problems.append(f"{label_where}: type must be 'link' (the only kind the service has)")
        url = entry.get("url", entry.get("data"))
        entry_problems.extend(attachment_problems(entry.get("label"), url, label_where))
        problems.extend(entry_problems)
        if not entry_problems:
            out.append({"label": str(entry["label"]), "url": str(url)})
    return out, problems
