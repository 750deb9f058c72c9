"""One ``docsign://`` URI scheme for assets and lineage, registered with Airflow with its normaliser."""

from __future__ import annotations

import warnings
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from airflow_provider_docsign import assets
from airflow_provider_docsign._compat import AIRFLOW_V_3_0_PLUS, Asset
from airflow_provider_docsign.assets import envelope_uri, namespace, normalize_uri, template_uri, webhook_uri


def _normalized(uri: str) -> str:
    return urlunsplit(normalize_uri(urlsplit(uri)))


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("https://app.documenso.com/api/v2", "docsign://app.documenso.com"),
        ("http://127.0.0.1:8787/api/v2", "docsign://127.0.0.1:8787"),
        ("https://user:pw@Sign.Example.COM:8443/x/api/v2", "docsign://sign.example.com:8443"),
        ("sign.example.com", "docsign://sign.example.com"),
        ("http://[::1]:9000/api/v2", "docsign://[::1]:9000"),
    ],
)
def test_the_namespace_is_the_host_and_port_of_the_base_url(base: str, expected: str) -> None:
    assert namespace(base) == expected


def test_builders_give_uris_the_normaliser_keeps() -> None:
    base = "https://app.documenso.com/api/v2"
    built = [
        envelope_uri(base, "envelope_abc"),
        template_uri(base, "envelope_t1"),
        webhook_uri(base, "DOCUMENT_COMPLETED"),
    ]
    assert built == [
        "docsign://app.documenso.com/envelope_abc",
        "docsign://app.documenso.com/template/envelope_t1",
        "docsign://app.documenso.com/webhooks/document-completed",
    ]
    assert [_normalized(u) for u in built] == built


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (
            "docsign://App.Documenso.COM/webhooks/DOCUMENT_COMPLETED",
            "docsign://app.documenso.com/webhooks/document-completed",
        ),
        ("docsign://127.0.0.1:8787/envelope_abc", "docsign://127.0.0.1:8787/envelope_abc"),
        ("docsign://h.example/template/envelope_t", "docsign://h.example/template/envelope_t"),
    ],
)
def test_the_normaliser_makes_one_spelling(uri: str, expected: str) -> None:
    assert _normalized(uri) == expected


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("docsign:///envelope_abc", "names the service's host first"),
        ("docsign://app.documenso.com", "names an envelope"),
        ("docsign://webhooks/document-completed", "old form"),
        ("docsign://h.example/webhooks/not a name", "not a webhook event name"),
    ],
)
def test_the_normaliser_refuses_a_uri_that_names_nothing(uri: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        normalize_uri(urlsplit(uri))


def test_webhook_uri_refuses_a_bad_event_and_a_missing_host() -> None:
    with pytest.raises(ValueError, match="not a webhook event name"):
        webhook_uri("app.documenso.com", "document completed!")
    with pytest.raises(ValueError, match="no host"):
        webhook_uri("", "DOCUMENT_COMPLETED")


def _providers_manager() -> Any:
    if AIRFLOW_V_3_0_PLUS:
        from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

        return ProvidersManagerTaskRuntime()
    from airflow.providers_manager import ProvidersManager

    return ProvidersManager()


def test_airflow_registers_the_scheme_with_its_normaliser_and_converter() -> None:
    manager = _providers_manager()
    if AIRFLOW_V_3_0_PLUS:
        handlers, converters = manager.asset_uri_handlers, manager.asset_to_openlineage_converters
    else:
        handlers, converters = manager.dataset_uri_handlers, manager.dataset_to_openlineage_converters
    assert handlers["docsign"] is assets.normalize_uri
    assert converters["docsign"] is assets.to_openlineage


def test_an_asset_gets_the_normalised_uri() -> None:
    asset = Asset("docsign://App.Documenso.com/webhooks/DOCUMENT_COMPLETED")
    assert asset.uri == "docsign://app.documenso.com/webhooks/document-completed"


def test_the_old_webhook_asset_form_is_refused_with_the_new_one() -> None:
    if AIRFLOW_V_3_0_PLUS:
        with pytest.raises(ValueError, match=r"docsign://app\.documenso\.com/webhooks/document-completed"):
            Asset("docsign://webhooks/document-completed")
    else:  # Airflow 2.11 keeps the URI as written and warns (it raises only from Airflow 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            Asset("docsign://webhooks/document-completed")
        assert any("old form of a webhook asset" in str(w.message) for w in caught)


def test_an_envelope_asset_is_the_dataset_lineage_emits() -> None:
    """OpenLineage's translation of the asset equals the envelope dataset of lineage.py's facets."""
    pytest.importorskip(
        "airflow.providers.openlineage", reason="needs the OpenLineage provider (a test tool)"
    )
    from airflow.providers.openlineage.utils.utils import translate_airflow_asset

    from airflow_provider_docsign.export.lineage import envelope_namespace

    base = "https://sign.example.com:8443/api/v2"
    dataset = translate_airflow_asset(Asset(envelope_uri(base, "envelope_abc")), None)
    assert (dataset.namespace, dataset.name) == (envelope_namespace(base), "envelope_abc")
