"""Validation of caller-supplied query parameters, before anything is sent.

Invariant: each check either returns the value in its wire form or raises
:class:`~bot.venue.errors.ParameterError` naming the parameter (the API's own spelling), so a
request with one bad argument never reaches the transport.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from decimal import Decimal

from bot.venue.errors import ParameterError

__all__ = [
    "int_in",
    "number_at_least",
    "one_of",
    "text",
    "text_at_most",
    "id_list",
    "optional_bool",
]


def int_in(name: str, value: int | None, lo: int, hi: int | None = None) -> int | None:
    """An integer ``lo <= value (<= hi)``; ``None`` passes (parameter omitted)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParameterError(name, f"must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ParameterError(name, f"must be {bound}, got {value}")
    return value


def number_at_least(name: str, value: int | float | Decimal | str | None, lo: int = 0) -> str | None:
    """A finite number ``>= lo`` as decimal text (a ``str`` must parse as a decimal)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ParameterError(name, f"must be a number, got {value!r}")
    try:
        number = Decimal(value) if isinstance(value, (str, int, Decimal)) else Decimal(repr(value))
    except (ArithmeticError, ValueError, TypeError):
        raise ParameterError(name, f"must be a number, got {value!r}") from None
    if not number.is_finite() or (isinstance(value, float) and not math.isfinite(value)):
        raise ParameterError(name, f"must be finite, got {value!r}")
    if number < lo:
        raise ParameterError(name, f"must be >= {lo}, got {value}")
    return str(value) if isinstance(value, (str, int)) else str(number)


def one_of(name: str, value: str | None, allowed: Collection[str]) -> str | None:
    """One of ``allowed`` (exact spelling; enum members pass by value)."""
    if value is None:
        return None
    raw = getattr(value, "value", value)
    if raw not in allowed:
        raise ParameterError(name, f"must be one of {', '.join(allowed)}, got {raw!r}")
    return raw


def text(name: str, value: str | None, *, required: bool = False) -> str | None:
    """A non-empty string (``None`` passes unless required)."""
    if value is None:
        if required:
            raise ParameterError(name, "is required")
        return None
    if not isinstance(value, str) or not value:
        raise ParameterError(name, f"must be a non-empty string, got {value!r}")
    return value


def text_at_most(name: str, value: str | None, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ParameterError(name, f"must be a string, got {value!r}")
    if len(value) > limit:
        raise ParameterError(name, f"must be at most {limit} characters, got {len(value)}")
    return value


def id_list(name: str, values: str | Iterable[str] | None, *, required: bool = False) -> str | None:
    """A comma-separated list of non-empty ids (a single string is one id)."""
    if values is None:
        if required:
            raise ParameterError(name, "is required")
        return None
    items = [values] if isinstance(values, str) else list(values)
    if not items:
        if required:
            raise ParameterError(name, "needs at least one id")
        return None
    for item in items:
        if not isinstance(item, str) or not item or "," in item:
            raise ParameterError(name, f"ids must be non-empty strings without commas, got {item!r}")
    return ",".join(items)


def optional_bool(name: str, value: bool | None) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ParameterError(name, f"must be a boolean, got {value!r}")
