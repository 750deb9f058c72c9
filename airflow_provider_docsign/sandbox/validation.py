"""A small validator that reports problems exactly like zod does on the real service.

A schema is a tree of :class:`Spec` objects. :func:`check` walks a value and returns the cleaned value
plus a list of zod-shaped issues (``code``, ``path``, ``message`` and the code's own keys).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ApiError, plain_error, validation_error

_EMAIL = re.compile(r"^(?!\.)(?!.*\.\.)([A-Z0-9_'+\-.]*)[A-Z0-9_+-]@([A-Z0-9][A-Z0-9\-]*\.)+[A-Z]{2,}$", re.I)

Path = list[str | int]


def type_name(value: Any) -> str:
    """Zod's name for the runtime type of ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "number"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "unknown"


class _Missing:
    pass


MISSING: Any = _Missing()


@dataclass
class Spec:
    """One node of a schema.

    :param kind: ``string``, ``number``, ``boolean``, ``enum``, ``object``, ``array``, ``record``, ``any``
        or ``union`` (first matching alternative wins).
    """

    kind: str
    optional: bool = False
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False
    email: bool = False
    allow_empty_email: bool = False
    trim: bool = False
    options: Sequence[str] = ()
    props: dict[str, Spec] = field(default_factory=dict)
    items: Spec | None = None
    alternatives: Sequence[Spec] = ()
    default: Any = MISSING
    coerce: bool = False


def S(kind: str, **kw: Any) -> Spec:
    """Shorthand constructor for :class:`Spec`."""
    return Spec(kind, **kw)


def _too(code: str, kind: str, bound: float, path: Path, msg: str) -> dict[str, Any]:
    key = "minimum" if code == "too_small" else "maximum"
    bound_out: float | int = int(bound) if float(bound).is_integer() else bound
    return {
        "code": code,
        key: bound_out,
        "type": kind,
        "inclusive": True,
        "exact": False,
        "message": msg,
        "path": path,
    }


