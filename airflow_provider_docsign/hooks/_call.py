"""What one API call is, and the checks every call goes through before it is sent.

:class:`Call` is a request to the service (method, path, query, JSON body or multipart parts, and its
kind, which decides the retry rules). Ids are checked when a builder of :mod:`._endpoints` makes the
call (:func:`check_str_id`, :func:`check_int_id`); every string it carries is checked once more, by
:func:`check_outgoing`, where the hook sends it. :func:`camel` names the keyword changes of an update
method the service's way. :mod:`._endpoints` re-exports these names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service import outgoing


@dataclass(frozen=True)
class Call:
    """One HTTP request to the service.

    :param method: ``GET`` or ``POST`` (the service uses nothing else).
    :param path: Path relative to the base URL, ids already URL-quoted.
    :param kind: ``read``, ``write`` or ``create`` (see :mod:`._http`).
    :param params: Query parameters.
    :param json: JSON body.
    :param what: A short description for error messages, e.g. ``"create envelope"``.
    :param payload: The JSON ``payload`` part of a multipart upload (the hook builds the body from it,
        ``files`` and ``names``, so what is checked is what is sent).
    :param files: The upload sources of a multipart call, in order (one ``files`` part each).
    :param names: The file name of each part.
    """

    method: str
    path: str
    kind: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    what: str = ""
    payload: Mapping[str, Any] | None = None
    files: tuple[Any, ...] = ()
    names: tuple[str, ...] = ()


def check_outgoing(call: Call) -> None:
    """The one check of what leaves: every string of the call's path, query, JSON body or multipart parts.

    Called by the hook's request loops (sync and async) before the first attempt; see
    :mod:`airflow_provider_docsign.service.outgoing` for the rules.

    :raises DocsignValidationError: naming each field by its JSON path; nothing is sent.
    """
    outgoing.raise_for_request(
        call.method,
        call.path,
        call.what,
        json=call.json,
        payload=call.payload,
        params=call.params,
        file_names=call.names,
    )


def check_str_id(value: Any, name: str) -> str:
    """Return ``value`` if it is a usable string id, else raise :class:`DocsignValidationError`."""
    if not isinstance(value, str) or not value.strip() or value != value.strip() or "/" in value:
        raise DocsignValidationError(
            [f"{name} must be a non-empty id string without spaces or '/', not {value!r}"]
        )
    return value


def check_int_id(value: Any, name: str) -> int:
    """Return ``value`` as an int if it is a positive integer id (or its decimal string)."""
    if isinstance(value, bool):
        raise DocsignValidationError([f"{name} must be a positive integer id, not {value!r}"])
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or value < 1:
        raise DocsignValidationError([f"{name} must be a positive integer id, not {value!r}"])
    return value


_CAMEL = {
    "external_id": "externalId",
    "folder_id": "folderId",
    "parent_id": "parentId",
    "global_access_auth": "globalAccessAuth",
    "global_action_auth": "globalActionAuth",
    "template_type": "templateType",
}


def camel(changes: Mapping[str, Any]) -> dict[str, Any]:
    """Rename the snake_case keyword changes of an update method to the service's camelCase keys."""
    return {_CAMEL.get(k, k): v for k, v in changes.items()}
