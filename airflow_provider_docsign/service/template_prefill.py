"""Template use: check prefill values against the template's fields (pure code, no network).

Fields are named by id or by label. Only ``TEXT``, ``NUMBER``, ``RADIO``, ``CHECKBOX`` and ``DROPDOWN``
fields can be prefilled; each value is checked against the field's type and ``fieldMeta`` (character
limit, bounds, options) and put in the service's shape. A ``number`` that is not a number is refused
here: the real service accepts it (``templates/err_template_use_bad_number`` is a 200).
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service.ids import ID_FORM, as_id
from airflow_provider_docsign.service.models import Envelope, Field

__all__ = ["PREFILL_TYPES", "check_prefill", "field_label", "field_options", "resolve_prefill"]

#: Field types the service can prefill (``TEXT`` ... ``DROPDOWN``); any other type is refused by it
#: with ``INVALID_BODY`` ("not an advanced field"), DATE included: a DATE field takes the signing date.
PREFILL_TYPES = ("TEXT", "NUMBER", "RADIO", "CHECKBOX", "DROPDOWN")
# ASCII digits only: without re.ASCII, \d also matches Arabic-Indic or full-width digits, which
# Python's float() accepts but the service and the PDF's readers do not.
_NUMBER = re.compile(r"^[+-]?(\d+([.,]\d*)?|[.,]\d+)$", re.ASCII)


def field_label(f: Field) -> str:
    """The field's label (``fieldMeta.label``), or ``""``."""
    meta = f.field_meta or {}
    return str(meta.get("label") or "")


def _find_field(spec: Mapping[str, Any], template: Envelope) -> tuple[Field | None, str]:
    if spec.get("id") is not None:
        fid = as_id(spec["id"])
        if fid is None:
            return None, f"id {spec['id']!r} is not a field id ({ID_FORM})"
        for f in template.fields:
            if f.id == fid:
                return f, ""
        return None, f"field id {fid} is not a field of the template"
    label = spec.get("label")
    if not isinstance(label, str) or not label.strip():
        return None, "name the template field with 'id' or 'label'"
    hits = [f for f in template.fields if field_label(f).strip().lower() == label.strip().lower()]
    if len(hits) > 1:
        return None, f"label {label!r} matches {len(hits)} template fields; use 'id'"
    if not hits:
        labels = sorted({field_label(f) for f in template.fields if field_label(f)})
        known = (
            f"the template's field labels are {', '.join(repr(x) for x in labels[:30])}"
            + (f", and {len(labels) - 30} more" if len(labels) > 30 else "")
            if labels
            else "the template's fields have no labels: use 'id'"
        )
        return None, (
            f"label {label!r} matches no template field; {known} "
            f"(`docsign templates show {template.id}` shows every field)"
        )
    return hits[0], ""


def field_options(f: Field) -> list[str]:
    """The option values of a field (RADIO, CHECKBOX, DROPDOWN); none for the other types."""
    values = (f.field_meta or {}).get("values") or []
    return [str(v.get("value")) for v in values if isinstance(v, Mapping) and v.get("value") is not None]


