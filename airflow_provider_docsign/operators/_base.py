"""Shared base of the Docsign operators: the connection id, a lazily created hook, JSON-safe XCom.

Nothing here talks HTTP: every call to the service goes through :class:`DocsignHook`, which is created
on first use inside ``execute`` (never while a DAG file is parsed: no connection look-up, no database
query, no network call at parse time).
"""

from __future__ import annotations

import datetime
import enum
import os
import tempfile
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from airflow_provider_docsign._compat import (
    AirflowFailException,
    BaseOperator,
    BaseOperatorLink,
    ObjectStoragePath,
)
from airflow_provider_docsign.exceptions import (
    DocsignAuthError,
    DocsignInvalidRequestError,
    DocsignNotFoundError,
    DocsignValidationError,
)
from airflow_provider_docsign.operators.links import (
    ENVELOPE_LINK_XCOM_KEY,
    DocsignEnvelopeLink,
    envelope_link_payload,
)
from airflow_provider_docsign.service.ids import ID_FORM, as_id

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context
    from airflow_provider_docsign.hooks.docsign import DocsignHook
    from airflow_provider_docsign.service.corrections import Refusal
    from airflow_provider_docsign.service.models import Envelope

__all__ = [
    "DEFAULT_CONN_ID",
    "DocsignBaseOperator",
    "DocsignOperatorWarning",
    "DocsignRetryWithoutExternalIdWarning",
    "json_safe",
    "resolve_files",
]

DEFAULT_CONN_ID = "docsign_default"

#: Errors a retry of the task cannot fix: the task fails at once instead of using up its retries.
PERMANENT_ERRORS: tuple[type[Exception], ...] = (
    DocsignValidationError,
    DocsignAuthError,
    DocsignInvalidRequestError,
    DocsignNotFoundError,
)


def fail_now(err: Exception) -> AirflowFailException:
    """Wrap an error no retry can fix, so the task fails without using up its retries.

    :param err: The error; its type and message (which never contains the API key) are kept.
    """
    return AirflowFailException(f"{type(err).__name__}: {err}")


def current_try(context: Context) -> int:
    """The task instance's try number: 1 on the first try, more on a retry (1 if the context has none)."""
    return int(getattr(context["ti"], "try_number", 1) or 1)


def status_value(status: Any) -> str:
    """The plain string of an envelope status (enum member or unknown string)."""
    return str(status.value if isinstance(status, enum.Enum) else status)


class DocsignOperatorWarning(UserWarning):
    """Base class of the warnings the Docsign operators emit (at DAG parse time)."""


class DocsignRetryWithoutExternalIdWarning(DocsignOperatorWarning):
    """A create operator has ``retries > 0`` but no ``external_id``.

    Without an ``external_id`` a retried task cannot find the envelope a failed try may already have
    created, so every retry risks a duplicate draft. Use an ``external_id`` unique per logical envelope,
    for example ``"contract-{{ run_id }}-{{ params.customer_id }}"``.
    """


