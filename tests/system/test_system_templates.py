"""System tests: templates through the public operators, on a real Documenso (opt-in).

A template made by :class:`DocsignCreateTemplateOperator` (found again by its title on a second run) is
used by :class:`DocsignCreateEnvelopeFromTemplateOperator` with both roles mapped by placeholder name, a
labelled TEXT field prefilled and its PDF replaced; both sign and it completes. A replacement PDF too
short for the template's fields, and a role left unmapped, are refused before anything is sent: no
envelope exists afterwards. Signers use ``example.com`` addresses and ``distributionMethod: NONE``.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ctx
from peer import patiently, raw_envelope, sign_as, wait_status
from template_helpers import field

from airflow_provider_docsign._compat import AirflowFailException
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.operators import (
    DocsignCreateEnvelopeFromTemplateOperator,
    DocsignCreateTemplateOperator,
)
from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.sensors import DocsignEnvelopeSensor

NO_EMAIL = {"distributionMethod": "NONE"}
CUSTOMER, PROVIDER = "system-customer@example.com", "system-provider@example.com"
COMPANY = "ACME Widgets Ltd"


def sign(envelope_id: str, email: str | None = None) -> list[str]:
    """Sign as a recipient through the web app's route, patient with the instance's shared per-IP limit."""
    signed: list[str] = patiently(sign_as, envelope_id, email)
    return signed


def template_operator(conn: str, run: Any, pdf: Path) -> DocsignCreateTemplateOperator:
    """Customer (a ``company`` TEXT field on page 1, the signature on page 2) and Provider roles."""
    return DocsignCreateTemplateOperator(
        task_id="template",
        docsign_conn_id=conn,
        title=f"{run.prefix} onboarding template",
        files=[str(pdf)],
        recipients=[
            {
                "email": "customer@example.com",
                "name": "Customer",
                "role": "SIGNER",
                "fields": [field("TEXT", 1, 10, "company"), field("SIGNATURE", 2, 80)],
            },
            {
                "email": "provider@example.com",
                "name": "Provider",
                "role": "SIGNER",
                "fields": [field("SIGNATURE", 2, 90)],
            },
        ],
    )


@pytest.fixture(scope="module")
def template(
    system_conn: str, system_hook: DocsignHook, system_run: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """The template, made by the operator at the root (templates live in template folders), then deleted."""
    source = write_sample_pdf(tmp_path_factory.mktemp("template") / "onboarding.pdf", pages=2)
    made = template_operator(system_conn, system_run, source).execute(ctx())
    system_run.template_ids.append(made["template_id"])
    try:
        yield {**made, "source": source}
    finally:
        system_hook.delete_envelope(made["template_id"])


def in_folder(hook: DocsignHook, run: Any) -> list[str]:
    return sorted(e.id for e in hook.find_envelopes(query=run.prefix, folder_id=run.folder_id))


def test_the_template_operator_finds_its_template_again_by_title(
    template: dict[str, Any], system_conn: str, system_hook: DocsignHook, system_run: Any
) -> None:
    assert template["status"] == "DRAFT"
    assert len(template["item_ids"]) == 1
    again = template_operator(system_conn, system_run, template["source"]).execute(ctx())
    assert again["template_id"] == template["template_id"]
    found = system_hook.find_templates_by_title(f"{system_run.prefix} onboarding template")
    assert [t.id for t in found] == [template["template_id"]]
    made = system_hook.get_template(template["template_id"])
    assert sorted(r.name or "" for r in made.recipients) == ["Customer", "Provider"]
    text = next(f for f in made.fields if f.type == "TEXT")
    assert (text.field_meta or {}).get("label") == "company"


def test_an_envelope_from_the_template_with_a_prefill_and_mapped_roles_is_signed_and_completes(
    template: dict[str, Any],
    system_conn: str,
    system_hook: DocsignHook,
    system_run: Any,
    pdf: Callable[..., Path],
) -> None:
    replacement = pdf("onboarding-acme.pdf", pages=2)
    external_id = system_run.external_id("from-template")
    used = DocsignCreateEnvelopeFromTemplateOperator(
        task_id="use",
        docsign_conn_id=system_conn,
        template_id=template["template_id"],
        recipients=[
            {"placeholder": "Customer", "email": CUSTOMER, "name": "Cam Customer"},
            {"placeholder": "Provider", "email": PROVIDER, "name": "Pat Provider"},
        ],
        prefill_fields={"company": COMPANY},
        files=[str(replacement)],
        external_id=external_id,
        folder_id=system_run.folder_id,
        override={"title": f"{system_run.prefix} onboarding ACME", **NO_EMAIL},
    ).execute(ctx())
    envelope_id = used["envelope_id"]
    system_run.envelope_ids.append(envelope_id)
    assert (used["status"], used["external_id"]) == ("PENDING", external_id)

    raw = raw_envelope(envelope_id)
    template_number = int(str(raw_envelope(template["template_id"])["secondaryId"]).rsplit("_", 1)[1])
    assert (raw["source"], raw["templateId"]) == ("TEMPLATE", template_number)
    people = {r["id"]: r for r in raw["recipients"]}
    assert sorted((r["email"], r["name"]) for r in people.values()) == [
        (CUSTOMER, "Cam Customer"),
        (PROVIDER, "Pat Provider"),
    ]
    # The mapped Customer holds the template's Customer fields; the prefilled text is already inserted.
    fields = {(people[f["recipientId"]]["email"], f["type"]): f for f in raw["fields"]}
    assert sorted(fields) == [(CUSTOMER, "SIGNATURE"), (CUSTOMER, "TEXT"), (PROVIDER, "SIGNATURE")]
    text = fields[(CUSTOMER, "TEXT")]
    assert (text["inserted"], text["customText"], text["page"]) == (True, COMPANY, 1)
    # The replacement PDF is the envelope's document, byte for byte.
    (item,) = system_hook.get_envelope(envelope_id).items
    sink = io.BytesIO()
    system_hook.download_envelope_item(item.id, sink, version="original")
    assert hashlib.sha256(sink.getvalue()).hexdigest() == hashlib.sha256(replacement.read_bytes()).hexdigest()

    assert sign(envelope_id) == [CUSTOMER, PROVIDER]
    waited = DocsignEnvelopeSensor(
        task_id="wait", envelope_id=used, docsign_conn_id=system_conn, poke_interval=1, timeout=120
    ).execute(ctx())
    assert [(w["envelope_id"], w["status"]) for w in waited] == [(envelope_id, "COMPLETED")]
    final = wait_status(envelope_id, "COMPLETED")
    kept = next(f for f in final["fields"] if f["id"] == text["id"])
    assert kept["customText"] == COMPANY  # the prefilled value is what was sealed
    assert all(f["inserted"] for f in final["fields"])


def test_a_replacement_too_short_for_the_template_is_refused_before_anything_is_sent(
    template: dict[str, Any],
    system_conn: str,
    system_hook: DocsignHook,
    system_run: Any,
    pdf: Callable[..., Path],
) -> None:
    external_id = system_run.external_id("too-short")
    before = in_folder(system_hook, system_run)
    operator = DocsignCreateEnvelopeFromTemplateOperator(
        task_id="use",
        docsign_conn_id=system_conn,
        template_id=template["template_id"],
        recipients=[
            {"placeholder": "Customer", "email": CUSTOMER},
            {"placeholder": "Provider", "email": PROVIDER},
        ],
        files=[str(pdf("one-page.pdf", pages=1))],
        external_id=external_id,
        folder_id=system_run.folder_id,
        override=NO_EMAIL,
    )
    with pytest.raises(
        AirflowFailException, match=r"has 1 page\(s\), but template field \d+ \(SIGNATURE"
    ) as no:
        operator.execute(ctx())
    assert "is on page 2: the envelope could never be completed" in str(no.value)
    assert system_hook.find_envelopes_by_external_id(external_id, folder_id=system_run.folder_id) == []
    assert system_hook.find_envelopes_by_external_id(external_id) == []  # nor at the root
    assert in_folder(system_hook, system_run) == before


def test_a_role_left_unmapped_is_refused_before_anything_is_sent(
    template: dict[str, Any], system_conn: str, system_hook: DocsignHook, system_run: Any
) -> None:
    external_id = system_run.external_id("unmapped")
    operator = DocsignCreateEnvelopeFromTemplateOperator(
        task_id="use",
        docsign_conn_id=system_conn,
        template_id=template["template_id"],
        recipients=[{"placeholder": "Customer", "email": CUSTOMER}],
        prefill_fields={"company": COMPANY},
        external_id=external_id,
        folder_id=system_run.folder_id,
        override=NO_EMAIL,
    )
    with pytest.raises(AirflowFailException, match="Provider"):
        operator.execute(ctx())
    assert system_hook.find_envelopes_by_external_id(external_id, folder_id=system_run.folder_id) == []
