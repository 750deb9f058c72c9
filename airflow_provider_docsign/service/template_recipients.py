"""Template use: map the template's recipients to the people who act (pure code, no network).

Each mapping names a template recipient by ``id`` or by ``placeholder`` (its name or e-mail, since ids
change from one instance to the next) and gives the e-mail address, name and signing order to use.
Every recipient who must act (any role but CC) must be mapped exactly once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_docsign.service.ids import ID_FORM, as_id
from airflow_provider_docsign.service.models import Envelope, Recipient

__all__ = ["OPTIONAL_ROLES", "map_recipients", "recipient_who"]

#: Roles that need not be mapped: a CC only receives a copy.
OPTIONAL_ROLES = ("CC",)


def recipient_who(r: Recipient) -> str:
    """How a problem names a template recipient."""
    return f"template recipient {r.id} ({r.name or r.email or r.role})"


def _find_recipient(spec: Mapping[str, Any], template: Envelope) -> tuple[Recipient | None, str]:
    """The template recipient a mapping names: by ``id``, or by ``placeholder`` (name or e-mail)."""
    if "id" in spec and spec["id"] is not None:
        rid = as_id(spec["id"])
        if rid is None:
            return None, f"id {spec['id']!r} is not a recipient id ({ID_FORM})"
        for r in template.recipients:
            if r.id == rid:
                return r, ""
        return None, f"id {rid} is not a recipient of the template"
    key = spec.get("placeholder")
    if not isinstance(key, str) or not key.strip():
        return None, "name the template recipient with 'id' or 'placeholder' (its name or e-mail)"
    wanted = key.strip().lower()
    hits = [r for r in template.recipients if wanted in ((r.name or "").lower(), (r.email or "").lower())]
    if len(hits) > 1:
        return None, f"placeholder {key!r} matches {len(hits)} template recipients; use 'id'"
    if not hits:
        return None, (
            f"placeholder {key!r} matches no template recipient's name or e-mail; {_what_matches(template)}"
        )
    return hits[0], ""


#: The most template recipients a refusal lists (the rest are in ``docsign templates show``).
_LISTED = 20


def _what_matches(template: Envelope) -> str:
    """What a placeholder could name (each recipient's role, name and e-mail), and where to see them."""
    show = f"`docsign templates show {template.id}` shows them"
    if not template.recipients:
        return f"the template has no recipients ({show})"
    shown = []
    for r in template.recipients[:_LISTED]:
        said = " or ".join(repr(v) for v in (r.name, r.email) if v) or "no name or e-mail: use 'id'"
        shown.append(f"id {r.id} {r.role or 'recipient'}: {said}")
    more = f", and {len(template.recipients) - _LISTED} more" if len(template.recipients) > _LISTED else ""
    return f"the template's recipients are {'; '.join(shown)}{more} ({show})"


def map_recipients(recipients: Any, template: Envelope, problems: list[str]) -> list[dict[str, Any]]:
    """Check the recipient mappings: the payload's ``recipients`` entries; problems are appended."""
    if recipients is None:
        recipients = []
    if isinstance(recipients, str | Mapping) or not isinstance(recipients, Sequence):
        problems.append("recipients must be a list of {id or placeholder, email, name} objects")
        return []
    mapped: dict[int, int] = {}
    out: list[dict[str, Any]] = []
    for index, spec in enumerate(recipients):
        where = f"recipients[{index}]"
        if not isinstance(spec, Mapping):
            problems.append(f"{where}: must be an object with id (or placeholder), email and name")
            continue
        target, why = _find_recipient(spec, template)
        if target is None:
            problems.append(f"{where}: {why}")
            continue
        where = f"{where} ({recipient_who(target)})"
        if target.id in mapped:
            problems.append(f"{where}: mapped twice (also by recipients[{mapped[target.id]}])")
            continue
        mapped[target.id] = index
        email = spec.get("email")
        if isinstance(email, str):
            email = email.strip()  # stripped once: what is checked is what is sent
        if not isinstance(email, str) or not email:
            problems.append(f"{where}: 'email' must be a non-empty e-mail address")
        entry: dict[str, Any] = {"id": target.id, "email": email}
        name = spec.get("name")
        if name is not None:
            if not isinstance(name, str):
                problems.append(f"{where}: 'name' must be a string")
            entry["name"] = name
        order = spec.get("signingOrder", spec.get("signing_order"))
        if order is not None:
            if not isinstance(order, int) or isinstance(order, bool) or order < 0:
                problems.append(f"{where}: signingOrder must be a non-negative integer, not {order!r}")
            entry["signingOrder"] = order
        out.append(entry)
    for r in template.recipients:
        if r.id not in mapped and (r.role or "") not in OPTIONAL_ROLES:
            problems.append(
                f"{recipient_who(r)} is a {r.role} who must act but is not mapped to an e-mail address "
                f"(add {{'id': {r.id}, 'email': ..., 'name': ...}} to recipients)"
            )
    return out
