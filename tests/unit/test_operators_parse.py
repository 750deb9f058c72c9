"""Parse-time behaviour of the operators: construction, templating, warnings, docstrings, no side effects."""

from __future__ import annotations

import importlib
import inspect
import re
import socket
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_docsign import operators
from airflow_provider_docsign.operators._base import DocsignRetryWithoutExternalIdWarning

MINE = {
    "DocsignCreateEnvelopeOperator": "envelope",
    "DocsignDistributeEnvelopeOperator": "envelope",
    "DocsignCancelEnvelopeOperator": "envelope",
    "DocsignAddEnvelopeItemsOperator": "items",
    "DocsignUpdateEnvelopeItemsOperator": "items",
    "DocsignDeleteEnvelopeItemOperator": "items",
    "DocsignAddRecipientsOperator": "recipients",
    "DocsignAddFieldsOperator": "fields",
    "DocsignRejectRecipientOperator": "recipients",
    "DocsignCreateFolderOperator": "folders",
    "DocsignUpdateRecipientsOperator": "recipients",
    "DocsignDeleteRecipientOperator": "recipients",
    "DocsignUpdateFieldsOperator": "fields",
    "DocsignDeleteFieldOperator": "fields",
    "DocsignAddAttachmentsOperator": "attachments",
    "DocsignUpdateAttachmentOperator": "attachments",
    "DocsignDeleteAttachmentOperator": "attachments",
    "DocsignDuplicateEnvelopeOperator": "duplicates",
    "DocsignDeleteEnvelopesOperator": "retention",
}

KWARGS: dict[str, dict[str, Any]] = {
    "DocsignCreateEnvelopeOperator": {"title": "t", "files": ["a.pdf"], "external_id": "x"},
    "DocsignDistributeEnvelopeOperator": {"envelope_id": "envelope_abc"},
    "DocsignCancelEnvelopeOperator": {"envelope_id": "envelope_abc"},
    "DocsignAddEnvelopeItemsOperator": {"envelope_id": "envelope_abc", "files": ["a.pdf"]},
    "DocsignUpdateEnvelopeItemsOperator": {"envelope_id": "envelope_abc", "items": []},
    "DocsignDeleteEnvelopeItemOperator": {
        "envelope_id": "envelope_abc",
        "envelope_item_id": "envelope_item_x",
    },
    "DocsignAddRecipientsOperator": {"envelope_id": "envelope_abc", "recipients": []},
    "DocsignAddFieldsOperator": {"envelope_id": "envelope_abc", "fields": []},
    "DocsignRejectRecipientOperator": {"recipient_id": 1, "envelope_id": "envelope_abc", "reason": "r"},
    "DocsignCreateFolderOperator": {"name": "Contracts"},
    "DocsignUpdateRecipientsOperator": {"envelope_id": "envelope_abc", "recipients": [{"id": 1}]},
    "DocsignDeleteRecipientOperator": {"envelope_id": "envelope_abc", "recipient_id": 1},
    "DocsignUpdateFieldsOperator": {"envelope_id": "envelope_abc", "fields": [{"id": 1, "width": 5}]},
    "DocsignDeleteFieldOperator": {"envelope_id": "envelope_abc", "field_id": 1},
    "DocsignAddAttachmentsOperator": {
        "envelope_id": "envelope_abc",
        "attachments": [{"label": "Terms", "url": "https://example.com/terms"}],
    },
    "DocsignUpdateAttachmentOperator": {
        "envelope_id": "envelope_abc",
        "match_label": "Terms",
        "new_url": "x",
    },
    "DocsignDeleteAttachmentOperator": {"envelope_id": "envelope_abc", "match_label": "Terms"},
    "DocsignDuplicateEnvelopeOperator": {"envelope_id": "envelope_abc", "external_id": "resend-1"},
    "DocsignDeleteEnvelopesOperator": {"status": "DRAFT", "older_than_days": 30, "dry_run": True},
}


def test_lazy_module_map_matches_the_modules() -> None:
    for name, module in MINE.items():
        assert operators._MODULES[name] == module
        cls = getattr(operators, name)
        assert cls.__module__ == f"airflow_provider_docsign.operators.{module}"
        assert cls is getattr(importlib.import_module(f"airflow_provider_docsign.operators.{module}"), name)


