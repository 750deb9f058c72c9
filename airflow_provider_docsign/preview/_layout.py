"""Turn a creation payload, or an envelope's stored fields, into one list of fields to draw, and check it.

Both entry points of the preview (a payload about to be sent, an envelope that already exists) end up
here as :class:`PlacedField` records, so one drawing routine and one set of checks serve both.
Coordinates stay in the service's terms: percentages of the displayed page, from its top-left corner.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from airflow_provider_docsign.exceptions import DocsignValidationError

#: Field types that satisfy the service's rule "every SIGNER needs a signature field".
SIGNATURE_TYPES = frozenset({"SIGNATURE", "FREE_SIGNATURE"})

_COORDINATE_KEYS = ("positionX", "positionY", "width", "height")


@dataclass(frozen=True)
class PreviewWarning:
    """A placement problem found while rendering a preview; it is also drawn on the page it concerns.

    :param kind: ``"overlap"``, ``"off_page"``, ``"missing_page"``, ``"missing_file"`` or
        ``"missing_signature"``.
    :param message: A sentence a person can act on.
    :param file: The file (name) concerned, if any.
    :param page: The one-based page concerned, if any.
    :param field: The field number (``#n`` on the drawing: position in the payload, counting from 1,
        recipient by recipient), if any.
    :param recipient: The recipient's name or email, if any.
    :param other_field: For an overlap, the number of the other field.
    """

    kind: str
    message: str
    file: str | None = None
    page: int | None = None
    field: int | None = None
    recipient: str | None = None
    other_field: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the warning as a JSON-safe dict (for XCom)."""
        return asdict(self)

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class PreviewRecipient:
    """A recipient as the preview shows it.

    :param index: Position among the recipients (chooses the colour).
    :param label: Name, else email, else ``"recipient N"``.
    :param role: The service role, e.g. ``SIGNER``.
    """

    index: int
    label: str
    role: str


@dataclass(frozen=True)
class PlacedField:
    """One field to draw, in the service's coordinates.

    :param number: One-based number shown on the drawing (``#n``).
    :param recipient: Index into the recipients.
    :param file_index: Zero-based index of the PDF the field is on, or ``None`` if it matches none.
    :param page: One-based page number.
    :param x: Left edge, percent of the displayed page width.
    :param y: Top edge, percent of the displayed page height.
    :param width: Percent of the displayed page width.
    :param height: Percent of the displayed page height.
    :param type: The field type, e.g. ``SIGNATURE``.
    :param target: How the field named its file, for messages (e.g. ``identifier 3``).
    :param value: A prefilled value to show on the field (templates), if any.
    """

    number: int
    recipient: int
    file_index: int | None
    page: int
    x: float
    y: float
    width: float
    height: float
    type: str
    target: str = ""
    value: str | None = None


@dataclass(frozen=True)
class Layout:
    """Everything the drawing needs: files (name and page count), recipients and fields."""

    file_names: tuple[str, ...]
    page_counts: tuple[int, ...]
    recipients: tuple[PreviewRecipient, ...]
    fields: tuple[PlacedField, ...]


def recipient_label(name: Any, email: Any, index: int) -> str:
    """The text that identifies a recipient on the drawing: name, else email, else ``recipient N``."""
    for value in (name, email):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return f"recipient {index + 1}"


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        # Stored fields come back with Decimal strings ("12.5"); accept the same in payloads.
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _resolve_identifier(identifier: Any, file_names: Sequence[str]) -> tuple[int | None, str]:
    """Map a payload field's ``identifier`` to a file index the way the real service does.

    Real service (v2.17, see documenso-api-v2.md): a number indexes ``files`` like JS ``Array.at``, so
    a negative number counts from the end; a string must equal an uploaded file's name exactly; an
    absent identifier means the first file.
    """
    count = len(file_names)
    if identifier is None:
        return (0 if count else None), "the first file"
    if isinstance(identifier, bool):
        return None, f"identifier {identifier!r}"
    if isinstance(identifier, int):
        index = identifier + count if identifier < 0 else identifier
        return (index if 0 <= index < count else None), f"identifier {identifier}"
    if isinstance(identifier, str):
        matches = [i for i, name in enumerate(file_names) if name == identifier]
        return (matches[0] if matches else None), f"identifier {identifier!r}"
    return None, f"identifier {identifier!r}"


