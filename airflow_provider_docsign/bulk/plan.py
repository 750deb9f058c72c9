"""Bulk sending: a campaign's rows, what each row sends, and its local checks (pure code, no network).

A campaign is a table with one row per envelope. Each row has a key (the ``row_key`` column, or the
column the operator names) and either

* a **template** (a ``template_id`` column, or the operator's ``template_id``): the envelope is made
  with ``POST /envelope/use`` (one request, sent at once); or
* **PDFs** (a ``files`` column, or the operator's ``files``): ``POST /envelope/create`` then
  ``POST /envelope/distribute`` (two requests).

The other columns a row may carry are ``recipients``, ``prefill_fields``, ``files``, ``title`` and
``meta`` (in a CSV, lists and objects are JSON text). Where a row has no such column, the operator's
argument of the same name is used, with ``{column}`` in its strings replaced by the row's values
(``title="Renewal for {name}"``, ``recipients=[{"placeholder": "Customer", "email": "{email}"}]``).

Every row is checked with the same validators the single-envelope operators use
(:func:`~airflow_provider_docsign.service.payloads.validate_create_payload`,
:func:`~airflow_provider_docsign.service.templates.validate_use_payload`) before the first envelope is sent.
Each row's ``externalId`` is ``<campaign id>(<row key>)``: unique per campaign and row, and closed by
``)`` so that the service's substring search for one row does not also match every longer key (and
free of ``[``, ``*`` and ``?``, which object stores' path globbing would take for patterns when the
archive names folders after it).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import string
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_docsign._sources import _object_storage_path_cls, to_path_like
from airflow_provider_docsign.bulk.rows import (
    INPUT_FORMATS,
    MAX_CELL,
    OUTPUT_FORMATS,
    BulkConfigError,
    SourceRows,
    default_max_failures,
    format_of,
    read_campaign_rows,
    read_rows,
    result_table_format,
    sent_envelope_ids,
)
from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignAPIError,
    DocsignAuthError,
    DocsignConnectionError,
    DocsignError,
    DocsignRateLimitError,
    DocsignServerError,
    DocsignValidationError,
)
from airflow_provider_docsign.export.rows import Column
from airflow_provider_docsign.service.expiry import DEFAULT as DEFAULT_PERIOD
from airflow_provider_docsign.service.models import Envelope
from airflow_provider_docsign.service.outgoing import check_request, text_problem
from airflow_provider_docsign.service.payloads import validate_create_payload
from airflow_provider_docsign.service.templates import validate_use_payload

__all__ = [
    "INPUT_FORMATS",
    "MAX_CELL",
    "OUTPUT_FORMATS",
    "RESULT_COLUMNS",
    "RESULT_STATUSES",
    "BulkConfigError",
    "CampaignPlan",
    "SourceRows",
    "classify_error",
    "default_max_failures",
    "format_of",
    "read_campaign_rows",
    "read_rows",
    "result_table_format",
    "sent_envelope_ids",
]

#: The statuses a row ends with in the result table.
RESULT_STATUSES = ("sent", "created", "invalid", "failed")
#: Columns a row may carry (besides its key); the rest are only values for ``{column}`` placeholders.
ROW_FIELDS = ("template_id", "recipients", "prefill_fields", "files", "title", "meta")
#: Columns holding lists or objects: JSON text in a CSV cell.
_JSON_FIELDS = ("recipients", "prefill_fields", "files", "meta")
MAX_EXTERNAL_ID = 255
#: Characters a campaign id may not hold: ``(`` and ``)`` keep ``<campaign>(<key>)`` injective.
_CAMPAIGN_FORBIDDEN = "()[]*?"
#: Characters a row key may not hold: object stores' globbing reads them as patterns.
_KEY_FORBIDDEN = "[]*?"
#: A URL's scheme: a row may not choose one.
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")

RESULT_COLUMNS: tuple[Column, ...] = (
    Column("row_key", "string", "The row's key, as in the input (joins back to the source rows)."),
    Column("external_id", "string", "The envelope's externalId: <campaign id>(<row key>)."),
    Column("envelope_id", "string", "The envelope made for the row (null for invalid rows)."),
    Column("status", "string", "sent, created (not sent), invalid (never sent) or failed."),
    Column("error", "string", "Why the row is invalid or failed, or why a created envelope was not sent."),
    Column("attempts", "int64", "Write requests made for the row, over every try of the task."),
    Column("sent_at", "timestamp", "When the envelope was sent (UTC)."),
)


# -- what a row sends --------------------------------------------------------------------------


class _Missing(dict[str, Any]):
    """The row's values for ``str.format_map``; a missing column is named in the error."""

    def __missing__(self, key: str) -> Any:
        raise KeyError(key)