@pytest.mark.parametrize("name", sorted(MINE))
def test_operator_constructs_and_documents_every_parameter(name: str) -> None:
    cls = getattr(operators, name)
    op = cls(task_id=f"t_{name.lower()}", **KWARGS[name])
    assert op.docsign_conn_id == "docsign_default"
    # Templated fields exist on the instance; renderers only name templated fields.
    for field in cls.template_fields:
        assert hasattr(op, field), field
    assert set(getattr(cls, "template_fields_renderers", {})) <= set(cls.template_fields)
    # Every constructor parameter (and the shared docsign_conn_id) is documented in reST style.
    doc = inspect.getdoc(cls) or ""
    params = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "kwargs")]
    for param in [*params, "docsign_conn_id"]:
        assert re.search(rf":param {param}:", doc), f"{name} does not document {param}"
    # The hook is not created by construction.
    assert "hook" not in vars(op)


def test_json_renderers_for_json_arguments() -> None:
    assert operators.DocsignCreateEnvelopeOperator.template_fields_renderers["recipients"] == "json"
    assert operators.DocsignCreateEnvelopeOperator.template_fields_renderers["meta"] == "json"
    assert operators.DocsignUpdateEnvelopeItemsOperator.template_fields_renderers["items"] == "json"
    assert operators.DocsignAddFieldsOperator.template_fields_renderers["fields"] == "json"
    assert operators.DocsignAddRecipientsOperator.template_fields_renderers["recipients"] == "json"
    assert operators.DocsignDistributeEnvelopeOperator.template_fields_renderers["meta"] == "json"


def test_create_warns_at_parse_time_when_retries_without_external_id() -> None:
    with pytest.warns(DocsignRetryWithoutExternalIdWarning, match="external_id"):
        operators.DocsignCreateEnvelopeOperator(task_id="no_ext", title="t", files=["a.pdf"], retries=2)
    assert issubclass(DocsignRetryWithoutExternalIdWarning, UserWarning)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"retries": 2, "external_id": "contract-{{ run_id }}"},
        {"retries": 0},
    ],
)
def test_create_does_not_warn_when_safe(kwargs: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DocsignRetryWithoutExternalIdWarning)
        op = operators.DocsignCreateEnvelopeOperator(task_id="safe", title="t", files=["a.pdf"], **kwargs)
    assert op.retries == kwargs["retries"]


def test_create_rejects_unknown_if_exists() -> None:
    with pytest.raises(ValueError, match="if_exists"):
        operators.DocsignCreateEnvelopeOperator(
            task_id="bad", title="t", files=["a.pdf"], external_id="x", if_exists="adopt"
        )


def test_extra_link_is_attached_to_envelope_operators() -> None:
    from airflow_provider_docsign.operators.links import DocsignEnvelopeLink

    for name in MINE:
        cls = getattr(operators, name)
        names = [link.name for link in cls.operator_extra_links]
        if name == "DocsignCreateFolderOperator":
            assert names == []
        else:
            assert names == ["Docsign envelope"]
            assert isinstance(cls.operator_extra_links[0], DocsignEnvelopeLink)


