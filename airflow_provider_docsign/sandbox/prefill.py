"""Prefilled field values: how ``/envelope/use`` stores them and how distribution inserts them.

Facts from the real service (Documenso 2.17): a prefill writes into the field's ``fieldMeta`` (``text``
for TEXT, ``value`` for NUMBER, ``checked`` options for RADIO and CHECKBOX, ``defaultValue`` for
DROPDOWN) and the field stays ``inserted: false`` (recording ``templates/26``). When the envelope is
sent, every such field whose recipient has not been sent it yet is inserted with the value as
``customText`` (recording ``templates/24``), so the sealed PDF shows it. Only TEXT, NUMBER, RADIO,
CHECKBOX and DROPDOWN fields can be prefilled; NUMBER values are not checked (``"not a number"`` is
stored, recording ``templates/err_template_use_bad_number``).
"""

from __future__ import annotations

import json
from typing import Any

from .errors import app_error
from .store import Obj, Store

PREFILLABLE = ("NUMBER", "RADIO", "CHECKBOX", "DROPDOWN", "TEXT")


def _options(meta: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in meta.get("values") or [] if isinstance(v, dict)]


def apply(fld: Obj, prefill: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The field's new ``fieldMeta`` for ``prefill`` (``{"id", "type", "value", "label"?, ...}``)."""
    fid = fld["id"]
    if fld["type"] not in PREFILLABLE:
        raise app_error(
            path,
            "INVALID_BODY",
            f"Field {fid} is not an advanced field and cannot have field meta information. "
            "Allowed types: NUMBER, RADIO, CHECKBOX, DROPDOWN, TEXT.",
        )
    meta = dict(fld.get("fieldMeta") or {})
    kind = prefill["type"]
    value = prefill.get("value")
    if kind in ("text", "number"):
        if not isinstance(value, str):
            raise app_error(
                path, "INVALID_BODY", f"Invalid value for {kind.upper()} field {fid}: expected string"
            )
        meta["type"] = kind
        # label and placeholder are taken from the prefill (absent there: dropped), as recorded.
        for key in ("label", "placeholder"):
            if key in prefill:
                meta[key] = prefill[key]
            else:
                meta.pop(key, None)
        meta["text" if kind == "text" else "value"] = value
        return meta
    options = _options(meta)
    if kind == "checkbox":
        if not value:
            raise app_error(path, "INVALID_BODY", f"Value is required for CHECKBOX field {fid}")
        for v in value:
            if not any(o.get("value") == v for o in options):
                raise app_error(
                    path, "INVALID_BODY", f'Value "{v}" not found in options for CHECKBOX field {fid}'
                )
        meta["values"] = [{**o, "checked": o.get("value") in value} for o in options]
    elif kind == "radio" or kind == "dropdown":
        if not any(o.get("value") == value for o in options):
            raise app_error(
                path,
                "INVALID_BODY",
                f'Value "{value}" not found in options for {kind.upper()} field {fid}',
            )
        if kind == "radio":
            meta["values"] = [{**o, "checked": o.get("value") == value} for o in options]
        else:
            meta["defaultValue"] = value
    meta["type"] = kind
    if "label" in prefill:
        meta["label"] = prefill["label"]
    else:
        meta.pop("label", None)
    return meta


def auto_insert_value(fld: Obj) -> str | None:
    """The ``customText`` that distribution inserts for a prefilled field, or ``None``."""
    meta = fld.get("fieldMeta") or {}
    kind = fld["type"]
    if kind == "TEXT":
        return str(meta["text"]) if meta.get("text") else None
    if kind == "NUMBER":
        return str(meta["value"]) if meta.get("value") else None
    options = _options(meta)
    if kind == "RADIO":
        checked = [i for i, o in enumerate(options) if o.get("checked")]
        return str(checked[0]) if checked else None
    if kind == "DROPDOWN":
        default = meta.get("defaultValue")
        return str(default) if default and any(o.get("value") == default for o in options) else None
    if kind == "CHECKBOX":
        checked = [i for i, o in enumerate(options) if o.get("checked")]
        return json.dumps(checked, separators=(",", ":")) if checked else None
    return None


def auto_insert(store: Store, envelope_id: str) -> None:
    """On distribution: insert every prefilled field of a recipient not sent the envelope yet.

    Call inside the distribution transaction, before recipients are marked SENT.
    """
    recipients = {r["id"]: r for r in store.recipients_of(envelope_id)}
    for fld in store.fields_of(envelope_id):
        rec = recipients.get(fld["recipientId"])
        if fld["inserted"] or rec is None or rec["sendStatus"] == "SENT":
            continue
        text = auto_insert_value(fld)
        if text is None:
            continue
        changed = store.edit("field", fld["id"])
        assert changed is not None
        changed["inserted"] = True
        changed["customText"] = text
        store.put("field", changed)
