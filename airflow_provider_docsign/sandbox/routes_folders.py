"""Folder routes: list (every level without ``parentId``), create, update, delete."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from airflow_provider_docsign.service.names import MAX_NAME, MIN_NAME, js_trim, name_issue
from airflow_provider_docsign.service.outgoing import js_length

from . import views
from .common import authenticate, json_body, ok, state_of, success
from .errors import app_error
from .ids import cuid, iso
from .schemas import FOLDER_CREATE, FOLDER_DELETE, FOLDER_FIND, FOLDER_UPDATE
from .state import SandboxState
from .validation import _too, raise_if, validate

router = APIRouter()


def _name(name: str, where: list[str | int], path: str) -> str:
    """The folder name as the real service keeps it (trimmed), or its 400 when its name rule refuses it.

    Documenso's shared name schema (``ZNameSchema``): trimmed, 2-100 characters, no ``http(s)://`` or
    ``www.``, no invisible or control character (:mod:`airflow_provider_docsign.service.names`).
    """
    trimmed = js_trim(name)
    found = name_issue(name)
    if found is None:
        return trimmed
    kind = found[0]
    issue: dict[str, Any]
    if kind == "length" and js_length(trimmed) < MIN_NAME:
        issue = _too("too_small", "string", MIN_NAME, where, "Please enter a valid name.")
    elif kind == "length":
        issue = _too("too_big", "string", MAX_NAME, where, "Name cannot be more than 100 characters.")
    elif kind == "link":
        issue = {"code": "custom", "message": "Name cannot contain URLs.", "path": where}
    else:
        issue = {"code": "custom", "message": "Name contains invalid characters.", "path": where}
    raise_if([issue], path)
    return trimmed


# -- folders ----------------------------------------------------------------------------------------
@router.get("/folder")
async def find_folders(request: Request) -> Response:
    """List folders, newest first; without ``parentId`` every level is returned (real-service quirk)."""
    path = "folder.findFolders"
    authenticate(request, path)
    state = state_of(request)
    q = validate(dict(request.query_params), FOLDER_FIND, path)
    rows = state.store.all("folder")
    if "parentId" in q and q["parentId"] is not None:
        rows = [f for f in rows if f["parentId"] == q["parentId"]]
    if "type" in q:
        rows = [f for f in rows if f["type"] == q["type"]]
    rows.sort(key=lambda f: (f["createdAt"], f["_seq"]), reverse=True)
    result = views.paginate(rows, int(q.get("page", 1)), int(q.get("perPage", 10)))
    result["data"] = [views.folder_view(f) for f in result["data"]]
    return ok(result)


def _check_parent(state: SandboxState, parent_id: str | None, kind: str, explicit: bool, path: str) -> None:
    if parent_id is None:
        return
    parent = state.store.get("folder", parent_id)
    if parent is None:
        raise app_error(path, "NOT_FOUND", "Parent folder not found")
    if parent["type"] != kind:
        if explicit:
            raise app_error(path, "NOT_FOUND", "Parent folder not found")
        raise app_error(path, "INVALID_BODY", "Parent folder type does not match the folder type")


@router.post("/folder/create")
async def create_folder(request: Request) -> Response:
    """Create a folder (parent must exist and have the same type)."""
    path = "folder.createFolder"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), FOLDER_CREATE, path)
    kind = body.get("type", "DOCUMENT")
    _check_parent(state, body.get("parentId"), kind, "type" in body, path)
    now = iso()
    folder: dict[str, Any] = {
        "id": cuid(),
        "name": _name(body["name"], ["name"], path),
        "userId": 1,
        "teamId": 1,
        "parentId": body.get("parentId"),
        "pinned": False,
        "visibility": "EVERYONE",
        "type": kind,
        "createdAt": now,
        "updatedAt": now,
        "_seq": time.time_ns(),
    }
    state.store.put("folder", folder)
    return ok(views.folder_view(folder))


def _descendants(state: SandboxState, folder_id: str) -> set[str]:
    out: set[str] = set()
    frontier = [folder_id]
    while frontier:
        current = frontier.pop()
        for f in state.store.all("folder"):
            if f["parentId"] == current and f["id"] not in out:
                out.add(f["id"])
                frontier.append(f["id"])
    return out


@router.post("/folder/update")
async def update_folder(request: Request) -> Response:
    """Rename, move (null = root), pin or change visibility."""
    path = "folder.updateFolder"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), FOLDER_UPDATE, path)
    store = state.store
    with store.tx():
        folder = store.edit("folder", body["folderId"])
        if folder is None:
            raise app_error(path, "NOT_FOUND", "Folder not found")
        data = body["data"]
        if "name" in data:
            data["name"] = _name(data["name"], ["data", "name"], path)
        if "parentId" in data and data["parentId"] is not None:
            if data["parentId"] == folder["id"] or data["parentId"] in _descendants(state, folder["id"]):
                raise app_error(path, "INVALID_BODY", "Cannot move a folder into itself or its descendants")
            _check_parent(state, data["parentId"], folder["type"], False, path)
        for key in ("name", "parentId", "visibility", "pinned"):
            if key in data:
                folder[key] = data[key]
        folder["updatedAt"] = iso()
        store.put("folder", folder)
    return ok(views.folder_view(folder))


@router.post("/folder/delete")
async def delete_folder(request: Request) -> Response:
    """Delete a folder and its subfolders; envelopes inside move to the root."""
    path = "folder.deleteFolder"
    authenticate(request, path)
    state = state_of(request)
    body = validate(await json_body(request), FOLDER_DELETE, path)
    store = state.store
    with store.tx():
        folder = store.get("folder", body["folderId"])
        if folder is None:
            raise app_error(path, "NOT_FOUND", "Folder not found")
        doomed = {folder["id"]} | _descendants(state, folder["id"])
        for env in store.all("envelope"):
            if env["folderId"] in doomed:
                changed = store.edit("envelope", env["id"])
                assert changed is not None
                changed["folderId"] = None
                store.put("envelope", changed)
        for fid in doomed:
            store.remove("folder", fid)
    return success()
