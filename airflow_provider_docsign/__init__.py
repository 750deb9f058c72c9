"""Apache Airflow provider for the Documenso v2 envelope (document-signing) API."""

from __future__ import annotations

from typing import Any

from airflow_provider_docsign import _moved

__version__ = "0.3.0"

__all__ = ["__version__", "get_provider_info"]

# The 0.2 module paths (``airflow_provider_docsign.verify``, ``.models``, ...) until 0.4.
_moved.install()


#: The connection form's Port field: required by the Test button of Airflow 3.3.0-3.3.2 only.
PORT_LABEL = "Port (required for Test on Airflow 3.3.0-3.3.2)"
PORT_PLACEHOLDER = "443 for https, 80 for http, or the port in the URL"

_DOCSIGN_URIS = {
    "schemes": ["docsign"],
    "handler": "airflow_provider_docsign.assets.normalize_uri",
    "to_openlineage_converter": "airflow_provider_docsign.assets.to_openlineage",
}


def get_provider_info() -> dict[str, Any]:
    """Return the provider metadata Airflow reads through the ``apache_airflow_provider`` entry point.

    ``package-name`` must equal the distribution name exactly: Airflow's providers manager cross-checks
    it against the installed distribution, and a mismatch breaks provider discovery for the whole
    environment.
    """
    return {
        "package-name": "airflow-provider-docsign",
        "name": "Docsign",
        "description": "Document signing with the Documenso v2 envelope API: envelopes, PDF items, "
        "recipients, fields, folders, distribution, waiting for signatures and archiving signed PDFs.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "Docsign",
                "external-doc-url": "https://docs.documenso.com/developers/public-api",
                "tags": ["service"],
            }
        ],
        "hooks": [
            {
                "integration-name": "Docsign",
                "python-modules": ["airflow_provider_docsign.hooks.docsign"],
            }
        ],
        "operators": [
            {
                "integration-name": "Docsign",
                "python-modules": [
                    "airflow_provider_docsign.operators.envelope",
                    "airflow_provider_docsign.operators.items",
                    "airflow_provider_docsign.operators.recipients",
                    "airflow_provider_docsign.operators.fields",
                    "airflow_provider_docsign.operators.attachments",
                    "airflow_provider_docsign.operators.folders",
                    "airflow_provider_docsign.operators.archive",
                    "airflow_provider_docsign.operators.preview",
                    "airflow_provider_docsign.operators.templates",
                    "airflow_provider_docsign.operators.duplicates",
                    "airflow_provider_docsign.operators.reminders",
                    "airflow_provider_docsign.operators.export",
                    "airflow_provider_docsign.operators.bulk",
                    "airflow_provider_docsign.operators.archive_batch",
                    "airflow_provider_docsign.operators.retention",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": "Docsign",
                "python-modules": ["airflow_provider_docsign.sensors.envelope"],
            }
        ],
        "triggers": [
            {
                "integration-name": "Docsign",
                # webhook: Airflow 3 only. On 2.11 importing it raises ImportError; Airflow's
                # providers manager lists trigger modules without importing them, so discovery works
                # on both (tests/unit/test_provider_info.py runs `airflow providers triggers`).
                "python-modules": [
                    "airflow_provider_docsign.triggers.envelope",
                    "airflow_provider_docsign.triggers.webhook",
                ],
            }
        ],
        # The link's 0.2 path too: a DAG serialized by 0.2 on Airflow 2.11 names the class by that path,
        # and Airflow drops every extra link of a task whose link class is not registered.
        "extra-links": [
            "airflow_provider_docsign.operators.links.DocsignEnvelopeLink",
            "airflow_provider_docsign.links.DocsignEnvelopeLink",
        ],
        "notifications": ["airflow_provider_docsign.notifications.docsign.DocsignNotifier"],
        # One URI scheme for envelopes, templates and webhook events (airflow_provider_docsign.assets):
        # `asset-uris` is read by Airflow 3, `dataset-uris` by 2.11 (each ignores the other's key).
        "asset-uris": [_DOCSIGN_URIS],
        "dataset-uris": [_DOCSIGN_URIS],
        "connection-types": [
            {
                "connection-type": "docsign",
                "hook-class-name": "airflow_provider_docsign.hooks.docsign.DocsignHook",
                "hook-name": "Docsign (Documenso)",
                # The port is shown, not hidden: Airflow 3.3.0-3.3.2's Test button sends
                # `"port": 0` for a connection stored without one and its API answers 400 "The host or
                # port to test differs" before the hook runs (apache/airflow#73298), so no message of
                # the provider can replace that "Bad Request". A provider cannot give a standard field
                # a default value or a description, only a label and a placeholder: the label says when
                # the port is needed, the placeholder what to put there. With the port filled in, the
                # button sends the stored port and the test runs. Everywhere else the port may stay
                # empty: the base URL's scheme or its own port decides.
                "ui-field-behaviour": {
                    "hidden-fields": ["schema", "login"],
                    "relabeling": {
                        "host": "Base URL",
                        "password": "API key",
                        "port": PORT_LABEL,
                    },
                    "placeholders": {
                        "host": "https://app.documenso.com/api/v2",
                        "port": PORT_PLACEHOLDER,
                        "password": "api_xxxxxxxxxxxxxxxx",
                        "extra": '{"timeout": 30, "verify": true, "web_url": "https://app.documenso.com"}',
                    },
                },
                "conn-fields": {
                    "timeout": {
                        "label": "Timeout (seconds)",
                        "description": "Request timeout in seconds (default: 10 s to connect, 60 s to read; "
                        "the extra JSON also takes [connect, read]).",
                        "schema": {"type": ["number", "null"], "minimum": 0},
                    },
                    "verify": {
                        "label": "Verify TLS",
                        "description": "Verify the server's TLS certificate (default true).",
                        "schema": {"type": ["boolean", "null"]},
                    },
                    "web_url": {
                        "label": "Web app URL",
                        "description": "Base URL of the web app, for links to envelopes "
                        "(default: the base URL without /api/v2).",
                        "schema": {"type": ["string", "null"]},
                    },
                    "pii_hash_key": {
                        "label": "PII hash key",
                        "description": "Secret key of the contract-data export's pii='hash' mode (keyed "
                        "HMAC-SHA256 of e-mails, names and free-text values).",
                        "schema": {"type": ["string", "null"], "format": "password"},
                    },
                    "signing_certificate_fingerprints": {
                        "label": "Signing certificate fingerprints",
                        "description": "SHA-256 fingerprints (comma-separated) of the instance's sealing "
                        "certificate; archived signed PDFs must be sealed with one of them.",
                        "schema": {"type": ["string", "null"]},
                    },
                },
            }
        ],
        **_ui_plugins(),
    }


def _ui_plugins() -> dict[str, Any]:
    """The Contracts pages: a plugin for the Airflow 3.1+ UI; not offered on Airflow 2.11."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        airflow = version("apache-airflow")
    except PackageNotFoundError:
        return {}
    major, _, rest = airflow.partition(".")
    minor = rest.partition(".")[0]
    if not (major.isdigit() and minor.isdigit()) or (int(major), int(minor)) < (3, 1):
        return {}
    return {
        "plugins": [{"name": "docsign", "plugin-class": "airflow_provider_docsign.ui.plugin.DocsignUiPlugin"}]
    }
