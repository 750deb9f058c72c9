"""The sandbox seals completed PDFs like the real service, over real HTTP on 127.0.0.1."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
from helpers import completed_envelope, signer

from airflow_provider_docsign.evidence.signatures import (
    TrustPolicy,
    certificate_fingerprints,
    verify_pdf_signatures,
)
from airflow_provider_docsign.hooks.docsign import DocsignHook
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration

DOWNLOAD = "/envelope/item/*/download"


def test_certificate_endpoint_serves_pem_without_a_key(sandbox: SandboxServer) -> None:
    response = requests.get(f"{sandbox.root_url}/_sandbox/certificate", timeout=10)
    assert response.status_code == 200
    assert response.content.startswith(b"-----BEGIN CERTIFICATE-----")
    assert len(certificate_fingerprints(response.content)) == 1


def test_completed_pdf_is_sealed_at_completion_time_with_the_sandbox_key(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path]
) -> None:
    envelope_id = completed_envelope(hook, sandbox, [make_pdf("a.pdf")], title="Seal", external_id=None)
    envelope = hook.get_envelope(envelope_id)
    data = sandbox.item_bytes(envelope.items[0].id, "signed")
    trust = TrustPolicy.build(pem=[sandbox.certificate_pem()])

    report = verify_pdf_signatures(io.BytesIO(data), trust=trust)

    assert report.passed, report.problems
    (check,) = report.signatures
    assert check.subfilter == "ETSI.CAdES.detached"
    assert check.coverage == "entire_file"
    assert check.trusted is True
    # The CMS signing time is the envelope's completion time (to the second).
    assert envelope.completed_at is not None
    assert check.signing_time is not None
    assert check.signing_time[:19] == envelope.completed_at[:19]
    # The original upload is not sealed.
    assert not verify_pdf_signatures(io.BytesIO(sandbox.item_bytes(envelope.items[0].id, "original"))).signed


def test_pending_envelope_signed_version_is_the_unsealed_upload(
    hook: DocsignHook, sandbox: SandboxServer, make_pdf: Callable[..., Path], tmp_path: Path
) -> None:
    envelope_id = hook.create_envelope(title="Pending", files=[make_pdf("p.pdf")], recipients=[signer()])
    hook.distribute_envelope(envelope_id)
    item = hook.get_envelope(envelope_id).items[0]
    hook.download_envelope_item(item.id, tmp_path / "p.pdf", version="signed")
    assert not verify_pdf_signatures(tmp_path / "p.pdf").signed


@pytest.mark.parametrize(
    ("fault", "intact", "signed", "coverage"),
    [
        ("tamper_signed", False, True, "entire_file"),
        ("unsigned", None, False, None),
        ("modified_after_signing", True, True, "entire_revision"),
    ],
)
def test_download_faults_serve_broken_seals(
    hook: DocsignHook,
    sandbox: SandboxServer,
    make_pdf: Callable[..., Path],
    tmp_path: Path,
    fault: str,
    intact: bool | None,
    signed: bool,
    coverage: str | None,
) -> None:
    envelope_id = completed_envelope(hook, sandbox, [make_pdf("f.pdf")], title="Faulty", external_id=None)
    item = hook.get_envelope(envelope_id).items[0]
    sandbox.inject_fault(method="GET", path=DOWNLOAD, action=fault)

    hook.download_envelope_item(item.id, tmp_path / "broken.pdf", version="signed")
    hook.download_envelope_item(item.id, tmp_path / "good.pdf", version="signed")  # fault used up

    report = verify_pdf_signatures(tmp_path / "broken.pdf")
    assert report.signed is signed
    assert not report.passed
    if signed:
        assert report.signatures[0].intact is intact
        assert report.signatures[0].coverage == coverage
    assert verify_pdf_signatures(tmp_path / "good.pdf").passed
    assert list((sandbox.data_dir / "tmp").iterdir()) == []  # the broken copy was removed after serving


def test_key_and_certificate_survive_a_restart(tmp_path: Path, api_key: str) -> None:
    with SandboxServer(tmp_path / "data", api_key=api_key) as first:
        pem = first.certificate_pem()
    with SandboxServer(tmp_path / "data", api_key=api_key) as second:
        assert second.certificate_pem() == pem
    with SandboxServer(tmp_path / "other", api_key=api_key) as third:
        assert third.certificate_pem() != pem
