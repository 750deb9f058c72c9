"""Pure helpers of the archive operator: safe file names from a template, and the manifest.

Nothing here touches the network or a file system, so every rule (sanitising hostile titles, telling
colliding names apart, the manifest's shape) is tested directly.

Names are relative POSIX paths below the archive destination. A name never contains an absolute
part, a ``.`` or ``..`` segment, a control character or a backslash, every segment fits in
:data:`MAX_SEGMENT_BYTES`, and an item's name ends in ``.pdf`` exactly once.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ALLOWED_FIELDS",
    "DEFAULT_FILENAME_TEMPLATE",
    "DEFAULT_MANIFEST_NAME",
    "MANIFEST_SCHEMA_VERSION",
    "MAX_SEGMENT_BYTES",
    "MAX_VALUE_CHARS",
    "VERSIONS",
    "build_manifest",
    "disambiguate",
    "manifest_entry",
    "relative_to_manifest",
    "render_filename",
    "render_manifest_name",
    "sanitize_segment",
    "sanitize_value",
    "validate_filename_template",
]

DEFAULT_FILENAME_TEMPLATE = "{envelope_key}/{order:02d}-{title}.pdf"
DEFAULT_MANIFEST_NAME = "manifest.json"
#: The download versions the service knows.
VERSIONS = ("signed", "original", "pending")
#: The placeholders a filename template may use.
ALLOWED_FIELDS = frozenset({"envelope_key", "envelope_id", "item_id", "order", "title", "version"})
#: Placeholders a manifest name may use (it names the envelope, not an item).
MANIFEST_FIELDS = frozenset({"envelope_key", "envelope_id", "version"})
#: Longest value (in characters) a placeholder contributes, after sanitising.
MAX_VALUE_CHARS = 120
#: Longest path segment in UTF-8 bytes. File systems allow 255; the rest leaves room for the
#: temporary name (``.<name>.<token>.partial``) a download is staged under.
MAX_SEGMENT_BYTES = 200
MANIFEST_SCHEMA_VERSION = 1

PDF_SUFFIX = ".pdf"
_PDF_SUFFIX_RE = re.compile(r"(?:\s*\.pdf)+\s*$", re.IGNORECASE)
# Characters that are path separators somewhere, or reserved on Windows/SMB shares and object-store
# consoles; they become "_". Control and format characters (Cc, Cf, Zl, Zp) are removed separately.
_UNSAFE_CHARS = re.compile(r'[/\\<>:"|?*]')
_SPACES = re.compile(r"\s+")
_DOTS = re.compile(r"\.{2,}")
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL"} | {f"COM{i}" for i in range(1, 10)} | {f"LPT{i}" for i in range(1, 10)}
)
_FORMATTER = string.Formatter()


def _strip_invisible(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch) not in {"Cc", "Cf", "Zl", "Zp", "Cs", "Co"})


def _truncate_utf8(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", "ignore")


def sanitize_value(value: Any, *, fallback: str = "untitled", strip_pdf: bool = False) -> str:
    """Make one placeholder value safe to use inside a single path segment.

    Unicode is NFC-normalised; control and format characters are removed; path separators and
    characters reserved on common file systems become ``_``; runs of white space become one space;
    leading and trailing dots and spaces are removed (so ``..`` can never survive); the result is cut
    to :data:`MAX_VALUE_CHARS`. An empty result becomes ``fallback``.

    :param value: The raw value (a title, an external id...). ``None`` gives ``fallback``.
    :param fallback: What to use when nothing printable is left.
    :param strip_pdf: Remove trailing ``.pdf`` suffixes first (item titles are usually file names).
    """
    text = "" if value is None else str(value)
    text = unicodedata.normalize("NFC", text)
    text = _strip_invisible(text)
    text = _UNSAFE_CHARS.sub("_", text)
    text = _SPACES.sub(" ", text)
    text = _DOTS.sub(".", text)
    if strip_pdf:
        text = _PDF_SUFFIX_RE.sub("", text)
    text = text.strip(" .")
    text = text[:MAX_VALUE_CHARS].rstrip(" .")
    if not text:
        return fallback
    if text.split(".", 1)[0].upper() in _WINDOWS_RESERVED:
        text = "_" + text
    return text


def sanitize_segment(segment: str, *, is_file: bool) -> str:
    """Check and bound one rendered path segment.

    Values were sanitised already; this catches what the template itself contributes and enforces the
    byte limit. A file segment ends in ``.pdf`` exactly once (case-insensitively), and its stem is
    shortened, not the suffix, when it is too long.

    :param segment: The rendered segment.
    :param is_file: Whether this is the last segment (the file name).
    :raises ValueError: For an empty, ``.`` or ``..`` segment.
    """
    cleaned = _strip_invisible(unicodedata.normalize("NFC", segment)).replace("\\", "_").strip(" ")
    if cleaned in {"", ".", ".."}:
        raise ValueError(f"the filename template produces an empty, '.' or '..' path segment ({segment!r})")
    if not is_file:
        return _truncate_utf8(cleaned, MAX_SEGMENT_BYTES).rstrip(" ")
    stem = _PDF_SUFFIX_RE.sub("", cleaned).rstrip(" .")
    if not stem:
        stem = "untitled"
    stem = _truncate_utf8(stem, MAX_SEGMENT_BYTES - len(PDF_SUFFIX)).rstrip(" .") or "untitled"
    return stem + PDF_SUFFIX


def validate_filename_template(template: str, *, allowed: frozenset[str] = ALLOWED_FIELDS) -> None:
    """Raise :class:`ValueError` unless ``template`` is a usable filename template.

    Placeholders are ``str.format`` fields by name only (no positional fields, no attribute or index
    access, no ``!r`` conversions), from ``allowed``. The template is a relative path: ``/`` separates
    directories; it may not start with ``/`` or contain ``..`` or empty segments. A test rendering
    with sample values must succeed (this catches a bad format spec such as ``{title:02d}``).

    :param template: The template, e.g. ``"{envelope_key}/{order:02d}-{title}.pdf"``.
    :param allowed: The placeholder names it may use.
    """
    if not isinstance(template, str) or not template.strip():
        raise ValueError("filename template must be a non-empty string")
    if template.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", template):
        raise ValueError(f"filename template {template!r} must be a relative path, not absolute")
    try:
        parsed = list(_FORMATTER.parse(template))
    except ValueError as err:
        raise ValueError(f"filename template {template!r} is not a valid format string: {err}") from None
    for _literal, field_name, _spec, conversion in parsed:
        if field_name is None:
            continue
        if not field_name or not field_name.isidentifier():
            raise ValueError(
                f"filename template {template!r}: placeholder {{{field_name}}} is not allowed; "
                f"use names only, from {sorted(allowed)}"
            )
        if field_name not in allowed:
            raise ValueError(
                f"filename template {template!r}: unknown placeholder {{{field_name}}}; "
                f"allowed: {sorted(allowed)}"
            )
        if conversion is not None:
            raise ValueError(
                f"filename template {template!r}: conversions such as !{conversion} are not allowed"
            )
    sample = {
        "envelope_key": "envelope_sample",
        "envelope_id": "envelope_sample",
        "item_id": "envelope_item_sample",
        "order": 1,
        "title": "contract",
        "version": "signed",
    }
    try:
        rendered = template.format(**{k: v for k, v in sample.items() if k in allowed})
    except (ValueError, TypeError, KeyError, IndexError) as err:
        raise ValueError(f"filename template {template!r} cannot be rendered: {err}") from None
    for segment in rendered.split("/"):
        if segment.strip(" ") in {"", ".", ".."}:
            raise ValueError(
                f"filename template {template!r} has an empty, '.' or '..' path segment; "
                "use a relative path such as '{envelope_key}/{order:02d}-{title}.pdf'"
            )


def _render(template: str, values: Mapping[str, Any], *, is_pdf: bool) -> str:
    rendered = template.format(**values)
    parts = rendered.split("/")
    out = [sanitize_segment(p, is_file=False) for p in parts[:-1]]
    last = parts[-1]
    out.append(sanitize_segment(last, is_file=True) if is_pdf else _render_plain_file(last))
    return "/".join(out)


def _render_plain_file(segment: str) -> str:
    cleaned = _strip_invisible(unicodedata.normalize("NFC", segment)).replace("\\", "_").strip(" ")
    if cleaned in {"", ".", ".."}:
        raise ValueError(f"the manifest name produces an empty, '.' or '..' file name ({segment!r})")
    return _truncate_utf8(cleaned, MAX_SEGMENT_BYTES)


def envelope_key(envelope_id: str, external_id: str | None) -> str:
    """The ``envelope_key`` placeholder's raw value: the externalId, or else the envelope id.

    :param envelope_id: The envelope id.
    :param external_id: The envelope's externalId (may be ``None`` or blank).
    """
    return external_id if external_id and external_id.strip() else envelope_id


def render_filename(
    template: str,
    *,
    envelope_id: str,
    external_id: str | None,
    item_id: str,
    order: int | None,
    title: str | None,
    version: str,
) -> str:
    """Render an item's relative archive name from ``template`` with sanitised values.

    :param template: A template accepted by :func:`validate_filename_template`.
    :param envelope_id: The envelope id.
    :param external_id: The envelope's externalId (``envelope_key`` falls back to the envelope id).
    :param item_id: The envelope item id.
    :param order: The item's order (``0`` when the service sent none).
    :param title: The item's title; a trailing ``.pdf`` is dropped, since the template adds one.
    :param version: The download version.
    """
    values = {
        "envelope_key": sanitize_value(envelope_key(envelope_id, external_id), fallback="envelope"),
        "envelope_id": sanitize_value(envelope_id, fallback="envelope"),
        "item_id": sanitize_value(item_id, fallback="item"),
        "order": order if order is not None else 0,
        "title": sanitize_value(title, fallback="untitled", strip_pdf=True),
        "version": sanitize_value(version, fallback="signed"),
    }
    return _render(template, values, is_pdf=True)


def render_manifest_name(name: str, *, envelope_id: str, external_id: str | None, version: str) -> str:
    """Render the manifest's file name (placeholders ``envelope_key``, ``envelope_id``, ``version``).

    :param name: The manifest name template, e.g. ``"manifest.json"`` or ``"{envelope_key}.json"``.
    :param envelope_id: The envelope id.
    :param external_id: The envelope's externalId.
    :param version: The download version.
    """
    values = {
        "envelope_key": sanitize_value(envelope_key(envelope_id, external_id), fallback="envelope"),
        "envelope_id": sanitize_value(envelope_id, fallback="envelope"),
        "version": sanitize_value(version, fallback="signed"),
    }
    rendered = _render(name, values, is_pdf=False)
    if rendered.lower().endswith(PDF_SUFFIX):
        raise ValueError(f"manifest name {name!r} must not end in .pdf")
    return rendered


def common_directory(names: Iterable[str]) -> str:
    """The deepest directory (relative, ``""`` for the root) that contains every name.

    :param names: Relative POSIX names.
    """
    dirs = [n.split("/")[:-1] for n in names]
    if not dirs:
        return ""
    common = dirs[0]
    for parts in dirs[1:]:
        size = 0
        while size < min(len(common), len(parts)) and common[size] == parts[size]:
            size += 1
        common = common[:size]
    return "/".join(common)


def disambiguate(names: Sequence[str], *, reserved: Iterable[str] = ()) -> list[str]:
    """Make ``names`` unique (case-insensitively, as on macOS/Windows), keeping the first unchanged.

    A later duplicate gets ``-2``, ``-3``... before its ``.pdf`` (or at the end). The outcome depends
    only on the order of ``names``, so a re-run of the same envelope gives the same names.

    :param names: Relative names in priority order (items by ``order``, then reports).
    :param reserved: Names that are taken already (e.g. the manifest).
    """
    taken = {n.casefold() for n in reserved}
    out: list[str] = []
    for name in names:
        candidate = name
        if candidate.casefold() in taken:
            head, _, last = name.rpartition("/")
            prefix = f"{head}/" if head else ""
            stem, suffix = (
                (last[: -len(PDF_SUFFIX)], last[-len(PDF_SUFFIX) :])
                if last.lower().endswith(PDF_SUFFIX)
                else (last, "")
            )
            number = 2
            while True:
                tag = f"-{number}"
                short = _truncate_utf8(stem, MAX_SEGMENT_BYTES - len(suffix) - len(tag))
                candidate = f"{prefix}{short}{tag}{suffix}"
                if candidate.casefold() not in taken:
                    break
                number += 1
        taken.add(candidate.casefold())
        out.append(candidate)
    return out


@dataclass(frozen=True)
class ArchivedFile:
    """What the manifest records about one archived file.

    :param kind: ``item``, ``audit_log`` or ``certificate``.
    :param name: The name relative to the destination (the manifest also records ``path``, relative
        to the manifest's folder).
    :param uri: The full URI (``file://``, ``s3://``...), without any connection id.
    :param sha256: Hex SHA-256 of the file at ``uri``.
    :param size: Its size in bytes.
    :param outcome: ``created``, ``overwritten``, ``unchanged`` or ``kept`` (an existing report kept).
    :param downloaded_at: ISO timestamp (UTC) of the download.
    :param content_type: The content type the service sent.
    :param item_id: The envelope item id (items only).
    :param title: The item title (items only).
    :param order: The item order (items only).
    :param version: The download version (items only).
    :param signature: The signature report (``SignatureReport.to_dict()``), or ``None`` when
        verification was off.
    """

    kind: str
    name: str
    uri: str
    sha256: str
    size: int
    outcome: str
    downloaded_at: str
    content_type: str | None = None
    item_id: str | None = None
    title: str | None = None
    order: int | None = None
    version: str | None = None
    signature: dict[str, Any] | None = None


def relative_to_manifest(name: str, manifest_name: str) -> str:
    """``name`` (relative to the destination) made relative to the folder of ``manifest_name``.

    The manifest is written in the folder that holds every file (:func:`common_directory`), so the
    result never climbs out with ``..``. An auditor finds each file beside the manifest with it, also
    in a copy of the archive.

    :param name: A file's name relative to the destination.
    :param manifest_name: The manifest's name relative to the destination.
    :raises ValueError: When ``name`` is not below the manifest's folder.
    """
    folder = manifest_name.rpartition("/")[0]
    if not folder:
        return name
    if not name.startswith(folder + "/"):
        raise ValueError(f"{name!r} is not below the manifest's folder {folder!r}")
    return name[len(folder) + 1 :]


def manifest_entry(record: ArchivedFile, *, manifest_name: str | None = None) -> dict[str, Any]:
    """The manifest's JSON for one file.

    :param record: The archived file.
    :param manifest_name: The manifest's name relative to the destination; when given, the entry
        records ``path``, the file's path relative to the manifest's folder.
    """
    entry: dict[str, Any] = {}
    if record.kind == "item":
        entry.update(
            {
                "item_id": record.item_id,
                "title": record.title,
                "order": record.order,
                "version": record.version,
            }
        )
    else:
        entry["kind"] = record.kind
    entry.update(
        {
            "name": record.name,
            **({"path": relative_to_manifest(record.name, manifest_name)} if manifest_name else {}),
            "uri": record.uri,
            "sha256": record.sha256,
            "size": record.size,
            "content_type": record.content_type,
            "downloaded_at": record.downloaded_at,
            "outcome": record.outcome,
        }
    )
    if record.signature is not None:
        entry["signature"] = record.signature
    return entry


def build_manifest(
    *,
    envelope: Mapping[str, Any],
    destination: str,
    manifest_uri: str | None,
    version: str,
    archived_at: str,
    files: Sequence[ArchivedFile],
    manifest_name: str | None = None,
) -> dict[str, Any]:
    """Build the manifest dict (JSON-safe), which is also the operator's XCom value.

    :param envelope: ``id``, ``external_id``, ``title``, ``status`` and ``completed_at`` of the envelope.
    :param destination: The destination URI (no connection id).
    :param manifest_uri: Where the manifest itself is written (``None`` when it is not).
    :param version: The download version of the items.
    :param archived_at: ISO timestamp (UTC) of this archive run.
    :param files: Every archived file: items in order, then the audit log and certificate if any.
    :param manifest_name: The manifest's name relative to the destination (``None`` when no manifest
        file is written): each file's ``path`` relative to it is recorded beside its URI.
    """
    items = [manifest_entry(f, manifest_name=manifest_name) for f in files if f.kind == "item"]
    reports = {f.kind: manifest_entry(f, manifest_name=manifest_name) for f in files if f.kind != "item"}
    return {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "envelope_id": envelope["id"],
        "external_id": envelope.get("external_id"),
        "title": envelope.get("title"),
        "status": envelope.get("status"),
        "completed_at": envelope.get("completed_at"),
        "version": version,
        "destination": destination,
        "manifest_uri": manifest_uri,
        "archived_at": archived_at,
        "files": items,
        "audit_log": reports.get("audit_log"),
        "certificate": reports.get("certificate"),
    }