def _prefill_value(f: Field, value: Any, where: str, problems: list[str]) -> Any:
    """The value in the service's shape, or ``None`` after recording a problem."""
    ftype = (f.type or "").upper()
    meta = f.field_meta or {}
    if ftype not in PREFILL_TYPES:
        hint = " (a DATE field is filled with the signing date; prefill a TEXT field instead)"
        problems.append(
            f"{where}: a {ftype} field cannot be prefilled; only {', '.join(PREFILL_TYPES)} can"
            + (hint if ftype == "DATE" else "")
        )
        return None
    if ftype == "TEXT":
        if isinstance(value, datetime.date):
            value = value.isoformat()
        if not isinstance(value, str):
            problems.append(f"{where}: a TEXT value must be a string, not {type(value).__name__}")
            return None
        limit = meta.get("characterLimit")
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 and len(value) > limit:
            problems.append(f"{where}: {len(value)} characters exceed the field's characterLimit {limit}")
        return value
    if ftype == "NUMBER":
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                problems.append(f"{where}: {value!r} is not a finite number")
                return None
            value = str(value)
        if not isinstance(value, str) or not _NUMBER.match(value.strip()):
            # The real service stores any string here (err_template_use_bad_number is a 200).
            problems.append(f"{where}: {value!r} is not a number (e.g. '1250.50')")
            return None
        number = float(value.strip().replace(",", "."))
        for key, sign in (("minValue", 1), ("maxValue", -1)):
            bound = meta.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool) and sign * (bound - number) > 0:
                problems.append(f"{where}: {value} is outside the field's {key} {bound}")
        return value.strip()
    options = field_options(f)
    if ftype == "CHECKBOX":
        chosen = [value] if isinstance(value, str) else value
        if not isinstance(chosen, list | tuple) or not chosen or not all(isinstance(v, str) for v in chosen):
            problems.append(f"{where}: a CHECKBOX value must be a non-empty list of option values")
            return None
        for v in chosen:
            if v not in options:
                problems.append(
                    f"{where}: {v!r} is not an option of the field ({', '.join(options) or 'none'})"
                )
        return list(chosen)
    if not isinstance(value, str):
        problems.append(f"{where}: a {ftype} value must be a string, not {type(value).__name__}")
        return None
    if value not in options:
        problems.append(f"{where}: {value!r} is not an option of the field ({', '.join(options) or 'none'})")
    return value


def check_prefill(prefill: Any, template: Envelope, problems: list[str]) -> list[dict[str, Any]]:
    """Check ``prefill_fields`` against the template: the ``prefillFields`` entries; problems are appended."""
    if prefill is None:
        return []
    if isinstance(prefill, Mapping):
        # {label or id: value} is accepted as a shorthand.
        prefill = [
            {"id": k} | {"value": v} if isinstance(k, int) else {"label": k, "value": v}
            for k, v in prefill.items()
        ]
    if isinstance(prefill, str) or not isinstance(prefill, Sequence):
        problems.append(
            "prefill_fields must be a list of {id or label, value} objects or a {label: value} map"
        )
        return []
    out: list[dict[str, Any]] = []
    seen: set[int] = set()
    for index, spec in enumerate(prefill):
        where = f"prefill_fields[{index}]"
        if not isinstance(spec, Mapping):
            problems.append(f"{where}: must be an object with id (or label) and value")
            continue
        target, why = _find_field(spec, template)
        if target is None:
            problems.append(f"{where}: {why}")
            continue
        label = field_label(target)
        where = f"{where} (field {target.id} {target.type}{' ' + repr(label) if label else ''})"
        if target.id in seen:
            problems.append(f"{where}: prefilled twice")
            continue
        seen.add(target.id)
        given_type = spec.get("type")
        if given_type is not None and str(given_type).lower() != (target.type or "").lower():
            problems.append(f"{where}: type {given_type!r} does not match the field's type {target.type}")
            continue
        if "value" not in spec:
            problems.append(f"{where}: 'value' is required")
            continue
        value = _prefill_value(target, spec["value"], where, problems)
        if value is not None:
            out.append({"id": target.id, "type": (target.type or "").lower(), "value": value})
    return out


def resolve_prefill(template: Envelope, prefill_fields: Any) -> dict[int, Any]:
    """Prefill values by template field id, checked as :func:`~.templates.validate_use_payload` checks them.

    :param template: The template.
    :param prefill_fields: ``[{"id" or "label", "value"}]`` or ``{label: value}``.
    :raises DocsignValidationError: listing every problem found.
    """
    problems: list[str] = []
    entries = check_prefill(prefill_fields, template, problems)
    if problems:
        raise DocsignValidationError(problems, f"prefill_fields for {template.id}")
    return {int(e["id"]): e["value"] for e in entries}
