"""Operators that add, rename/reorder and delete the PDF items of an envelope."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign._text import printable
from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignAPIError,
    DocsignValidationError,
)
from airflow_provider_docsign.hooks._items import service_title
from airflow_provider_docsign.operators._base import (
    PERMANENT_ERRORS,
    DocsignBaseOperator,
    current_try,
    fail_now,
    file_label,
    resolve_files,
)
from airflow_provider_docsign.service.models import parse_ts

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.service.models import Envelope, EnvelopeItem

__all__ = [
    "DocsignAddEnvelopeItemsOperator",
    "DocsignDeleteEnvelopeItemOperator",
    "DocsignUpdateEnvelopeItemsOperator",
]

#: How far apart an item's creation and the run's start, both on the service's clock, must be for a
#: retry to say which came first: the ``Date`` header the run's start is placed by has whole seconds,
#: and Airflow's scheduler (the run's start) and worker (now) clocks may differ a little.
_CLOCK_SLACK = timedelta(seconds=5)


def _last_items(envelope: Envelope, names: list[str]) -> list[EnvelopeItem] | None:
    """The envelope's last items if they are titled ``names``, in order; ``None`` otherwise.

    The service titles a new item with its file name.
    """
    if len(envelope.items) < len(names):
        return None
    tail = list(envelope.items[len(envelope.items) - len(names) :])
    return tail if [i.title for i in tail] == names else None


def _run_start(context: Context) -> datetime | None:
    """When this DAG run started, on Airflow's clock (``None`` if the context does not say)."""
    dag_run = context.get("dag_run") if hasattr(context, "get") else None
    start = getattr(dag_run, "start_date", None)
    return parse_ts(start) if isinstance(start, datetime) else None


