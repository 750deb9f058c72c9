"""Operator extra link: "Docsign envelope" opens the envelope in the signing service's web app.

The web app shows a team's document at ``{web_url}/t/{teamUrl}/documents/{envelopeId}`` (templates at
``.../templates/{envelopeId}``); route facts taken from the Documenso web app's route table
(``apps/remix/app/routes/_authenticated+/t.$teamUrl+/documents.$id._index.tsx``, which loads the
envelope by the ``$id`` path segment). The team URL is part of the envelope JSON (``team.url``).

The sandbox has no web app: it serves a minimal read-only page of the envelope at those same paths
(:mod:`airflow_provider_docsign.sandbox.routes_web`), so the link works against it too.

Operators store everything the link needs in XCom while they run (:func:`push_envelope_link`), so the
link never looks up a connection or calls the service when the UI asks for it, and it works even if a
later step of the task failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from airflow_provider_docsign._compat import BaseOperatorLink, XCom

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import BaseOperator

__all__ = ["ENVELOPE_LINK_XCOM_KEY", "DocsignEnvelopeLink", "build_envelope_url"]

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


class DocsignEnvelopeLink(BaseOperatorLink):
    """Extra link "Docsign envelope": the envelope the task created or worked on, in the web app."""

    name = "Docsign envelope"

    def get_link(self, operator: BaseOperator, *, ti_key: Any) -> str:
        """Return the envelope's web-app URL from the task's XCom, or ``""`` if it is not known.

        :param operator: The operator the link belongs to.
        :param ti_key: The task instance key whose XCom holds the envelope.
        """
        value = XCom.get_value(ti_key=ti_key, key=ENVELOPE_LINK_XCOM_KEY)
        if not isinstance(value, dict):
            return ""
        return build_envelope_url(
            value.get("web_url"),
            value.get("team_url"),
            value.get("envelope_id"),
            value.get("envelope_type"),
        )