def json_safe(value: Any) -> Any:
    """Return ``value`` as plain JSON data (dict, list, str, int, float, bool, None).

    Enums become their value, records with ``to_dict()`` their dict, dates ISO strings and paths
    strings. Anything else raises :class:`TypeError`, so a Python object never reaches XCom.

    :param value: The value to convert.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return json_safe(value.value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, PurePath | ObjectStoragePath):
        return str(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return json_safe(to_dict())
    raise TypeError(f"{type(value).__name__} is not JSON-safe and cannot be stored in XCom")


def resolve_files(files: Any, *, argument: str = "files") -> list[Any]:
    """Turn the operator's ``files`` argument into a list of paths the hook accepts.

    A ``str`` containing ``"://"`` becomes an :class:`ObjectStoragePath` (``s3://``, ``gs://``...),
    except ``file://`` URIs and plain strings, which become a local :class:`~pathlib.Path`. Path
    objects pass through.

    :param files: One file or a list of files (local paths, URIs or ``ObjectStoragePath``).
    :param argument: The argument name, for error messages.
    """
    if isinstance(files, str | os.PathLike | ObjectStoragePath):
        files = [files]
    if not isinstance(files, Iterable) or isinstance(files, bytes | Mapping):
        raise TypeError(f"{argument} must be a path, a URI or a list of them, not {type(files).__name__}")
    out: list[Any] = []
    for index, item in enumerate(files):
        if isinstance(item, ObjectStoragePath):
            out.append(item)
        elif isinstance(item, str):
            if not item.strip():
                raise ValueError(f"{argument}[{index}] is an empty string")
            if item.lower().startswith("file://"):
                # A local file: a plain Path is read directly, without going through fsspec.
                out.append(Path(unquote(urlsplit(item).path)))
            elif "://" in item:
                out.append(ObjectStoragePath(item))
            else:
                out.append(Path(item))
        elif isinstance(item, os.PathLike):
            out.append(item)
        else:
            raise TypeError(
                f"{argument}[{index}] must be a local path, a URI or an ObjectStoragePath, "
                f"not {type(item).__name__}"
            )
    if not out:
        raise ValueError(f"{argument} is empty: give at least one PDF")
    return out


IF_EXISTS_CHOICES = ("reuse", "fail", "create")


def check_retry_safety(
    operator: DocsignBaseOperator, *, if_exists: str, external_id: str | None, example: str
) -> None:
    """Refuse an unknown ``if_exists``; warn at parse time when retries could make a duplicate.

    :param operator: The creating operator (its ``task_id`` and ``retries`` are read).
    :param if_exists: ``"reuse"``, ``"fail"`` or ``"create"``.
    :param external_id: The operator's external id (``None`` or empty when not set).
    :param example: An example external id for the warning, e.g. ``"contract-{{ run_id }}-<key>"``.
    """
    if if_exists not in IF_EXISTS_CHOICES:
        raise ValueError(f"if_exists must be one of {IF_EXISTS_CHOICES}, not {if_exists!r}")
    if not external_id and (operator.retries or 0) > 0:
        warnings.warn(
            f"Task {operator.task_id!r}: {type(operator).__name__} has retries={operator.retries} but no "
            "external_id, so a retry cannot find an envelope a failed try already created and may make a "
            f"duplicate. Set external_id to a value unique per logical envelope, e.g. {example!r}.",
            DocsignRetryWithoutExternalIdWarning,
            stacklevel=3,
        )


def existing_by_external_id(
    operator: DocsignBaseOperator, external_id: str | None, folder_id: str | None, if_exists: str
) -> str | None:
    """The id of the one envelope with ``external_id`` in the folder, as ``if_exists`` allows.

    ``None`` when there is none; :class:`AirflowFailException` when several match, or when one exists
    and ``if_exists`` is ``"fail"``.

    :param operator: The operator (its hook and log are used).
    :param external_id: The external id to look for.
    :param folder_id: The folder the envelope was created in (``None``: the root).
    :param if_exists: ``"reuse"``, ``"fail"`` or ``"create"``.
    """
    if not external_id:
        return None
    matches = operator.hook.find_envelopes_by_external_id(external_id, folder_id=folder_id)
    if not matches:
        operator.log.info("No envelope with externalId %r found", external_id)
        return None
    if len(matches) > 1:
        ids = ", ".join(m.id for m in matches)
        raise AirflowFailException(
            f"{len(matches)} envelopes have externalId {external_id!r} in folder "
            f"{folder_id or '(root)'}: {ids}. Delete the duplicates or use a unique external_id."
        )
    match = matches[0]
    if if_exists == "fail":
        raise AirflowFailException(
            f"An envelope with externalId {external_id!r} already exists ({match.id}) and if_exists='fail'"
        )
    operator.log.info("Reusing envelope %s (externalId %r)", match.id, external_id)
    return match.id


def file_label(path: Any) -> str:
    """A short name for a file in messages (its base name)."""
    name = getattr(path, "name", None)
    return str(name) if name else str(path)


class DocsignBaseOperator(BaseOperator):
    """Base class of the Docsign operators.

    :param docsign_conn_id: The Airflow connection of type ``docsign`` (default ``docsign_default``).
        Its password is the team API key, which never reaches logs or XCom.
    """

    operator_extra_links: tuple[BaseOperatorLink, ...] = (DocsignEnvelopeLink(),)
    #: What :meth:`push_envelope_link` stored in this process (read by the link when the task ends).
    docsign_link_payload: dict[str, Any] | None = None

    def __init__(self, *, docsign_conn_id: str = DEFAULT_CONN_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.docsign_conn_id = docsign_conn_id

    @cached_property
    def hook(self) -> DocsignHook:
        """The :class:`DocsignHook`, created on first use (inside ``execute``, never at parse time)."""
        from airflow_provider_docsign.hooks.docsign import DocsignHook

        return DocsignHook(docsign_conn_id=self.docsign_conn_id)

    # -- XCom helpers ----------------------------------------------------------------------------

    @staticmethod
    def xcom_push_safe(context: Context, key: str, value: Any) -> None:
        """Push a JSON-safe copy of ``value`` to this task instance's XCom under ``key``.

        :param context: The task context.
        :param key: The XCom key.
        :param value: The value (converted with :func:`json_safe`).
        """
        context["ti"].xcom_push(key=key, value=json_safe(value))

    def push_envelope_link(
        self, context: Context, envelope_id: str, envelope: Envelope | None = None
    ) -> None:
        """Store what the "Docsign envelope" extra link needs, so the UI never calls the service.

        :param context: The task context.
        :param envelope_id: The envelope id.
        :param envelope: The envelope record, for its team URL and type, when already read.
        """
        payload = envelope_link_payload(web_url=self.hook.web_url, envelope_id=envelope_id, envelope=envelope)
        self.xcom_push_safe(context, ENVELOPE_LINK_XCOM_KEY, payload)
        self.docsign_link_payload = dict(payload)

    def read_envelope(self, context: Context, envelope_id: str) -> Envelope:
        """Read the envelope and store its extra link; an error no retry can fix fails the task at once.

        :param context: The task context.
        :param envelope_id: The envelope id.
        """
        try:
            envelope = self.hook.get_envelope(envelope_id)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        self.push_envelope_link(context, envelope_id, envelope)
        return envelope

    def attach_asset_extra(self, context: Context, asset: Any, extra: dict[str, Any], what: str) -> None:
        """Attach ``extra`` to this run's event of ``asset`` (best effort: an event without it is still one).

        :param context: The task context.
        :param asset: The outlet Asset (Dataset on 2.11), or ``None`` for none.
        :param extra: What the event carries.
        :param what: What ``extra`` is, for the warning when it cannot be attached.
        """
        if asset is None:
            return
        events = context.get("outlet_events")
        if events is None:
            return
        try:
            events[asset].extra = extra
        except Exception as err:  # an event without extra is still an event
            self.log.warning("Could not attach %s to the asset event: %s", what, err)

    def delete_from_envelope(
        self,
        context: Context,
        envelope_id: str,
        what: str,
        wanted: int,
        present: Callable[[Envelope], bool],
        refusal: Callable[[Envelope, int], Refusal | None],
        delete: Callable[[int], None],
    ) -> dict[str, Any]:
        """Delete one recipient or field of an envelope, safely on a retry.

        What is no longer on the envelope, or answered 404, counts as deleted; what the service would
        refuse is refused here first (the task fails without retrying). Returns ``{"envelope_id",
        "<what>_id", "deleted"}``.

        :param context: The task context.
        :param envelope_id: The envelope.
        :param what: ``recipient`` or ``field``.
        :param wanted: The id to delete.
        :param present: Whether it is still on the envelope.
        :param refusal: The service's refusal of the delete, if it would refuse it.
        :param delete: The hook call that deletes it.
        """
        envelope = self.read_envelope(context, envelope_id)
        result = {"envelope_id": envelope_id, f"{what}_id": wanted, "deleted": False}
        if not present(envelope):
            self.log.info(
                "%s %s is not on envelope %s (already deleted)", what.capitalize(), wanted, envelope_id
            )
            return result
        refused = refusal(envelope, wanted)
        if refused is not None:
            raise fail_now(refused.error())
        try:
            delete(wanted)
        except DocsignNotFoundError:
            self.log.info("%s %s was already deleted (404)", what.capitalize(), wanted)
            return result
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        self.log.info("Deleted %s %s of envelope %s", what, wanted, envelope_id)
        return {**result, "deleted": True}

    # -- checks shared by several operators ---------------------------------------------------

    @staticmethod
    def items_beyond_page_one(envelope: Envelope, fields: Iterable[Mapping[str, Any]]) -> list[str]:
        """Ids of the envelope's items that some field puts on a page after the first.

        Page 1 always exists, so only these items need their pages counted.

        :param envelope: The envelope.
        :param fields: Fields in the service's JSON shape (``envelopeItemId`` defaults to the first item).
        """
        first = envelope.items[0].id if envelope.items else None
        known = set(envelope.item_ids)
        out: list[str] = []
        for field in fields:
            page = field.get("page")
            item_id = field.get("envelopeItemId") or first
            if isinstance(page, int) and not isinstance(page, bool) and page > 1 and item_id in known:
                out.append(str(item_id))
        return list(dict.fromkeys(out))

    def item_page_counts(self, envelope: Envelope, item_ids: Iterable[str]) -> dict[str, int]:
        """Count the pages of the given items by downloading their original PDF to a temporary dir.

        :param envelope: The envelope the items belong to (for messages).
        :param item_ids: The item ids to count.
        """
        from pypdf import PdfReader

        counts: dict[str, int] = {}
        wanted = [i for i in dict.fromkeys(item_ids) if i]
        if not wanted:
            return counts
        with tempfile.TemporaryDirectory(prefix="docsign-pages-") as tmp:
            for index, item_id in enumerate(wanted):
                target = Path(tmp) / f"item-{index}.pdf"
                self.hook.download_envelope_item(item_id, target, version="original")
                with target.open("rb") as fh:
                    counts[item_id] = len(PdfReader(fh).pages)
        self.log.info("Page counts of envelope %s items: %s", envelope.id, counts)
        return counts


def field_problems(
    fields: Sequence[Mapping[str, Any]],
    *,
    envelope: Envelope,
    page_counts: Mapping[str, int],
    where: str = "fields",
) -> list[str]:
    """Problems of stored or requested fields against the envelope's items and their page counts.

    :param fields: Fields in the service's JSON shape (``recipientId``, ``envelopeItemId``, ``page``...).
    :param envelope: The envelope (its items and recipients).
    :param page_counts: Pages per item id.
    :param where: How the fields are named in messages.
    """
    problems: list[str] = []
    items = {item.id: item for item in envelope.items}
    recipients = {r.id: r for r in envelope.recipients}
    first_item = envelope.items[0].id if envelope.items else None
    for index, field in enumerate(fields):
        label = f"{where}[{index}]"
        if field.get("id") is not None:
            label += f" (field {field['id']})"
        rid = field.get("recipientId")
        if rid is not None and _as_int(rid) not in recipients:
            problems.append(f"{label}: recipientId {rid!r} is not a recipient of envelope {envelope.id}")
        item_id = field.get("envelopeItemId") or first_item
        item = items.get(str(item_id)) if item_id is not None else None
        if item is None:
            problems.append(f"{label}: envelopeItemId {item_id!r} is not an item of envelope {envelope.id}")
            continue
        page = field.get("page")
        pages = page_counts.get(item.id)
        if isinstance(page, int) and pages is not None and not 1 <= page <= pages:
            problems.append(
                f"{label}: page {page} is outside item {item.id} ({item.title!r}), which has {pages} "
                f"page{'s' if pages != 1 else ''}"
            )
    return problems


def _as_int(value: Any) -> Any:
    number = as_id(value)
    return value if number is None else number


def id_list(entries: Any, what: str) -> tuple[list[int], list[str]]:
    """The integer ``id`` of each entry of a non-empty list of objects, and the problems found.

    An id may be given as its digit string (``"100"``, what Jinja renders): see
    :func:`~airflow_provider_docsign.service.ids.as_id`.

    :param entries: The operator's list argument (``recipients``, ``fields``).
    :param what: Its name, for messages.
    """
    if not isinstance(entries, list | tuple) or not entries:
        return [], [f"{what}: must be a non-empty list of objects with an 'id'"]
    ids: list[int] = []
    problems: list[str] = []
    for n, entry in enumerate(entries):
        value = entry.get("id") if isinstance(entry, dict) else None
        number = as_id(value)
        if number is None:
            problems.append(
                f"{what}[{n}]: 'id' must be the id of one of the envelope's {what} ({ID_FORM}), not {value!r}"
            )
        else:
            ids.append(number)
    if len(set(ids)) != len(ids):
        problems.append(f"{what}: an id is given twice")
    return ids, problems


def one_id(value: Any, name: str) -> int:
    """``value`` as a positive integer id, or fail the task at once (a validation error).

    :param value: The operator's argument (an int or its digit string, after templating).
    :param name: Its name, for the message.
    """
    number = as_id(value)
    if number is None or number < 1:
        raise fail_now(
            DocsignValidationError([f"{name} must be a positive integer id ({ID_FORM}), not {value!r}"], name)
        )
    return number