def _fill(value: Any, row: Mapping[str, Any], where: str, problems: list[str]) -> Any:
    """``value`` with ``{column}`` in its strings replaced by the row's values (recursively)."""
    if isinstance(value, str):
        if "{" not in value and "}" not in value:
            return value
        values = _Missing({k: ("" if v is None else v) for k, v in row.items()})
        try:
            return string.Formatter().vformat(value, (), values)
        except KeyError as err:
            problems.append(f"{where}: {value!r} names column {err.args[0]!r}, which the row does not have")
        except (ValueError, IndexError, AttributeError) as err:
            problems.append(f"{where}: {value!r} is not a usable {{column}} pattern ({err})")
        return value
    if isinstance(value, Mapping):
        return {k: _fill(v, row, f"{where}.{k}", problems) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_fill(v, row, f"{where}[{i}]", problems) for i, v in enumerate(value)]
    return value


def _cell(row: Mapping[str, Any], name: str, problems: list[str]) -> Any:
    """A row's own value for ``name`` (JSON text parsed for list and object columns)."""
    value = row.get(name)
    if name in _JSON_FIELDS and isinstance(value, str):
        text = value.strip()
        if text[:1] in ("[", "{"):
            try:
                return json.loads(text)
            except json.JSONDecodeError as err:
                problems.append(f"column {name!r} is not valid JSON ({err.msg})")
                return None
    return value


