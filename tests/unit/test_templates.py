"""The local checks of a template use, against the real recorded template (``templates/21``)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import SPEC_DIR

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service.models import Envelope
from airflow_provider_docsign.service.outgoing import check_request
from airflow_provider_docsign.service.templates import TemplateUse, describe_template, validate_use_payload

RECORDED = SPEC_DIR / "recorded" / "templates"
ITEM = "envelope_item_nabkuilldmcarzul"
CUSTOMER, LEGAL = 2265, 2266
TEXT, NUMBER, DATE, SIGNATURE = 903, 904, 905, 906


def _template(**changes: Any) -> Envelope:
    data = json.loads((RECORDED / "21_template_get.json").read_text())
    data = copy.deepcopy(data)
    data["fields"][0]["fieldMeta"]["label"] = "company"
    data["fields"][1]["fieldMeta"]["label"] = "amount"
    for key, value in changes.items():
        data[key] = value
    return Envelope.from_json(data)


def _customer() -> list[dict[str, Any]]:
    return [{"id": CUSTOMER, "email": "buyer@peer.test", "name": "Buyer Person"}]


def _problems(**kwargs: Any) -> list[str]:
    with pytest.raises(DocsignValidationError) as err:
        validate_use_payload(_template(), **kwargs)
    return err.value.problems


def test_recorded_request_payload_is_built_from_ids() -> None:
    payload, sources, names = validate_use_payload(
        _template(),
        recipients=[
            {"id": CUSTOMER, "email": "buyer@peer.test", "name": "Buyer Person"},
            {"id": LEGAL, "email": "archive@peer.test", "name": "Archive"},
        ],
        prefill_fields=[{"id": TEXT, "value": "ACME Corp"}, {"id": NUMBER, "value": "1250.50"}],
        external_id="rec-use-0c9ed8",
        override={"title": "NDA - ACME Corp"},
        distribute=True,
    )
    recorded = json.loads((RECORDED / "23_template_use_request_payload.json").read_text())
    assert payload == recorded
    assert sources == []
    assert names == []


def test_placeholder_and_labels_resolve_to_ids() -> None:
    payload, _, _ = validate_use_payload(
        _template(),
        recipients=[{"placeholder": "Customer", "email": "a@b.test", "name": "A"}],
        prefill_fields={"company": "ACME", "amount": 12},
    )
    assert payload["recipients"] == [{"id": CUSTOMER, "email": "a@b.test", "name": "A"}]
    assert payload["prefillFields"] == [
        {"id": TEXT, "type": "text", "value": "ACME"},
        {"id": NUMBER, "type": "number", "value": "12"},
    ]
    assert "customDocumentData" not in payload


def test_every_problem_is_listed_at_once() -> None:
    problems = _problems(
        recipients=[
            {"id": 999999, "email": "x@y.test"},
            {"id": LEGAL, "email": "not-an-email"},
            {"id": LEGAL, "email": "z@y.test"},
        ],
        prefill_fields=[
            {"id": NUMBER, "value": "not a number"},
            {"id": DATE, "value": "2026-01-01"},
            {"id": SIGNATURE, "value": "x"},
            {"id": 4242, "value": "x"},
            {"label": "company", "value": 12},
        ],
    )
    text = "\n".join(problems)
    assert "id 999999 is not a recipient of the template" in text
    assert "mapped twice" in text
    assert "template recipient 2265 (Customer) is a SIGNER who must act but is not mapped" in text
    assert "'not a number' is not a number" in text
    assert "a DATE field cannot be prefilled" in text
    assert "a SIGNATURE field cannot be prefilled" in text
    assert "field id 4242 is not a field of the template" in text
    assert "a TEXT value must be a string, not int" in text
    assert len(problems) == 8  # the e-mail is the outgoing check's (tests/unit/test_outgoing.py)


def test_cc_may_stay_unmapped() -> None:
    payload, _, _ = validate_use_payload(_template(), recipients=_customer())
    assert [r["id"] for r in payload["recipients"]] == [CUSTOMER]


def test_options_and_text_limit() -> None:
    data = json.loads((RECORDED / "21_template_get.json").read_text())
    data["fields"][0]["fieldMeta"]["characterLimit"] = 3
    data["fields"].append(
        {
            **data["fields"][0],
            "id": 950,
            "type": "RADIO",
            "fieldMeta": {"type": "radio", "values": [{"id": 1, "value": "yes", "checked": False}]},
        }
    )
    data["fields"].append(
        {
            **data["fields"][0],
            "id": 951,
            "type": "CHECKBOX",
            "fieldMeta": {"type": "checkbox", "values": [{"id": 1, "value": "a", "checked": False}]},
        }
    )
    template = Envelope.from_json(data)
    with pytest.raises(DocsignValidationError) as err:
        validate_use_payload(
            template,
            recipients=_customer(),
            prefill_fields=[
                {"id": TEXT, "value": "ACME"},
                {"id": 950, "value": "maybe"},
                {"id": 951, "value": ["a", "b"]},
            ],
        )
    text = "\n".join(err.value.problems)
    assert "4 characters exceed the field's characterLimit 3" in text
    assert "'maybe' is not an option of the field (yes)" in text
    assert "'b' is not an option of the field (a)" in text
    payload, _, _ = validate_use_payload(
        template,
        recipients=_customer(),
        prefill_fields=[{"id": 950, "value": "yes"}, {"id": 951, "value": ["a"]}],
    )
    assert payload["prefillFields"][1] == {"id": 951, "type": "checkbox", "value": ["a"]}


def test_replacement_must_have_every_page_the_fields_use(make_pdf: Callable[..., Path]) -> None:
    short = make_pdf("short.pdf", pages=1)
    problems = _problems(recipients=_customer(), files={ITEM: short})
    assert len(problems) == 2  # the DATE and the SIGNATURE field are on page 2
    assert all("'short.pdf'" in p and "has 1 page(s)" in p and "on page 2" in p for p in problems)

    good = make_pdf("nda-acme.pdf", pages=2)
    payload, sources, names = validate_use_payload(_template(), recipients=_customer(), files=[good])
    assert payload["customDocumentData"] == [{"identifier": 0, "envelopeItemId": ITEM}]
    assert sources == [good]
    assert names == ["nda-acme.pdf"]


def test_replacement_must_be_a_pdf_of_a_known_item(tmp_path: Path, make_pdf: Callable[..., Path]) -> None:
    text = tmp_path / "notes.pdf"
    text.write_text("hello")
    problems = _problems(
        recipients=_customer(),
        files={"nda.pdf": text, "envelope_item_nope": make_pdf("x.pdf", pages=2)},
    )
    joined = "\n".join(problems)
    assert "matches no item of the template" in joined
    assert "is not a PDF" in joined


def test_a_document_is_not_a_template() -> None:
    with pytest.raises(DocsignValidationError, match="is a DOCUMENT, not a TEMPLATE"):
        validate_use_payload(_template(type="DOCUMENT"), recipients=_customer())


def test_use_answer_is_parsed_without_tokens() -> None:
    body = json.loads((RECORDED / "23_template_use.json").read_text())
    result = TemplateUse.from_json(body)
    assert result.envelope_id == "envelope_rsxwyvywemrtondy"
    assert [r.role for r in result.recipients] == ["SIGNER", "CC"]
    dumped = json.dumps(result.to_dict())
    assert body["recipients"][0]["token"] not in dumped
    assert "signingUrl" not in dumped


def test_describe_lists_labels_and_ids() -> None:
    lines = "\n".join(describe_template(_template()))
    assert "id 2265  SIGNER  name 'Customer'" in lines
    assert "must be mapped" in lines
    assert "field 903  TEXT  label 'company'" in lines
    assert "(prefill)" in lines
    assert "field 906  SIGNATURE" in lines
    assert "(signer fills)" in lines


def test_sending_needs_a_signature_field_for_every_signer() -> None:
    data = json.loads((RECORDED / "21_template_get.json").read_text())
    data["fields"] = [f for f in data["fields"] if f["type"] != "SIGNATURE"]
    template = Envelope.from_json(data)
    payload, _, _ = validate_use_payload(template, recipients=_customer())  # a draft is fine
    assert payload["distributeDocument"] is False
    with pytest.raises(DocsignValidationError, match="SIGNER without a signature field"):
        validate_use_payload(template, recipients=_customer(), distribute=True)


@pytest.mark.parametrize("number", ["\u0661\u0662\u0663", "\uff11\uff12\uff13", "1\u00a02"])
def test_number_prefill_takes_ascii_digits_only(number: str) -> None:
    problems = _problems(recipients=_customer(), prefill_fields={"amount": number})
    assert problems == [
        f"prefill_fields[0] (field {NUMBER} NUMBER 'amount'): {number!r} is not a number (e.g. '1250.50')"
    ]


def test_the_use_payload_is_refused_by_the_outgoing_check_naming_the_field() -> None:
    payload, _, _ = validate_use_payload(
        _template(),
        recipients=[{"id": CUSTOMER, "email": "buyer@peer.test", "name": "Buyer\x00"}],
        prefill_fields={"company": "ACME\x00"},
        external_id="ext\x1b",
        override={"title": "NDA\x1b", "message": "Hello,\nplease sign"},
    )
    problems = check_request("POST", "/envelope/use", payload=payload)
    assert [p.split(" contains")[0] for p in problems] == [
        "recipients[0].name",
        "externalId",
        "prefillFields[0].value",
        "override.title",
    ]


def test_email_is_stripped_once_and_sent_stripped() -> None:
    payload, _, _ = validate_use_payload(
        _template(), recipients=[{"id": CUSTOMER, "email": "  buyer@peer.test \t", "name": "Buyer"}]
    )
    assert payload["recipients"][0]["email"] == "buyer@peer.test"


def test_a_placeholder_or_label_that_matches_nothing_lists_what_would() -> None:
    template = _template()
    problems = _problems(
        recipients=[{"placeholder": "Provider", "email": "a@b.test", "name": "A"}, *_customer()],
        prefill_fields={"compnay": "ACME"},
    )
    [recipient] = [p for p in problems if "placeholder 'Provider'" in p]
    assert recipient.startswith(
        "recipients[0]: placeholder 'Provider' matches no template recipient's name or e-mail; "
        "the template's recipients are id 2265 SIGNER: 'Customer'"
    ), recipient
    for r in template.recipients:
        assert f"id {r.id} {r.role}: {r.name!r}" in recipient
    assert recipient.endswith(f"(`docsign templates show {template.id}` shows them)")
    [label] = [p for p in problems if "label 'compnay'" in p]
    assert "matches no template field; the template's field labels are 'amount', 'company'" in label
    assert label.endswith(f"(`docsign templates show {template.id}` shows every field)")
