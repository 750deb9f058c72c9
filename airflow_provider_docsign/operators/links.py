"""Operator extra link "Docsign envelope": the envelope a task created or worked on, in the web app.

The URL is built by :mod:`airflow_provider_docsign.service.links` from what the operator kept in XCom
under :data:`~airflow_provider_docsign.service.links.ENVELOPE_LINK_XCOM_KEY` while it ran, so the link
never looks up a connection or calls the service when the UI asks for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import BaseOperatorLink, XCom
from airflow_provider_docsign.service.links import (
    ENVELOPE_LINK_XCOM_KEY,
    build_envelope_url,
    envelope_link_payload,
)

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import BaseOperator

__all__ = ["ENVELOPE_LINK_XCOM_KEY", "DocsignEnvelopeLink", "build_envelope_url", "envelope_link_payload"]


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