@dataclass(frozen=True)
class CampaignPlan:
    """How every row of a campaign becomes one envelope (the operator's arguments, checked).

    :param campaign_id: The campaign's id; every ``externalId`` starts with it.
    :param key_column: The column holding each row's key.
    :param template_id: The template of rows without a ``template_id`` column.
    :param title: The title of rows without a ``title`` column (``{column}`` placeholders allowed);
        required for PDF rows, an override for template rows.
    :param recipients: The recipients of rows without a ``recipients`` column.
    :param prefill_fields: Template rows: ``{field label: value}`` or ``[{"id"|"label", "value"}]``.
    :param files: PDF rows: the PDFs; template rows: replacement PDFs.
    :param meta: PDF rows: the envelope ``meta``; template rows: ``override`` (``subject``, ...).
    :param folder_id: The folder every envelope is made in (``None``: the root).
    :param distribute: Send each envelope (``True``) or leave it a draft.
    :param expiration_period: As for the single-envelope operators.
    :param reminders: As for the single-envelope operators.
    :param files_root: Where files named by a row may be: a local folder, or an object-store prefix
        (``s3://bucket/contracts``). A path from a row (a ``files`` cell, or a ``{column}`` inside
        ``files``) must lie under it after normalisation and symlink resolution; without it such paths
        are refused. A fixed ``files`` list needs none.
    :param files_conn_id: The Airflow connection that reads an object-store ``files_root``.
    """

    campaign_id: str
    key_column: str = "row_key"
    template_id: str | None = None
    title: Any = None
    recipients: Any = None
    prefill_fields: Any = None
    files: Any = None
    meta: Any = None
    folder_id: str | None = None
    distribute: bool = True
    expiration_period: Any = DEFAULT_PERIOD
    reminders: Any = DEFAULT_PERIOD
    files_root: Any = None
    files_conn_id: str | None = None

    def __post_init__(self) -> None:
        problems: list[str] = []
        campaign = self.campaign_id
        if not isinstance(campaign, str) or not campaign.strip() or campaign != campaign.strip():
            problems.append(
                f"campaign_id must be a non-empty string without surrounding spaces, not {campaign!r}"
            )
        elif len(campaign) > MAX_EXTERNAL_ID - 3:
            problems.append(f"campaign_id is {len(campaign)} characters; at most {MAX_EXTERNAL_ID - 3}")
        if isinstance(campaign, str) and (found := text_problem(campaign, "campaign_id")):
            problems.append(found)
        if isinstance(campaign, str) and (bad := sorted(set(campaign) & set(_CAMPAIGN_FORBIDDEN))):
            problems.append(
                f"campaign_id {campaign!r} holds {' '.join(bad)}: a campaign id may not hold ( ) (they "
                "delimit the row key in every externalId, so two campaigns could share one) nor [ ] * ? "
                "(object stores take them for patterns in the archive's folder names)"
            )
        if not isinstance(self.key_column, str) or not self.key_column:
            problems.append("key_column must be a column name")
        if problems:
            raise BulkConfigError("; ".join(problems))

    # -- keys -------------------------------------------------------------------------------------

    def key_of(self, row: Mapping[str, Any]) -> tuple[str | None, list[str]]:
        """The row's key as text, and the problems with it."""
        value = row.get(self.key_column)
        if value is None or isinstance(value, bool | float | Mapping | list):
            what = "missing" if value is None else f"a {type(value).__name__}"
            return None, [f"{self.key_column} is {what}; it must be a string or an integer"]
        key = unicodedata.normalize("NFC", str(value))
        problems: list[str] = []
        if bad := sorted(set(key) & set(_KEY_FORBIDDEN)):
            problems.append(
                f"{self.key_column} {key[:80]!r} holds {' '.join(bad)}: object stores take them for "
                "patterns in the archive's folder names"
            )
        if not key.strip() or key != key.strip():
            problems.append(f"{self.key_column} {key!r} is empty or has surrounding spaces")
        if found := text_problem(key, self.key_column):
            problems.append(found)
        if len(self.external_id(key)) > MAX_EXTERNAL_ID:
            problems.append(
                f"{self.key_column} is too long: the externalId <campaign id>(<key>) would exceed "
                f"{MAX_EXTERNAL_ID} characters"
            )
        return key, problems

    def external_id(self, key: str) -> str:
        """The ``externalId`` of the row with ``key`` (the key NFC-normalised, as :meth:`key_of` gives it)."""
        return f"{self.campaign_id}({key})"

    @property
    def search_text(self) -> str:
        """What the service's substring search is given to list the campaign: ``<campaign id>(``."""
        return f"{self.campaign_id}("

    # -- what the row sends -----------------------------------------------------------------------

    def template_id_of(self, row: Mapping[str, Any]) -> str | None:
        """The template of a template row; ``None`` for a PDF row."""
        value = row.get("template_id") if row.get("template_id") not in (None, "") else self.template_id
        return str(value) if value not in (None, "") else None

    def _value(self, row: Mapping[str, Any], name: str, problems: list[str]) -> Any:
        if row.get(name) is not None:
            return _cell(row, name, problems)
        return _fill(getattr(self, name), row, name, problems)

    def use_kwargs(self, row: Mapping[str, Any], key: str) -> tuple[dict[str, Any], list[str]]:
        """The keyword arguments of ``DocsignHook.use_template`` for a template row."""
        problems: list[str] = []
        override = self._value(row, "meta", problems)
        title = self._value(row, "title", problems)
        if title is not None:
            override = {**(override if isinstance(override, Mapping) else {}), "title": title}
        kwargs = {
            "recipients": self._value(row, "recipients", problems),
            "prefill_fields": self._value(row, "prefill_fields", problems),
            "files": self._files(row, problems),
            "external_id": self.external_id(key),
            "folder_id": self.folder_id,
            "distribute": self.distribute,
            "override": override,
            "expiration_period": self.expiration_period,
            "reminders": self.reminders,
        }
        if kwargs["recipients"] is None and not any(p.startswith("column 'recipients'") for p in problems):
            problems.append("no recipients: give a recipients column or the operator's recipients")
        return kwargs, problems

    def create_kwargs(self, row: Mapping[str, Any], key: str) -> tuple[dict[str, Any], list[str]]:
        """The keyword arguments of ``DocsignHook.create_envelope`` for a PDF row."""
        problems: list[str] = []
        files = self._files(row, problems)
        title = self._value(row, "title", problems)
        if files is None and not any(p.startswith("files") or "'files'" in p for p in problems):
            problems.append("no PDFs: give a files column, the operator's files, or a template_id")
        if title is None:
            problems.append("no title: give a title column or the operator's title")
        kwargs = {
            "title": title,
            "files": files if files is not None else [],
            "recipients": self._value(row, "recipients", problems),
            "external_id": self.external_id(key),
            "meta": self._value(row, "meta", problems),
            "folder_id": self.folder_id,
            "expiration_period": self.expiration_period,
            "reminders": self.reminders,
        }
        return kwargs, problems

    def problems(
        self, row: Mapping[str, Any], key: str, templates: Mapping[str, Envelope | str]
    ) -> list[str]:
        """Every problem of the row, found locally with the single-envelope validators.

        :param templates: The campaign's templates by id, as read (or the reason one cannot be read).
        """
        template_id = self.template_id_of(row)
        if template_id is not None:
            template = templates.get(template_id)
            if not isinstance(template, Envelope):
                return [f"template {template_id}: {template or 'was not read'}"]
            kwargs, problems = self.use_kwargs(row, key)
            if problems:
                return problems
            try:
                payload, _, names = validate_use_payload(
                    template,
                    recipients=kwargs["recipients"],
                    prefill_fields=kwargs["prefill_fields"],
                    files=kwargs["files"],
                    external_id=kwargs["external_id"],
                    folder_id=kwargs["folder_id"],
                    distribute=kwargs["distribute"],
                    override=kwargs["override"],
                )
            except DocsignValidationError as err:
                return list(err.problems)
            # The hook's outgoing check, run now on what the row would send: a row it would refuse
            # is an invalid row before the campaign's first request, not a failed one mid-campaign.
            return check_request("POST", "/envelope/use", payload=payload, file_names=names)
        kwargs, problems = self.create_kwargs(row, key)
        if problems:
            return problems
        try:
            payload, pdfs = validate_create_payload(
                title=kwargs["title"],
                files=kwargs["files"],
                recipients=kwargs["recipients"],
                external_id=kwargs["external_id"],
                meta=kwargs["meta"],
                folder_id=kwargs["folder_id"],
            )
        except DocsignValidationError as err:
            return list(err.problems)
        return check_request("POST", "/envelope/create", payload=payload, file_names=[p.name for p in pdfs])

    # -- files: a row names them only under files_root ----------------------------------------------

    def _files(self, row: Mapping[str, Any], problems: list[str]) -> Any:
        """The row's files as paths: its own ``files`` cell, or the operator's with ``{column}`` filled.

        Every path that comes from the row (the cell, or an operator path with a ``{column}`` in it) is
        placed under :attr:`files_root`, or refused; nothing is opened here.
        """
        own = row.get("files") is not None
        raw = _cell(row, "files", problems) if own else self.files
        if raw is None:
            return None

        def one(value: Any, where: str) -> Any:
            if value is None:
                return None
            if own:
                return self._inside_root(value, where, problems)
            if isinstance(value, str) and ("{" in value or "}" in value):
                return self._inside_root(_fill(value, row, where, problems), where, problems)
            return to_path_like(value) if isinstance(value, str) else value

        if isinstance(raw, str):
            return [one(raw, "files")]
        if isinstance(raw, Mapping):
            return {k: one(v, f"files.{k}") for k, v in raw.items()}
        if isinstance(raw, list | tuple):
            return [one(v, f"files[{i}]") for i, v in enumerate(raw)]
        problems.append(f"files must be a path, a list of paths or an object, not a {type(raw).__name__}")
        return None

    def _inside_root(self, value: Any, where: str, problems: list[str]) -> Any:
        """A path a row gave, placed under ``files_root`` (or ``None`` with the problem recorded)."""
        if not isinstance(value, str) or not value.strip():
            problems.append(
                f"{where}: a file the row names must be a path, not {type(value).__name__} {value!r:.80}"
            )
            return None
        text = value.strip()
        shown = text if len(text) <= 120 else text[:117] + "..."
        if self.files_root is None:
            problems.append(
                f"{where}: {shown!r} comes from the row, and a row may only name files under the operator's "
                "files_root: give files_root (a folder, or an object-store prefix such as s3://bucket/contracts)"
            )
            return None
        root = (
            os.fspath(self.files_root) if isinstance(self.files_root, os.PathLike) else str(self.files_root)
        )
        if _SCHEME.match(root) and not root.startswith("file://"):
            return self._inside_object_root(root.rstrip("/"), text, shown, where, problems)
        if _SCHEME.match(text):
            problems.append(f"{where}: {shown!r} names a URL; a row names a path under files_root {root!r}")
            return None
        base = os.path.realpath(root[len("file://") :] if root.startswith("file://") else root)
        real = os.path.realpath(text if os.path.isabs(text) else os.path.join(base, text))
        if os.path.commonpath([real, base]) != base:
            problems.append(f"{where}: {shown!r} lies outside files_root {root!r} (symbolic links resolved)")
            return None
        return Path(real)

    def _inside_object_root(self, prefix: str, text: str, shown: str, where: str, problems: list[str]) -> Any:
        if _SCHEME.match(text):
            if not text.startswith(prefix + "/"):
                problems.append(
                    f"{where}: {shown!r} names another store, bucket or connection; a row names a key under "
                    f"files_root {prefix!r}"
                )
                return None
            text = text[len(prefix) + 1 :]
        normal = posixpath.normpath(text)
        if "\\" in text or text.startswith("/") or normal in (".", "") or normal.split("/")[0] == "..":
            problems.append(f"{where}: {shown!r} is not a key under files_root {prefix!r}")
            return None
        return _object_storage_path_cls()(f"{prefix}/{normal}", conn_id=self.files_conn_id)


