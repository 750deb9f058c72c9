"""Envelope attachments: labelled links that travel with an envelope (pure: no network, no Airflow).

An attachment on the service (``/envelope/attachment``, Documenso v2.17) is a link: a ``label`` and a
URL (its ``data``), shown to the signers beside the documents, for example the terms and conditions or
a price list. The service asks for a label of at least one character and an ``http`` or ``https`` URL.
This provider is stricter on purpose: a link handed to every signer of a contract must be ``https``
(it should not travel in clear text), read alike by Python and browsers, free of a user name or
password, and its host must not mix scripts (:mod:`.link_safety`). The outgoing check applies these
rules to every request that carries an attachment link (:mod:`.outgoing`); the functions here apply
the same rules, and the text rules to the label, before an operator reads anything.

The service refuses every change to the attachments of a COMPLETED or REJECTED envelope (400
``INVALID_REQUEST``, :data:`FROZEN_MESSAGE`); a CANCELLED or PENDING envelope's attachments may still
change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_docsign._text import printable
from airflow_provider_docsign.service.link_safety import link_problem, link_scheme
from airflow_provider_docsign.service.text_policy import text_problem

__all__ = [
    "FROZEN_MESSAGE",
    "FROZEN_STATUSES",
    "Attachment",
    "attachment_problems",
    "label_problems",
    "normalize_attachments",
    "url_problems",
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


def label_problems(label: Any, where: str = "attachment", *, text: bool = False) -> list[str]:
    """Problems of an attachment's label (empty: it may be sent): a string that is not only spaces.

    :param label: The label.
    :param where: How the attachment is named in messages, e.g. ``"attachments[1]"``.
    :param text: Apply the text rules too (an operator, before it reads anything). Without it they are
        left to the outgoing check, which names the field by its JSON path in the request.
    """
    if not isinstance(label, str) or not label.strip():
        return [f"{where}: label must be a non-empty string, not {printable(repr(label), 100)}"]
    found = text_problem(label, f"{where}: label") if text else None
    return [found] if found else []


def url_problems(url: Any, where: str = "attachment", *, text: bool = False) -> list[str]:
    """Problems of an attachment's link (empty: it may be sent).

    :param url: The link: see :func:`~.link_safety.link_problem` (``https``, one host for every
        reader, no credentials, no mixed-script host label).
    :param where: How the attachment is named in messages, e.g. ``"attachments[1]"``.
    :param text: Apply the text rules too (see :func:`label_problems`).
    """
    if not isinstance(url, str) or not url:
        return [f"{where}: url must be an https:// URL, not {printable(repr(url), 100)}"]
    found = text_problem(url, f"{where}: url")
    if found:
        # A refused character: named by class here, or (text=False) by the outgoing check.
        return [found] if text else []
    why = link_problem(url, https_only=False)
    if why:
        return [f"{where}: url {printable(url, 200)!r} is refused: {why}"]
    if link_scheme(url) != "https":
        return [
            f"{where}: url must use https (got 'http'); the service would accept http, but a link handed "
            "to signers should not travel in clear text"
        ]
    return []


def attachment_problems(label: Any, url: Any, where: str = "attachment", *, text: bool = False) -> list[str]:
    """Problems of one attachment's ``label`` and ``url`` (:func:`label_problems`, :func:`url_problems`).

    :param label: The label.
    :param url: The link.
    :param where: How the attachment is named in messages, e.g. ``"attachments[1]"``.
    :param text: Apply the text rules too (see :func:`label_problems`).
    """
    return [*label_problems(label, where, text=text), *url_problems(url, where, text=text)]


def normalize_attachments(
    attachments: Any, where: str = "attachments", *, text: bool = False
) -> tuple[list[dict[str, str]], list[str]]:
    """Check a list of attachments given as ``{"label", "url"}`` (or the service's ``{"label", "data"}``).

    Returns ``([{"label", "url"}, ...], problems)``: the labels keep their text as given, and nothing
    may be sent while ``problems`` is not empty.

    :param attachments: The list.
    :param where: How the list is named in messages.
    :param text: Apply the text rules too (see :func:`label_problems`).
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
        entry_problems.extend(attachment_problems(entry.get("label"), url, label_where, text=text))
        problems.extend(entry_problems)
        if not entry_problems:
            out.append({"label": str(entry["label"]), "url": str(url)})
    return out, problems
