from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import sig, signer

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.service.models import Recipient
from airflow_provider_docsign.service.outgoing import check_request
from airflow_provider_docsign.service.payloads import (
    ItemPages,
    inspect_files,
    validate_create_payload,
    validate_fields_for_envelope,
    validate_recipients_for_envelope,
)


def problems_of(**kwargs: Any) -> list[str]:
    kwargs.setdefault("title", "Contract")
    with pytest.raises(DocsignValidationError) as info:
        validate_create_payload(**kwargs)
    return info.value.problems


def test_valid_payload_builds_json(make_pdf: Callable[..., Path]) -> None:
    a, b = make_pdf("a.pdf", pages=2), make_pdf("b.pdf")
    payload, pdfs = validate_create_payload(
        title="Contract",
        files=[a, b],
        recipients=[signer(sig(identifier=1), sig(page=2))],
        external_id="ext-1",
        meta={"subject": "Please sign"},
        payload_extra={"visibility": "EVERYONE"},
    )
    assert payload["type"] == "DOCUMENT"
    assert payload["externalId"] == "ext-1"
    assert payload["visibility"] == "EVERYONE"
    assert payload["recipients"][0]["fields"][1]["page"] == 2
    assert [(p.index, p.name, p.page_count) for p in pdfs] == [(0, "a.pdf", 2), (1, "b.pdf", 1)]


def test_missing_file(tmp_path: Path) -> None:
    problems = problems_of(files=[tmp_path / "nope.pdf"], recipients=[signer()])
    assert any("does not exist" in p and "nope.pdf" in p for p in problems)


def test_not_a_pdf(tmp_path: Path) -> None:
    fake = tmp_path / "fake.pdf"
    fake.write_text("hello, not a pdf")
    problems = problems_of(files=[fake], recipients=[signer()])
    assert any("fake.pdf" in p and "%PDF-" in p for p in problems)


def test_identifier_out_of_range(make_pdf: Callable[..., Path]) -> None:
    problems = problems_of(files=[make_pdf()], recipients=[signer(sig(identifier=3))])
    assert any("identifier 3 is out of range" in p and "signer@example.com" in p for p in problems)


def test_identifier_by_file_name(make_pdf: Callable[..., Path]) -> None:
    validate_create_payload(
        title="t", files=[make_pdf("x.pdf")], recipients=[signer(sig(identifier="x.pdf"))]
    )
    problems = problems_of(files=[make_pdf("x.pdf")], recipients=[signer(sig(identifier="y.pdf"))])
    assert any("'y.pdf' matches no uploaded file" in p for p in problems)


def test_page_beyond_page_count(make_pdf: Callable[..., Path]) -> None:
    problems = problems_of(files=[make_pdf("two.pdf", pages=2)], recipients=[signer(sig(page=3))])
    assert any("page 3 does not exist" in p and "two.pdf" in p and "2 page" in p for p in problems)


def test_page_zero(make_pdf: Callable[..., Path]) -> None:
    problems = problems_of(files=[make_pdf()], recipients=[signer(sig(page=0))])
    assert any("page 0 is invalid" in p for p in problems)


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"positionX": 150}, "positionX 150 is outside 0-100"),
        ({"positionY": -1}, "positionY -1 is outside 0-100"),
        ({"width": "20"}, "'width' must be a number"),
        ({"positionX": 90, "width": 20}, "positionX + width = 110 exceeds 100"),
        ({"positionY": 96, "height": 5}, "positionY + height = 101 exceeds 100"),
    ],
)
def test_coordinates(make_pdf: Callable[..., Path], overrides: dict[str, Any], needle: str) -> None:
    problems = problems_of(files=[make_pdf()], recipients=[signer(sig(**overrides))])
    assert any(needle in p for p in problems), problems


def test_unknown_role_and_field_type(make_pdf: Callable[..., Path]) -> None:
    problems = problems_of(
        files=[make_pdf()],
        recipients=[signer(role="BOSS"), signer(sig(type="SCRIBBLE"), email="b@example.com")],
    )
    assert any("unknown role 'BOSS'" in p for p in problems)
    assert any("unknown field type 'SCRIBBLE'" in p for p in problems)