class DocsignAddEnvelopeItemsOperator(DocsignBaseOperator):
    """Add PDFs to a DRAFT envelope, then verify the final set and order of its items.

    The created item ids are kept, and the envelope is read again: the task fails unless every new
    item is there, after the items that existed before, in the order the files were given.

    Adding items is not idempotent (the service has no idempotency key), so it is never repeated
    blindly. After an add whose answer was lost, the envelope is read again and items that are new
    since the read before the add, titled as these files in order (the service titles a new item with
    its file name), are adopted. On a retry of the task, the envelope's last items titled as these
    files are adopted only if an earlier try of this DAG run can have added them: the service's audit
    log must show each was added by ``/envelope/item/create-many`` after the run started (the run's
    age, on Airflow's clock, is measured back from the service's ``Date``, so the two clocks need not
    agree). Items that came with the envelope, or were added before the run started, are not these
    files: they are uploaded. When it cannot be told (an item added within seconds of the run's start,
    a template, which has no audit log, no run start in the context), the task fails without
    uploading, naming the items. Returns the new item ids, in the order the files were given.

    :param envelope_id: The DRAFT envelope. Templated.
    :param files: The PDFs to add, in order: local paths, ``ObjectStoragePath`` objects or URIs
        (``s3://...``). Templated.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "files")
    template_fields_renderers = {"files": "json"}
    ui_color = "#d6eaff"

    def __init__(self, *, envelope_id: str, files: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.files = files

    def execute(self, context: Context) -> list[str]:
        """Add the files and return the new item ids in file order."""
        envelope_id = str(self.envelope_id)
        try:
            files = resolve_files(self.files)
        except (TypeError, ValueError) as err:
            raise fail_now(
                DocsignValidationError([str(err)], context=f"task {self.task_id!r} arguments")
            ) from err
        self.push_envelope_link(context, envelope_id)
        names = [file_label(f) for f in files]
        try_number = current_try(context)
        try:
            before = self.hook.get_envelope(envelope_id)
            self.push_envelope_link(context, envelope_id, before)
            adopted = self._added_by_earlier_try(context, before, names) if try_number > 1 else None
            if adopted is not None:
                self.log.info("Try %s: the files were added by a previous try as %s", try_number, adopted)
                return adopted
            listing = printable(", ".join(names))
            self.log.info("Adding %d file(s) to envelope %s: %s", len(files), envelope_id, listing)
            created = self.hook.add_envelope_items(envelope_id, files)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        except DocsignAmbiguousWriteError:
            again = self.hook.get_envelope(envelope_id)
            adopted = self._added_earlier(again, names, before=before)
            if adopted is None:
                self.log.error(
                    "The add's outcome is unknown and the files are not on envelope %s", envelope_id
                )
                raise
            self.log.warning("The add's answer was lost, but the files are on the envelope as %s", adopted)
            return adopted
        new_ids = [item.id for item in created]
        self.log.info("Created item(s) %s", new_ids)
        after = self.hook.get_envelope(envelope_id)
        self._verify(before, after, new_ids, len(files))
        return new_ids

    @staticmethod
    def _added_earlier(envelope: Envelope, names: list[str], before: Envelope) -> list[str] | None:
        """After a lost answer: ids of the last items if they are these files, new since ``before``.

        ``before`` is the read just before the add, in this try.
        """
        tail = _last_items(envelope, names)
        if tail is None or any(i.id in before.item_ids for i in tail):
            return None
        return [i.id for i in tail]

    def _added_by_earlier_try(
        self, context: Context, envelope: Envelope, names: list[str]
    ) -> list[str] | None:
        """On a retry: ids of the envelope's last items if an earlier try of this run added these files.

        ``None`` when they are not these files, or were there before the run (upload them). An earlier
        try uploaded all its files in one ``create-many``, which writes an ``ENVELOPE_ITEM_CREATED``
        audit entry per item in the same transaction; so each item needs one, dated after the run's
        start. The run's start is placed on the service's clock as its ``Date`` minus the run's age.

        :raises AirflowFailException: When it cannot be told; nothing is uploaded.
        """
        tail = _last_items(envelope, names)
        if tail is None:
            return None
        shown = ", ".join(f"{i.id} ({printable(i.title or '', 100)!r})" for i in tail)

        def undecided(why: str) -> AirflowFailException:
            return AirflowFailException(
                f"Try {current_try(context)}: the last item(s) of envelope {envelope.id}, {shown}, have the "
                f"names of these files, and it cannot be told whether an earlier try of this run added "
                f"them or they were there before ({why}); nothing was uploaded. If an earlier try added "
                "them, mark the task successful; if not, rename or delete them (or the files), then "
                "clear the task"
            )

        if str(envelope.type or "").upper() == "TEMPLATE":
            raise undecided("a template has no audit log to say when its items were added")
        wanted = {i.id for i in tail}
        created: dict[str, datetime | None] = {}
        for entry in self.hook.get_audit_log(envelope.id):  # newest first: stop when all are found
            data = entry.get("data")
            item_id = data.get("envelopeItemId") if isinstance(data, dict) else None
            if entry.get("type") == "ENVELOPE_ITEM_CREATED" and item_id in wanted and item_id not in created:
                try:
                    created[item_id] = parse_ts(entry.get("createdAt"))
                except ValueError:
                    created[item_id] = None
                if len(created) == len(wanted):
                    break
        if len(created) < len(wanted):
            came = [i.id for i in tail if i.id not in created]
            self.log.info(
                "Items %s came with the envelope, not from an earlier try: uploading the files", came
            )
            return None
        start, service_now = _run_start(context), self.hook.last_service_time
        if start is None or service_now is None:
            raise undecided(
                "no " + ("DAG run start in the context" if start is None else "Date from the service")
            )
        run_start = service_now - max(timedelta(0), datetime.now(timezone.utc) - start)
        if any(t is not None and t < run_start - _CLOCK_SLACK for t in created.values()):
            self.log.info("Items %s were there before this run started: uploading the files", sorted(created))
            return None
        if all(t is not None and t > run_start + _CLOCK_SLACK for t in created.values()):
            return [i.id for i in tail]
        raise undecided(
            f"they were added within {_CLOCK_SLACK.seconds} seconds of the run's start, or at a time the "
            "audit log does not give"
        )

    def _verify(self, before: Envelope, after: Envelope, new_ids: list[str], count: int) -> None:
        problems: list[str] = []
        if len(new_ids) != count:
            problems.append(f"the service created {len(new_ids)} item(s) for {count} file(s)")
        expected = [i for i in before.item_ids if i not in new_ids] + new_ids
        actual = after.item_ids
        missing = [i for i in expected if i not in actual]
        if missing:
            problems.append(f"item(s) {missing} are missing from the envelope")
        unexpected = [i for i in actual if i not in expected]
        if unexpected:
            problems.append(f"unexpected item(s) {unexpected} appeared (another writer?)")
        if not problems and actual != expected:
            problems.append(f"the items are in order {actual}, expected {expected}")
        if problems:
            raise AirflowFailException(
                f"Envelope {after.id} after adding items is not as expected: " + "; ".join(problems)
            )


class DocsignUpdateEnvelopeItemsOperator(DocsignBaseOperator):
    """Rename and reorder the items of an envelope, then verify that the service applied it.

    The envelope is read back after the update, and the task fails if any item's title or order is
    not what was asked (the service has been seen to answer 200 and leave an order unchanged). The
    service stores a title trimmed (``" Annex A "`` becomes ``"Annex A"``), and titles are compared
    the same way; the XCom holds the title as stored.

    Returns the envelope's items after the update, ``[{"id", "title", "order"}]`` sorted by order.

    :param envelope_id: The envelope. Templated.
    :param items: A list of ``{"envelopeItemId": ..., "title": ..., "order": ...}`` (``title`` and
        ``order`` each optional, at least one of them given; ``order`` is one-based). Templated
        (rendered as JSON); may come from an upstream task's XCom.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "items")
    template_fields_renderers = {"items": "json"}
    ui_color = "#d6eaff"

    def __init__(self, *, envelope_id: str, items: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.items = items

    def execute(self, context: Context) -> list[dict[str, Any]]:
        """Apply the titles and order, verify them, and return the final items."""
        envelope_id = str(self.envelope_id)
        items = self._checked_items()
        envelope = self.read_envelope(context, envelope_id)
        known = set(envelope.item_ids)
        unknown = [
            f"items[{n}]: envelopeItemId {item['envelopeItemId']!r} is not an item of envelope {envelope_id}"
            for n, item in enumerate(items)
            if item["envelopeItemId"] not in known
        ]
        if unknown:
            raise fail_now(DocsignValidationError(unknown, context="items"))
        # On success the hook has already read the envelope back; its items are used for the check
        # below instead of a third read. Only a lost or unapplied answer needs a fresh read.
        after_items: list[EnvelopeItem] | None = None
        try:
            after_items = self.hook.update_envelope_items(envelope_id, items)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        except DocsignAmbiguousWriteError:
            # Renaming and reordering are idempotent: the verification below tells whether it applied.
            self.log.warning("The update's answer was lost; verifying the envelope instead")
        except DocsignAPIError as err:
            if err.error_code != "NOT_APPLIED":
                raise
            # The hook read the envelope back and found the change missing (a 200 that was not applied);
            # the check below names every difference.
            self.log.error("The service answered the update but did not apply it: %s", err.message)
        if after_items is None:
            after_items = list(self.hook.get_envelope(envelope_id).items)
        by_id = {item.id: item for item in after_items}
        problems: list[str] = []
        for item in items:
            current = by_id.get(item["envelopeItemId"])
            if current is None:
                problems.append(f"item {item['envelopeItemId']} is gone")
                continue
            # The service stores a title trimmed (see service_title): " Annex A " is applied as "Annex A".
            if "title" in item and service_title(current.title or "") != service_title(item["title"]):
                problems.append(f"item {current.id} has title {current.title!r}, asked {item['title']!r}")
            if "order" in item and current.order != item["order"]:
                problems.append(f"item {current.id} has order {current.order}, asked {item['order']}")
        if problems:
            raise AirflowFailException(
                f"The service did not apply the item update of envelope {envelope_id}: " + "; ".join(problems)
            )
        final = [{"id": i.id, "title": i.title, "order": i.order} for i in after_items]
        self.log.info("Items of envelope %s: %s", envelope_id, final)
        return final

    def _checked_items(self) -> list[dict[str, Any]]:
        raw = self.items
        problems: list[str] = []
        if not isinstance(raw, list | tuple) or not raw:
            raise fail_now(DocsignValidationError(["items: must be a non-empty list"], context="items"))
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for n, item in enumerate(raw):
            label = f"items[{n}]"
            if not isinstance(item, dict):
                problems.append(f"{label}: must be an object, not {type(item).__name__}")
                continue
            extra = sorted(set(item) - {"envelopeItemId", "title", "order"})
            if extra:
                problems.append(f"{label}: unknown key(s) {extra} (allowed: envelopeItemId, title, order)")
            item_id = item.get("envelopeItemId")
            if not isinstance(item_id, str) or not item_id:
                problems.append(f"{label}: envelopeItemId must be a non-empty string")
                continue
            if item_id in seen:
                problems.append(f"{label}: envelopeItemId {item_id} is listed twice")
            seen.add(item_id)
            clean: dict[str, Any] = {"envelopeItemId": item_id}
            if "title" in item:
                title = item["title"]
                if not isinstance(title, str) or not 1 <= len(title.strip()) <= 255:
                    problems.append(f"{label}: title must be a string of 1-255 characters")
                else:
                    clean["title"] = title
            if "order" in item:
                order = item["order"]
                if isinstance(order, bool) or not isinstance(order, int) or order < 1:
                    problems.append(f"{label}: order must be an integer >= 1, not {order!r}")
                else:
                    clean["order"] = order
            if "title" not in item and "order" not in item:
                problems.append(f"{label}: give a title, an order, or both")
            out.append(clean)
        orders = [i["order"] for i in out if "order" in i]
        if len(orders) != len(set(orders)):
            problems.append(f"items: the same order is asked for two items ({orders})")
        if problems:
            raise fail_now(DocsignValidationError(problems, context="items"))
        return out


class DocsignDeleteEnvelopeItemOperator(DocsignBaseOperator):
    """Delete one PDF item from a DRAFT envelope; the fields placed on it are deleted with it.

    Before deleting, the fields on that item are logged. With ``fail_if_fields=True`` the task
    refuses to delete an item that has fields. An item that is already gone on a retry of the task is
    a success (safe on retry).

    Returns ``{"envelope_id", "envelope_item_id", "deleted_field_ids"}``.

    :param envelope_id: The envelope. Templated.
    :param envelope_item_id: The item to delete. Templated.
    :param fail_if_fields: Refuse (fail the task) when the item has fields. Default ``False``.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "envelope_item_id")
    ui_color = "#ffe0d6"

    def __init__(
        self, *, envelope_id: str, envelope_item_id: str, fail_if_fields: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.envelope_id = envelope_id
        self.envelope_item_id = envelope_item_id
        self.fail_if_fields = fail_if_fields

    def execute(self, context: Context) -> dict[str, Any]:
        """Log the item's fields, delete the item and return what was deleted."""
        envelope_id = str(self.envelope_id)
        item_id = str(self.envelope_item_id)
        envelope = self.read_envelope(context, envelope_id)
        if item_id not in envelope.item_ids:
            try_number = current_try(context)
            if try_number > 1:
                self.log.info(
                    "Item %s is no longer in envelope %s: deleted by a previous try", item_id, envelope_id
                )
                return {"envelope_id": envelope_id, "envelope_item_id": item_id, "deleted_field_ids": []}
            raise AirflowFailException(
                f"Item {item_id} is not an item of envelope {envelope_id} (items: {envelope.item_ids})"
            )
        fields = [f for f in envelope.fields if f.envelope_item_id == item_id]
        for f in fields:
            self.log.info(
                "Field %s on item %s: %s on page %s for recipient %s",
                f.id,
                item_id,
                f.type,
                f.page,
                f.recipient_id,
            )
        if fields and self.fail_if_fields:
            raise AirflowFailException(
                f"Item {item_id} of envelope {envelope_id} has {len(fields)} field(s) "
                f"({[f.id for f in fields]}) and fail_if_fields=True: not deleting it"
            )
        if not fields:
            self.log.info("Item %s has no fields", item_id)
        try:
            self.hook.delete_envelope_item(envelope_id, item_id)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        except DocsignAmbiguousWriteError:
            if item_id in self.hook.get_envelope(envelope_id).item_ids:
                raise
        self.log.info("Deleted item %s of envelope %s with %d field(s)", item_id, envelope_id, len(fields))
        return {
            "envelope_id": envelope_id,
            "envelope_item_id": item_id,
            "deleted_field_ids": [f.id for f in fields],
        }
