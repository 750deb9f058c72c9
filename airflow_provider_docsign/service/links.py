"""Links to an envelope in the signing service's web app (pure: the URL and what XCom keeps for it).

The web app shows a team's document at ``{web_url}/t/{teamUrl}/documents/{envelopeId}`` (templates at
``.../templates/{envelopeId}``); route facts taken from the Documenso web app's route table
(``apps/remix/app/routes/_authenticated+/t.$teamUrl+/documents.$id._index.tsx``, which loads the
envelope by the ``$id`` path segment). The team URL is part of the envelope JSON (``team.url``).

The sandbox has no web app: it serves a minimal read-only page of the envelope at those same paths
(:mod:`airflow_provider_docsign.sandbox.routes_web`), so the link works against it too.

Operators store everything the link needs in XCom while they run (:func:`envelope_link_payload`), so
the extra link (:class:`~airflow_provider_docsign.operators.links.DocsignEnvelopeLink`) never looks up a
connection or calls the service when the UI asks for it, and it works even if a
later step of the task failed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

__all__ = ["ENVELOPE_LINK_XCOM_KEY", "build_envelope_url", "envelope_link_payload"]

ENVELOPE_LINK_XCOM_KEY = "docsign_envelope_link"
"""XCom key of the dict ``{web_url, team_url, envelope_id, envelope_type}`` the link is built from."""


def build_envelope_url(
    web_url: str | None,
    team_url: str | None,
    envelope_id: str | None,
    envelope_type: str | None = "DOCUMENT",
) -> str:
    """Build the web-app URL of an envelope, or ``""`` when something needed is missing.

    :param web_url: The web app's base URL (the connection's ``web_url``), ``http`` or ``https`` only.
    :param team_url: The team's URL slug (``team.url`` of the envelope JSON).
    :param envelope_id: The envelope id (``envelope_…``).
    :param envelope_type: ``DOCUMENT`` (default) or ``TEMPLATE``.
    """
    if not web_url or not team_url or not envelope_id:
        return ""
    base = web_url.strip().rstrip("/")
    # Never render a javascript:/data: link in the UI, whatever the connection holds.
    if not base.lower().startswith(("http://", "https://")):
        return ""
    section = "templates" if str(envelope_type or "").upper() == "TEMPLATE" else "documents"
    return f"{base}/t/{quote(team_url, safe='')}/{section}/{quote(envelope_id, safe='')}"


def envelope_link_payload(
    *, web_url: str | None, envelope_id: str, envelope: Any = None
) -> dict[str, str | None]:
    """The JSON-safe dict stored in XCom under :data:`ENVELOPE_LINK_XCOM_KEY`.

    :param web_url: The web app's base URL (``DocsignHook.web_url``).
    :param envelope_id: The envelope id.
    :param envelope: The envelope record (``models.Envelope``), if known, for its team URL and type.
    """
    team_url: str | None = None
    envelope_type: str | None = "DOCUMENT"
    raw = getattr(envelope, "raw", None)
    if isinstance(raw, dict):
        team = raw.get("team")
        if isinstance(team, dict) and team.get("url"):
            team_url = str(team["url"])
        envelope_type = str(raw.get("type") or "DOCUMENT")
    return {
        "web_url": web_url,
        "team_url": team_url,
        "envelope_id": envelope_id,
        "envelope_type": envelope_type,
    }
