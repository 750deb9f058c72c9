from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from airflow_provider_docsign.exceptions import (
    DocsignAuthError,
    DocsignError,
    DocsignInvalidRequestError,
    DocsignNotFoundError,
    DocsignRateLimitError,
    DocsignServerError,
)
from airflow_provider_docsign.hooks._http import (
    Redactor,
    RetryPolicy,
    api_error,
    build_base_url,
    parse_retry_after,
    parse_timeout,
)
from airflow_provider_docsign.hooks.docsign import DocsignHook

KEY = "api_unitsecretkey0001"


@pytest.mark.parametrize(
    ("host", "kwargs", "expected"),
    [
        (None, {}, "https://app.documenso.com/api/v2"),
        ("", {}, "https://app.documenso.com/api/v2"),
        ("sign.example.com", {}, "https://sign.example.com/api/v2"),
        ("sign.example.com/api/v2/", {}, "https://sign.example.com/api/v2"),
        ("http://127.0.0.1:8000/api/v2", {}, "http://127.0.0.1:8000/api/v2"),
        ("127.0.0.1", {"port": 8000, "schema": "api/v2", "scheme": "http"}, "http://127.0.0.1:8000/api/v2"),
        ("https://user:pw@host.example.com", {}, "https://host.example.com/api/v2"),
        # The UI form's Port field: the scheme's default port changes nothing, the URL's own port is
        # accepted again, another port is appended.
        ("https://app.documenso.com/api/v2", {"port": 443}, "https://app.documenso.com/api/v2"),
        ("http://127.0.0.1:8000/api/v2", {"port": 8000}, "http://127.0.0.1:8000/api/v2"),
        ("https://sign.example.com/api/v2", {"port": 8443}, "https://sign.example.com:8443/api/v2"),
    ],
)
def test_build_base_url(host: str | None, kwargs: dict, expected: str) -> None:
    assert build_base_url(host, **kwargs) == expected


def test_build_base_url_refuses_a_port_that_contradicts_the_url() -> None:
    with pytest.raises(DocsignError, match="port 9000 differs from the port 8000 in its base URL"):
        build_base_url("http://127.0.0.1:8000/api/v2", port=9000)


def test_build_base_url_rejects_other_schemes() -> None:
    with pytest.raises(DocsignError, match="http or https"):
        build_base_url("ftp://example.com/api/v2")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, (10.0, 60.0)),
        (30, (30.0, 30.0)),
        ("12.5", (12.5, 12.5)),
        ([3, 40], (3.0, 40.0)),
        ("[2, 9]", (2.0, 9.0)),
    ],
)
def test_parse_timeout(value: object, expected: tuple[float, float]) -> None:
    assert parse_timeout(value) == expected


def test_parse_timeout_rejects_garbage() -> None:
    with pytest.raises(DocsignError, match="timeout"):
        parse_timeout("soon")


def test_json_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = {
        "conn_type": "docsign",
        "host": "http://127.0.0.1:9/api/v2",
        "password": KEY,
        "extra": {
            "timeout": [1, 2],
            "verify": False,
            "max_retries": 7,
            "backoff_factor": 0.25,
            "max_retry_wait": 9,
            "proxies": "http://proxy.local:3128",
            "web_url": "https://sign.example.com/",
        },
    }
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_UNIT", json.dumps(conn))
    hook = DocsignHook("docsign_unit")
    settings = hook.settings
    assert hook.base_url == "http://127.0.0.1:9/api/v2"
    assert hook.web_url == "https://sign.example.com"
    assert settings.timeout == (1.0, 2.0)
    assert settings.verify is False
    assert settings.retry.max_retries == 7
    assert settings.retry.backoff_factor == 0.25
    assert settings.retry.max_retry_wait == 9
    assert settings.proxies == {"http": "http://proxy.local:3128", "https": "http://proxy.local:3128"}
    assert settings.api_key == KEY
    assert KEY not in repr(settings)
    assert KEY not in repr(hook)
    session = hook.get_conn()
    assert session.headers["User-Agent"].startswith("airflow-provider-docsign/")
    assert KEY not in repr(session.auth)
    assert "Authorization" not in session.headers


