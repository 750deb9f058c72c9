"""``DocsignNotifier``: send a template for signature, or remind an envelope's signers, from a callback.

A notifier is what Airflow calls on a state change (``on_failure_callback``, ``on_success_callback``,
``on_retry_callback``, an SLA or a deadline alert). Its ``template_fields`` are rendered with the
callback's context first, so ``"{{ dag.dag_id }}"``, ``"{{ run_id }}"`` or ``"{{ exception }}"`` in the
prefill values, the title or the external id become the values of the run that failed.

What was rendered is then made fit to send (:mod:`._fold`): one line, without the characters the
outgoing check refuses, cut to the service's lengths with a visible "…". A failure to send is
logged as one error naming what was refused; the callback never raises into Airflow.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS, BaseNotifier
from airflow_provider_docsign._text import printable
from airflow_provider_docsign.exceptions import DocsignError, DocsignValidationError
from airflow_provider_docsign.notifications._fold import fold, fold_prefill, fold_recipients
from airflow_provider_docsign.service import _rules as rules
from airflow_provider_docsign.service.models import EnvelopeStatus

#: The longest title and externalId the service takes (its schema's ``maxLength``).
TITLE_MAX = rules.MAX_LENGTH["POST /envelope/use"]["override.title"]
EXTERNAL_ID_MAX = rules.MAX_LENGTH["POST /envelope/update"]["data.externalId"]

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

    **What is sent.** The rendered title, external id, recipients' names and prefill values are
    folded to one line (line breaks and tabs become spaces; NUL and the other characters the outgoing
    check refuses are removed) and cut to the service's lengths (title and external id 255, a prefilled
    TEXT value its field's ``characterLimit``, any other value 5,000), ending in "…" where cut: a
    2,000-character traceback in ``{{ exception }}`` still sends the alert. Each call renders the
    DAG's own templates, never an earlier call's output, so an exception's text is data, never a
    template.

    **Failures.** A notifier must not fail the callback: a template that does not render, an input the
    service would refuse, or an error of the service is logged as one error line saying what was
    refused, and nothing is raised into Airflow.

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
        self._render_problems: list[str] = []  # what did not render in the last call

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        """Render the template fields from the DAG's own templates, whatever an earlier call rendered.

        Airflow's ``BaseNotifier`` renders in place, and one instance is called again and again (in
        ``default_args``, under ``dag.test()``, in any long-lived process): without this the second call
        would render the first call's output, and data such as ``{{ conn.docsign_default.password }}``
        in an exception's text would be rendered as a template. A field that does not render is
        recorded (and logged by :meth:`notify`) instead of raised: nothing is sent then.
        """
        for name, template in self._templates.items():
            setattr(self, name, copy.deepcopy(template))
        self._render_problems = []
        try:
            if jinja_env is None:
                jinja_env = self.get_template_env(dag=context.get("dag"))
        except Exception as err:
            self._render_problems.append(f"the template environment: {_reason(err)}")
            return
        for name in self.template_fields:
            try:
                self._do_render_template_fields(self, [name], context, jinja_env, set())
            except Exception as err:
                self._render_problems.append(f"{name}: {_reason(err)}")

    def notify(self, context: Any) -> None:
        """Send the template or remind the signers (the template fields are already rendered).

        Never raises: a failure is logged as one error line naming what was refused.
        """
        what = (
            f"remind the signers of envelope {printable(self.envelope_id, 100)}"
            if self.envelope_id
            else f"send template {printable(self.template_id, 100)}"
        )
        problems = self._render_problems
        if problems:
            self.log.error(
                "DocsignNotifier could not %s: a template field did not render (%s); nothing was sent",
                what,
                "; ".join(problems),
            )
            return
        try:
            from airflow_provider_docsign.hooks.docsign import DocsignHook

            with DocsignHook(self.docsign_conn_id) as hook:
                if self.envelope_id:
                    self._remind(hook, str(self.envelope_id).strip())
                else:
                    self._send(hook)
        except Exception as err:
            self.log.error(
                "DocsignNotifier could not %s: %s",
                what,
                _reason(err),
                exc_info=not isinstance(err, DocsignError),  # a bug of ours: show where
            )

    async def async_notify(self, context: Any) -> None:
        """The same as :meth:`notify`, for the triggerer (deadline alerts): run in a worker thread."""
        await asyncio.to_thread(self.notify, context)

    def _send(self, hook: Any) -> None:
        template_id = str(self.template_id).strip()
        external_id = fold(str(self.external_id), EXTERNAL_ID_MAX) if self.external_id else None
        title = fold(str(self.title), TITLE_MAX) if self.title else None
        self._log_cuts({"title": (self.title, title), "external_id": (self.external_id, external_id)})
        folder_id = str(self.folder_id).strip() if self.folder_id else None
        if external_id:
            existing = hook.find_envelopes_by_external_id(external_id, folder_id=folder_id)
            if existing:
                self.log.info(
                    "Docsign envelope %s with externalId %r exists already: not sending again",
                    existing[0].id,
                    external_id,
                )
                return
        template = hook.get_template(template_id)  # passed on to the use: read once
        prefill = fold_prefill(self.prefill_fields, template) if self.prefill_fields else None
        override = {"title": title} if title else None
        result = hook.use_template(
            template_id,
            template=template,
            recipients=fold_recipients(self.recipients),
            prefill_fields=prefill,
            external_id=external_id or None,
            folder_id=folder_id,
            distribute=self.distribute,
            override=override,
        )
        self.log.info(
            "Docsign envelope %s %s from template %s",
            result.envelope_id,
            "sent" if self.distribute else "created (draft)",
            template_id,
        )

    def _log_cuts(self, rendered: Mapping[str, tuple[Any, str | None]]) -> None:
        """Say which rendered values were folded or cut (their length before and after)."""
        for name, (before, after) in rendered.items():
            if before and str(before) != after:
                self.log.info(
                    "DocsignNotifier: %s folded to one line%s (%d characters rendered, %d sent)",
                    name,
                    " and cut" if after and after.endswith("\u2026") else "",
                    len(str(before)),
                    len(after or ""),
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


def _reason(err: BaseException) -> str:
    """An exception as one readable clause: its message on one line (our errors list problems a line)."""
    text = " ".join(str(err).split()) or type(err).__name__
    return printable(text, 2000)
