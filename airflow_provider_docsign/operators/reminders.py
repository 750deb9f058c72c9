"""DocsignRemindRecipientsOperator: remind recipients and renew expired signing links."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from itertools import chain
from typing import TYPE_CHECKING, Any

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.exceptions import DocsignAPIError, DocsignError
from airflow_provider_docsign.operators._base import (
    PERMANENT_ERRORS,
    DocsignBaseOperator,
    current_try,
    fail_now,
    status_value,
)
from airflow_provider_docsign.service.expiry import (
    awaits_signature,
    expired_recipients,
    mask_email,
    parse_timestamp,
    reminded_recipients,
)
from airflow_provider_docsign.service.ids import ID_FORM, as_id
from airflow_provider_docsign.service.models import Envelope, EnvelopeStatus, Recipient

if TYPE_CHECKING:
    from airflow_provider_docsign._compat import Context

__all__ = ["DocsignRemindRecipientsOperator"]

#: Added to the window a retry looks back over: the ``Date`` header has a resolution of one second, and
#: answers take time to arrive. Erring wide never e-mails twice; it can only skip a reminder that an
#: earlier run sent seconds before this one started.
_CLOCK_SLACK = timedelta(seconds=5)


def _who(r: Recipient) -> str:
    return f"recipient {r.id} ({r.role or '?'}, {mask_email(r.email)})"


class DocsignRemindRecipientsOperator(DocsignBaseOperator):
    """Re-send the signing e-mail to recipients of a PENDING envelope, renewing their signing links.

    One ``POST /envelope/redistribute`` for all the chosen recipients. On the real service this renews
    each unsigned, non-CC recipient's ``expiresAt`` (reviving an expired link), resets the reminder
    schedule, re-sends the signing e-mail and fires ``DOCUMENT_REMINDER_SENT``.

    - The recipients are resolved against the envelope first. A DRAFT or terminal envelope
      (COMPLETED, REJECTED, CANCELLED), or a CC or already-signed recipient named explicitly, fails
      the task at once with a clear error and nothing is sent.
    - After the call the envelope is read again to check that each link was renewed.
    - **Safe retries, on the service's own data.** Redistribute is not idempotent (it e-mails people),
      so it is never repeated blindly, and no timestamp of the service is ever compared with
      Airflow's clock (they may disagree by any amount):

      - Before sending, the newest entry of the envelope's audit log is noted. A lost answer or a 5xx
        is then resolved by re-reading: links renewed, or a reminder e-mail in the audit log above
        that entry, mean it worked, and the task succeeds.
      - A retried task first looks in the audit log for the reminders an earlier try of the same DAG
        run already sent, and does not send those again. "Since the run started" is measured on the
        service's clock: its ``Date`` header minus how long the run has been going (a duration,
        measured on Airflow's clock alone).

    Returns ``{"envelope_id", "reminded": [recipient ids], "renewed": [recipient ids]}``: ``renewed``
    lists those whose ``expiresAt`` moved later (empty when the envelope's links never expire).

    :param envelope_id: The envelope (templated); a dict with ``envelope_id`` is accepted too.
    :param recipients: ``"unsigned"`` (default: every unsigned, non-CC recipient), or a list of
        recipient ids (an integer, or its digits as a string, as Jinja renders it) and/or e-mail
        addresses. Templated.
    :param only_expired: Remind only recipients whose link has expired (renew them, leave the others).
    :param docsign_conn_id: The Airflow connection of type ``docsign``.
    """

    template_fields: Sequence[str] = ("envelope_id", "recipients")
    ui_color = "#fff3d6"

    def __init__(
        self,
        *,
        envelope_id: Any,
        recipients: str | Sequence[int | str] = "unsigned",
        only_expired: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(recipients, str) and recipients != "unsigned" and "{{" not in recipients:
            raise ValueError(
                f"recipients must be 'unsigned' or a list of recipient ids or e-mails, got {recipients!r}"
            )
        self.envelope_id = envelope_id
        self.recipients = recipients
        self.only_expired = bool(only_expired)

    # -- resolving --------------------------------------------------------------------------------

    def _envelope_id(self) -> str:
        value = self.envelope_id
        if isinstance(value, Mapping):
            value = value.get("envelope_id") or value.get("id")
        if not isinstance(value, str) or not value.strip():
            raise AirflowFailException(f"envelope_id must be an envelope id string, got {value!r}"[:300])
        return value.strip()

    def _targets(self, envelope: Envelope) -> list[Recipient]:
        status = status_value(envelope.status)
        if status != EnvelopeStatus.PENDING.value:
            why = "it has not been sent yet" if status == "DRAFT" else "that status is final"
            raise AirflowFailException(
                f"envelope {envelope.id} is {status}: only a PENDING envelope can be reminded ({why}); "
                "nothing was sent"
            )
        expired = {r.id for r in expired_recipients(envelope.recipients)}
        if self.recipients == "unsigned":
            chosen = [r for r in envelope.recipients if awaits_signature(r)]
        else:
            chosen = self._named(envelope, self.recipients)
        if self.only_expired:
            chosen = [r for r in chosen if r.id in expired]
        return chosen

    @staticmethod
    def _named(envelope: Envelope, wanted: Any) -> list[Recipient]:
        if isinstance(wanted, str | bytes) or not isinstance(wanted, Iterable):
            raise AirflowFailException(
                f"recipients must be 'unsigned' or a list of recipient ids or e-mails, got {wanted!r}"[:300]
            )
        by_id = {r.id: r for r in envelope.recipients}
        by_email = {(r.email or "").lower(): r for r in envelope.recipients if r.email}
        problems: list[str] = []
        chosen: list[Recipient] = []
        for index, entry in enumerate(wanted):
            rec: Recipient | None = None
            number = as_id(entry)  # an id, or its digits as a string (what Jinja renders)
            if number is not None:
                rec = by_id.get(number)
            elif isinstance(entry, str) and "@" in entry:
                rec = by_email.get(entry.strip().lower())
            else:
                problems.append(
                    f"recipients[{index}]: {entry!r} is neither a recipient id ({ID_FORM}) nor an e-mail"
                )
                continue
            where = f"recipients[{index}]"
            if rec is None:
                shown = mask_email(entry) if isinstance(entry, str) and "@" in entry else repr(entry)
                problems.append(f"{where}: {shown} is not a recipient of envelope {envelope.id}")
            elif (rec.role or "").upper() == "CC":
                problems.append(
                    f"{where}: {_who(rec)} is CC: CC recipients never sign, so cannot be reminded"
                )
            elif not awaits_signature(rec):
                problems.append(f"{where}: {_who(rec)} has already {str(rec.signing_status).lower()}")
            elif rec not in chosen:
                chosen.append(rec)
        if problems:
            raise AirflowFailException(
                f"cannot remind recipients of envelope {envelope.id}; nothing was sent:\n  - "
                + "\n  - ".join(problems)
            )
        return chosen

    # -- retry safety -----------------------------------------------------------------------------

    @staticmethod
    def _run_age(context: Context) -> timedelta | None:
        """How long this DAG run has been going: a duration, on Airflow's clock alone."""
        dag_run = context.get("dag_run") if hasattr(context, "get") else None
        start = getattr(dag_run, "start_date", None) or getattr(dag_run, "logical_date", None)
        if not isinstance(start, datetime):
            return None
        if start.tzinfo is None:  # Airflow's dates are UTC
            start = start.replace(tzinfo=timezone.utc)
        return max(timedelta(0), datetime.now(timezone.utc) - start)

    def _reminded_earlier(self, envelope_id: str, ids: set[int], age: timedelta) -> set[int]:
        """Recipients an earlier try of this run already reminded, by the service's audit log.

        The window is measured on the service's clock: its ``Date`` header (read with the first page
        of the audit log) minus the run's age. Without a ``Date`` header every reminder among the
        newest entries counts: a reminder is never sent twice, at the risk of skipping one.
        """
        entries = iter(self.hook.get_audit_log(envelope_id))
        first = next(entries, None)  # fetches the first page: its answer carries the service's Date
        service_now = self.hook.last_service_time
        since = None if service_now is None else service_now - age - _CLOCK_SLACK
        if since is None:
            self.log.warning(
                "The service sent no Date header: every reminder among the newest audit entries counts "
                "as sent by an earlier try of this run"
            )
        return reminded_recipients(chain([first] if first else [], entries), ids, since=since)

    def _newest_audit_entry(self, envelope_id: str) -> str | None:
        """The id of the envelope's newest audit entry: what a lost answer is checked against."""
        newest = next(iter(self.hook.get_audit_log(envelope_id)), None)
        return str(newest["id"]) if newest and newest.get("id") is not None else None

    # -- execute ----------------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        """Resolve, redistribute once, verify the links were renewed; return what was done."""
        envelope_id = self._envelope_id()
        envelope = self.read_envelope(context, envelope_id)
        targets = self._targets(envelope)
        if not targets:
            self.log.info("Envelope %s: no recipient to remind", envelope_id)
            return {"envelope_id": envelope_id, "reminded": [], "renewed": []}
        before = {r.id: r.expires_at for r in targets}
        to_send = [r.id for r in targets]
        age = self._run_age(context)
        if current_try(context) > 1 and age is not None:
            done = self._reminded_earlier(envelope_id, set(to_send), age)
            if done:
                self.log.warning(
                    "An earlier try already reminded recipient(s) %s in this run; not e-mailing them again",
                    sorted(done),
                )
                to_send = [i for i in to_send if i not in done]
        if to_send:
            self.log.info(
                "Reminding %s of envelope %s",
                ", ".join(_who(r) for r in targets if r.id in to_send),
                envelope_id,
            )
            marker = self._newest_audit_entry(envelope_id)
            self._redistribute_once(envelope_id, to_send, before, marker)
        after = self.hook.get_envelope(envelope_id)
        return self._verify(after, targets, before)

    def _redistribute_once(
        self, envelope_id: str, ids: list[int], before: dict[int, str | None], marker: str | None
    ) -> None:
        try:
            self.hook.redistribute_envelope(envelope_id, ids)
        except PERMANENT_ERRORS as err:
            raise fail_now(err) from err
        except DocsignError as err:  # DocsignAmbiguousWriteError, a 5xx, a lost connection
            status = getattr(err, "status_code", None)
            if isinstance(err, DocsignAPIError) and status is not None and status < 500:
                raise fail_now(err) from err
            # The outcome is unknown: look instead of sending the e-mails a second time.
            self.log.warning("Redistribute's outcome is unknown (%s); reading the envelope", err)
            envelope = self.hook.get_envelope(envelope_id)
            done = {
                r.id for r in envelope.recipients if r.id in before and _later(r.expires_at, before[r.id])
            }
            if set(ids) - done:  # links that never expire are not renewed: the audit log tells
                entries = self.hook.get_audit_log(envelope_id)
                done |= reminded_recipients(entries, set(ids) - done, stop_at=marker)
            missing = sorted(set(ids) - done)
            if missing:
                raise AirflowFailException(
                    f"redistribute of envelope {envelope_id} failed or its outcome is unknown ({err}); "
                    f"recipient(s) {missing} show no renewed link and no reminder e-mail. It was not "
                    "repeated, because it e-mails the recipients; check the envelope before running again"
                ) from err
            self.log.warning(
                "Redistribute's answer was lost, but the service shows it done for %s", sorted(done)
            )

    def _verify(
        self, envelope: Envelope, targets: list[Recipient], before: dict[int, str | None]
    ) -> dict[str, Any]:
        by_id = {r.id: r for r in envelope.recipients}
        renewed = [r.id for r in targets if r.id in by_id and _later(by_id[r.id].expires_at, before[r.id])]
        still = expired_recipients([by_id[r.id] for r in targets if r.id in by_id])
        if still:
            raise AirflowFailException(
                f"envelope {envelope.id}: the signing link of "
                + ", ".join(_who(r) for r in still)
                + " is still expired after redistribute"
            )
        result = {"envelope_id": envelope.id, "reminded": [r.id for r in targets], "renewed": renewed}
        self.log.info("Envelope %s: reminded %s, renewed %s", envelope.id, result["reminded"], renewed)
        return result


def _later(now: str | None, then: str | None) -> bool:
    """Whether ``expiresAt`` moved later (a renewal)."""
    new, old = parse_timestamp(now), parse_timestamp(then)
    if new is None:
        return False
    return old is None or new > old