def test_uri_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_DOCSIGN_URI",
        f"docsign://:{KEY}@127.0.0.1:8000/api%2Fv2?scheme=http&timeout=5&verify=false",
    )
    hook = DocsignHook("docsign_uri")
    assert hook.base_url == "http://127.0.0.1:8000/api/v2"
    assert hook.web_url == "http://127.0.0.1:8000"
    assert hook.settings.timeout == (5.0, 5.0)
    assert hook.settings.verify is False
    assert hook.settings.api_key == KEY


def test_asettings_looks_the_connection_up_asynchronously_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The triggers' path (aget_connection) gives the same settings as the sync one, cached on the hook."""
    conn = {
        "conn_type": "docsign",
        "host": "http://127.0.0.1:8000/api/v2",
        "password": KEY,
        "extra": {"timeout": 7},
    }
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_ASYNC", json.dumps(conn))
    hook = DocsignHook("docsign_async", max_retries=0)
    settings = asyncio.run(hook.asettings())
    assert settings == DocsignHook("docsign_async", max_retries=0).settings
    assert (settings.base_url, settings.timeout, settings.retry.max_retries) == (conn["host"], (7.0, 7.0), 0)
    monkeypatch.delenv("AIRFLOW_CONN_DOCSIGN_ASYNC")
    # Looked up once: the sync path and a second await reuse it, with the connection gone meanwhile.
    assert hook.settings is settings
    assert asyncio.run(hook.asettings()) is settings


def test_asettings_of_a_missing_connection_raises_airflows_not_found() -> None:
    from airflow.exceptions import AirflowNotFoundException

    with pytest.raises(AirflowNotFoundException, match="docsign_nowhere"):
        asyncio.run(DocsignHook("docsign_nowhere").asettings())


def test_uri_connection_defaults_to_https_and_api_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_URI2", f"docsign://:{KEY}@sign.example.com")
    assert DocsignHook("docsign_uri2").base_url == "https://sign.example.com/api/v2"


