"""How commands print: JSON lines and exact decimals.

Invariant: amounts print as the exact decimals they stand for, never through a binary float.
"""

from __future__ import annotations

import sys
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

import msgspec

from bot.venue.units import MICRO


def print_json(value: Any) -> None:
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")


def exact(value: Decimal) -> str:
    """An exact decimal without exponent or trailing zeros."""
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def decimal_of(text: str | None) -> Decimal | None:
    """``text`` as a decimal; ``None`` when empty or not a number."""
    if text is None or text == "":
        return None
    try:
        return Decimal(str(text))
    except InvalidOperation:
        return None


def wire_amount(value: object) -> str:
    """A wire number as an exact decimal of at most 6 places (shares and USDC are micro-units): the
    account-data route's JSON floats (``509.79441999999995``) print as the amount they stand for."""
    if value is None:
        return ""
    d = decimal_of(str(value))
    if d is None or not d.is_finite():
        return str(value)
    try:
        return exact(d.quantize(MICRO, rounding=ROUND_HALF_EVEN))
    except InvalidOperation:  # more digits than a Decimal context holds: printed as given
        return str(value)
