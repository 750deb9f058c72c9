"""The sandbox process itself: CLI, restart persistence, limits, auto-signing and auth/header behaviour."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
from test_sandbox_helpers import create, create_id, envelope, get, post

from airflow_provider_docsign.samples import write_sample_pdf
from airflow_provider_docsign.sandbox import SandboxServer

pytestmark = pytest.mark.integration


def test_importing_the_helper_does_not_import_fastapi() -> None:
    code = (
        "import sys; import airflow_provider_docsign.sandbox as s; "
        "print('fastapi' in sys.modules, 'uvicorn' in sys.modules, s.SandboxServer.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "False", "SandboxServer"]


def test_cli_prints_base_url_and_needs_a_key(tmp_path: Path) -> None:
    missing = subprocess.run(
        [sys.executable, "-m", "airflow_provider_docsign.sandbox", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert missing.returncode == 2
    assert "--api-key" in missing.stderr


def test_state_survives_a_restart(tmp_path: Path, make_pdf: Callable[..., Path]) -> None:
    data = tmp_path / "state"
    pdf = make_pdf("restart.pdf")
    with SandboxServer(data, api_key="api_restarttest00000") as first:
        env_id = create_id(first, [pdf], external_id="restart-1")
        assert post(first, "/envelope/distribute", {"envelopeId": env_id}).status_code == 200
        first.complete(env_id)
        before = first.wait_status(env_id, "COMPLETED")
        folder = post(first, "/folder/create", {"name": "Kept"}).json()
        first_pid = first.pid
    with SandboxServer(data, api_key="api_restarttest00000") as second:
        assert second.pid != first_pid
        after = envelope(second, env_id)
        assert after == before
        item = after["envelopeItems"][0]["id"]
        assert (
            get(second, f"/envelope/item/{item}/download", params={"version": "original"}).content
            == pdf.read_bytes()
        )
        signed = get(second, f"/envelope/item/{item}/download").content
        assert signed.startswith(b"%PDF-")
        assert signed != pdf.read_bytes()
        assert [f["id"] for f in get(second, "/folder").json()["data"]] == [folder["id"]]
        # Ids keep counting after the restart.
        again = envelope(second, create_id(second, [pdf]))
        assert again["secondaryId"] == "document_2"
        assert again["recipients"][0]["id"] > before["recipients"][0]["id"]


def test_max_file_mb_and_auto_sign(tmp_path: Path, make_pdf: Callable[..., Path]) -> None:
    big = write_sample_pdf(tmp_path / "big.pdf", padding_bytes=1_200_000)
    small = make_pdf("small.pdf")
    with SandboxServer(
        tmp_path / "limits", api_key="api_limitstest000000", max_file_mb=1, auto_sign_after=0.2
    ) as sb:
        resp = create(sb, [big], external_id="too-big")
        assert resp.status_code == 400
        assert resp.json()["issues"] == [
            {"code": "custom", "message": "File cannot be larger than 1MB", "path": ["files", 0]}
        ]
        assert get(sb, "/envelope", params={"query": "too-big"}).json()["count"] == 0
        assert list((tmp_path / "limits" / "tmp").iterdir()) == []
        env_id = create_id(sb, [small])
        assert post(sb, "/envelope/distribute", {"envelopeId": env_id}).status_code == 200
        done = sb.wait_status(env_id, "COMPLETED")
        assert done["recipients"][0]["signingStatus"] == "SIGNED"


@pytest.mark.parametrize(
    ("header", "status"),
    [
        ("Bearer {key}", 200),
        ("{key}", 200),
        ("bearer {key}", 401),  # the prefix is case-sensitive on the real service
        ("Bearer api_wrongwrongwrong00", 401),
        ("Bearer ", 500),  # "Bearer " with nothing after it is a plain error on the real service
    ],
)
def test_authorization_header_forms(sandbox: SandboxServer, header: str, status: int) -> None:
    resp = get(sandbox, "/envelope", headers={"Authorization": header.format(key=sandbox.api_key)})
    assert resp.status_code == status


def test_control_api_needs_the_key(sandbox: SandboxServer) -> None:
    resp = requests.post(f"{sandbox.root_url}/_sandbox/faults/clear", timeout=30)
    assert resp.status_code == 401
    resp = requests.get(
        f"{sandbox.root_url}/_sandbox/requests", headers={"Authorization": "api_nope"}, timeout=30
    )
    assert resp.status_code == 401


def test_common_headers(tmp_path: Path) -> None:
    # A server of its own: the session sandbox's per-minute budget may already be spent by the
    # suite (remaining stays at 0 then), which would make the decrement unobservable.
    with SandboxServer(tmp_path / "hdr", api_key="api_headerstest00001") as sb:
        first = get(sb, "/envelope")
        second = get(sb, "/envelope")
    for resp in (first, second):
        assert resp.headers["x-ratelimit-limit"] == "1000"
        assert int(resp.headers["x-ratelimit-reset"]) % 60 == 0
        assert resp.headers["access-control-allow-origin"] == "*"
    assert first.headers["x-request-id"] != second.headers["x-request-id"]
    remaining = (int(first.headers["x-ratelimit-remaining"]), int(second.headers["x-ratelimit-remaining"]))
    assert (
        remaining[1] < remaining[0]
        or first.headers["x-ratelimit-reset"] != second.headers["x-ratelimit-reset"]
    )


def test_enforced_rate_limit(tmp_path: Path) -> None:
    """The real limiter's shape: the request that brings the count to the limit is the first refused."""
    with SandboxServer(tmp_path / "rl", api_key="api_ratelimittest000", rate_limit=3, rate_window=3600) as sb:
        first = get(sb, "/envelope")
        for _ in range(3):
            sb.requests()  # the control API is not counted against the window
        answers = [first] + [get(sb, "/envelope") for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429, 429]
    assert [int(a.headers["x-ratelimit-remaining"]) for a in answers] == [2, 1, 0, 0]
    assert {a.headers["x-ratelimit-limit"] for a in answers} == {"3"}
    resets = {int(a.headers["x-ratelimit-reset"]) for a in answers}
    assert len(resets) == 1
    assert resets.pop() % 3600 == 0
    blocked = answers[-1]
    assert blocked.json() == {"error": "Too many requests, please try again later."}
    assert blocked.headers["content-type"].startswith("application/json")
    assert 1 <= int(blocked.headers["retry-after"]) <= 3600
    assert "retry-after" not in answers[1].headers


def test_rate_limit_off_reports_headers_only(tmp_path: Path) -> None:
    with SandboxServer(tmp_path / "off", api_key="api_ratelimittest001") as sb:
        answers = [get(sb, "/envelope") for _ in range(3)]
        plain, timed = sb.requests(), sb.requests(times=True)
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert all("at" not in r for r in plain)
    times = [r.pop("at") for r in timed]
    assert timed == plain
    assert times == sorted(times)
    assert [a.headers["x-ratelimit-limit"] for a in answers] == ["1000"] * 3
