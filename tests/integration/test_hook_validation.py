"""Each local validation rule raises DocsignValidationError naming what is wrong, and sends nothing."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import helpers
import pytest
from helpers import sig
from template_helpers import mapped, onboarding_recipients

from airflow_provider_docsign.exceptions import DocsignValidationError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


signer = partial(helpers.signer, email="val@example.com", name="Val")


def refused(hook: DocsignHook, sandbox: SandboxServer, **kwargs: Any) -> list[str]:
    kwargs.setdefault("title", "Validation")
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError) as info:
        hook.create_envelope(**kwargs)
    assert sandbox.requests() == [], "a request was sent despite a validation problem"
    assert "nothing was sent" in str(info.value)
    return info.value.problems


def test_missing_file(hook: DocsignHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    problems = refused(hook, sandbox, files=[tmp_path / "absent.pdf"], recipients=[signer()])
    assert problems == [f"file #0 'absent.pdf': does not exist ({tmp_path / 'absent.pdf'})"]


def test_file_not_a_pdf(hook: DocsignHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    fake = tmp_path / "invoice.pdf"
    fake.write_bytes(b"<html>not a pdf</html>")
    problems = refused(hook, sandbox, files=[fake], recipients=[signer()])
    assert len(problems) == 1
    assert "invoice.pdf" in problems[0]
    assert "%PDF-" in problems[0]


def test_identifier_out_of_range(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    problems = refused(hook, sandbox, files=[make_pdf()], recipients=[signer(sig(identifier=1))])
    assert len(problems) == 1
    assert "val@example.com" in problems[0]
    assert "field #0" in problems[0]
    assert "identifier 1 is out of range (files are 0..0)" in problems[0]


def test_page_beyond_pdf(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    problems = refused(
        hook, sandbox, files=[make_pdf("short.pdf", pages=2)], recipients=[signer(sig(page=5))]
    )
    assert len(problems) == 1
    assert "short.pdf" in problems[0]
    assert "page 5 does not exist (the PDF has 2 page(s))" in problems[0]


def test_page_below_one(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    problems = refused(hook, sandbox, files=[make_pdf()], recipients=[signer(sig(page=0))])
    assert any("page 0 is invalid" in p for p in problems)


def test_coordinate_out_of_range(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    problems = refused(hook, sandbox, files=[make_pdf()], recipients=[signer(sig(positionX=101))])
    assert any("positionX 101 is outside 0-100" in p for p in problems)


def test_x_plus_width_over_100(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    problems = refused(hook, sandbox, files=[make_pdf()], recipients=[signer(sig(positionX=85, width=20))])
    assert problems == [p for p in problems if "positionX + width = 105 exceeds 100" in p]
    assert len(problems) == 1


def test_y_plus_height_over_100(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    problems = refused(hook, sandbox, files=[make_pdf()], recipients=[signer(sig(positionY=99, height=5))])
    assert len(problems) == 1
    assert "positionY + height = 104 exceeds 100" in problems[0]


def test_unknown_role(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    problems = refused(hook, sandbox, files=[make_pdf()], recipients=[signer(role="WITNESS")])
    assert any("unknown role 'WITNESS'" in p for p in problems)


def test_unknown_field_type(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    problems = refused(hook, sandbox, files=[make_pdf()], recipients=[signer(sig(), sig(type="STAMP"))])
    assert len(problems) == 1
    assert "field #1 (STAMP)" in problems[0]
    assert "unknown field type 'STAMP'" in problems[0]


def test_signer_needs_signature_field(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    problems = refused(hook, sandbox, files=[make_pdf()], recipients=[signer(sig(type="DATE"))])
    assert problems == [
        "recipient #0 (val@example.com): a SIGNER needs at least one SIGNATURE or FREE_SIGNATURE field "
        "(the service refuses to distribute otherwise)"
    ]


def test_title_too_long(hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]) -> None:
    problems = refused(hook, sandbox, title="t" * 256, files=[make_pdf()], recipients=[signer()])
    assert problems == ["title is 256 characters long; the maximum is 255"]


def test_external_id_too_long(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    problems = refused(hook, sandbox, external_id="x" * 300, files=[make_pdf()], recipients=[signer()])
    assert problems == ["externalId is 300 characters long; the maximum is 255"]


def test_all_problems_listed_together(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    problems = refused(
        hook,
        sandbox,
        title="",
        files=[make_pdf(pages=1), tmp_path / "gone.pdf"],
        recipients=[signer(sig(page=4, positionX=-5), sig(identifier=7, type="DATE"), role="SIGNER")],
    )
    assert len(problems) >= 5


def test_add_items_checks_files(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    envelope_id = hook.create_envelope(title="Add", files=[make_pdf()])
    bad = tmp_path / "bad.pdf"
    bad.write_text("nope")
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError) as info:
        hook.add_envelope_items(envelope_id, [make_pdf("fine.pdf"), bad])
    assert sandbox.requests() == []
    assert "file #1 'bad.pdf'" in info.value.problems[0]


def test_create_fields_checks_against_current_items(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = hook.create_envelope(
        title="Fields check", files=[make_pdf("three.pdf", pages=3)], recipients=[signer()]
    )
    env = hook.get_envelope(envelope_id)
    rid = env.recipients[0].id
    stranger = rid + 1  # not this envelope's (a fixed id is some envelope's once the sandbox counted there)
    sandbox.clear_requests()
    base = {"recipientId": rid, "type": "TEXT", "positionX": 10, "positionY": 10, "width": 10, "height": 5}
    with pytest.raises(DocsignValidationError) as info:
        hook.create_fields(envelope_id, [{**base, "page": 4}, {**base, "page": 1, "recipientId": stranger}])
    problems = info.value.problems
    assert any("page 4 does not exist (the PDF has 3 page(s))" in p and "three.pdf" in p for p in problems)
    assert any(f"recipientId {stranger}" in p for p in problems)
    # only reads happened: the envelope, and the original PDF to count its pages
    assert {r["method"] for r in sandbox.requests()} == {"GET"}
    assert not any(r["path"].startswith("/envelope/field") for r in sandbox.requests())


def test_bad_ids_never_reach_the_service(hook: DocsignHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError):
        hook.get_envelope("")
    with pytest.raises(DocsignValidationError):
        hook.get_envelope("../folder")
    with pytest.raises(DocsignValidationError):
        hook.get_recipient(0)
    with pytest.raises(DocsignValidationError):
        hook.download_envelope_item("envelope_item_x", tmp_path / "a.pdf", version="final")
    with pytest.raises(DocsignValidationError):
        hook.reject_recipient(1, envelope_id="envelope_x", reason=" ")
    with pytest.raises(DocsignValidationError):
        hook.create_folder("x")
    (tmp_path / "a.pdf").write_bytes(b"x")
    with pytest.raises(DocsignValidationError, match="already exists"):
        hook.download_envelope_item("envelope_item_x", tmp_path / "a.pdf", overwrite=False)
    assert sandbox.requests() == []
    assert (tmp_path / "a.pdf").read_bytes() == b"x"


# -- control characters, e-mails, ASCII numbers (issue 22) ---------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"title": "Contract\x00"}, "title"),
        ({"title": "Contract\r\nX-Forged: 1"}, "title"),
        ({"external_id": "ext\x00-1"}, "externalId"),
        ({"recipients": [signer(name="Val\x00")]}, "recipients[0].name"),
        ({"meta": {"subject": "Please sign\x07"}}, "meta.subject"),
    ],
)
def test_control_characters_are_refused_naming_the_field(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    kwargs: dict[str, Any],
    field: str,
) -> None:
    kwargs.setdefault("recipients", [signer()])
    problems = refused(hook, sandbox, files=[make_pdf()], **kwargs)
    assert len(problems) == 1
    assert problems[0].startswith(f"{field} contains the control character U+")


def test_tabs_and_message_line_breaks_are_allowed(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = hook.create_envelope(
        title="Contract\tQ3",
        files=[make_pdf()],
        recipients=[signer()],
        meta={"subject": "Please sign", "message": "Hello,\r\nplease sign.\n"},
    )
    assert hook.get_envelope(envelope_id).title == "Contract\tQ3"


def test_email_is_stripped_once_and_sent_stripped(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = hook.create_envelope(
        title="Spaces", files=[make_pdf()], recipients=[signer(email="  spaced@example.com \t")]
    )
    assert [r.email for r in hook.get_envelope(envelope_id).recipients] == ["spaced@example.com"]
    (recipient,) = hook.create_recipients(
        envelope_id, [{"email": " second@example.com ", "name": "Second", "role": "CC"}]
    )
    assert recipient.email == "second@example.com"


def test_control_characters_in_updates_folders_and_reasons_are_refused(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = hook.create_envelope(title="Updates", files=[make_pdf()], recipients=[signer()])
    item_id = hook.get_envelope(envelope_id).items[0].id
    sandbox.clear_requests()
    with pytest.raises(DocsignValidationError, match=r"data\.title contains the control character U\+0000"):
        hook.update_envelope(envelope_id, title="Renamed\x00")
    with pytest.raises(DocsignValidationError, match=r"data\[0\]\.title contains the control character"):
        hook.update_envelope_items(envelope_id, [{"envelopeItemId": item_id, "title": "a\x1bb"}])
    with pytest.raises(DocsignValidationError, match=r"- name contains the control character"):
        hook.create_folder("Contracts\x00")
    with pytest.raises(DocsignValidationError, match=r"data\[0\]\.name contains the control character"):
        hook.update_recipients(envelope_id, [{"id": 1, "name": "Val\n"}])
    with pytest.raises(DocsignValidationError, match=r"reason contains the control character U\+000A"):
        hook.reject_recipient(1, envelope_id=envelope_id, reason="no\nX-Forged: yes")
    assert sandbox.requests() == []
    assert hook.get_envelope(envelope_id).title == "Updates"


@pytest.mark.parametrize("number", ["\u0661\u0662\u0663", "\uff11\uff12\uff13"])  # Arabic-Indic, full-width
def test_template_use_refuses_non_ascii_digits_and_nul_and_creates_nothing(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], number: str
) -> None:
    template_id = hook.create_template(
        title="Validation NDA", files=[make_pdf("nda.pdf", pages=2)], recipients=onboarding_recipients()
    )
    before = sorted(e.id for e in hook.find_envelopes())
    sandbox.clear_requests()
    recipients = mapped()
    recipients[0] = {**recipients[0], "name": "Buyer\x00"}
    with pytest.raises(DocsignValidationError) as info:
        hook.use_template(
            template_id,
            recipients=recipients,
            prefill_fields={"amount": number},
            external_id="use\x00-1",
        )
    assert info.value.problems == [
        f"prefill_fields[0] (field {_amount_id(hook, template_id)} NUMBER 'amount'): {number!r} is not a "
        "number (e.g. '1250.50')"
    ]
    # With the number fixed, the one outgoing check lists both control characters, by JSON path.
    with pytest.raises(DocsignValidationError) as info:
        hook.use_template(
            template_id, recipients=recipients, prefill_fields={"amount": "123"}, external_id="use\x00-1"
        )
    assert [p.split(" at position")[0] for p in info.value.problems] == [
        "recipients[0].name contains the control character U+0000",
        "externalId contains the control character U+0000",
    ]
    assert {r["method"] for r in sandbox.requests()} == {"GET"}  # only the template was read
    assert sorted(e.id for e in hook.find_envelopes()) == before


def _amount_id(hook: DocsignHook, template_id: str) -> int:
    return next(
        f.id for f in hook.get_template(template_id).fields if (f.field_meta or {}).get("label") == "amount"
    )
