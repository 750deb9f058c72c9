"""A minimal stand-in for the web app's envelope page, so the "Docsign envelope" link leads somewhere.

The real service's web app shows a team's envelope at ``/t/{teamUrl}/documents/{envelopeId}`` (a
template at ``/t/{teamUrl}/templates/{envelopeId}``), behind a login; that is where the operators'
extra link points (:mod:`airflow_provider_docsign.operators.links`). The sandbox has no web app: it answers
those
two paths with one read-only HTML page, with no login, holding what the API would show of the
envelope: title, id, external id, status, the items, and each recipient's name, role and signing
status. E-mail addresses, signing tokens and PDFs are left out. Every value is HTML-escaped. An unknown
or deleted envelope, or the wrong team, gets a 404 page.
"""

from __future__ import annotations

import html

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from .common import state_of
from .views import TEAM

router = APIRouter()

_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:60em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}"
)


def _page(title: str, body: str, status: int = 200) -> Response:
    document = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)} - docsign sandbox</title><style>{_STYLE}</style></head>"
        f"<body>{body}<p><small>docsign sandbox: a local stand-in for the signing service. "
        "It has no web app; this page only shows what the API holds.</small></p></body></html>"
    )
    return HTMLResponse(document, status_code=status)


def _not_found(what: str) -> Response:
    return _page("Not found", f"<h1>Not found</h1><p>{html.escape(what)}</p>", status=404)


def _rows(cells: list[list[str]]) -> str:
    return "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in cells)


def _envelope_page(request: Request, team_url: str, envelope_id: str, kind: str) -> Response:
    state = state_of(request)
    env = state.store.get("envelope", envelope_id)
    if team_url != TEAM["url"] or env is None or env["deletedAt"] is not None or env["type"] != kind:
        return _not_found(f"No {kind.lower()} {envelope_id!r} in team {team_url!r} of this sandbox.")
    items = [[str(i["order"]), str(i["title"]), str(i["id"])] for i in state.store.items_of(envelope_id)]
    people = [
        [str(r["name"] or ""), str(r["role"]), str(r["signingStatus"])]
        for r in state.store.recipients_of(envelope_id)
    ]
    body = (
        f"<h1>{html.escape(str(env['title']))}</h1>"
        "<table>"
        + _rows(
            [
                ["Envelope", str(env["id"])],
                ["External id", str(env["externalId"] or "")],
                ["Type", str(env["type"])],
                ["Status", str(env["status"])],
            ]
        )
        + "</table><h2>Items</h2><table><tr><th>Order</th><th>Title</th><th>Id</th></tr>"
        + _rows(items)
        + "</table><h2>Recipients</h2><table><tr><th>Name</th><th>Role</th><th>Signing status</th></tr>"
        + _rows(people)
        + "</table>"
    )
    return _page(str(env["title"]), body)


@router.get("/t/{team_url}/documents/{envelope_id}")
async def document_page(request: Request, team_url: str, envelope_id: str) -> Response:
    """The envelope (type DOCUMENT) as a read-only HTML page."""
    return _envelope_page(request, team_url, envelope_id, "DOCUMENT")


@router.get("/t/{team_url}/templates/{envelope_id}")
async def template_page(request: Request, team_url: str, envelope_id: str) -> Response:
    """The template (type TEMPLATE) as a read-only HTML page."""
    return _envelope_page(request, team_url, envelope_id, "TEMPLATE")
