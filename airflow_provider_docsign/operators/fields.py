"""Operators that place, change (or move) and remove the fields of an envelope."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignValidationError,
)
from airflow_provider_docsign.operators._base import (
    PERMANENT_ERRORS,
    DocsignBaseOperator,
    current_try,
    fail_now,
    field_problems,
    id_list,
    one_id,
)
from airflow_provider_docsign.service.corrections import (
    field_delete_refusal,
    field_shape_problems,
    fields_update_refusal,
    matching_fields,
)
from airflow_provider_docsign.service.ids import with_int_ids

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.service.models import Envelope

__all__ = ["DocsignAddFieldsOperator", "DocsignDeleteFieldOperator", "DocsignUpdateFieldsOperator"]


class DocsignAddFieldsOperator(DocsignBaseOperator):
    """Place fields on the pages of an envelope's items.

    The fields are checked locally first (recipient id, type, one-based page, coordinates 0-100 with
    ``positionX + width`` and ``positionY + height`` at most 100), then against the envelope: the
    recipient and item must belong to it and the page must exist in that item's PDF (the real service
    accepts a field on a missing page, and the envelope can then never complete). Nothing is created
    unless every field passes. On a retry of the task (or after a lost answer), fields equal to the
    requested ones that a failed try already created are adopted instead of created twice.

    Returns the new field ids, in the order the fields were given.

    :param envelope_id: The envelope. Templated.
    :param fields: Fields in the service's JSON shape: ``[{"recipientId", "envelopeItemId"? (default:
        the first item), "type", "page", "positionX", "positionY", "width", "height", "fieldMeta"?}]``.
        Templated (rendered as JSON).
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "fields")
    template_fields_renderers = {"fields": "json"}
    ui_color = "#d6eaff"

    def __init__(self, *, envelope_id: str, fields: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.fields = fields

    def execute(self, context: Context) -> list[int]:
        """Validate and create the fields; return their ids."""
        envelope_id = str(self.envelope_id)
        problems = field_shape_problems(self.fields)
        if problems:
            raise fail_now(DocsignValidationError(problems, context="fields"))
        fields = [dict(f) for f in with_int_ids(self.fields, ("recipientId",))]  # "100" from Jinja: 100
        try:
            envelope = self.hook.get_envelope(envelope_id)
            self.push_envelope_link(context, envelope_id, envelope)
            counts = self.item_page_counts(envelope, self.items_beyond_page_one(envelope, fields))
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        problems = field_problems(fields, envelope=envelope, page_counts=counts)
        if problems:
            raise fail_now(DocsignValidationError(problems, context=f"fields for envelope {envelope_id}"))
        try_number = current_try(context)
        if try_number > 1:
            found = matching_fields(envelope, fields)
            if found is not None:
                self.log.info("Try %s: the fields were created by a previous try: %s", try_number, found)
                return found
        try:
            # The hook checks the fields against the envelope once more; the counts save re-downloads.
            created = self.hook.create_fields(envelope_id, fields, page_counts=counts)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        except DocsignAmbiguousWriteError:
            found = matching_fields(self.hook.get_envelope(envelope_id), fields, exclude=envelope)
            if found is None:
                self.log.error(
                    "The field creation's outcome is unknown: check envelope %s's fields", envelope_id
                )
                raise
            self.log.warning("The answer was lost, but the fields exist: %s", found)
            return found
        ids = [f.id for f in created]
        self.log.info("Created field(s) %s on envelope %s", ids, envelope_id)
        return ids


class DocsignUpdateFieldsOperator(DocsignBaseOperator):
    """Change fields of an envelope: move, resize, retype or relabel them.

    The service refuses a change once the envelope is finished ("Envelope already complete") and,
    while it is PENDING, a change to a field of a recipient who has signed or filled in a field, or
    of a CC or VIEWER ("Cannot modify a field where the recipient has already interacted with the
    document"); those refusals are made here, before anything is sent, and the task fails without
    retrying. The hook checks the new pages and coordinates against the envelope's PDFs.

    Note (real service v2.17): ``update-many`` ignores ``page``, ``positionX`` and ``positionY``, so
    the hook moves a field by creating it at the new place and deleting the old one: a **moved field
    gets a new id**. The result maps every given id to the field's id now. On a retry after a move
    whose old field is already gone, a field of the same type at exactly the requested page and
    position is taken as the moved one.

    Returns ``[{"id", "previous_id", "page", "position_x", "position_y", "width", "height"}]`` in the
    order given.

    :param envelope_id: The envelope. Templated.
    :param fields: The changes, in the service's JSON shape: ``[{"id", "page"?, "positionX"?,
        "positionY"?, "width"?, "height"?, "type"?, "fieldMeta"?, "envelopeItemId"?}]``. Templated
        (rendered as JSON).
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "fields")
    template_fields_renderers = {"fields": "json"}
    ui_color = "#d6eaff"

    def __init__(self, *, envelope_id: str, fields: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.fields = fields

    def execute(self, context: Context) -> list[dict[str, Any]]:
        """Check, then change the fields; return each one's id and place now."""
        envelope_id = str(self.envelope_id)
        ids, problems = id_list(self.fields, "fields")
        if problems:
            raise fail_now(DocsignValidationError(problems, context="fields"))
        specs: list[dict[str, Any]] = with_int_ids(self.fields, ("id",))  # "100" from Jinja: field 100
        envelope = self.read_envelope(context, envelope_id)
        current = {f.id for f in envelope.fields}
        done: dict[int, Any] = {}
        if current_try(context) > 1:
            for spec in specs:
                if spec["id"] not in current:
                    moved = _moved_here(envelope, spec)
                    if moved is not None:
                        self.log.info(
                            "Field %s was moved by a previous try: now field %s", spec["id"], moved.id
                        )
                        done[spec["id"]] = moved
        missing = [i for i in ids if i not in current and i not in done]
        if missing:
            raise fail_now(
                DocsignValidationError(
                    [f"field {i} is not a field of envelope {envelope_id}" for i in missing], context="fields"
                )
            )
        todo = [f for f in specs if f["id"] not in done]
        refusal = fields_update_refusal(envelope, [f["id"] for f in todo])
        if refusal is not None:
            raise fail_now(refusal.error())
        if todo:
            try:
                changed = self.hook.update_fields(envelope_id, todo)
            except PERMANENT_ERRORS as err:
                raise fail_now(err) from err
            done.update({spec["id"]: new for spec, new in zip(todo, changed, strict=True)})
        result = []
        for fid in ids:
            field = done[fid]
            if field.id != fid:
                self.log.info("Field %s of envelope %s moved: now field %s", fid, envelope_id, field.id)
            else:
                self.log.info("Updated field %s of envelope %s", fid, envelope_id)
            result.append(
                {
                    "id": field.id,
                    "previous_id": fid,
                    "page": field.page,
                    "position_x": field.position_x,
                    "position_y": field.position_y,
                    "width": field.width,
                    "height": field.height,
                }
            )
        return result


def _moved_here(envelope: Envelope, spec: dict[str, Any]) -> Any:
    """The envelope's one field of the requested type at exactly the requested page and position."""
    keys = ("page", "positionX", "positionY")
    if not all(k in spec for k in keys):
        return None
    try:
        wanted = (int(spec["page"]), float(spec["positionX"]), float(spec["positionY"]))
    except (TypeError, ValueError):
        return None
    hits = [
        f
        for f in envelope.fields
        if (f.page, f.position_x, f.position_y) == wanted and ("type" not in spec or f.type == spec["type"])
    ]
    return hits[0] if len(hits) == 1 else None


class DocsignDeleteFieldOperator(DocsignBaseOperator):
    """Remove a field from an envelope.

    The service refuses this once the envelope is finished ("Envelope already complete") and for a
    field of a recipient who has signed or filled in a field, or of a CC or VIEWER ("Recipient has
    already interacted with the document."); those refusals are made here, before anything is sent,
    and the task fails without retrying. A field that is no longer on the envelope counts as deleted
    (safe on retry), and so does a 404 from the service.

    Returns ``{"envelope_id", "field_id", "deleted"}``: ``deleted`` is False when it was already gone.

    :param envelope_id: The envelope. Templated.
    :param field_id: The field to remove. Templated.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "field_id")
    ui_color = "#ffe0d6"

    def __init__(self, *, envelope_id: str, field_id: int | str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.field_id = field_id

    def execute(self, context: Context) -> dict[str, Any]:
        """Check, then delete the field."""
        field_id = one_id(self.field_id, "field_id")
        return self.delete_from_envelope(
            context,
            str(self.envelope_id),
            "field",
            field_id,
            lambda envelope: any(f.id == field_id for f in envelope.fields),
            field_delete_refusal,
            self.hook.delete_field,
        )
