"""``DocsignNotifier``: send a template for signature, or remind an envelope's signers, from a callback.

A notifier is what Airflow calls on a state change (``on_failure_callback``, ``on_success_callback``,
``on_retry_callback``, an SLA or a deadline alert). Its ``template_fields`` are rendered with the
callback's context first, so ``"{{ dag.dag_id }}"``, ``"{{ run_id }}"`` or ``"{{ exception }}"`` in the
prefill values, the title or the external id become the values of the run that failed.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS, BaseNotifier
from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service.models import EnvelopeStatus

__all__ = ["DocsignNotifier"]


class DocsignNotifier(BaseNotifier):
    """Send a template for signature, or remind the signers of an envelope, when Airflow calls back.

    **Send a template** (``template_id`` and ``recipients``): one envelope is made from the template with
    ``POST /envelope/use``, its fields prefilled (``prefill_fields``, rendered with the callback's
    context), and sent at once (``distribute``). With ``external_id`` (rendered too, e.g.
    ``"incident-{{ run_id }}"``), an envelope that already has that external id in the folder is not
    made again, so a callback that runs twice sends one envelope.

    **Remind** (``envelope_id``): the signers of a PENDING envelope who have not signed (every role but
    CC) get the signing request again (``POST /envelope/redistribute``, which also renews an expired
    link). An envelope that is not PENDING is left alone (logged).

    Use it in ``on_failure_callback`` (and the other task and DAG callbacks) on Airflow 2.11 and 3.x,
    and in a deadline alert on Airflow 3.1+ with
    ``AsyncCallback(DocsignNotifier, kwargs={...})``: the triggerer awaits it (the requests run in a
    worker thread).

    :param template_id: The template to send (its envelope id). Templated.
    :param recipients: Who signs: ``[{"id" or "placeholder", "email", "name"?}]``, mapped to the
        template's recipients as for ``DocsignHook.use_template``. Templated (rendered as JSON).
    :param prefill_fields: ``{label: value}`` or ``[{"id" or "label", "value"}]``; values are rendered
        with the callback's context. Templated.
    :param title: The new envelope's title (default: the template's). Templated.
    :param external_id: The new envelope's externalId; makes the notifier send at most once per value.
        Templated.
    :param folder_id: The document folder for the new envelope (also where ``external_id`` is looked
        up). Templated.
    :param distribute: Send the envelope at once (default); ``False`` leaves a draft.
    :param envelope_id: Instead of a template: the PENDING envelope whose signers to remind. Templated.
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    :param context: Given by Airflow's deadline callbacks; leave it out.
    """

    template_fields: Sequence[str] = (
        "template_id",
        "recipients",
        "prefill_fields",
        "title",
        "external_id",
        "folder_id",
        "envelope_id",
    )

    def __init__(
        self,
        *,
        template_id: str | None = None,
        recipients: Sequence[Mapping[str, Any]] | None = None,
        prefill_fields: Any = None,
        title: str | None = None,
        external_id: str | None = None,
        folder_id: str | None = None,
        distribute: bool = True,
        envelope_id: str | None = None,
        docsign_conn_id: str = "docsign_default",
        context: Any = None,
    ) -> None:
        if AIRFLOW_V_3_0_PLUS:
            super().__init__(context)
        else:  # Airflow 2.11's BaseNotifier takes no context
            super().__init__()
            self.context = context or {}  # type: ignore[assignment]
        if bool(template_id) == bool(envelope_id):
            raise ValueError(
                "give template_id (send a template) or envelope_id (remind its signers), not both"
            )
        if template_id and not recipients:
            raise ValueError("sending a template needs recipients")
        self.template_id = template_id
        self.recipients = list(recipients or [])
        self.prefill_fields = prefill_fields
        self.title = title
        self.external_id = external_id
        self.folder_id = folder_id
        self.distribute = distribute
        self.envelope_id = envelope_id
        self.docsign_conn_id = docsign_conn_id
        # Airflow renders a notifier's template fields in place: kept here so that every call renders
        # the DAG's own templates, never an earlier call's output (which may hold an exception's text).
        self._templates = {name: copy.deepcopy(getattr(self, name)) for name in self.template_fields}

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        """Render the template fields from the DAG's own templates, whatever an earlier call rendered.

        Airflow's ``BaseNotifier`` renders in place, and one instance is called again and again (in
        ``default_args``, under ``dag.test()``, in any long-lived process): without this the second call
        would render the first call's output, and data such as ``{{ conn.docsign_default.password }}``
        in an exception's text would be rendered as a template.
        """
        for name, template in self._templates.items():
            setattr(self, name, copy.deepcopy(template))
        super().render_template_fields(context, jinja_env)

    def notify(self, context: Any) -> None:
        """Send the template or remind the signers (the template fields are already rendered)."""
        from airflow_provider_docsign.hooks.docsign import DocsignHook

        with DocsignHook(self.docsign_conn_id) as hook:
            if self.envelope_id:
                self._remind(hook, str(self.envelope_id))
            else:
                self._send(hook)

    async def async_notify(self, context: Any) -> None:
        """The same as :meth:`notify`, for the triggerer (deadline alerts): run in a worker thread."""
        await asyncio.to_thread(self.notify, context)

    def _send(self, hook: Any) -> None:
        external_id = str(self.external_id).strip() if self.external_id else None
        folder_id = str(self.folder_id) if self.folder_id else None
        if external_id:
            existing = hook.find_envelopes_by_external_id(external_id, folder_id=folder_id)
            if existing:
                self.log.info(
                    "Docsign envelope %s with externalId %r exists already: not sending again",
                    existing[0].id,
                    external_id,
                )
                return
        override = {"title": str(self.title)} if self.title else None
        result = hook.use_template(
            str(self.template_id),
            recipients=self.recipients,
            prefill_fields=self.prefill_fields or None,
            external_id=external_id,
            folder_id=folder_id,
            distribute=self.distribute,
            override=override,
        )
        self.log.info(
            "Docsign envelope %s %s from template %s",
            result.envelope_id,
            "sent" if self.distribute else "created (draft)",
            self.template_id,
        )

    def _remind(self, hook: Any, envelope_id: str) -> None:
        envelope = hook.get_envelope(envelope_id)
        if envelope.status != EnvelopeStatus.PENDING:
            self.log.warning(
                "Docsign envelope %s is %s, not PENDING: no one to remind", envelope_id, envelope.status
            )
            return
        unsigned = [
            r.id
            for r in envelope.recipients
            if (r.role or "") != "CC" and (r.signing_status or "") == "NOT_SIGNED"
        ]
        if not unsigned:
            raise DocsignValidationError(
                [f"envelope {envelope_id} has no unsigned signer"], "DocsignNotifier"
            )
        hook.redistribute_envelope(envelope_id, unsigned)
        self.log.info("Reminded %d signer(s) of Docsign envelope %s", len(unsigned), envelope_id)
