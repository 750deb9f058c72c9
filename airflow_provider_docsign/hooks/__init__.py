"""Hooks of the Docsign provider: ``from airflow_provider_docsign.hooks import DocsignHook``.

The name is resolved lazily, so importing a submodule (``hooks._endpoints``, ...) does not import the
hook and its HTTP stack.

The one layer that speaks to the service: ``docsign.py`` is the facade, ``_http`` the retries and
redaction, ``_endpoints`` one definition per call (where every outgoing payload is checked), one mixin
per resource; ``tsa.py`` reaches a timestamp authority.

May import: :mod:`..service`, :mod:`..evidence`, ``_compat``, ``metrics`` (every request's counters)
and the shared top-level modules. Never
the domain packages that use it (archive, bulk, export) or the Airflow face.
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
