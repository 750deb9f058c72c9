"""Field methods of :class:`~.docsign.DocsignHook`: place, read, change (or move) and delete fields.

A mixin typed against :class:`~._protocol.HookCore`. Fields are checked against the envelope's current
items (page counts) and recipients before anything is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_docsign.exceptions import DocsignError, DocsignValidationError
from airflow_provider_docsign.hooks import _endpoints as ep
from airflow_provider_docsign.hooks._protocol import HookCore
from airflow_provider_docsign.service.models import Envelope, Field
from airflow_provider_docsign.service.payloads import ItemPages, validate_fields_for_envelope

log = logging.getLogger("airflow_provider_docsign.hooks.docsign")

_POSITION_KEYS = ("page", "positionX", "positionY")


def merged_field_meta(current: Field, new_type: str, given: Any) -> Any:
    """The ``fieldMeta`` to send for a field update: the current settings with the caller's changes.

    The real service (v2.17) writes a field's ``fieldMeta`` whole on ``POST /envelope/field/update-many``,
    and a request that leaves it out *resets* it to the type's defaults (documenso#3286; recordings
    ``fieldmeta/50``-``52``: resizing a labelled, required TEXT field wiped its label, placeholder and
    ``required``). So every update sends the field's current ``fieldMeta``, updated with the keys the
    caller gave. When the type changes, the old type's settings do not apply: the caller's ``fieldMeta``
    (or, without one, the new type's defaults) is what the field gets.

    :param current: The field as read before the update.
    :param new_type: The field's type after the update.
    :param given: The caller's ``fieldMeta`` (``None``: no change).
    """
    if new_type == "FREE_SIGNATURE" or new_type != current.type or not current.field_meta:
        return given
    merged = dict(current.field_meta)
    if isinstance(given, Mapping):
        merged.update(given)
    elif given is not None:
        return given  # not an object: the validator reports it
    merged.setdefault("type", new_type.lower())
    return merged


def _item_pages(
    hook: HookCore,
    envelope: Envelope,
    fields: Sequence[Mapping[str, Any]],
    page_counts: Mapping[str, int] | None,
) -> list[ItemPages]:
    """The envelope's items with page counts, fetched only for items that a field puts beyond page 1."""
    counts = dict(page_counts or {})
    first = envelope.items[0].id if envelope.items else None
    known = {i.id for i in envelope.items}
    for field in fields:
        if not isinstance(field, Mapping):
            continue
        page = field.get("page")
        item_id = field.get("envelopeItemId") or first
        if (
            isinstance(page, int)
            and not isinstance(page, bool)
            and page > 1
            and item_id in known
            and item_id not in counts
        ):
            counts[item_id] = hook._item_page_count(item_id)
    return [ItemPages(id=i.id, title=i.title, page_count=counts.get(i.id)) for i in envelope.items]


class FieldMethods:
    """Field endpoints (mixed into ``DocsignHook``)."""

    def get_field(self: HookCore, field_id: int) -> Field:
        """Return a field (coordinates as floats).

        :param field_id: The field id.
        """
        return Field.from_json(self._call(ep.get_field(field_id)))

    def create_fields(
        self: HookCore,
        envelope_id: str,
        fields: Sequence[Mapping[str, Any]],
        *,
        page_counts: Mapping[str, int] | None = None,
    ) -> list[Field]:
        """Place fields on an envelope's items, checked first against its current items and recipients.

        To check ``page``, the page count of each item a field puts beyond page 1 is read from
        ``page_counts`` or, if missing, by streaming that item's original PDF to a temporary file.

        :param envelope_id: The envelope id.
        :param fields: ``[{"recipientId", "envelopeItemId"?, "type", "page", "positionX", "positionY",
            "width", "height", "fieldMeta"?}]`` in the service's shape.
        :param page_counts: Known page counts by envelope item id (saves the downloads).
        """
        envelope = self.get_envelope(envelope_id)
        items = _item_pages(self, envelope, fields, page_counts)
        data = validate_fields_for_envelope(
            fields, items=items, recipients={r.id: r for r in envelope.recipients}
        )
        body = self._call(ep.create_fields(envelope_id, data))
        return [Field.from_json(f) for f in (body or {}).get("data") or []]

    def update_fields(
        self: HookCore,
        envelope_id: str,
        fields: Sequence[Mapping[str, Any]],
        *,
        page_counts: Mapping[str, int] | None = None,
    ) -> list[Field]:
        """Change fields, keeping every setting not changed; a change of page or position recreates the field.

        The field's current ``fieldMeta`` (label, placeholder, ``required``...) is sent with every update,
        with the keys given in ``fieldMeta`` changed: Documenso v2.17 resets a ``fieldMeta`` that an
        update leaves out to the type's defaults (documenso#3286), and replaces a given one whole (see
        :func:`merged_field_meta`). It also silently ignores ``page``, ``positionX`` and ``positionY`` on
        update (the route passes names its service does not read), so those changes are made by creating
        a new field with the merged values and then deleting the old one. The returned list has one field
        per input, in order; a recreated field has a **new id**.

        :param envelope_id: The envelope id.
        :param fields: ``[{"id", "type"?, "page"?, "positionX"?, "positionY"?, "width"?, "height"?,
            "fieldMeta"?, "envelopeItemId"?}]`` in the service's shape.
        :param page_counts: Known page counts by envelope item id (saves the downloads).
        """
        if isinstance(fields, Mapping) or not isinstance(fields, Sequence) or not fields:
            raise DocsignValidationError(["fields must be a non-empty list"], "update_fields request")
        envelope = self.get_envelope(envelope_id)
        current = {f.id: f for f in envelope.fields}
        problems: list[str] = []
        merged: list[dict[str, Any]] = []
        for index, spec in enumerate(fields):
            fid = spec.get("id") if isinstance(spec, Mapping) else None
            if not isinstance(fid, int) or isinstance(fid, bool) or fid not in current:
                problems.append(f"field #{index}: id {fid!r} is not a field of envelope {envelope_id}")
                continue
            cur = current[fid]
            new_type = spec.get("type", cur.type)
            meta = merged_field_meta(cur, new_type, spec.get("fieldMeta"))
            merged.append(
                {
                    "recipientId": cur.recipient_id,
                    "envelopeItemId": spec.get("envelopeItemId", cur.envelope_item_id),
                    "type": new_type,
                    "page": spec.get("page", cur.page),
                    "positionX": spec.get("positionX", cur.position_x),
                    "positionY": spec.get("positionY", cur.position_y),
                    "width": spec.get("width", cur.width),
                    "height": spec.get("height", cur.height),
                    **({"fieldMeta": meta} if meta is not None else {}),
                }
            )
        if problems:
            raise DocsignValidationError(problems, "update_fields request")
        items = _item_pages(self, envelope, merged, page_counts)
        validate_fields_for_envelope(
            merged,
            items=items,
            recipients={r.id: r for r in envelope.recipients},
            context="update_fields request",
        )
        plain: list[dict[str, Any]] = []
        moves: list[tuple[int, dict[str, Any]]] = []
        for spec, new in zip(fields, merged, strict=True):
            cur = current[spec["id"]]
            moved = (new["page"], float(new["positionX"]), float(new["positionY"])) != (
                cur.page,
                cur.position_x,
                cur.position_y,
            )
            if moved:
                moves.append((cur.id, new))
            else:
                change = {k: v for k, v in spec.items() if k not in (*_POSITION_KEYS, "fieldMeta")}
                change["type"] = new["type"]
                if "fieldMeta" in new:
                    change["fieldMeta"] = new["fieldMeta"]
                plain.append(change)
        result: dict[int, Field] = {}
        if plain:
            body = self._call(ep.update_fields(envelope_id, plain))
            for data in (body or {}).get("data") or []:
                parsed = Field.from_json(data)
                result[parsed.id] = parsed
        for old_id, new in moves:
            created = self._call(ep.create_fields(envelope_id, [new]))
            new_field = Field.from_json(((created or {}).get("data") or [])[0])
            try:
                self._call(ep.delete_field(old_id))
            except DocsignError as exc:
                raise DocsignError(
                    f"field {old_id} was recreated at its new position as field {new_field.id}, but deleting "
                    f"the old field failed ({exc}); delete field {old_id} to avoid a duplicate"
                ) from None
            log.info("Docsign field %s moved by recreating it as field %s", old_id, new_field.id)
            result[old_id] = new_field
        out: list[Field] = []
        for spec in fields:
            fid = spec["id"]
            out.append(result[fid] if fid in result else self.get_field(fid))
        return out

    def delete_field(self: HookCore, field_id: int) -> None:
        """Delete a field.

        :param field_id: The field id.
        """
        self._call(ep.delete_field(field_id))