def test_signer_without_signature_field(make_pdf: Callable[..., Path]) -> None:
    problems = problems_of(files=[make_pdf()], recipients=[signer(sig(type="NAME"))])
    assert any("needs at least one SIGNATURE or FREE_SIGNATURE" in p for p in problems)
    # an approver needs no field
    validate_create_payload(
        title="t",
        files=[make_pdf()],
        recipients=[{"email": "a@example.com", "name": "A", "role": "APPROVER"}],
    )


def test_title_and_external_id_length_are_left_to_the_outgoing_check(make_pdf: Callable[..., Path]) -> None:
    payload, _ = validate_create_payload(
        title="x" * 256, external_id="e" * 256, files=[make_pdf()], recipients=[signer()]
    )
    assert sorted(check_request("POST", "/envelope/create", payload=payload)) == [
        "externalId is 256 characters long; the maximum is 255",
        "title is 256 characters long; the maximum is 255",
    ]
    assert any("title must not be empty" in p for p in problems_of(title="  ", files=[make_pdf()]))


def test_every_problem_is_listed(tmp_path: Path, make_pdf: Callable[..., Path]) -> None:
    problems = problems_of(
        title="",
        files=[make_pdf(), tmp_path / "missing.pdf"],
        recipients=[
            signer(sig(page=9, positionX=200), sig(identifier=5)),
            {"email": "bad", "name": "B", "role": "CC"},
        ],
    )
    assert len(problems) >= 5


def test_file_object_and_bad_email(make_pdf: Callable[..., Path]) -> None:
    data = make_pdf().read_bytes()
    stream = io.BytesIO(data)
    stream.seek(0)
    _payload, pdfs = validate_create_payload(title="t", files=[stream], recipients=[signer()])
    assert pdfs[0].page_count == 1
    assert stream.tell() == 0  # position restored for the upload
    # E-mail addresses are checked once, where the request leaves (outgoing), naming the JSON path.
    payload, _ = validate_create_payload(
        title="t", files=[io.BytesIO(data)], recipients=[signer(email="a@b.c")]
    )
    (problem,) = check_request("POST", "/envelope/create", payload=payload)
    assert problem.startswith("recipients[0].email: 'a@b.c' is not an e-mail address the service can take")


def test_inspect_files_reports_directory(tmp_path: Path) -> None:
    results, problems = inspect_files([tmp_path])
    assert results == [None]
    assert "directory" in problems[0]


def test_fields_for_envelope() -> None:
    items = [ItemPages("envelope_item_a", "a.pdf", 2), ItemPages("envelope_item_b", "b.pdf", None)]
    recipients = {
        1: Recipient(id=1, email="s@example.com", role="SIGNER"),
        2: Recipient(id=2, email="c@example.com", role="CC"),
    }
    good = {
        "recipientId": 1,
        "type": "SIGNATURE",
        "page": 2,
        "positionX": 1,
        "positionY": 1,
        "width": 10,
        "height": 10,
    }
    assert validate_fields_for_envelope([good], items=items, recipients=recipients)[0]["page"] == 2
    with pytest.raises(DocsignValidationError) as info:
        validate_fields_for_envelope(
            [
                {**good, "page": 3},
                {**good, "recipientId": 9},
                {**good, "recipientId": 2},
                {**good, "envelopeItemId": "envelope_item_zzz"},
                {**good, "envelopeItemId": "envelope_item_b", "page": 40},
            ],
            items=items,
            recipients=recipients,
        )
    problems = info.value.problems
    assert any("page 3 does not exist" in p and "a.pdf" in p for p in problems)
    assert any("recipientId 9" in p for p in problems)
    assert any("a CC cannot have fields" in p for p in problems)
    assert any("envelope_item_zzz" in p for p in problems)
    assert len(problems) == 4  # page 40 on an item with unknown page count is not flagged


