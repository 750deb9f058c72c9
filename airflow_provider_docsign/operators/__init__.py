"""Operators of the Docsign provider.

Names are resolved lazily so that importing one operator does not import every module (and their
optional dependencies, such as the preview rasterizer).

The Airflow face, one module per resource (envelope, items, recipients, fields, attachments, folders,
templates, bulk, archive, export, reminders, retention, preview) and the extra link (``links``). An
operator reads its arguments, calls the hook and the domain packages, and shapes the XCom.

May import: everything below it (hooks, service, evidence, archive, bulk, export, preview, ``_compat``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # give type checkers and IDEs the real classes; runtime imports stay lazy
    from airflow_provider_docsign.operators.archive import DocsignArchiveSignedDocumentsOperator
    from airflow_provider_docsign.operators.archive_batch import DocsignBatchArchiveOperator
    from airflow_provider_docsign.operators.attachments import (
        DocsignAddAttachmentsOperator,
        DocsignDeleteAttachmentOperator,
        DocsignUpdateAttachmentOperator,
    )
    from airflow_provider_docsign.operators.bulk import DocsignBulkSendOperator
    from airflow_provider_docsign.operators.duplicates import (
        DocsignDuplicateEnvelopeOperator,
        DocsignDuplicateTemplateOperator,
    )
    from airflow_provider_docsign.operators.envelope import (
        DocsignCancelEnvelopeOperator,
        DocsignCreateEnvelopeOperator,
        DocsignDistributeEnvelopeOperator,
    )
    from airflow_provider_docsign.operators.export import DocsignExportEnvelopesOperator
    from airflow_provider_docsign.operators.fields import (
        DocsignAddFieldsOperator,
        DocsignDeleteFieldOperator,
        DocsignUpdateFieldsOperator,
    )
    from airflow_provider_docsign.operators.folders import DocsignCreateFolderOperator
    from airflow_provider_docsign.operators.items import (
        DocsignAddEnvelopeItemsOperator,
        DocsignDeleteEnvelopeItemOperator,
        DocsignUpdateEnvelopeItemsOperator,
    )
    from airflow_provider_docsign.operators.preview import DocsignFieldPreviewOperator
    from airflow_provider_docsign.operators.recipients import (
        DocsignAddRecipientsOperator,
        DocsignDeleteRecipientOperator,
        DocsignRejectRecipientOperator,
        DocsignUpdateRecipientsOperator,
    )
    from airflow_provider_docsign.operators.reminders import DocsignRemindRecipientsOperator
    from airflow_provider_docsign.operators.retention import DocsignDeleteEnvelopesOperator
    from airflow_provider_docsign.operators.templates import (
        DocsignCreateEnvelopeFromTemplateOperator,
        DocsignCreateTemplateOperator,
    )

_MODULES: dict[str, str] = {
    "DocsignCreateEnvelopeOperator": "envelope",
    "DocsignDistributeEnvelopeOperator": "envelope",
    "DocsignCancelEnvelopeOperator": "envelope",
    "DocsignAddEnvelopeItemsOperator": "items",
    "DocsignUpdateEnvelopeItemsOperator": "items",
    "DocsignDeleteEnvelopeItemOperator": "items",
    "DocsignAddRecipientsOperator": "recipients",
    "DocsignAddFieldsOperator": "fields",
    "DocsignUpdateFieldsOperator": "fields",
    "DocsignDeleteFieldOperator": "fields",
    "DocsignRejectRecipientOperator": "recipients",
    "DocsignUpdateRecipientsOperator": "recipients",
    "DocsignDeleteRecipientOperator": "recipients",
    "DocsignAddAttachmentsOperator": "attachments",
    "DocsignUpdateAttachmentOperator": "attachments",
    "DocsignDeleteAttachmentOperator": "attachments",
    "DocsignDeleteEnvelopesOperator": "retention",
    "DocsignDuplicateEnvelopeOperator": "duplicates",
    "DocsignRemindRecipientsOperator": "reminders",
    "DocsignCreateFolderOperator": "folders",
    "DocsignExportEnvelopesOperator": "export",
    "DocsignArchiveSignedDocumentsOperator": "archive",
    "DocsignBulkSendOperator": "bulk",
    "DocsignBatchArchiveOperator": "archive_batch",
    "DocsignFieldPreviewOperator": "preview",
    "DocsignCreateEnvelopeFromTemplateOperator": "templates",
    "DocsignCreateTemplateOperator": "templates",
    "DocsignDuplicateTemplateOperator": "duplicates",
}

__all__ = [
    "DocsignAddAttachmentsOperator",
    "DocsignAddEnvelopeItemsOperator",
    "DocsignAddFieldsOperator",
    "DocsignAddRecipientsOperator",
    "DocsignArchiveSignedDocumentsOperator",
    "DocsignBatchArchiveOperator",
    "DocsignBulkSendOperator",
    "DocsignCancelEnvelopeOperator",
    "DocsignCreateEnvelopeFromTemplateOperator",
    "DocsignCreateEnvelopeOperator",
    "DocsignCreateFolderOperator",
    "DocsignCreateTemplateOperator",
    "DocsignDeleteAttachmentOperator",
    "DocsignDeleteEnvelopeItemOperator",
    "DocsignDeleteEnvelopesOperator",
    "DocsignDeleteFieldOperator",
    "DocsignDeleteRecipientOperator",
    "DocsignDistributeEnvelopeOperator",
    "DocsignDuplicateEnvelopeOperator",
    "DocsignDuplicateTemplateOperator",
    "DocsignExportEnvelopesOperator",
    "DocsignFieldPreviewOperator",
    "DocsignRejectRecipientOperator",
    "DocsignRemindRecipientsOperator",
    "DocsignUpdateAttachmentOperator",
    "DocsignUpdateEnvelopeItemsOperator",
    "DocsignUpdateFieldsOperator",
    "DocsignUpdateRecipientsOperator",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return __all__