def check(value: Any, spec: Spec, path: Path, issues: list[dict[str, Any]]) -> Any:
    """Validate ``value`` against ``spec``; append issues; return the cleaned value."""
    if value is MISSING:
        if spec.default is not MISSING:
            return spec.default
        if spec.optional:
            return MISSING
        expected = spec.kind if spec.kind in ("string", "number", "boolean", "object", "array") else "string"
        if spec.kind == "enum":
            expected = " | ".join(f"'{o}'" for o in spec.options)
        issues.append(
            {
                "code": "invalid_type",
                "expected": expected,
                "received": "undefined",
                "path": path,
                "message": "Required",
            }
        )
        return MISSING
    if value is None and spec.nullable:
        return None
    kind = spec.kind
    if kind == "any":
        return value
    if kind == "union":
        for alt in spec.alternatives:
            sub: list[dict[str, Any]] = []
            out = check(value, alt, path, sub)
            if not sub:
                return out
        issues.append({"code": "invalid_union", "unionErrors": [], "path": path, "message": "Invalid input"})
        return value
    if kind == "number" and spec.coerce and isinstance(value, str):
        try:
            value = float(value) if value.strip() else 0.0
            if value.is_integer():
                value = int(value)
        except ValueError:
            value = math.nan
    got = type_name(value)
    if kind == "enum":
        if value not in spec.options:
            opts = " | ".join(f"'{o}'" for o in spec.options)
            issues.append(
                {
                    "received": value,
                    "code": "invalid_enum_value",
                    "options": list(spec.options),
                    "path": path,
                    "message": f"Invalid enum value. Expected {opts}, received '{value}'",
                }
            )
        return value
    if got != kind:
        issues.append(
            {
                "code": "invalid_type",
                "expected": kind,
                "received": got,
                "path": path,
                "message": f"Expected {kind}, received {got}",
            }
        )
        return value
    if kind == "string":
        if spec.trim:
            value = value.strip()
        if spec.email and not (spec.allow_empty_email and value == "") and not _EMAIL.match(value):
            issues.append(
                {"validation": "email", "code": "invalid_string", "message": "Invalid email", "path": path}
            )
        if spec.minimum is not None and len(value) < spec.minimum:
            issues.append(
                _too(
                    "too_small",
                    "string",
                    spec.minimum,
                    path,
                    f"String must contain at least {int(spec.minimum)} character(s)",
                )
            )
        if spec.maximum is not None and len(value) > spec.maximum:
            issues.append(
                _too(
                    "too_big",
                    "string",
                    spec.maximum,
                    path,
                    f"String must contain at most {int(spec.maximum)} character(s)",
                )
            )
        return value
    if kind == "number":
        if spec.integer and not float(value).is_integer():
            issues.append(
                {
                    "code": "invalid_type",
                    "expected": "integer",
                    "received": "float",
                    "path": path,
                    "message": "Expected integer, received float",
                }
            )
        if spec.minimum is not None and value < spec.minimum:
            issues.append(
                _too(
                    "too_small",
                    "number",
                    spec.minimum,
                    path,
                    f"Number must be greater than or equal to {_num(spec.minimum)}",
                )
            )
        if spec.maximum is not None and value > spec.maximum:
            issues.append(
                _too(
                    "too_big",
                    "number",
                    spec.maximum,
                    path,
                    f"Number must be less than or equal to {_num(spec.maximum)}",
                )
            )
        return value
    if kind == "array":
        if spec.minimum is not None and len(value) < spec.minimum:
            issues.append(
                _too(
                    "too_small",
                    "array",
                    spec.minimum,
                    path,
                    f"Array must contain at least {int(spec.minimum)} element(s)",
                )
            )
        if spec.maximum is not None and len(value) > spec.maximum:
            issues.append(
                _too(
                    "too_big",
                    "array",
                    spec.maximum,
                    path,
                    f"Array must contain at most {int(spec.maximum)} element(s)",
                )
            )
        assert spec.items is not None
        return [check(v, spec.items, [*path, i], issues) for i, v in enumerate(value)]
    if kind == "object":
        if not spec.props:
            return value
        cleaned_obj: dict[str, Any] = {}
        for key, sub_spec in spec.props.items():
            cleaned = check(value.get(key, MISSING), sub_spec, [*path, key], issues)
            if cleaned is not MISSING:
                cleaned_obj[key] = cleaned
        return cleaned_obj
    return value


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def validate(value: Any, spec: Spec, trpc_path: str, prefix: Path | None = None) -> Any:
    """Validate and raise the real 400 ``Input validation failed`` error when anything is wrong."""
    issues: list[dict[str, Any]] = []
    out = check(value, spec, list(prefix or []), issues)
    if issues:
        raise validation_error(trpc_path, issues)
    refuse_unstorable(out, trpc_path)
    return out


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_lone_surrogate(value: Any, depth: int = 0) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if depth > 64:
        return False
    if isinstance(value, dict):
        return any(
            _has_lone_surrogate(k, depth + 1) or _has_lone_surrogate(v, depth + 1) for k, v in value.items()
        )
    if isinstance(value, list):
        return any(_has_lone_surrogate(v, depth + 1) for v in value)
    return False


def refuse_unstorable(value: Any, trpc_path: str) -> None:
    r"""Answer a lone surrogate (``"\ud800"`` in the JSON text) as the real service does: HTTP 500.

    JSON.parse and zod accept a lone surrogate (it is a valid JavaScript string), but the service's
    database layer cannot encode it, and Prisma fails the query (prisma/orm#24989); tRPC answers an
    unknown error as ``INTERNAL_SERVER_ERROR``, and nothing is written. Inferred from the source, not
    recorded: the provider never sends one (``airflow_provider_docsign.service.outgoing``). The sandbox used
    to
    store it and then fail every later answer that held it.
    """
    if _has_lone_surrogate(value):
        raise plain_error(
            trpc_path, "Invalid `prisma` invocation: the string holds a lone surrogate and cannot be stored"
        )


def raise_if(issues: list[dict[str, Any]], trpc_path: str) -> None:
    """Raise the validation error if ``issues`` is not empty."""
    if issues:
        raise_err: ApiError = validation_error(trpc_path, issues)
        raise raise_err
