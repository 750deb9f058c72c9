"""A template shaped like the onboarding contract: built for the tests that use templates."""

from __future__ import annotations

from typing import Any


def field(kind: str, page: int, y: float, label: str | None = None, **meta: Any) -> dict[str, Any]:
    """A field on the first file; ``label`` (and ``meta``) go into ``fieldMeta``."""
    spec: dict[str, Any] = {
        "identifier": 0,
        "type": kind,
        "page": page,
        "positionX": 10,
        "positionY": y,
        "width": 30,
        "height": 5,
    }
    if label is not None or meta:
        spec["fieldMeta"] = {"type": kind.lower(), **({"label": label} if label else {}), **meta}
    return spec


def onboarding_recipients() -> list[dict[str, Any]]:
    """Customer (prefillable fields on page 1, date and signature on page 2), Provider and a CC."""
    return [
        {
            "email": "customer@placeholder.test",
            "name": "Customer",
            "role": "SIGNER",
            "fields": [
                field("TEXT", 1, 10, "company"),
                field("NUMBER", 1, 20, "amount"),
                field("TEXT", 1, 30, "start_date"),
                field("DATE", 2, 70),
                field("SIGNATURE", 2, 80),
            ],
        },
        {
            "email": "provider@placeholder.test",
            "name": "Provider",
            "role": "SIGNER",
            "fields": [field("SIGNATURE", 2, 90)],
        },
        {"email": "legal@placeholder.test", "name": "Legal", "role": "CC"},
    ]


def mapped(customer: str = "buyer@example.com", provider: str = "sales@example.com") -> list[dict[str, Any]]:
    """Both signers mapped by placeholder name."""
    return [
        {"placeholder": "Customer", "email": customer, "name": "Buyer Person"},
        {"placeholder": "Provider", "email": provider, "name": "Sales Rep"},
    ]
