"""Payload builders shared by unit and integration tests (imported as ``helpers``: tests/ is on sys.path)."""

from __future__ import annotations

from typing import Any


def sig(**overrides: Any) -> dict[str, Any]:
    """A SIGNATURE field on page 1 of the first document, with any key overridden."""
    field = {
        "identifier": 0,
        "type": "SIGNATURE",
        "page": 1,
        "positionX": 10,
        "positionY": 10,
        "width": 20,
        "height": 5,
    }
    field.update(overrides)
    return field


def signer(
    *fields: dict[str, Any], email: str = "signer@example.com", name: str = "Sam", **overrides: Any
) -> dict[str, Any]:
    """A SIGNER recipient with ``fields`` (one :func:`sig` when none are given), any key overridden."""
    rec = {"email": email, "name": name, "role": "SIGNER", "fields": list(fields) or [sig()]}
    rec.update(overrides)
    return rec