def layout_from_payload(recipients: Any, file_names: Sequence[str], page_counts: Sequence[int]) -> Layout:
    """Build the layout from ``recipients`` in the creation payload's shape (fields nested in each).

    :param recipients: A list of recipient dicts (``email``, ``name``, ``role``, ``fields``), or a
        whole creation payload with a ``recipients`` key.
    :param file_names: The PDFs' file names, in upload order (``identifier`` strings match these).
    :param page_counts: The PDFs' page counts, in the same order.
    :raises DocsignValidationError: listing every entry that cannot be drawn at all (not a list, a
        field without numeric coordinates, ...). Placement problems are warnings, not errors.
    """
    if isinstance(recipients, Mapping) and "recipients" in recipients:
        recipients = recipients["recipients"]
    if not isinstance(recipients, Sequence) or isinstance(recipients, (str, bytes)):
        raise DocsignValidationError(
            [f"recipients must be a list of recipient objects, got {type(recipients).__name__}"],
            context="preview payload",
        )
    problems: list[str] = []
    people: list[PreviewRecipient] = []
    fields: list[PlacedField] = []
    for r_index, recipient in enumerate(recipients):
        where = f"recipients[{r_index}]"
        if not isinstance(recipient, Mapping):
            problems.append(f"{where}: must be an object, got {type(recipient).__name__}")
            continue
        label = recipient_label(recipient.get("name"), recipient.get("email"), r_index)
        role = str(recipient.get("role") or "SIGNER").upper()
        people.append(PreviewRecipient(index=r_index, label=label, role=role))
        raw_fields = recipient.get("fields") or []
        if not isinstance(raw_fields, Sequence) or isinstance(raw_fields, (str, bytes)):
            problems.append(f"{where} ({label}): fields must be a list")
            continue
        for f_index, raw in enumerate(raw_fields):
            fwhere = f"{where}.fields[{f_index}] ({label})"
            if not isinstance(raw, Mapping):
                problems.append(f"{fwhere}: must be an object, got {type(raw).__name__}")
                continue
            bad = [key for key in _COORDINATE_KEYS if _number(raw.get(key)) is None]
            page = raw.get("page", 1)
            if isinstance(page, bool) or not isinstance(page, int):
                bad.append("page")
            field_type = raw.get("type")
            if not isinstance(field_type, str) or not field_type:
                bad.append("type")
            if bad:
                problems.append(f"{fwhere}: missing or invalid {', '.join(bad)}")
                continue
            file_index, target = _resolve_identifier(raw.get("identifier"), file_names)
            coords = [float(_number(raw[key]) or 0.0) for key in _COORDINATE_KEYS]
            fields.append(
                PlacedField(
                    number=len(fields) + 1,
                    recipient=len(people) - 1,
                    file_index=file_index,
                    page=int(page),
                    x=coords[0],
                    y=coords[1],
                    width=coords[2],
                    height=coords[3],
                    type=str(field_type).upper(),
                    target=target,
                )
            )
    if problems:
        raise DocsignValidationError(problems, context="preview payload")
    return Layout(tuple(file_names), tuple(page_counts), tuple(people), tuple(fields))


def layout_from_envelope(envelope: Any, file_names: Sequence[str], page_counts: Sequence[int]) -> Layout:
    """Build the layout from a fetched :class:`~airflow_provider_docsign.service.models.Envelope`.

    Recipients keep the service's order (by id, i.e. creation order) and fields are numbered by
    recipient, then by field id (creation order), so an envelope created from a payload gets the same
    colours and numbers as the preview of that payload.

    :param envelope: The envelope, with ``items`` sorted by order, ``recipients`` and ``fields``.
    :param file_names: Names of the downloaded items, in item order.
    :param page_counts: Their page counts.
    """
    people: list[PreviewRecipient] = []
    by_id: dict[Any, int] = {}
    for index, recipient in enumerate(sorted(envelope.recipients, key=lambda r: r.id)):
        people.append(
            PreviewRecipient(
                index=index,
                label=recipient_label(recipient.name, recipient.email, index),
                role=str(recipient.role or "SIGNER").upper(),
            )
        )
        by_id[recipient.id] = index
    item_index = {item.id: index for index, item in enumerate(envelope.items)}
    stored = sorted(
        envelope.fields, key=lambda f: (by_id.get(f.recipient_id, len(people)), f.id if f.id else 0)
    )
    fields: list[PlacedField] = []
    for field in stored:
        recipient = by_id.get(field.recipient_id)
        if recipient is None:  # a field of a recipient the envelope does not list: show it anyway
            recipient = len(people)
            people.append(
                PreviewRecipient(index=recipient, label=f"recipient id {field.recipient_id}", role="SIGNER")
            )
            by_id[field.recipient_id] = recipient
        fields.append(
            PlacedField(
                number=len(fields) + 1,
                recipient=recipient,
                file_index=item_index.get(field.envelope_item_id),
                page=int(field.page or 1),
                x=float(field.position_x or 0.0),
                y=float(field.position_y or 0.0),
                width=float(field.width or 0.0),
                height=float(field.height or 0.0),
                type=str(field.type or "?").upper(),
                target=f"item {field.envelope_item_id}",
            )
        )
    return Layout(tuple(file_names), tuple(page_counts), tuple(people), tuple(fields))


