"""The API key never appears in logs (at any level), stdout/stderr, exceptions, reprs or results."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign.exceptions import DocsignError
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


def test_api_key_never_leaks(
    docsign_conn: str,
    sandbox: SandboxServer,
    api_key: str,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    seen: list[str] = []  # every exception text, repr and result produced below

    def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except DocsignError as exc:
            seen.extend([str(exc), repr(exc), repr(exc.args), repr(vars(exc))])
            seen.append(repr(pickle.loads(pickle.dumps(exc))))  # noqa: S301 - our own bytes
            return None
        if hasattr(result, "__iter__") and not isinstance(result, dict | str | bytes):
            result = list(result)
        seen.append(repr(result))
        return result

    noisy = ["", "airflow_provider_docsign", "urllib3", "requests", "httpx", "httpcore", "asyncio"]
    for name in noisy:
        caplog.set_level(logging.DEBUG, logger=name)

    hook = DocsignHook(docsign_conn)
    seen.append(repr(hook))
    pdf = make_pdf("leak.pdf", pages=2)
    signer = {
        "email": "leak@example.com",
        "name": "Leak",
        "role": "SIGNER",
        "fields": [
            {
                "identifier": 0,
                "type": "SIGNATURE",
                "page": 1,
                "positionX": 5,
                "positionY": 5,
                "width": 10,
                "height": 5,
            }
        ],
    }
    seen.append(repr(hook.settings))
    seen.append(repr(hook.get_conn().auth))
    run(hook.test_connection)
    envelope_id = run(
        hook.create_envelope, title="Leak", files=[pdf], recipients=[signer], external_id="ext-leak"
    )
    env = run(hook.get_envelope, envelope_id)
    seen.append(json.dumps(env.to_dict()))
    item_id = env.items[0].id
    rid = env.recipients[0].id
    run(hook.get_envelopes, [envelope_id])
    run(hook.find_envelopes, query="Leak")
    run(hook.find_envelopes_by_external_id, "ext-leak")
    run(hook.update_envelope, envelope_id, title="Leak 2")
    added = run(hook.add_envelope_items, envelope_id, [make_pdf("leak2.pdf")])
    run(hook.update_envelope_items, envelope_id, [{"envelopeItemId": added[0].id, "title": "Renamed"}])
    run(hook.delete_envelope_item, envelope_id, added[0].id)
    run(hook.download_envelope_item, item_id, tmp_path / "a.pdf", version="original")
    run(hook.download_envelope_item, item_id, io.BytesIO())
    run(hook.get_recipient, rid)
    extra = run(
        hook.create_recipients, envelope_id, [{"email": "cc@example.com", "name": "CC", "role": "CC"}]
    )
    run(hook.update_recipients, envelope_id, [{"id": extra[0].id, "name": "CC 2"}])
    run(hook.delete_recipient, extra[0].id)
    fields = run(
        hook.create_fields,
        envelope_id,
        [
            {
                "recipientId": rid,
                "type": "TEXT",
                "page": 2,
                "positionX": 1,
                "positionY": 1,
                "width": 5,
                "height": 5,
            }
        ],
    )
    run(hook.get_field, fields[0].id)
    run(hook.update_fields, envelope_id, [{"id": fields[0].id, "positionX": 50}])
    moved = run(hook.get_envelope, envelope_id).fields
    run(hook.delete_field, next(f.id for f in moved if f.type == "TEXT"))
    run(hook.distribute_envelope, envelope_id)
    run(hook.redistribute_envelope, envelope_id, [rid])
    run(hook.get_audit_log, envelope_id)
    run(hook.download_audit_log, envelope_id, tmp_path / "audit.pdf")
    run(hook.download_certificate, envelope_id, tmp_path / "cert.pdf")  # not complete: a 500 error
    run(hook.reject_recipient, rid, envelope_id=envelope_id, reason="leak test")
    second = run(hook.create_envelope, title="Leak cancel", files=[pdf], recipients=[signer])
    run(hook.distribute_envelope, second)
    run(hook.cancel_envelope, second, reason="r")
    run(hook.delete_envelope, second)
    folder = run(hook.create_folder, "Leak folder")
    run(hook.list_folders)
    run(hook.update_folder, folder.id, name="Leak folder 2")
    run(hook.delete_folder, folder.id)
    # error paths: faults, unknown ids, a dropped create, a wrong content type
    sandbox.inject_fault(
        method="GET", path="/envelope/*", action="status", status=429, retry_after=0, count=1
    )
    run(hook.get_envelope, envelope_id)
    sandbox.inject_fault(method="GET", path="/envelope/*", action="status", status=503, count=9)
    run(hook.get_envelope, envelope_id)
    sandbox.clear_faults()
    run(hook.get_envelope, "envelope_doesnotexist00")
    sandbox.inject_fault(method="POST", path="/envelope/create", action="drop_after_commit", count=1)
    run(hook.create_envelope, title="Dropped", files=[pdf], external_id="ext-leak-drop")
    sandbox.inject_fault(method="GET", path="/envelope/item/*/download", action="wrong_content_type", count=1)
    run(hook.download_envelope_item, item_id, tmp_path / "b.pdf")
    sandbox.inject_fault(method="GET", path="/envelope/item/*/download", action="truncate", count=1)
    run(hook.download_envelope_item, item_id, tmp_path / "c.pdf")
    seen.append(repr(asyncio.run(hook.async_get_envelope(envelope_id))))
    seen.append(repr(asyncio.run(hook.async_get_envelopes([envelope_id]))))
    seen.append(repr(asyncio.run(hook.async_get_envelope_status(envelope_id))))
    wrong = DocsignHook(base_url=sandbox.base_url, api_key=api_key + "x", max_retries=0)
    run(wrong.get_envelope, envelope_id)
    run(wrong.test_connection)
    seen.append(repr(wrong))
    hook.close()

    out, err = capfd.readouterr()
    records = caplog.records
    assert len(records) > 50, "DEBUG logging was not captured"
    assert any(r.levelno == logging.DEBUG and "body" in r.getMessage() for r in records)
    log_text = "\n".join(f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in records)
    for where, text in (("logs", log_text), ("stdout", out), ("stderr", err), ("results", "\n".join(seen))):
        assert api_key not in text, f"the API key leaked into {where}"
    assert len(seen) > 40


def test_signing_tokens_never_reach_debug_logs(
    docsign_conn: str,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Signing tokens are bearer credentials: the hook's DEBUG body logs blank them and their URLs."""
    caplog.set_level(logging.DEBUG, logger="airflow_provider_docsign")
    hook = DocsignHook(docsign_conn)
    signer = {
        "email": "token@example.com",
        "name": "Token Holder",
        "role": "SIGNER",
        "fields": [
            {
                "identifier": 0,
                "type": "SIGNATURE",
                "page": 1,
                "positionX": 10,
                "positionY": 10,
                "width": 20,
                "height": 5,
            }
        ],
    }
    envelope_id = hook.create_envelope(title="Tokens", files=[make_pdf("t.pdf")], recipients=[signer])
    answer = hook.distribute_envelope(envelope_id)
    hook.get_envelope(envelope_id)
    tokens = [r["token"] for r in answer["recipients"]]
    assert tokens
    assert all(len(t) > 8 for t in tokens)
    bodies = [r.getMessage() for r in caplog.records if "body:" in r.getMessage()]
    assert any("/envelope/distribute" in b for b in bodies), "expected the distribute body at DEBUG"
    for token in tokens:
        assert all(token not in b for b in bodies)
    assert any('"token":"***"' in b for b in bodies)
    assert any("/sign/***" in b for b in bodies)
