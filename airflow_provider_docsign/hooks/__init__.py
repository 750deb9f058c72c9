"""Hooks of the Docsign provider: ``from airflow_provider_docsign.hooks import DocsignHook``.

The name is resolved lazily, so importing a submodule (``hooks._endpoints``, ...) does not import the
hook and its HTTP stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_docsign.hooks.docsign import DocsignHook

__all__ = ["DocsignHook"]


def __getattr__(name: str) -> Any:
    if name == "DocsignHook":
        from airflow_provider_docsign.hooks.docsign import DocsignHook

        return DocsignHook
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