def iter_keys(
    plan: CampaignPlan, rows: Sequence[Mapping[str, Any]], where: Sequence[str] | None = None
) -> Iterator[tuple[str | None, list[str]]]:
    """Each row's key and its problems, duplicates included (the second and later are problems).

    Keys are compared NFC-normalised (``Renée`` typed two ways is one key), and so are the archive
    folders they map to: two keys the batch archive would store in one folder are duplicates too.

    :param where: Each row's place in its file (``line 8``), for the messages.
    """
    from airflow_provider_docsign.archive.naming import sanitize_value

    seen: dict[str, int] = {}
    folders: dict[str, int] = {}
    for index, row in enumerate(rows):
        key, problems = plan.key_of(row)
        if key is not None and not problems:
            folder = sanitize_value(plan.external_id(key))
            if key in seen:
                problems = [f"{plan.key_column} {key!r} repeats the key of {_where(where, seen[key])}"]
            elif folder in folders:
                other = _where(where, folders[folder])
                problems = [
                    f"{plan.key_column} {key!r} would be archived in the same folder ({folder!r}) as the "
                    f"key of {other}: give keys that differ in more than spacing, invisible or reserved "
                    "characters"
                ]
            else:
                seen[key], folders[folder] = index, index
        yield key, problems


def _where(where: Sequence[str] | None, index: int) -> str:
    return where[index] if where is not None else f"item {index}"


# -- errors -------------------------------------------------------------------------------------


def classify_error(error: BaseException) -> str:
    """What a failed request means for its row.

    - ``"ambiguous"``: a write may have taken effect (lost connection after sending, or a 5xx on a
      create): look the envelope up before writing again;
    - ``"transient"``: nothing was written and a later attempt may work (429 after the hook's retries,
      a connection that could not be opened, a 5xx on a read);
    - ``"auth"``: the API key was refused: every row would fail the same way;
    - ``"permanent"``: the service refused the row (a 4xx other than 429), or it failed local checks.
    """
    if isinstance(error, DocsignAmbiguousWriteError):
        return "ambiguous"
    if isinstance(error, DocsignAuthError):
        return "auth"
    if isinstance(error, DocsignRateLimitError | DocsignConnectionError):
        return "transient"
    if isinstance(error, DocsignServerError):
        create = (error.path or "") in ("/envelope/create", "/envelope/use")
        return "ambiguous" if create else "transient"
    if isinstance(error, DocsignAPIError | DocsignValidationError):
        return "permanent"
    if isinstance(error, DocsignError):
        return "permanent"
    return "transient" if isinstance(error, OSError) else "permanent"
