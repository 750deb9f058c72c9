r"""What leaves for the service: one check of every string a request carries (pure: no Airflow, no network).

The hook runs :func:`check_request` on every request at the one place where requests leave it (its sync
and async request loops): the JSON body, the JSON ``payload`` part of a multipart upload, and the query
parameters. A problem raises :class:`~airflow_provider_docsign.exceptions.DocsignValidationError` naming
the field by its JSON path (``recipients[0].name``), and nothing is sent. An endpoint added later is
covered without a line of its own; ``tests/integration/test_outgoing_boundary.py`` sends every class of
character below through every endpoint and counts the requests that reach the sandbox.

**Text.** Every string, at any depth, and every key of an object, is refused if it holds:

* a C0 control character (U+0000-U+001F) other than the tab; CR and LF are allowed only in the e-mail
  body, :data:`MULTILINE` (``meta.message`` of a create, update or distribute, ``override.message`` of
  a template use);
* DEL (U+007F) or a C1 control character (U+0080-U+009F, among them NEL U+0085 and CSI U+009B);
* the line or paragraph separator (U+2028, U+2029);
* a bidirectional control (U+202A-U+202E, U+2066-U+2069);
* an invisible character: zero-width space, non-joiner and joiner (U+200B-U+200D), word joiner and the
  invisible operators (U+2060-U+2064), the Mongolian vowel separator (U+180E) or the BOM (U+FEFF);
* a lone surrogate (U+D800-U+DFFF): it is not text; the service's database layer refuses it and the
  request fails with HTTP 500.

Control characters forge lines wherever a title or name is later logged, e-mailed or shown (Python's own
``str.splitlines`` splits on NEL and U+2028, and so do many log viewers); bidirectional and invisible
characters make a title, name or subject read as something else (``"invoice\u202efdp.exe"``). The
fields of :data:`FREE_TEXT` hold the document's own content and may carry the bidirectional and
zero-width characters that right-to-left and Indic scripts need; everything else applies to them too.

**Lengths** follow the real service's schema (:mod:`._service_rules`, generated from its OpenAPI
document), counted as JavaScript counts them (UTF-16 units). A string the schema leaves unbounded is
held to :data:`DEFAULT_MAX_LENGTH`, the longest bound the schema declares anywhere (``meta.message``).

**E-mail addresses** (every field the schema marks as one) pass :func:`email_problem`: ASCII only, with
an IDNA-encoded (``xn--``) domain for international names. The service itself accepts any character
from U+0080 to U+FFFF and lower-cases the address, so ``Kim@`` with a Kelvin sign (U+212A) and ``kim@``
are one account on it, and ``admin@`` written with a dotless i (U+0131) passes for ``admin@``
to a reader.

**URLs**: ``redirectUrl`` (any depth) and every field the schema marks ``format: uri`` (attachment
links) must be ``http`` or ``https`` URLs with a host: a ``javascript:`` or ``data:`` link would be
offered to the signers.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from airflow_provider_docsign._text import printable
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service import _rules as rules

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "FREE_TEXT",
    "MULTILINE",
    "check_request",
    "email_problem",
    "raise_for_request",
    "text_problem",
    "url_problem",
]

#: Fields (by path pattern) whose value is the e-mail body: CR and LF are allowed there.
MULTILINE: dict[str, str] = {
    "meta.message": "the e-mail message of a create, update or distribute",
    "override.message": "the e-mail message of a template use",
}

#: Fields whose value is the document's own content, with the reason: bidirectional controls and
#: zero-width characters are allowed there (every other rule still applies).
FREE_TEXT: dict[str, str] = {
    "prefillFields[].value": (
        "a prefilled value is the contract's content, written into the PDF as given (the service "
        "offers no other way to set it); Arabic, Hebrew and Persian text needs the bidirectional "
        "controls, and Persian and Indic text the zero-width (non-)joiner"
    ),
    "prefillFields[].value[]": "the chosen options of a prefilled CHECKBOX (as prefillFields[].value)",
    "formValues.*": "a PDF form value is the document's content (as prefillFields[].value)",
}

#: The longest bound the service's schema declares (``meta.message``); strings it leaves unbounded
#: (field labels, placeholders, prefill values, ids...) are held to it.
DEFAULT_MAX_LENGTH = 5000

_MAX_DEPTH = 32
#: A string with no rule of its own this short cannot break the default length limit.
_SHORT = DEFAULT_MAX_LENGTH // 2

_BIDI = "\u202a-\u202e\u2066-\u2069"
_INVISIBLE = "\u200b-\u200d\u2060-\u2064\u180e\ufeff"
_ALWAYS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff"
_STRICT = re.compile(f"[{_ALWAYS}\n\r{_BIDI}{_INVISIBLE}]")
_MULTILINE = re.compile(f"[{_ALWAYS}{_BIDI}{_INVISIBLE}]")
_FREE = re.compile(f"[{_ALWAYS}\n\r]")


def _kind(code: int) -> str:
    if 0xD800 <= code <= 0xDFFF:
        return "a lone surrogate"
    if code == 0x2028:
        return "the line separator"
    if code == 0x2029:
        return "the paragraph separator"
    if 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        return "the bidirectional control"
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return "the control character"
    return "the invisible character"


def text_problem(value: str, where: str, *, multiline: bool = False, free: bool = False) -> str | None:
    """The problem with the first refused character of ``value`` (see the module's text rules), or None.

    :param value: The string.
    :param where: Its name in the message (a JSON path such as ``recipients[0].name``).
    :param multiline: Whether CR and LF are allowed (the e-mail message).
    :param free: Whether bidirectional and zero-width characters are allowed (:data:`FREE_TEXT`).
    """
    pattern = _FREE if free else _MULTILINE if multiline else _STRICT
    found = pattern.search(value)
    if found is None:
        return None
    code = ord(found.group())
    kind = _kind(code)
    if kind == "the control character":
        hint = "only tabs are allowed" + (", and line breaks in the e-mail message" if multiline else "")
    elif kind == "a lone surrogate":
        hint = "it is not text; the service cannot store it"
    else:
        hint = "it can make the text read as something else, or break lines in logs and e-mails"
    return f"{where} contains {kind} U+{code:04X} at position {found.start()}; remove it ({hint})"


def js_length(value: str) -> int:
    """The length of ``value`` as JavaScript (and so the service's schema) counts it: UTF-16 units."""
    return len(value.encode("utf-16-le", "surrogatepass")) // 2


# -- e-mail addresses and URLs ---------------------------------------------------------------------

_ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LOCAL = re.compile(rf"{_ATOM}(\.{_ATOM})*", re.ASCII)
_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?", re.ASCII)
_TLD = re.compile(r"[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59}", re.ASCII | re.IGNORECASE)


def email_problem(value: str) -> str | None:
    """Why ``value`` is not an address the provider sends, or None: the one e-mail check of the package.

    ASCII only (local part and domain), the local part a dot-atom of at most 64 characters, the domain
    two or more host-name labels with an alphabetic or ``xn--`` top-level label, 254 characters in all.
    An international domain is accepted IDNA-encoded (``xn--bcher-kva.example``), and each ``xn--``
    label must decode. Without ``re.IGNORECASE`` case folding, no look-alike passes: the dotless i
    (U+0131), the Kelvin sign (U+212A) and the long s (U+017F) are not ASCII.

    :param value: The address (already stripped of surrounding white space).
    """
    if len(value) > 254:
        return "it is longer than 254 characters"
    if not value.isascii():
        ch = next(c for c in value if not c.isascii())
        return (
            f"{printable(ch)!r} (U+{ord(ch):04X}) is not ASCII: write the local part in ASCII and an "
            "international domain IDNA-encoded (xn--...)"
        )
    local, at, domain = value.rpartition("@")
    if not at or not local:
        return "it has no local part before an '@'"
    if len(local) > 64:
        return "its local part (before the '@') is longer than 64 characters"
    if not _LOCAL.fullmatch(local):
        return "its local part (before the '@') has a character or dot that is not allowed"
    labels = domain.split(".")
    if len(labels) < 2 or not all(_LABEL.fullmatch(label) for label in labels):
        return "its domain is not a host name such as example.com"
    if not _TLD.fullmatch(labels[-1]):
        return f"its top-level domain {labels[-1]!r} is not a name"
    for label in labels:
        if label[:4].lower() == "xn--":
            try:
                label.encode("ascii").decode("idna")
            except UnicodeError:
                return f"its domain label {label!r} is not valid IDNA (punycode)"
    return None


def url_problem(value: str) -> str | None:
    """Why ``value`` is not an ``http``/``https`` URL with a host, or None.

    :param value: The URL.
    """
    if any(ch.isspace() for ch in value):
        return "it contains white space"
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:
        return "it is not a URL"
    if parts.scheme.lower() not in ("http", "https"):
        scheme = f"a {printable(parts.scheme)!r}" if parts.scheme else "a scheme-less"
        return f"only http and https links are allowed, not {scheme} URL"
    if not host:
        return "it has no host"
    return None


# -- the rules of one route ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    max_length: int | None = None
    email: bool = False
    empty_email: bool = False
    url: bool = False


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(re.escape(pattern).replace(r"\*", r"[^.\[]+"))


_ROUTES = sorted(set(rules.MAX_LENGTH) | set(rules.EMAIL) | set(rules.URL))
_TEMPLATES = [
    (key, re.compile(re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(key)))) for key in _ROUTES if "{" in key
]
_FREE_PATTERNS = [_pattern_regex(p) for p in FREE_TEXT]


@functools.lru_cache(maxsize=256)
def _route(method: str, path: str) -> str | None:
    """The table's key for a request (``"POST /envelope/recipient/{recipientId}/reject"``), or None."""
    key = f"{method.upper()} {path}"
    if key in rules.MAX_LENGTH or key in rules.EMAIL or key in rules.URL:
        return key
    return next((k for k, regex in _TEMPLATES if regex.fullmatch(key)), None)


@functools.lru_cache(maxsize=128)
def _fields(route: str | None) -> tuple[dict[str, _Field], tuple[tuple[re.Pattern[str], _Field], ...]]:
    """The route's field rules: exact paths, and patterns with ``*`` (any key of a map)."""
    if route is None:
        return {}, ()
    names = set(rules.MAX_LENGTH.get(route, {})) | set(rules.EMAIL.get(route, {}))
    names |= set(rules.URL.get(route, {}))
    exact: dict[str, _Field] = {}
    wild: list[tuple[re.Pattern[str], _Field]] = []
    for name in names:
        spec = _Field(
            max_length=rules.MAX_LENGTH.get(route, {}).get(name),
            email=name in rules.EMAIL.get(route, {}),
            empty_email=rules.EMAIL.get(route, {}).get(name, False),
            url=name in rules.URL.get(route, {}),
        )
        if "*" in name:
            wild.append((_pattern_regex(name), spec))
        else:
            exact[name] = spec
    return exact, tuple(wild)


def _where(path: list[str], is_key: bool) -> str:
    """The JSON path as shown in a problem (escaped); for a key, which key of which object."""
    if not is_key:
        return printable("".join(path), 300) or "the body"
    parent = printable("".join(path[:-1]), 300) or "the body"
    return f"the key '{printable(path[-1].removeprefix('.'), 200)}' of {parent}"


class _Check:
    """One request's walk: the route's rules and the problems found (names are escaped only when shown)."""

    def __init__(self, route: str | None) -> None:
        self.exact, self.wild = _fields(route)
        self.problems: list[str] = []

    def walk(self, value: Any, where: list[str], pattern: str, depth: int) -> None:
        """Check every string under ``value``; ``where`` is the path so far, joined only for a problem."""
        if isinstance(value, str):
            # The common case costs one regex search: clean text, no rule of its own, short enough.
            plain = pattern not in self.exact and not self.wild and not pattern.endswith("redirectUrl")
            if not plain or 2 * len(value) > _SHORT or _STRICT.search(value):
                self.string(value, where, pattern, is_key=False)
            return
        if value is None or isinstance(value, int | float):  # bool is an int
            return
        if depth > _MAX_DEPTH:
            self.problems.append(
                f"{printable(''.join(where), 300)} is nested more than {_MAX_DEPTH} levels deep"
            )
        elif isinstance(value, dict) or isinstance(value, Mapping):  # noqa: SIM101 - dict is the fast check
            for key, item in value.items():
                name = key if isinstance(key, str) else str(key)
                sub_pattern = f"{pattern}.{name}" if pattern else name
                where.append(f".{name}" if where else name)
                if 2 * len(name) > _SHORT or _STRICT.search(name):
                    self.string(name, where, sub_pattern, is_key=True)
                self.walk(item, where, sub_pattern, depth + 1)
                where.pop()
        elif isinstance(value, list | tuple):
            sub_pattern = f"{pattern}[]"
            for index, item in enumerate(value):
                where.append(f"[{index}]")
                self.walk(item, where, sub_pattern, depth + 1)
                where.pop()

    def string(self, text: str, where: list[str], pattern: str, *, is_key: bool) -> None:
        found = self.problem(text, where, pattern, is_key=is_key)
        if found:
            self.problems.append(found)

    def problem(self, text: str, path: list[str], pattern: str, *, is_key: bool) -> str | None:
        """The problem of one string (a value, or with ``is_key`` the key of an object), or None."""
        if _STRICT.search(text):  # rare: only then are the field's exceptions looked up
            free = any(regex.fullmatch(pattern) for regex in _FREE_PATTERNS)
            multiline = pattern in MULTILINE and not is_key
            found = text_problem(text, _where(path, is_key), multiline=multiline, free=free)
            if found:
                return found
        spec = None if is_key else self.exact.get(pattern)
        if spec is None and self.wild and not is_key:
            spec = next((s for regex, s in self.wild if regex.fullmatch(pattern)), None)
        limit = (spec.max_length if spec else None) or DEFAULT_MAX_LENGTH
        if 2 * len(text) > limit:  # a string holds at most 2 UTF-16 units per character
            length = js_length(text)
            if length > limit:
                return f"{_where(path, is_key)} is {length} characters long; the maximum is {limit}"
        if spec and spec.email and not (text == "" and spec.empty_email):
            why = email_problem(text)
            if why:
                shown = f"{_where(path, is_key)}: {printable(text, 100)!r}"
                return f"{shown} is not an e-mail address the service can take ({why})"
        url = spec.url if spec else False
        if url or (
            not is_key and pattern.endswith("redirectUrl") and pattern.rsplit(".", 1)[-1] == "redirectUrl"
        ):
            why = None if text == "" and not url else url_problem(text)
            if why:
                return f"{_where(path, is_key)} must be an http or https URL ({why})"
        return None


def check_request(
    method: str,
    path: str,
    *,
    json: Any = None,
    payload: Any = None,
    params: Mapping[str, Any] | None = None,
    file_names: Sequence[str] = (),
) -> list[str]:
    """Every problem of one outgoing request, each naming its field by JSON path; empty if none.

    :param method: The HTTP method.
    :param path: The path relative to the API base URL (``/envelope/update``), ids URL-quoted.
    :param json: The JSON body.
    :param payload: The JSON ``payload`` part of a multipart body (paths are relative to it).
    :param params: The query parameters (named ``?name`` in problems).
    :param file_names: The file names of a multipart body's parts (the service makes them item titles).
    """
    check = _Check(_route(method, path))
    found = text_problem(unquote(path, errors="surrogatepass"), "the path")  # ids are sent in it
    if found:
        check.problems.append(found)
    bare = _Check(None)
    for index, name in enumerate(file_names):
        bare.string(str(name), [f"the name of file #{index}"], "", is_key=False)
    for name, value in (params or {}).items():
        for item in value if isinstance(value, list | tuple) else [value]:
            if isinstance(item, str):
                bare.string(item, [f"?{name}"], f"?{name}", is_key=False)
    check.problems.extend(bare.problems)
    for body in (json, payload):
        if body is not None:
            check.walk(body, [], "", 0)
    return check.problems


def raise_for_request(
    method: str,
    path: str,
    what: str,
    *,
    json: Any = None,
    payload: Any = None,
    params: Mapping[str, Any] | None = None,
    file_names: Sequence[str] = (),
) -> None:
    """Raise :class:`DocsignValidationError` listing every problem of the request (see :func:`check_request`).

    :param method: The HTTP method.
    :param path: The path relative to the API base URL.
    :param what: What the request does, for the message (``"update envelope"``).
    :param json: The JSON body.
    :param payload: The JSON ``payload`` part of a multipart body.
    :param params: The query parameters.
    :param file_names: The file names of a multipart body's parts.
    """
    problems = check_request(method, path, json=json, payload=payload, params=params, file_names=file_names)
    if problems:
        raise DocsignValidationError(problems, f"{what or 'request'} ({method} {path})")
