"""Retry policy, ambiguous writes and download verification, driven by the sandbox's fault injection."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import helpers
import pytest

from airflow_provider_docsign.exceptions import (
    DocsignAmbiguousWriteError,
    DocsignAPIError,
    DocsignConnectionError,
    DocsignDownloadError,
    DocsignRateLimitError,
    DocsignServerError,
)
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


def signer(email: str = "faults@example.com") -> dict[str, Any]:
    return helpers.signer(email=email, name="F")


@pytest.fixture
def envelope(hook: DocsignHook, make_pdf: Callable[..., Path]) -> str:
    return hook.create_envelope(
        title="Faults", files=[make_pdf("faults.pdf", pages=2)], recipients=[signer()]
    )


def _calls(sandbox: SandboxServer, method: str, path: str) -> list[dict[str, Any]]:
    return [r for r in sandbox.requests() if r["method"] == method and r["path"] == path]


def test_429_with_retry_after_is_honoured(
    hook: DocsignHook, sandbox: SandboxServer, envelope: str, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox.clear_requests()
    sandbox.inject_fault(
        method="GET", path="/envelope/*", action="status", status=429, retry_after=1, count=1
    )
    with caplog.at_level(logging.WARNING, logger="airflow_provider_docsign"):
        env = hook.get_envelope(envelope)
    assert env.id == envelope
    assert [r["status"] for r in _calls(sandbox, "GET", f"/envelope/{envelope}")] == [429, 200]
    waits = [r for r in caplog.records if "honouring Retry-After" in r.getMessage()]
    assert len(waits) == 1
    assert "in 1.00s" in waits[0].getMessage()


def test_retry_after_longer_than_max_wait_fails_at_once(
    hook: DocsignHook, sandbox: SandboxServer, envelope: str
) -> None:
    sandbox.clear_requests()
    sandbox.inject_fault(
        method="GET", path="/envelope/*", action="status", status=429, retry_after=120, count=1
    )
    with pytest.raises(DocsignRateLimitError) as info:
        hook.get_envelope(envelope)
    assert info.value.retry_after == 120
    assert info.value.status_code == 429
    assert len(_calls(sandbox, "GET", f"/envelope/{envelope}")) == 1  # max_retry_wait is 2s: no early retry


def test_503_on_get_is_retried_then_succeeds(
    hook: DocsignHook, sandbox: SandboxServer, envelope: str
) -> None:
    sandbox.clear_requests()
    sandbox.inject_fault(method="GET", path="/envelope/*", action="status", status=503, count=2)
    assert hook.get_envelope(envelope).id == envelope
    assert [r["status"] for r in _calls(sandbox, "GET", f"/envelope/{envelope}")] == [503, 503, 200]


def test_retries_are_bounded(hook: DocsignHook, sandbox: SandboxServer, envelope: str) -> None:
    sandbox.clear_requests()
    sandbox.inject_fault(method="GET", path="/envelope/*", action="status", status=502, count=10)
    with pytest.raises(DocsignServerError) as info:
        hook.get_envelope(envelope)
    assert info.value.status_code == 502
    assert len(_calls(sandbox, "GET", f"/envelope/{envelope}")) == 4  # 1 + max_retries (3)


def test_dropped_read_connection_is_retried(hook: DocsignHook, sandbox: SandboxServer, envelope: str) -> None:
    sandbox.clear_requests()
    sandbox.inject_fault(method="GET", path="/envelope/*", action="drop_before", count=1)
    assert hook.get_envelope(envelope).id == envelope


def test_503_on_create_is_not_retried_blindly(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    sandbox.clear_requests()
    sandbox.inject_fault(method="POST", path="/envelope/create", action="status", status=503, count=1)
    with pytest.raises(DocsignServerError) as info:
        hook.create_envelope(title="No blind retry", files=[make_pdf()], external_id="ext-503")
    assert info.value.status_code == 503
    assert "ext-503" in str(info.value)  # tells how to check
    assert len(_calls(sandbox, "POST", "/envelope/create")) == 1


def test_429_on_create_is_retried(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    sandbox.clear_requests()
    sandbox.inject_fault(
        method="POST", path="/envelope/create", action="status", status=429, retry_after=0, count=1
    )
    envelope_id = hook.create_envelope(title="Rate limited create", files=[make_pdf()], external_id="ext-429")
    assert [r["status"] for r in _calls(sandbox, "POST", "/envelope/create")] == [429, 200]
    assert [e.id for e in hook.find_envelopes_by_external_id("ext-429")] == [envelope_id]


def test_503_on_update_is_retried(hook: DocsignHook, sandbox: SandboxServer, envelope: str) -> None:
    sandbox.clear_requests()
    sandbox.inject_fault(method="POST", path="/envelope/update", action="status", status=503, count=1)
    assert hook.update_envelope(envelope, title="Retried update").title == "Retried update"
    assert [r["status"] for r in _calls(sandbox, "POST", "/envelope/update")] == [503, 200]


def test_create_dropped_after_commit_is_ambiguous_and_findable(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    sandbox.clear_requests()
    sandbox.inject_fault(method="POST", path="/envelope/create", action="drop_after_commit", count=1)
    with pytest.raises(DocsignAmbiguousWriteError) as info:
        hook.create_envelope(title="Dropped", files=[make_pdf()], external_id="ext-dropped-1")
    assert info.value.external_id == "ext-dropped-1"
    assert "find_envelopes_by_external_id" in str(info.value)
    assert len(_calls(sandbox, "POST", "/envelope/create")) == 1  # never repeated
    found = hook.find_envelopes_by_external_id("ext-dropped-1")
    assert len(found) == 1
    assert found[0].title == "Dropped"


def test_write_timeout_is_ambiguous(sandbox: SandboxServer, envelope: str) -> None:
    slow = DocsignHook(base_url=sandbox.base_url, api_key=sandbox.api_key, timeout=[5, 0.5], max_retries=3)
    sandbox.inject_fault(method="POST", path="/envelope/update", action="delay", delay=3, count=1)
    with pytest.raises(DocsignAmbiguousWriteError) as info:
        slow.update_envelope(envelope, title="Slow")
    assert "read the resource back" in str(info.value)
    sandbox.clear_faults()
    # The server is still working on the delayed write; wait (bounded) until it has answered, so
    # its late entry does not land in the request log of a later test.
    deadline = time.monotonic() + 15
    while not any(r["path"] == "/envelope/update" for r in sandbox.requests()):
        assert time.monotonic() < deadline, "the delayed write never completed at the sandbox"
        time.sleep(0.1)


def test_unreachable_service_read_raises_connection_error(sandbox: SandboxServer) -> None:
    # Port 9 on loopback: nothing listens there, the connection is refused before anything is sent.
    dead = DocsignHook(
        base_url="http://127.0.0.1:9/api/v2", api_key=sandbox.api_key, max_retries=1, backoff_factor=0
    )
    with pytest.raises(DocsignConnectionError):
        dead.get_envelope("envelope_abcdefabcdefabcd")
    with pytest.raises(DocsignConnectionError):  # a write that provably never left is not ambiguous
        dead.delete_envelope("envelope_abcdefabcdefabcd")


def test_wrong_content_type_download_leaves_no_file(
    hook: DocsignHook, sandbox: SandboxServer, envelope: str, tmp_path: Path
) -> None:
    item_id = hook.get_envelope(envelope).items[0].id
    sandbox.inject_fault(method="GET", path="/envelope/item/*/download", action="wrong_content_type", count=1)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(DocsignDownloadError) as info:
        hook.download_envelope_item(item_id, out / "x.pdf")
    assert "text/html" in str(info.value)
    assert list(out.iterdir()) == []


def test_truncated_download_leaves_no_file_and_keeps_existing(
    hook: DocsignHook, sandbox: SandboxServer, envelope: str, tmp_path: Path
) -> None:
    item_id = hook.get_envelope(envelope).items[0].id
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    target = tmp_path / "out.pdf"
    sandbox.inject_fault(method="GET", path="/envelope/item/*/download", action="truncate", count=1)
    with pytest.raises(DocsignDownloadError):
        hook.download_envelope_item(item_id, target)
    assert list(tmp_path.iterdir()) == []
    # an existing file is neither overwritten nor truncated by a failed download
    target.write_bytes(b"previous content")
    sandbox.inject_fault(method="GET", path="/envelope/item/*/download", action="truncate", count=1)
    with pytest.raises(DocsignDownloadError):
        hook.download_envelope_item(item_id, target)
    assert target.read_bytes() == b"previous content"
    assert [p.name for p in tmp_path.iterdir()] == ["out.pdf"]
    # a caller's file object is rolled back to where it was
    buffer = io.BytesIO(b"keep")
    buffer.seek(4)
    sandbox.inject_fault(method="GET", path="/envelope/item/*/download", action="truncate", count=1)
    with pytest.raises(DocsignDownloadError):
        hook.download_envelope_item(item_id, buffer)
    assert buffer.getvalue() == b"keep"


def test_download_error_body_is_never_written(
    hook: DocsignHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    with pytest.raises(DocsignAPIError) as info:
        hook.download_envelope_item("envelope_item_doesnotexist", tmp_path / "x.pdf")
    assert info.value.status_code == 404
    assert list(tmp_path.iterdir()) == []


def test_ignored_item_order_is_detected(
    hook: DocsignHook, sandbox: SandboxServer, envelope: str, make_pdf: Callable[..., Path]
) -> None:
    hook.add_envelope_items(envelope, [make_pdf("second.pdf")])
    first, second = hook.get_envelope(envelope).items
    sandbox.inject_fault(method="POST", path="/envelope/item/update-many", action="ignore_order", count=1)
    with pytest.raises(DocsignAPIError) as info:
        hook.update_envelope_items(
            envelope, [{"envelopeItemId": first.id, "order": 2}, {"envelopeItemId": second.id, "order": 1}]
        )
    assert info.value.error_code == "NOT_APPLIED"


def test_a_download_the_rate_limit_refused_with_a_500_is_retried_like_a_429(
    hook: DocsignHook, sandbox: SandboxServer, envelope: str, tmp_path: Path
) -> None:
    """The real service answers a rate-limited download 500 {"code": "TOO_MANY_REQUESTS"} (recorded)."""
    item_id = hook.get_envelope(envelope).items[0].id
    sandbox.clear_requests()
    sandbox.inject_fault(
        method="GET", path="/envelope/item/*/download", action="status", status=500, code="TOO_MANY_REQUESTS"
    )
    hook.download_envelope_item(item_id, tmp_path / "ok.pdf")
    assert (tmp_path / "ok.pdf").read_bytes().startswith(b"%PDF-")
    downloads = [r["status"] for r in sandbox.requests() if r["path"].endswith("/download")]
    assert downloads == [500, 200]
    # Every time: the retries are bounded, and the error says it was the rate limit.
    sandbox.inject_fault(
        method="GET",
        path="/envelope/item/*/download",
        action="status",
        status=500,
        code="TOO_MANY_REQUESTS",
        count=50,
    )
    with pytest.raises(DocsignRateLimitError, match="rate-limiting"):
        hook.download_envelope_item(item_id, tmp_path / "never.pdf")
    assert not (tmp_path / "never.pdf").exists()
    sandbox.clear_faults()
    # Any other 500 on a read is not retried.
    sandbox.clear_requests()
    sandbox.inject_fault(method="GET", path="/envelope/item/*/download", action="status", status=500)
    with pytest.raises(DocsignServerError):
        hook.download_envelope_item(item_id, tmp_path / "no.pdf")
    assert [r["status"] for r in sandbox.requests() if r["path"].endswith("/download")] == [500]