def test_recipients_for_envelope() -> None:
    ok = validate_recipients_for_envelope([{"email": "a@example.com", "name": "A", "role": "SIGNER"}])
    assert ok[0]["role"] == "SIGNER"
    with pytest.raises(DocsignValidationError) as info:
        validate_recipients_for_envelope([{"email": "nope", "name": "A", "role": "KING"}])
    assert len(info.value.problems) == 1  # the role; the e-mail is the outgoing check's
    assert "unknown role 'KING'" in info.value.problems[0]
    with pytest.raises(DocsignValidationError):
        validate_recipients_for_envelope([{"name": "A"}], update=True)
    assert validate_recipients_for_envelope([{"id": 4, "name": "B"}], update=True)[0]["id"] == 4


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"title": "Con\x00tract"}, "title"),
        ({"external_id": "ext\x1f"}, "externalId"),
        ({"recipients": [signer(name="Sam\x00")]}, "recipients[0].name"),
        (
            {"recipients": [signer(sig(fieldMeta={"type": "signature", "label": "x\x0b"}))]},
            "recipients[0].fields[0].fieldMeta.label",
        ),
        ({"meta": {"subject": "s\x00"}}, "meta.subject"),
        ({"meta": {"message": "line\x00"}}, "meta.message"),
        ({"payload_extra": {"visibility": "EVERY\x00ONE"}}, "visibility"),
    ],
)
def test_the_built_payload_is_refused_by_the_outgoing_check_naming_the_field(
    make_pdf: Callable[..., Path], kwargs: dict[str, Any], field: str
) -> None:
    # The validator checks shapes, files and geometry; the characters are checked once, where every
    # request leaves the hook (airflow_provider_docsign.service.outgoing).
    kwargs.setdefault("recipients", [signer()])
    kwargs.setdefault("title", "Contract")
    payload, _ = validate_create_payload(files=[make_pdf()], **kwargs)
    problems = check_request("POST", "/envelope/create", payload=payload)
    assert len(problems) == 1
    assert problems[0].startswith(f"{field} contains the control character U+")


def test_tab_everywhere_and_line_breaks_in_the_message_are_allowed(make_pdf: Callable[..., Path]) -> None:
    payload, _ = validate_create_payload(
        title="Q3\tcontract",
        files=[make_pdf()],
        recipients=[signer()],
        meta={"message": "Hello,\r\nplease sign.\n"},
    )
    assert payload["title"] == "Q3\tcontract"
    assert check_request("POST", "/envelope/create", payload=payload) == []
    payload, _ = validate_create_payload(
        title="t", files=[make_pdf()], recipients=[signer()], meta={"subject": "a\nb"}
    )
    assert check_request("POST", "/envelope/create", payload=payload) == [
        "meta.subject contains the control character U+000A at position 1; remove it (only tabs are allowed)"
    ]


def test_email_is_stripped_once_and_the_stripped_value_is_sent(make_pdf: Callable[..., Path]) -> None:
    payload, _ = validate_create_payload(
        title="t", files=[make_pdf()], recipients=[signer(email="  a@example.com\t ")]
    )
    assert payload["recipients"][0]["email"] == "a@example.com"
    (sent,) = validate_recipients_for_envelope([{"email": " b@example.com ", "name": "B", "role": "CC"}])
    assert sent["email"] == "b@example.com"
    payload, _ = validate_create_payload(
        title="t", files=[make_pdf()], recipients=[signer(email=" not an email ")]
    )
    assert payload["recipients"][0]["email"] == "not an email"  # what is sent is checked stripped
    (problem,) = check_request("POST", "/envelope/create", payload=payload)
    assert problem.startswith("recipients[0].email: 'not an email' is not an e-mail address")


def test_fields_and_recipient_updates_are_checked_where_they_leave() -> None:
    items = [ItemPages(id="item_1", title="a.pdf", page_count=1)]
    recipients = {7: Recipient(id=7, email="s@example.com", role="SIGNER")}
    field = {
        "recipientId": 7,
        "type": "TEXT",
        "page": 1,
        "positionX": 1,
        "positionY": 1,
        "width": 5,
        "height": 5,
    }
    data = validate_fields_for_envelope(
        [{**field, "fieldMeta": {"type": "text", "label": "a\x00"}}], items=items, recipients=recipients
    )
    assert check_request("POST", "/envelope/field/create-many", json={"envelopeId": "e", "data": data}) == [
        "data[0].fieldMeta.label contains the control character U+0000 at position 1; remove it "
        "(only tabs are allowed)"
    ]
    data = validate_recipients_for_envelope([{"id": 3, "name": "B\x08"}], update=True)
    problems = check_request(
        "POST", "/envelope/recipient/update-many", json={"envelopeId": "e", "data": data}
    )
    assert [p.split(" contains")[0] for p in problems] == ["data[0].name"]
