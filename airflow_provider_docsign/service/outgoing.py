r"""What leaves for the service: one check of every string a request carries (pure: no Airflow, no network).

The hook runs :func:`check_request` on every request at the one place where requests leave it (its sync
and async request loops): the JSON body, the JSON ``payload`` part of a multipart upload, and the query
parameters. A problem raises :class:`~airflow_provider_docsign.exceptions.DocsignValidationError` naming
the field by its JSON path (``recipients[0].name``), and nothing is sent. An endpoint added later is
covered without a line of its own; ``tests/integration/test_outgoing_boundary.py`` sends every class of
character below through every endpoint and counts the requests that reach the sandbox.

**Text** follows :mod:`.text_policy`: every string, at any depth, and every key of an object (keys
are names: always one-line text, whatever field they are in), is refused if it holds a control
character other than the tab, a line or paragraph separator, a lone surrogate, a bidirectional control
(Unicode's whole Bidi_Control set), a tag character, a noncharacter, an unassigned code point, an
invisible (default ignorable) character or an interlinear annotation character; the zero-width joiner,
the non-joiner, variation selectors and the flag tags are allowed where well-formed text needs them
(an emoji sequence, a Persian word, VS16 after an emoji). CR and LF are allowed only in the e-mail
body, :data:`MULTILINE` (``meta.message`` of a create, update or distribute, ``override.message`` of a
template use). A ``bytes`` query value is checked as the UTF-8 text it must be.

Control characters forge lines wherever a title or name is later logged, e-mailed or shown (Python's own
``str.splitlines`` splits on NEL and U+2028, and so do many log viewers); bidirectional and invisible
characters make a title, name or subject read as something else (``"invoice\u202efdp.exe"``), and tag
characters spell text nobody sees. The fields of :data:`FREE_TEXT` hold the document's own content and
may carry the bidirectional and invisible characters that right-to-left and Indic scripts need;
everything else applies to them too.

**Lengths** follow the real service's schema (:mod:`._service_rules`, generated from its OpenAPI
document), counted as JavaScript counts them (UTF-16 units). A string the schema leaves unbounded is
held to :data:`DEFAULT_MAX_LENGTH`, the longest bound the schema declares anywhere (``meta.message``).

**E-mail addresses** (every field the schema marks as one) pass :func:`email_problem`: ASCII only, with
an IDNA-encoded (``xn--``) domain for international names. The service itself accepts any character
from U+0080 to U+FFFF and lower-cases the address, so ``Kim@`` with a Kelvin sign (U+212A) and ``kim@``
are one account on it, and ``admin@`` written with a dotless i (U+0131) passes for ``admin@``
to a reader.

**Links** follow :mod:`.link_safety`. Every field the schema marks ``format: uri`` is an attachment
link, handed to every signer (``attachments[].data`` of an envelope create or template use,
``data.data`` of an attachment create or update, on every route that has one): it must be an
``https`` URL that Python and browsers read alike, without a user name or password, whose host labels
do not mix scripts (``https://xn--pple-43d.com/``). ``redirectUrl`` (any depth; empty means none)
follows the same rules but may be ``http``. A ``javascript:`` or ``data:`` link would be offered to the
signers.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from airflow_provider_docsign._text import printable
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service import _rules as rules
from airflow_provider_docsign.service.link_safety import link_problem
from airflow_provider_docsign.service.text_policy import suspect, text_problem

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


def url_problem(value: str, *, https_only: bool = False) -> str | None:
    """Why ``value`` is not a link the provider sends (:func:`.link_safety.link_problem`), or None.

    :param value: The URL.
    :param https_only: Refuse ``http`` too (attachment links).
    """
    return link_problem(value, https_only=https_only)


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
            if not plain or 2 * len(value) > _SHORT or suspect(value):
                self.string(value, where, pattern, is_key=False)
            return
        if value is None or isinstance(value, int | float):  # bool is an int
            return
        if isinstance(value, bytes | bytearray):
            self.problems.append(
                f"{printable(''.join(where), 300) or 'the body'} is bytes, which JSON cannot carry: give text"
            )
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
                if 2 * len(name) > _SHORT or suspect(name):
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
        if suspect(text):  # rare: only then are the field's exceptions looked up
            # A key is a name, never content nor a message: one-line text, with no exception.
            free = not is_key and any(regex.fullmatch(pattern) for regex in _FREE_PATTERNS)
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
            # format: uri is an attachment link (https only); an empty redirectUrl means none.
            why = None if text == "" and not url else link_problem(text, https_only=url)
            if why:
                return f"{_where(path, is_key)}: the link {printable(text, 200)!r} is refused: {why}"
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
        bare.string(str(name), [f"the name of query parameter ?{printable(name, 100)}"], "", is_key=False)
        for item in value if isinstance(value, list | tuple) else [value]:
            if isinstance(item, bytes | bytearray):
                try:
                    item = bytes(item).decode("utf-8")
                except UnicodeDecodeError as error:
                    bare.problems.append(
                        f"?{printable(name, 100)} is bytes that are not UTF-8 text ({error.reason})"
                    )
                    continue
            if isinstance(item, str):
                bare.string(item, [f"?{printable(name, 100)}"], f"?{name}", is_key=False)
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
