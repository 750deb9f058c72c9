"""Operator extra link "Docsign envelope": the envelope a task created or worked on, in the web app.

The URL is built by :mod:`airflow_provider_docsign.service.links` from what the operator kept in XCom
under :data:`~airflow_provider_docsign.service.links.ENVELOPE_LINK_XCOM_KEY` while it ran, so the link
never looks up a connection or calls the service when the UI asks for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS, BaseOperatorLink, XCom
from airflow_provider_docsign.service.links import (
    ENVELOPE_LINK_XCOM_KEY,
    build_envelope_url,
    envelope_link_payload,
)

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import BaseOperator

__all__ = ["ENVELOPE_LINK_XCOM_KEY", "DocsignEnvelopeLink", "build_envelope_url", "envelope_link_payload"]


_NOT_A_LIVE_OPERATOR = object()


class DocsignEnvelopeLink(BaseOperatorLink):
    """Extra link "Docsign envelope": the envelope the task created or worked on, in the web app."""

    name = "Docsign envelope"

    def get_link(self, operator: BaseOperator, *, ti_key: Any) -> str:
        """Return the envelope's web-app URL from the task's XCom, or ``""`` if it is not known.

        Airflow 3 asks in the worker, right when the task ends, with the operator that ran: what that
        operator stored (``docsign_link_payload``, set with the XCom by ``push_envelope_link``) is
        used, and a task that stored nothing (one that works on many envelopes, such as a batch
        archive or a clean-up) has no link, without an XCom lookup: a missing XCom is logged by
        Airflow's task runner as an ``[error]`` line in a successful run. Airflow 2.11 asks in the
        webserver, with an operator read back from the serialized DAG: the XCom is read then.
        Docsign operators never defer, so the operator that ran is the one that pushed.

        :param operator: The operator the link belongs to.
        :param ti_key: The task instance key whose XCom holds the envelope.
        """
        recorded = getattr(operator, "docsign_link_payload", _NOT_A_LIVE_OPERATOR)
        if not AIRFLOW_V_3_0_PLUS or recorded is _NOT_A_LIVE_OPERATOR:
            value = XCom.get_value(ti_key=ti_key, key=ENVELOPE_LINK_XCOM_KEY)
        else:
            value = recorded
        if not isinstance(value, dict):
            return ""
        return build_envelope_url(
            value.get("web_url"),
            value.get("team_url"),
            value.get("envelope_id"),
            value.get("envelope_type"),
        )