def test_empty_host_means_documenso_cloud(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_EMPTY", json.dumps({"conn_type": "docsign", "password": KEY}))
    hook = DocsignHook("docsign_empty")
    assert hook.base_url == "https://app.documenso.com/api/v2"
    assert hook.web_url == "https://app.documenso.com"


def test_no_lookup_at_init() -> None:
    # The connection does not exist: creating the hook must still work (lookups are lazy).
    hook = DocsignHook("docsign_does_not_exist")
    assert hook.docsign_conn_id == "docsign_does_not_exist"
    assert "settings" not in hook.__dict__
    with pytest.raises(Exception, match="docsign_does_not_exist"):
        _ = hook.base_url


def test_unknown_override_is_refused() -> None:
    with pytest.raises(TypeError, match="bogus"):
        DocsignHook(bogus=1)


def test_hook_class_attributes() -> None:
    assert DocsignHook.conn_name_attr == "docsign_conn_id"
    assert DocsignHook.default_conn_name == "docsign_default"
    assert DocsignHook.conn_type == "docsign"
    behaviour = DocsignHook.get_ui_field_behaviour()
    assert "login" in behaviour["hidden_fields"]
    assert "port" not in behaviour["hidden_fields"]
    assert behaviour["relabeling"]["password"] == "API key"
    assert isinstance(DocsignHook.get_connection_form_widgets(), dict)


def test_provider_info_matches_hook() -> None:
    from airflow_provider_docsign import get_provider_info

    conn_type = get_provider_info()["connection-types"][0]
    assert conn_type["connection-type"] == DocsignHook.conn_type
    assert conn_type["hook-class-name"] == f"{DocsignHook.__module__}.{DocsignHook.__name__}"
    behaviour = DocsignHook.get_ui_field_behaviour()
    assert conn_type["ui-field-behaviour"]["hidden-fields"] == behaviour["hidden_fields"]
    assert conn_type["ui-field-behaviour"]["relabeling"] == behaviour["relabeling"]


@pytest.mark.parametrize(
    ("name", "status", "cls", "code"),
    [
        ("err_unknown_envelope_get", 404, DocsignNotFoundError, "NOT_FOUND"),
        ("err_wrongkey_get", 401, DocsignAuthError, "UNAUTHORIZED"),
        ("err_unknown_item_download", 404, DocsignNotFoundError, None),
        ("err_create_field_page0", 400, DocsignInvalidRequestError, "BAD_REQUEST"),
        ("err_distribute_completed", 500, DocsignServerError, None),
    ],
)
def test_api_error_from_recorded_bodies(
    spec_dir: Path, name: str, status: int, cls: type, code: str | None
) -> None:
    body = (spec_dir / "recorded" / f"{name}.json").read_bytes()
    parsed = json.loads(body)
    err = api_error(
        status=status,
        headers={"content-type": "application/json", "x-request-id": "rid-9"},
        body=body,
        method="GET",
        path="/x",
        redact=Redactor(KEY),
    )
    assert type(err) is cls
    assert err.status_code == status
    assert err.request_id == "rid-9"
    expected_code = code or (parsed.get("data") or {}).get("code") or parsed.get("code")
    assert err.error_code == expected_code
    assert (parsed.get("message") or parsed.get("error")) in err.message


def test_api_error_rate_limit_and_redaction() -> None:
    err = api_error(
        status=429,
        headers={"retry-after": "12"},
        body=json.dumps({"error": f"Too many requests for {KEY}"}).encode(),
        method="GET",
        path="/envelope",
        redact=Redactor(KEY),
    )
    assert isinstance(err, DocsignRateLimitError)
    assert err.retry_after == 12.0
    assert KEY not in str(err)
    assert KEY not in repr(err)


def test_retry_policy_delays_are_bounded() -> None:
    policy = RetryPolicy(max_retries=5, backoff_factor=1.0, max_retry_wait=3.0)
    for attempt in range(1, 10):
        delay = policy.delay(attempt, None)
        assert 0 <= delay <= 3.0
    assert policy.delay(1, 2.5) >= 2.5  # Retry-After is honoured (never shortened)
    assert 0.5 <= policy.delay(1, None) <= 1.0  # jitter within [base/2, base]


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("nonsense") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (f"docsign://:{KEY}@127.0.0.1:8000/api/v2?scheme=http", "http://127.0.0.1:8000/api/v2"),
        (f"docsign://:{KEY}@http%3A%2F%2F127.0.0.1%3A8000%2Fapi%2Fv2", "http://127.0.0.1:8000/api/v2"),
        (
            f"docsign://:{KEY}@sign.example.com:8443/custom/api/v2",
            "https://sign.example.com:8443/custom/api/v2",
        ),
    ],
)
def test_other_uri_forms(monkeypatch: pytest.MonkeyPatch, uri: str, expected: str) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_FORMS", uri)
    hook = DocsignHook("docsign_forms")
    assert hook.base_url == expected
    assert hook.settings.api_key == KEY


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ()),
        (["AB" * 32], ("ab" * 32,)),
        (":".join(["CD"] * 32) + ", " + "ef" * 32, ("cd" * 32, "ef" * 32)),
        (json.dumps(["01" * 32]), ("01" * 32,)),
    ],
)
def test_signing_certificate_fingerprints_extra(
    monkeypatch: pytest.MonkeyPatch, value: object, expected: tuple[str, ...]
) -> None:
    extra = {} if value is None else {"signing_certificate_fingerprints": value}
    conn = {"conn_type": "docsign", "host": "http://127.0.0.1:9/api/v2", "password": KEY, "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_UNIT", json.dumps(conn))
    assert DocsignHook("docsign_unit").settings.signing_certificate_fingerprints == expected


def test_malformed_fingerprint_extra_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = {"signing_certificate_fingerprints": "not-a-fingerprint"}
    conn = {"conn_type": "docsign", "host": "http://127.0.0.1:9/api/v2", "password": KEY, "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_DOCSIGN_UNIT", json.dumps(conn))
    with pytest.raises(DocsignError, match="signing_certificate_fingerprints"):
        _ = DocsignHook("docsign_unit").settings
