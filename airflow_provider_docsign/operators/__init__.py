"""Operators of the Docsign provider.

Names are resolved lazily so that importing one operator does not import every module (and their
optional dependencies, such as the preview rasterizer).
"""

from __future__ import annotations

import importlib
from typing import Any

_MODULES: dict[str, str] = {
    "DocsignCreateEnvelopeOperator": "envelope",
    "DocsignDistributeEnvelopeOperator": "envelope",
    "DocsignCancelEnvelopeOperator": "envelope",
    "DocsignAddEnvelopeItemsOperator": "items",
    "DocsignUpdateEnvelopeItemsOperator": "items",
    "DocsignDeleteEnvelopeItemOperator": "items",
    "DocsignAddRecipientsOperator": "recipients",
    "DocsignAddFieldsOperator": "recipients",
    "DocsignRejectRecipientOperator": "recipients",
    "DocsignCreateFolderOperator": "folders",
    "DocsignArchiveSignedDocumentsOperator": "archive",
    "DocsignFieldPreviewOperator": "preview",
}

__all__ = sorted(_MODULES)


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return __all__