DAG_FILE = textwrap.dedent(
    """
    from datetime import datetime

    try:
        from airflow.sdk import DAG
    except ImportError:
        from airflow.models.dag import DAG

    from airflow_provider_docsign.operators import (
        DocsignAddEnvelopeItemsOperator,
        DocsignAddFieldsOperator,
        DocsignAddRecipientsOperator,
        DocsignCancelEnvelopeOperator,
        DocsignCreateEnvelopeOperator,
        DocsignCreateFolderOperator,
        DocsignDeleteEnvelopeItemOperator,
        DocsignDistributeEnvelopeOperator,
        DocsignRejectRecipientOperator,
        DocsignUpdateEnvelopeItemsOperator,
        DocsignAddAttachmentsOperator,
        DocsignDeleteAttachmentOperator,
        DocsignDeleteEnvelopesOperator,
        DocsignDeleteFieldOperator,
        DocsignDeleteRecipientOperator,
        DocsignDuplicateEnvelopeOperator,
        DocsignUpdateAttachmentOperator,
        DocsignUpdateFieldsOperator,
        DocsignUpdateRecipientsOperator,
    )

    with DAG("docsign_every_operator", schedule=None, start_date=datetime(2024, 1, 1)):
        folder = DocsignCreateFolderOperator(task_id="folder", name="Contracts {{ ds }}")
        create = DocsignCreateEnvelopeOperator(
            task_id="create",
            title="Contract {{ run_id }}",
            files=["/data/a.pdf", "s3://bucket/b.pdf"],
            recipients=[{"email": "a@example.com", "name": "A", "role": "SIGNER"}],
            external_id="contract-{{ run_id }}",
            folder_id=folder.output,
            retries=2,
        )
        env = create.output["envelope_id"]
        add = DocsignAddEnvelopeItemsOperator(task_id="add", envelope_id=env, files=["/data/c.pdf"])
        upd = DocsignUpdateEnvelopeItemsOperator(
            task_id="update", envelope_id=env, items=[{"envelopeItemId": "x", "order": 1}]
        )
        rec = DocsignAddRecipientsOperator(
            task_id="recipients",
            envelope_id=env,
            recipients=[{"email": "b@example.com", "name": "B", "role": "CC"}],
        )
        fld = DocsignAddFieldsOperator(
            task_id="fields",
            envelope_id=env,
            fields=[{"recipientId": 1, "type": "SIGNATURE", "page": 1, "positionX": 1, "positionY": 1,
                     "width": 10, "height": 5}],
        )
        dele = DocsignDeleteEnvelopeItemOperator(task_id="delete", envelope_id=env, envelope_item_id="x")
        dist = DocsignDistributeEnvelopeOperator(task_id="distribute", envelope_id=env)
        rej = DocsignRejectRecipientOperator(task_id="reject", envelope_id=env, recipient_id=1, reason="no")
        can = DocsignCancelEnvelopeOperator(task_id="cancel", envelope_id=env, reason="stop")
        add >> upd >> rec >> fld >> dele >> dist >> rej >> can
        att = DocsignAddAttachmentsOperator(
            task_id="attach", envelope_id=env, attachments=[{"label": "T&C", "url": "https://x.test/t"}]
        )
        att_u = DocsignUpdateAttachmentOperator(
            task_id="attach_update", envelope_id=env, match_label="T&C", new_url="https://x.test/t2"
        )
        att_d = DocsignDeleteAttachmentOperator(task_id="attach_delete", envelope_id=env, match_label="T&C")
        rec_u = DocsignUpdateRecipientsOperator(
            task_id="recipients_update", envelope_id=env, recipients=[{"id": 1, "email": "c@example.com"}]
        )
        rec_d = DocsignDeleteRecipientOperator(task_id="recipient_delete", envelope_id=env, recipient_id=1)
        fld_u = DocsignUpdateFieldsOperator(
            task_id="fields_update", envelope_id=env, fields=[{"id": 1, "positionX": 20}]
        )
        fld_d = DocsignDeleteFieldOperator(task_id="field_delete", envelope_id=env, field_id=1)
        dup = DocsignDuplicateEnvelopeOperator(
            task_id="duplicate", envelope_id=env, title="Again", external_id="again-{{ run_id }}"
        )
        clean = DocsignDeleteEnvelopesOperator(
            task_id="cleanup", status="DRAFT", older_than_days=30, dry_run=True
        )
        att >> att_u >> att_d >> rec_u >> rec_d >> fld_u >> fld_d >> dup >> clean
    """
)


def _spy_connection_lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def spy(name: str) -> Any:
        def _lookup(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            raise AssertionError(f"connection lookup at parse time: {name}")

        return _lookup

    from airflow_provider_docsign import _compat

    targets: list[tuple[Any, str]] = [(_compat.BaseHook, "get_connection")]
    if not _compat.AIRFLOW_V_3_0_PLUS:
        from airflow.hooks.base import BaseHook as CoreBaseHook

        targets.append((CoreBaseHook, "get_connection"))
    try:
        from airflow.models.connection import Connection

        targets.append((Connection, "get_connection_from_secrets"))
    except ImportError:
        pass
    try:
        from airflow.sdk import Connection as SdkConnection

        targets.append((SdkConnection, "get"))
    except ImportError:
        pass
    for owner, attr in targets:
        if hasattr(owner, attr):
            monkeypatch.setattr(owner, attr, spy(f"{owner.__name__}.{attr}"))
    return calls


def test_dagbag_parse_makes_no_connection_lookup_or_network_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in [v for v in __import__("os").environ if v.startswith("AIRFLOW_CONN_")]:
        monkeypatch.delenv(var)
    lookups = _spy_connection_lookups(monkeypatch)
    connects: list[Any] = []

    def no_connect(self: socket.socket, address: Any) -> None:
        connects.append(address)
        raise AssertionError(f"network connection at parse time: {address}")

    monkeypatch.setattr(socket.socket, "connect", no_connect)
    (tmp_path / "every_operator.py").write_text(DAG_FILE)
    try:
        from airflow.dag_processing.dagbag import DagBag  # Airflow 3

        bag = DagBag(dag_folder=str(tmp_path))
    except ImportError:  # Airflow 2.11
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]

        bag = DagBag(dag_folder=str(tmp_path), include_examples=False)
    assert bag.import_errors == {}
    dag = bag.dags["docsign_every_operator"]
    assert len(dag.tasks) == len(MINE)
    assert {type(t).__name__ for t in dag.tasks} == set(MINE)
    assert lookups == []
    assert connects == []
    for task in dag.tasks:
        assert "hook" not in vars(task)