def _field_text(field: PlacedField, layout: Layout) -> str:
    return f"field #{field.number} ({field.type} of {layout.recipients[field.recipient].label})"


def check_layout(layout: Layout) -> list[PreviewWarning]:
    """Return the warnings for a layout.

    It reports missing files or pages, fields off the page, overlaps, and SIGNERs without a
    signature field, in a stable order (field by field, then overlaps, then signers).
    """
    warnings: list[PreviewWarning] = []

    def file_name(field: PlacedField) -> str | None:
        return None if field.file_index is None else layout.file_names[field.file_index]

    drawable: list[PlacedField] = []
    for field in layout.fields:
        who = layout.recipients[field.recipient].label
        if field.file_index is None:
            warnings.append(
                PreviewWarning(
                    kind="missing_file",
                    message=f"{_field_text(field, layout)}: {field.target} matches none of the "
                    f"{len(layout.file_names)} file(s); the service would answer 404",
                    page=field.page,
                    field=field.number,
                    recipient=who,
                )
            )
            continue
        count = layout.page_counts[field.file_index]
        if not 1 <= field.page <= count:
            warnings.append(
                PreviewWarning(
                    kind="missing_page",
                    message=f"{_field_text(field, layout)}: page {field.page} does not exist in "
                    f"{file_name(field)} ({count} page{'s' if count != 1 else ''}); the envelope "
                    "could never be completed",
                    file=file_name(field),
                    page=field.page,
                    field=field.number,
                    recipient=who,
                )
            )
            continue
        drawable.append(field)
        right, bottom = field.x + field.width, field.y + field.height
        if field.x < 0 or field.y < 0 or right > 100 or bottom > 100:
            warnings.append(
                PreviewWarning(
                    kind="off_page",
                    message=f"{_field_text(field, layout)} runs off the page: x {field.x:g}..{right:g}, "
                    f"y {field.y:g}..{bottom:g} (each must stay within 0..100)",
                    file=file_name(field),
                    page=field.page,
                    field=field.number,
                    recipient=who,
                )
            )
    pages: dict[tuple[int | None, int], list[PlacedField]] = {}
    for placed in drawable:
        pages.setdefault((placed.file_index, placed.page), []).append(placed)
    pairs = [
        (first, second)
        for on_page in pages.values()
        for i, first in enumerate(on_page)
        for second in on_page[i + 1 :]
    ]
    for first, second in sorted(pairs, key=lambda pair: (pair[0].number, pair[1].number)):
        overlap_w = min(first.x + first.width, second.x + second.width) - max(first.x, second.x)
        overlap_h = min(first.y + first.height, second.y + second.height) - max(first.y, second.y)
        if overlap_w > 0 and overlap_h > 0:
            warnings.append(
                PreviewWarning(
                    kind="overlap",
                    message=f"{_field_text(first, layout)} overlaps {_field_text(second, layout)}",
                    file=file_name(first),
                    page=first.page,
                    field=first.number,
                    recipient=layout.recipients[first.recipient].label,
                    other_field=second.number,
                )
            )
    for person in layout.recipients:
        if person.role != "SIGNER":
            continue
        if not any(f.recipient == person.index and f.type in SIGNATURE_TYPES for f in layout.fields):
            warnings.append(
                PreviewWarning(
                    kind="missing_signature",
                    message=f"SIGNER {person.label} has no SIGNATURE or FREE_SIGNATURE field; the "
                    "service refuses to distribute (MISSING_SIGNATURE_FIELD)",
                    recipient=person.label,
                )
            )
    return warnings


def warned_fields(warnings: Sequence[PreviewWarning]) -> frozenset[int]:
    """Numbers of the fields that some warning concerns (they get a red outline)."""
    numbers = {w.field for w in warnings if w.field is not None}
    numbers.update(w.other_field for w in warnings if w.other_field is not None)
    return frozenset(numbers)
